"""`tmem doctor [--fix]`: find what keeps search from reflecting the vault, and repair it.

Checks: the daemon (answering? heartbeat fresh? watcher running?), files a dead daemon left
behind (pid, socket, heartbeat), index entries that no longer match the files on disk, notes
waiting for vectors, vectors a crashed daemon never saved, notes whose frontmatter cannot be
read, a git lock that blocks auto-commits, file names a clone on Windows or macOS cannot check
out, settings tmem.yaml gives a value this machine waits to approve, settings it holds at an earlier version's
default (the vault was made before the default changed), and a maintenance timer an older install
wrote. Diagnosis changes nothing; `repair` fixes what can
be fixed safely and says what a person has to do for the rest.
"""

from __future__ import annotations

__all__ = [
    "GIT_LOCK_OLD",
    "MALFORMED_SHOWN",
    "NAMES_SHOWN",
    "SETTLE",
    "STUCK_AFTER",
    "diagnose",
    "repair",
    "run_doctor",
]

import contextlib
import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from tiered_memory.app.api.doctor import DoctorFinding as Finding
from tiered_memory.app.api.doctor import DoctorReport
from tiered_memory.app.api.notes import REINDEX, ReindexRequest, ReindexResult
from tiered_memory.app.local import LocalBackend
from tiered_memory.app.memory import Memory
from tiered_memory.config import CONFIG_NAME, earlier_defaults, unapproved_fresh
from tiered_memory.daemon import client, schedule
from tiered_memory.daemon.health import UNSAVED_NAME
from tiered_memory.errors import GitError
from tiered_memory.index.catalog import Catalog
from tiered_memory.index.fts import FtsIndex
from tiered_memory.index.indexer import EDITOR_TEMPLATE, UNTOUCHED_TEMPLATE
from tiered_memory.model import file_names
from tiered_memory.storage.vault import Vault
from tiered_memory.sync.incoming import shown as shown_path
from tiered_memory.sync.incoming import tracked_private

STUCK_AFTER = 30.0  # a heartbeat older than this (and 3 intervals) means a stuck daemon
SETTLE = 5.0  # with a daemon up, files changed this recently are still on their way into the index
GIT_LOCK_OLD = 600.0
MALFORMED_SHOWN = 5  # notes with unreadable frontmatter named one a line; the rest counted
NAMES_SHOWN = 10  # file names a clone on Windows or macOS cannot check out, one a line; the rest counted


def run_doctor(
    root: Path, *, fix: bool = False, say: Callable[[str], None] = lambda line: None
) -> DoctorReport:
    """Diagnose; with `fix`, repair what can be repaired and diagnose again."""
    findings = diagnose(root)
    fixed: list[str] = []
    if fix and any(not f.ok for f in findings):
        fixed = repair(root, findings, say)
        findings = diagnose(root)
    return DoctorReport(all(f.ok for f in findings), findings, fixed)


def diagnose(root: Path, *, wall: Callable[[], float] = time.time) -> list[Finding]:
    findings = _daemon(root, wall)
    findings += _index(root, wall, client.lock_holder(root) is not None)
    findings += _git(root, wall)
    findings += _private_tracked(root)
    findings += _names(root)
    findings += _settings(root)
    findings += _schedule(root)
    return findings


