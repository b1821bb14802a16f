"""The daemon's slow work: auto-commit of hand edits, and the schedule of maintenance, expiry, sync, backup.

Auto-commit waits for `daemon.autocommit_seconds` without a new edit, then commits the edited
notes that are complete on disk (unchanged for a second and parsing cleanly), never while the
user's own git command, merge or rebase is in progress. The watcher cannot tell a person's save
from tmem's own writes, which its commands commit themselves: what waits is what the watcher saw,
but what counts as waiting, and what a commit message names, is what git sees changed (asked
under the write lock, just before the commit), so a message never names a file its commit lacks. The schedule is pure functions of the
time and the last runs (kept in `.tmem/daemon.schedule.json`; the daily maintenance's in the record
it shares with the installed timer, `daily`), so it is tested with a fixed clock.
The jobs run on whatever has the daemon's shape (`Host`): its warm memory under its lock.
"""

from __future__ import annotations

__all__ = [
    "AutoCommitter",
    "COMMIT_CHUNK",
    "Commit",
    "DEFAULT_JOBS",
    "JobFunc",
    "MESSAGE_ITEMS",
    "Schedule",
    "changed_paths",
    "commit_message",
    "due_jobs",
    "enabled_jobs",
    "initial_last_runs",
    "log",
    "run_due_jobs",
]

import contextlib
import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from tiered_memory.app import maintain, shortterm
from tiered_memory.app.memory import Memory
from tiered_memory.config import Config
from tiered_memory.daemon import daily
from tiered_memory.errors import GitError, NoteParseError, TmemError
from tiered_memory.model import envelope
from tiered_memory.model import note as notes
from tiered_memory.storage import sealing
from tiered_memory.storage.vault import Vault
from tiered_memory.sync import backup, gitsync

log = logging.getLogger("tiered_memory.daemon")

COMMIT_CHUNK = 500  # paths per git listing: its command line stays far below ARG_MAX
MESSAGE_ITEMS = 200  # notes listed one per line in an auto-commit message


# ---- auto-commit ----------------------------------------------------------------------------------


def commit_message(items: list[tuple[str, str, str]], quiet_seconds: int) -> str:
    """`items` are (kind, path, title), kind one of added / edited / deleted."""
    titles = [title or path for _kind, path, title in items]
    more = f" (+{len(titles) - 3} more)" if len(titles) > 3 else ""
    lines = [
        "edit: " + "; ".join(titles[:3]) + more,
        "",
        f"Hand edits committed by the tmem daemon after {quiet_seconds} s without changes.",
        "",
    ]
    lines += [f"{kind:<8} {title or path}  ({path})" for kind, path, title in items[:MESSAGE_ITEMS]]
    if len(items) > MESSAGE_ITEMS:
        lines.append(f"... and {len(items) - MESSAGE_ITEMS} more")
    return "\n".join(lines) + "\n"


# The daemon's unit of work for hand edits: it commits `paths` with the message `describe()`
# returns, asked under its write lock after its own writes (so git's view is the commit's).
Commit = Callable[[list[str], Callable[[], str]], "str | None"]


def changed_paths(vault: Vault, paths: list[str]) -> dict[str, str]:
    """Of `paths`, those git sees changed from HEAD in the working tree, each with its kind
    (added / edited / deleted): what a commit of them holds. A path tmem committed already, or
    one that .gitignore keeps out, is not among them."""
    out: dict[str, str] = {}
    # No optional locks: the heartbeat asks this every few seconds, and a refresh of the index it
    # wrote would hold index.lock against a git command of the person's running at that moment.
    listed = vault.git.listed(
        "--no-optional-locks", "status", "--porcelain", "--untracked-files=all", "--no-renames", paths=paths
    )
    wanted = set(paths)
    for entry in listed:
        if len(entry) < 4 or entry[2] != " " or entry[3:] not in wanted:
            continue
        code, rel = entry[:2], entry[3:]
        if code == "AD":
            continue  # staged as new, then deleted: no commit holds it
        if "D" in code:
            out[rel] = "deleted"
        elif code == "??" or code[0] == "A":
            out[rel] = "added"
        else:
            out[rel] = "edited"
    return out