def _daemon(root: Path, wall: Callable[[], float]) -> list[Finding]:
    holder = client.lock_holder(root)
    beat = client.read_heartbeat(root) or {}
    if holder is None:
        left = [p.name for p in (client.socket_path(root), client.heartbeat_path(root)) if p.exists()]
        if client.read_pid(root):
            left.append(client.PID_NAME)
        found = []
        if left:
            pid = client.read_pid(root) or beat.get("pid") or "unknown"
            found.append(
                Finding(
                    "daemon",
                    False,
                    f"the daemon (pid {pid}) is gone (crashed or killed) and left {', '.join(sorted(left))} behind",
                    "remove them (then `tmem daemon start`)",
                    "clean",
                )
            )
        else:
            found.append(Finding("daemon", True, "not running (`tmem daemon start` keeps searches warm)"))
        unsaved = _unsaved(root)
        if unsaved:
            found.append(
                Finding(
                    "vectors",
                    False,
                    f"{len(unsaved)} note(s) were embedded by a daemon that stopped before saving them",
                    "embed them again",
                    "unsaved",
                    unsaved[:5],
                )
            )
        return found
    pid = holder or beat.get("pid") or "unknown"
    info = client.ping(root, timeout=3.0)
    if info is None:
        return [
            Finding(
                "daemon",
                False,
                f"the daemon (pid {pid}) holds the vault lock but does not answer on its socket",
                "stop it (then `tmem daemon start`)",
                "kill",
            )
        ]
    every = float(beat.get("heartbeat_every_s") or 5.0)
    at = beat.get("heartbeat_at")
    age = wall() - float(at) if isinstance(at, int | float) else None
    if age is None or age > max(STUCK_AFTER, 3 * every):
        how = "none written" if age is None else f"{age:.0f} s old"
        return [
            Finding(
                "daemon",
                False,
                f"the daemon (pid {pid}) answers, but its heartbeat is {how}: its main thread is stuck",
                "stop it (then `tmem daemon start`)",
                "kill",
            )
        ]
    state = "ready" if info.get("ready") else f"{beat.get('phase', 'starting')} (not ready yet)"
    found = [Finding("daemon", True, f"running (pid {pid}), {state}, heartbeat {age:.0f} s ago")]
    watcher = beat.get("watcher") or {}
    if watcher.get("alive") is False and beat.get("ready"):
        found.append(
            Finding(
                "watcher",
                False,
                f"the file watcher is not running ({watcher.get('problem')}); the daemon retries every {every:.0f} s",
                "see .tmem/daemon.log; `tmem daemon stop && tmem daemon start` if it persists",
            )
        )
    elif watcher:
        found.append(Finding("watcher", True, f"alive ({watcher.get('restarts', 0)} restart(s))"))
    return found


def _unsaved(root: Path) -> list[str]:
    try:
        text = (root / client.STATE_DIR / UNSAVED_NAME).read_text(encoding="utf-8")
    except OSError:
        return []
    return sorted({line for line in text.splitlines() if line})


def _index(root: Path, wall: Callable[[], float], daemon_running: bool) -> list[Finding]:
    vault = Vault(root)
    path = root / client.STATE_DIR / "catalog.sqlite"
    if not path.exists():
        return [Finding("index", False, "the vault has not been indexed yet", "index it", "reindex")]
    catalog = Catalog(path)
    try:
        known = catalog.stats()
        pending = catalog.pending_vectors()
        reasons = [why for _p, why in catalog.skipped()]
        templates = reasons.count(UNTOUCHED_TEMPLATE)
        editor = reasons.count(EDITOR_TEMPLATE)
        malformed = catalog.warnings()
    finally:
        catalog.close()
    on_disk = {f.path: f for f in vault.iter_files()}
    settle = SETTLE if daemon_running else 0.0
    now = wall()
    new = [p for p, f in on_disk.items() if p not in known and now - f.mtime >= settle]
    changed = [
        p
        for p, f in on_disk.items()
        if p in known and (known[p][0], known[p][1]) != (f.mtime, f.size) and now - f.mtime >= settle
    ]
    deleted = [p for p in known if p not in on_disk]
    found = []
    stale = len(new) + len(changed) + len(deleted)
    if stale:
        missed = ": the daemon's watcher missed them" if daemon_running else ""
        found.append(
            Finding(
                "index",
                False,
                f"{stale} file(s) changed since they were indexed "
                f"({len(new)} new, {len(changed)} changed, {len(deleted)} deleted){missed}",
                "reindex them",
                "reindex",
                sorted(new + changed + deleted)[:5],
            )
        )
    else:
        waiting = f"; {templates} template(s) not indexed until you write in them" if templates else ""
        waiting += f"; {editor} in the editor's templates folder, not indexed" if editor else ""
        indexed = len(on_disk) - templates - editor
        found.append(
            Finding("index", True, f"{indexed} note file(s), all indexed as they are on disk{waiting}")
        )
    if vault.config.embeddings.provider != "none":
        if pending and daemon_running:
            # The daemon embeds them a slice at a time after its keyword side is ready.
            found.append(Finding("vectors", True, f"{len(pending)} note(s) being embedded by the daemon"))
        elif pending:
            found.append(
                Finding(
                    "vectors",
                    False,
                    f"{len(pending)} note(s) are waiting for vectors",
                    "embed them (loads the embedding model)",
                    "reindex",
                    pending[:5],
                )
            )
        else:
            found.append(Finding("vectors", True, "every indexed note has its vectors"))
    found += _malformed(malformed)
    found += _fulltext(root)
    return found


def _malformed(notes: list[tuple[str, str]]) -> list[Finding]:
    """Notes whose frontmatter the indexer could not read, wherever they were indexed (the daemon
    only logs it): searched as plain text, and never auto-committed until a person fixes them."""
    if not notes:
        return []
    shown = [f"{path}: {why}" for path, why in notes[:MALFORMED_SHOWN]]
    if len(notes) > MALFORMED_SHOWN:
        shown.append(f"... and {len(notes) - MALFORMED_SHOWN} more")
    return [
        Finding(
            "notes",
            False,
            f"{len(notes)} note(s) have frontmatter tmem cannot read: they are searched as plain text, "
            "and the daemon commits an edit of one only if its frontmatter is as last committed",
            "fix their frontmatter by hand (tmem never rewrites what it cannot parse)",
            examples=shown,
        )
    ]


def _fulltext(root: Path) -> list[Finding]:
    """Edits leave replaced copies in the full-text index; the daemon compacts it when they pile up,
    a vault used without the daemon may need it done here."""
    folder = root / client.STATE_DIR / "fts"
    if not folder.is_dir():
        return []
    index = FtsIndex.open(folder)
    try:
        segments, stale = index.fragmentation()
        fragmented = index.needs_compaction()
    finally:
        index.close()
    if fragmented:
        return [
            Finding(
                "fulltext",
                False,
                f"the full-text index is fragmented: {segments} segments, {stale:.0%} of its documents "
                "are replaced or deleted notes (slower searches, more memory)",
                "compact it (searches go on meanwhile)",
                "compact",
            )
        ]
    return [Finding("fulltext", True, f"full-text index: {segments} segment(s), {stale:.0%} stale")]


def _git(root: Path, wall: Callable[[], float]) -> list[Finding]:
    return _index_lock(root, wall) + _nested(root)


def _nested(root: Path) -> list[Finding]:
    """Folders with a .git of their own: their notes are searchable here but never synced (a
    submodule's reach the other machines through its own repository, not tmem's commits)."""
    vault = Vault(root)
    return [
        Finding(
            "git",
            False,
            f"{folder} is a git submodule: tmem commits nothing inside it; your other machines have "
            "it as a pointer to its own repository, and its files come from there, not from tmem sync",
            f"commit and push inside {folder} yourself, or move its notes out of it",
        )
        if vault.git.is_submodule(folder)
        else Finding(
            "git",
            False,
            f"{folder} is a git repository of its own: tmem never commits it, so its notes do not "
            "reach your other machines",
            f"move its notes out of it, or remove {folder}/.git",
        )
        for folder in vault.nested_repos()
    ]


def _index_lock(root: Path, wall: Callable[[], float]) -> list[Finding]:
    lock = root / ".git" / "index.lock"
    with contextlib.suppress(OSError):
        age = wall() - lock.stat().st_mtime
        if age > GIT_LOCK_OLD:
            return [
                Finding(
                    "git",
                    False,
                    f".git/index.lock is {age / 60:.0f} min old: a git command crashed or hangs, and "
                    "auto-commits wait for it",
                    "if no git command is running, delete .git/index.lock",
                )
            ]
    return []