class AutoCommitter:
    """Commits hand edits after a quiet spell; `commit` is the daemon's unit of work for them."""

    def __init__(
        self,
        vault: Vault,
        commit: Commit,
        quiet_seconds: int,
        *,
        stability: float = 1.0,
        retry: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.vault = vault
        self._commit = commit
        self.quiet = quiet_seconds
        self.stability = stability
        self.retry = retry
        self.clock = clock
        self.wall = wall
        self.last_commit: dict[str, Any] | None = None
        self._edited: dict[str, str] = {}  # path -> title, waiting
        self._generation = 0  # moves with every change of the queue but `pending`'s pruning
        self._counted: tuple[int, str, int] | None = None  # (generation, HEAD, count) last found
        self._lock = threading.Lock()
        self._last_edit = 0.0
        self._retry_at = 0.0
        self._busy_logged: str | None = None

    @property
    def enabled(self) -> bool:
        return self.quiet > 0

    def retime(self, quiet_seconds: int) -> None:
        """A new quiet spell (tmem.yaml changed): edits already waiting are due by it at once."""
        with self._lock:
            self.quiet = quiet_seconds

    def note(self, titles: dict[str, str]) -> None:
        """Paths just reindexed after a file event, with their titles (a deleted note's last one)."""
        if not self.enabled or not titles:
            return
        with self._lock:
            self._edited.update(titles)
            self._generation += 1
            self._last_edit = self.clock()

    def pending(self) -> int:
        """The waiting paths git sees changed: a tmem command's write the watcher reported is
        committed already, and a waiting path is committed by the next auto-commit only if changed.

        Asked at each heartbeat while the queue is not empty, so the count is kept until the queue
        or HEAD moves, and the paths git sees unchanged leave the queue (a later save of one is a
        new event that queues it again) unless something was queued meanwhile."""
        with self._lock:
            waiting, generation = list(self._edited), self._generation
        if not waiting:
            return 0
        try:
            head = self.vault.git.rev("HEAD") or ""
            if self._counted is not None and self._counted[:2] == (generation, head):
                return self._counted[2]
            changed = changed_paths(self.vault, waiting)
        except GitError:
            return len(waiting)
        with self._lock:
            if self._generation == generation:
                self._edited = {p: t for p, t in self._edited.items() if p in changed}
        self._counted = (generation, head, len(changed))
        return len(changed)

    def due_at(self) -> float | None:
        with self._lock:
            if not self.enabled or not self._edited:
                return None
            return max(self._last_edit + self.quiet, self._retry_at)

    def commit(self, final: bool = False) -> str | None:
        """Commit what is ready, in one commit; returns its sha. `final` (shutdown) waits instead of deferring."""
        busy = self.vault.git.busy()
        if busy and final:
            deadline = self.clock() + 10.0
            while busy and self.clock() < deadline:
                time.sleep(0.2)
                busy = self.vault.git.busy()
        if busy:
            if self._busy_logged != busy:
                log.info("auto-commit waits: %s (a git command of yours is running)", busy)
                self._busy_logged = busy
            self._retry_at = self.clock() + self.retry
            return None
        self._busy_logged = None
        ready = self._complete_files(final)
        if not ready:
            return None
        paths = sorted(ready)
        ignored = self.vault.git.listed(
            "ls-files", "--others", "--ignored", "--exclude-standard", paths=paths
        )
        paths = [p for p in paths if p not in ignored]
        if not paths or not changed_paths(self.vault, paths):
            return None  # what the watcher saw was tmem's own writes, committed already
        message = ""

        def describe() -> str:
            nonlocal message
            held = changed_paths(self.vault, paths)
            items = [(kind, p, ready.get(p, "")) for p, kind in sorted(held.items())]
            message = commit_message(items, self.quiet)
            return message

        try:
            sha = self._commit(paths, describe)
        except GitError as exc:
            log.warning("auto-commit failed (%s); trying again later", exc)
            with self._lock:
                for p in paths:
                    self._edited.setdefault(p, ready[p])
                self._generation += 1
            self._retry_at = self.clock() + self.retry
            return None
        if sha:
            # What the commit says (the unit of work names sealed notes by id, whatever it was given).
            subject = self.vault.git.run("log", "-1", "--format=%s", sha, check=False).stdout.strip()
            subject = subject or (message.splitlines() or [""])[0]
            self.last_commit = {"sha": sha, "at": _iso(self.wall()), "message": subject}
            log.info("auto-commit %s: %s", sha[:8], subject)
        return sha

    def _complete_files(self, final: bool) -> dict[str, str]:
        """The waiting paths that may be committed now; recently written ones wait a little longer.

        A file that does not parse (a half-written frontmatter, binary data) is left out and
        logged; saving it again brings it back.
        """
        with self._lock:
            pending, self._edited = self._edited, {}
            self._generation += 1
        ready: dict[str, str] = {}
        later: dict[str, str] = {}
        for rel, title in pending.items():
            try:
                age = self.wall() - self.vault.abspath(rel).stat().st_mtime
            except FileNotFoundError:
                ready[rel] = self._gone_name(rel, title)  # deleted: the deletion is committed
                continue
            except OSError:
                continue
            if age < self.stability:
                if not final:
                    later[rel] = title
                    continue
                time.sleep(max(0.0, self.stability - age))
            try:
                note = self.vault.read_note(rel)
            except NoteParseError as exc:
                log.warning("not auto-committing %s: %s", rel, exc)
                continue
            if note.parse_warning and not self._broken_before(rel, note.parse_warning):
                log.warning("not auto-committing %s yet: %s (fix it and save again)", rel, note.parse_warning)
                continue
            ready[rel] = sealing.label(self.vault, note) or title  # a sealed note by its id alone
        if later:
            with self._lock:
                for rel, title in later.items():
                    self._edited.setdefault(rel, title)
                self._generation += 1
            self._retry_at = self.clock() + self.stability
        return ready

    def _broken_before(self, rel: str, warning: str) -> bool:
        """Whether a note that does not parse was committed with the very same frontmatter: then it
        is no half-saved edit but how the note is (an agent's YAML that never parsed), and an edit
        of its body is committed like any other. A frontmatter without its closing fence never is."""
        try:
            committed = self.vault.git.blob(f"HEAD:{rel}").decode("utf-8")
        except (GitError, UnicodeDecodeError):
            return False
        try:
            current = self.vault.abspath(rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        front = current[: len(current) - len(notes.body_of(current, rel))]
        before = committed[: len(committed) - len(notes.body_of(committed, rel))]
        was = notes.parse(committed, rel).parse_warning
        return bool(front) and front == before and was == warning

    def _gone_name(self, rel: str, title: str) -> str:
        """A deleted note's last title, unless it lay where notes are sealed (then its path)."""
        rules = self.vault.config.privacy
        if envelope.should_encrypt(rel, False, rules.encrypt, rules.encrypted_paths):
            return ""
        return title


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


# ---- the schedule -----------------------------------------------------------------------------------


def enabled_jobs(cfg: Config) -> dict[str, timedelta | None]:
    """Job name -> interval; None means daily at lifecycle.maintenance_time (local time)."""
    jobs: dict[str, timedelta | None] = {
        "expiry": timedelta(minutes=cfg.daemon.expiry_check_minutes),
        "maintenance": None,
    }
    if cfg.daemon.backup_daily:
        jobs["backup"] = None
    if cfg.daemon.sync_minutes > 0:
        jobs["sync"] = timedelta(minutes=cfg.daemon.sync_minutes)
    return jobs


def _past_daily_time(now: datetime, hh_mm: str) -> bool:
    hour, minute = (int(part) for part in hh_mm.split(":"))
    return (now.hour, now.minute) >= (hour, minute)


def initial_last_runs(now: datetime, cfg: Config, last: dict[str, str]) -> dict[str, str]:
    """Fill in jobs never run. A daily job first runs at its next time, not the moment a daemon
    first starts; interval jobs run at once. Recorded runs stand, so a daily job missed while the
    computer was off runs once when the daemon is next up after its time."""
    out = dict(last)
    for name, interval in enabled_jobs(cfg).items():
        if name in out:
            continue
        if interval is None:
            past = _past_daily_time(now, cfg.lifecycle.maintenance_time)
            out[name] = (now if past else now - timedelta(days=1)).isoformat()
        else:
            out[name] = (now - interval).isoformat()
    return out


def due_jobs(now: datetime, cfg: Config, last: dict[str, str]) -> list[str]:
    due = []
    for name, interval in enabled_jobs(cfg).items():
        try:
            previous = datetime.fromisoformat(last[name])
        except (KeyError, ValueError):
            due.append(name)
            continue
        if interval is None:
            if _past_daily_time(now, cfg.lifecycle.maintenance_time) and previous.date() < now.date():
                due.append(name)
        elif now - previous >= interval:
            due.append(name)
    return due


class Host(Protocol):
    """What the scheduled jobs need of the daemon that runs them."""

    @property
    def vault(self) -> Vault: ...

    @property
    def schedule(self) -> Schedule: ...

    @property
    def jobs(self) -> Mapping[str, JobFunc]: ...

    @property
    def lock(self) -> AbstractContextManager[Any]: ...

    @property
    def now(self) -> Callable[[], datetime]: ...

    @property
    def local_now(self) -> Callable[[], datetime]: ...

    def indexing(self) -> AbstractContextManager[Memory]: ...

    def set_phase(self, phase: str) -> None: ...

    def record_error(self, what: str) -> None: ...


JobFunc = Callable[[Host], object]


# Each runs on the daemon's warm memory, under its lock (a re-entrant one: run_due_jobs holds it).
def _expiry(daemon: Host) -> object:
    with daemon.indexing() as memory:
        return shortterm.expire(memory, now=daemon.now())


def _maintenance(daemon: Host) -> object:
    with daemon.indexing() as memory:
        return maintain.run_maintenance(memory, now=daemon.now())


def _backup(daemon: Host) -> object:
    return backup.backup(daemon.vault)


def _sync(daemon: Host) -> object:
    with daemon.indexing() as memory:
        return gitsync.sync(memory)


DEFAULT_JOBS: dict[str, JobFunc] = {
    "expiry": _expiry,
    "maintenance": _maintenance,
    "backup": _backup,
    "sync": _sync,
}


SYNC_SPREAD = 0.2  # each sync counts as up to this share of its interval earlier, at random


class Schedule:
    """When each job last ran, persisted so a restart neither repeats nor forgets a daily run."""

    def __init__(self, path: Path, cfg: Config, rng: random.Random | None = None) -> None:
        self.path = path
        self.cfg = cfg
        self.last: dict[str, str] = {}
        self.rng = rng or random.Random()

    def start(self, now: datetime) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        recorded = {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
        self.last = initial_last_runs(now, self.cfg, recorded)

    def follow(self, cfg: Config, now: datetime) -> None:
        """Settings changed while the daemon runs (tmem.yaml edited or pulled): the jobs are due by
        the new times and intervals from now on, a daily time moved earlier today runs at it. A
        job the change turned on starts as one does at a daemon's start (`initial_last_runs`)."""
        self.cfg = cfg
        if self.last:
            self.last = initial_last_runs(now, cfg, self.last)

    def due(self, now: datetime) -> list[str]:
        last = dict(self.last)
        shared = daily.last_run(self.path.parent)
        if shared is not None:  # the maintenance's day is the shared record's: the timer's too
            last["maintenance"] = shared.isoformat()
        return due_jobs(now, self.cfg, last)

    def claim(self, name: str, now: datetime) -> bool:
        """Record that `name` runs now, before it runs (a failing job must not be retried in a
        loop); False when it must not run after all. The daily maintenance is claimed in the
        record the installed timer's tick shares (`daemon.daily`), so a day's maintenance runs
        once whichever starts it, and of two looking at the same moment only one runs it."""
        if name != "maintenance":
            self.ran(name, now)
            return True
        known = None
        with contextlib.suppress(KeyError, ValueError):
            known = datetime.fromisoformat(self.last["maintenance"])
        return daily.claim(self.path.parent, self.cfg.lifecycle.maintenance_time, now, known=known)

    def ran(self, name: str, now: datetime) -> None:
        interval = enabled_jobs(self.cfg).get(name)
        if name == "sync" and interval is not None:
            # Daemons started together (a team's agents, machines after one outage) would sync in
            # the same second of every interval forever, all pushing at once: a random drift
            # spreads them out, and a sync never comes later than its interval.
            now -= interval * self.rng.uniform(0, SYNC_SPREAD)
        self.last[name] = now.isoformat()
        with contextlib.suppress(OSError):
            tmp = self.path.with_name(self.path.name + ".tmp")
            tmp.write_text(json.dumps(self.last, indent=1), encoding="utf-8")
            os.replace(tmp, self.path)


def run_due_jobs(daemon: Host) -> list[str]:
    """Run the jobs whose time has come, under the daemon's lock; a failing job is logged and
    tried again at its next time."""
    schedule = daemon.schedule
    now = daemon.local_now()
    if not schedule.last:
        schedule.start(now)
    ran = []
    for name in schedule.due(now):
        if not schedule.claim(name, now):
            continue
        job = daemon.jobs.get(name)
        if job is None:
            continue
        daemon.set_phase(name)
        start = time.monotonic()
        try:
            with daemon.lock:
                job(daemon)
        except TmemError as exc:
            log.warning("scheduled %s failed: %s", name, exc)
            continue
        except Exception:
            daemon.record_error(f"scheduled {name} failed")
            continue
        finally:
            daemon.set_phase("idle")
        ran.append(name)
        log.info("scheduled %s done in %.1f s", name, time.monotonic() - start)
    return ran