def _settings(root: Path) -> list[Finding]:
    """Settings tmem.yaml gives a value this machine does not use until its user approves it (a
    pull that drops an excluded or a sealed folder, an API's address): a problem, since tmem.yaml
    no longer says what runs here, that only the person may settle, so --fix never approves. And
    settings held at an earlier version's default: not a problem (the value may be the person's
    choice), and --fix leaves tmem.yaml, the person's file, alone."""
    waiting = [
        Finding(
            "settings",
            False,
            f"{CONFIG_NAME} says {item.key}: {json.dumps(item.value, ensure_ascii=False)}, not used on "
            "this machine: it reaches outside the vault or lowers its protection",
            f"`tmem config approve {item.key}` applies it; or set {item.key} back in {CONFIG_NAME}",
        )
        for item in unapproved_fresh(root)
    ]
    return waiting + [
        Finding(
            "settings",
            True,
            f"{CONFIG_NAME} holds {key}: {held}, the default of an earlier tmem; today's is {now}: "
            f"set it to {now} or delete the line, unless you chose {held}",
        )
        for key, held, now in earlier_defaults(Vault(root).config)
    ]


def _schedule(root: Path) -> list[Finding]:
    """A maintenance timer an older `tmem schedule install` wrote: it keeps running `tmem maintain`
    at the time it was installed with. Replacing it is safe (only this vault's own entry changes),
    so --fix does what `tmem schedule install` would."""
    runner, which, _platform = schedule.system()
    old = schedule.outdated(root, runner, which)
    if not old:
        return []
    return [
        Finding(
            "schedule",
            False,
            "this vault's maintenance timer is an older tmem's: it runs `tmem maintain` at the time it was "
            "installed with, not at lifecycle.maintenance_time as tmem.yaml says it now",
            "replace it, as `tmem schedule install` does",
            "schedule",
            old,
        )
    ]


def _names(root: Path) -> list[Finding]:
    """Files (committed, or to be) whose names a clone on Windows or macOS cannot check out: git
    there stops at the first (a device name like `con.md`, a `:` in a name) or keeps one of two
    names differing only in case. tmem names none so; these are a person's, or a pulled commit's,
    and only a person renames them."""
    try:
        listed = Vault(root).git.out("ls-files", "-z", "--cached", "--others", "--exclude-standard")
    except GitError:
        return []
    bad = file_names.unportable(p for p in listed.split("\0") if p)
    if not bad:
        return []
    shown = [f"{shown_path(path)}: {why}" for path, why in bad[:NAMES_SHOWN]]
    if len(bad) > NAMES_SHOWN:
        shown.append(f"... and {len(bad) - NAMES_SHOWN} more")
    # Said, not a problem: a vault kept on Linux alone may name a note "What?.md" for ever.
    return [
        Finding(
            "names",
            True,
            f"{len(bad)} name(s) in the vault cannot be checked out on Windows or macOS: a clone of "
            "the vault there fails, or keeps one of two names",
            "rename them (tmem never renames a file you named)",
            examples=shown,
        )
    ]


def _private_tracked(root: Path) -> list[Finding]:
    """A repository that tracks another machine's `.tmem/` (or recall log, backups): sync refuses
    to merge such files and recovery replays no journal while git tracks them."""
    try:
        tracked = tracked_private(Vault(root).git)
    except GitError:
        return []
    if not tracked:
        return []
    return [
        Finding(
            "git",
            False,
            f"git tracks {len(tracked)} file(s) only this machine may write "
            f"({tracked[0]}{', ...' if len(tracked) > 1 else ''})",
            "untrack them and commit: git rm -r --cached .tmem (and any other listed), then git commit",
            examples=tracked[:3],
        )
    ]


# ---- repair ---------------------------------------------------------------------------------------


def repair(root: Path, findings: list[Finding], say: Callable[[str], None], grace: float = 15.0) -> list[str]:
    """Fix what can be fixed; returns one line per repair done. A stuck daemon gets `grace` seconds
    to stop after SIGTERM before it is killed."""
    done: list[str] = []
    actions = {f.action for f in findings if not f.ok and f.action}
    if "kill" in actions:
        done.append(_stop_stuck(root, grace))
        actions.add("clean")
    if "clean" in actions and client.lock_holder(root) is None:
        removed = _remove_leftovers(root)
        if removed:
            done.append(f"removed what the dead daemon left behind: {', '.join(removed)}")
    if "unsaved" in actions:
        done.append(_reset_unsaved(root))
        actions.add("reindex")
    if "reindex" in actions:
        say("reindexing (this may load the embedding model)...")
        done.append(_reindex(root))
    if "compact" in actions:
        done.append(_compact(root))
    if "schedule" in actions:
        runner, which, _platform = schedule.system()
        replaced = schedule.migrate(root, runner, which)
        done.append(f"replaced the older maintenance timer ({'; '.join(replaced)}) with today's tick")
    return done


def _compact(root: Path) -> str:
    memory = Memory(Vault(root))
    try:
        started = time.monotonic()
        memory.indexer.compact_fulltext(force=True)
    finally:
        memory.close()
    return f"compacted the full-text index in {time.monotonic() - started:.1f} s"


def _stop_stuck(root: Path, grace: float) -> str:
    pid = client.lock_holder(root)
    if not pid:
        return "the daemon had already stopped"
    os.kill(pid, signal.SIGTERM)
    os.kill(pid, signal.SIGCONT)  # a stopped process (kill -STOP, a debugger) handles SIGTERM once resumed
    if not _wait_unlocked(root, grace):
        os.kill(pid, signal.SIGKILL)
        _wait_unlocked(root, 5.0)
        return f"killed the stuck daemon (pid {pid}); start it again with `tmem daemon start`"
    return f"stopped the stuck daemon (pid {pid}); start it again with `tmem daemon start`"


def _wait_unlocked(root: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if client.lock_holder(root) is None:
            return True
        time.sleep(0.1)
    return client.lock_holder(root) is None


def _remove_leftovers(root: Path) -> list[str]:
    removed = []
    for path in (client.socket_path(root), client.heartbeat_path(root)):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(path.name)
    if client.read_pid(root):
        client.pid_path(root).write_text("", encoding="ascii")  # the lock file itself stays
        removed.append(f"the pid in {client.PID_NAME}")
    return removed


def _reset_unsaved(root: Path) -> str:
    paths = _unsaved(root)
    catalog = Catalog(root / client.STATE_DIR / "catalog.sqlite")
    try:
        catalog.set_vec_hash([(p, "") for p in paths])
    finally:
        catalog.close()
    with contextlib.suppress(FileNotFoundError):
        (root / client.STATE_DIR / UNSAVED_NAME).unlink()
    return f"marked {len(paths)} note(s) whose vectors were lost for embedding"


def _reindex(root: Path) -> str:
    """The daemon reindexes when it answers (its indexes stay the ones it serves), else this process."""
    request = ReindexRequest()
    try:
        report = ReindexResult.from_dict(client.call(root, REINDEX.name, request.to_dict(), timeout=3600))
        where = "by the daemon"
    except client.DaemonUnavailable:
        local = LocalBackend(root)
        try:
            report = local.run(REINDEX, request)
        finally:
            local.close()
        where = "in-process"
    vectors = "" if report.vectors == "ok" else f"; vectors: {report.vectors}"
    return (
        f"reindexed {where}: {report.added} added, {report.changed} changed, "
        f"{report.deleted} deleted, {report.embedded} embedded{vectors}"
    )
