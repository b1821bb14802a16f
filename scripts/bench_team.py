#!/usr/bin/env python3
"""N machines, one remote: a vault shared by a team, synced through a real git server on localhost.

    .venv/bin/python scripts/bench_team.py [--clones 10] [--rounds 100] [--daemons 0.5] [--seed 7]
    .venv/bin/python scripts/bench_team.py --scaling 2,5,10,20 --rounds 30
    .venv/bin/python scripts/bench_team.py --notes 10000 --clones 10      # one note through 10k

The script starts `git daemon --enable=receive-pack` on a free localhost port over a temp folder
holding one bare repository, makes a vault there, and clones it N times over `git://`. Each clone
is a machine of its own (its own HOME, so its own git identity and tmem settings folder) and runs
R rounds of a realistic mix with the real `tmem` executable: add notes, edit its own and others'
notes (`tmem update --append`), hand-edit one shared note the way an editor does (a line written
into one of its sections, no tmem involved), add tasks to one project and complete its own,
set profile lines and short-term keys, promote and archive its notes. Clones run at once.

Half of the clones (`--daemons`) run the daemon with `daemon.sync_minutes: 1`: their commands go
through it and it syncs on its own schedule (its hand edits are committed by its auto-commit).
The others run commands in their own processes and `tmem sync` after a random number (1-6) of
changes, so syncs overlap and pushes race. A sync that reports a conflicted note is resolved the
way a person would: both sides kept, the markers removed, `tmem resolve --no-edit`.

At the end the daemons are stopped and every clone syncs, round after round, until none has
anything to push. The checker then reads each clone's own log (JSON lines of what it did: note
ids and the markers it wrote, task uids, profile lines, short-term keys, moves) against every
clone's final files, and compares the clones' trees. Printed per N: changes made, lost,
converged, conflicts (count and notes, each resolved with `tmem resolve`), sync p50/p95,
pushes rejected (each merged and retried), commits per minute, wall time. Exit 1 when anything
was lost, the clones did not converge, or a command failed.

`--notes 10000` times instead one changed note through a 10,000-note vault at N clones: one clone
changes a note and syncs (commit + push), then each other clone in turn (a machine of its own)
syncs (fetch, merge, reindex) and finds it by keyword search. Target: <= 5 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TMEM = str(Path(sys.executable).parent / "tmem")
ROOT = Path(__file__).resolve().parent.parent
PROJECT = "team"
HANDBOOK = "memory/long-term/handbook.md"  # the hand-edited note every clone shares
SECTIONS = 12
PROFILE = "memory/long-term/user_profile.md"
CONTEXT = "memory/short-term/context_stack.json"
TASKS = f"memory/mid-term/projects/{PROJECT}/tasks.json"
CONFIG = """\
embeddings:
  provider: fake
daemon:
  autostart: false
  autocommit_seconds: 1
  sync_minutes: 1
"""
# The mix of one round: (action, weight).
MIX = (
    ("add", 24),
    ("edit_own", 12),
    ("edit_other", 12),
    ("hand_edit", 8),
    ("hand_owner", 3),
    ("task_add", 10),
    ("task_done", 6),
    ("profile", 8),
    ("st", 8),
    ("promote", 5),
    ("archive", 5),
)
COMMAND_TIMEOUT = 300
WORDS = (
    "latency cache broker schema quota replica ledger sprint rollout canary backlog invoice "
    "gateway tenant cohort metric budget kernel vendor runbook"
).split()


# ---- the git server ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def git_server(base: Path) -> Iterator[str]:
    """`git daemon` serving (and accepting pushes to) the repositories under `base`."""
    port = free_port()
    proc = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--enable=receive-pack",
            "--listen=127.0.0.1",
            f"--port={port}",
            f"--base-path={base}",
            str(base),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("git daemon did not start (is git-daemon installed?)")
            time.sleep(0.05)
        yield f"git://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---- one machine ----------------------------------------------------------------------------


@dataclass
class Failure:
    clone: str
    command: str
    line: str


class Clone:
    """One machine: its vault, its HOME, its log of what it did."""

    def __init__(self, base: Path, name: str, daemon: bool, seed: int) -> None:
        self.name = name
        self.root = base / name
        self.home = base / "homes" / name
        self.log_path = base / "logs" / f"{name}.jsonl"
        self.daemon = daemon
        self.rng = random.Random(f"{seed}-{name}")
        self.env = {
            **os.environ,
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "TMEM_AUTOSTART": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "EDITOR": "true",
        }
        self.env.pop("TMEM_CONFIG_HOME", None)
        self.env.pop("TMEM_VAULT", None)
        self.syncs: list[float] = []
        self.rejected = 0
        self.sync_failures = 0
        self.failures: list[Failure] = []
        self.conflicts: list[str] = []
        self.own: list[str] = []  # ids of notes this clone added (long-term)
        self.short: list[str] = []  # ids of its short-term notes, not yet promoted
        self.moved: set[str] = set()
        self.open_tasks: list[str] = []
        self.changes = 0
        self.counter = 0

    def setup_home(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        for key, value in (("user.name", self.name), ("user.email", f"{self.name}@team.test")):
            subprocess.run(["git", "config", "--global", key, value], env=self.env, check=True)

    def record(self, **entry: Any) -> None:
        with self.log_path.open("a", encoding="utf-8") as log:
            log.write(json.dumps({"clone": self.name, **entry}) + "\n")

    def tmem(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [TMEM, "--vault", str(self.root), *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=COMMAND_TIMEOUT,
        )
        if check and proc.returncode != 0:
            line = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            self.failures.append(Failure(self.name, " ".join(args[:2]), line))
        return proc

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(self.root), *args],
            capture_output=True,
            text=True,
            env=self.env,
            check=True,
        ).stdout

    def marker(self) -> str:
        self.counter += 1
        return f"zq{self.name}x{self.counter}"

    def sentence(self, marker: str) -> str:
        words = " ".join(self.rng.sample(WORDS, 5))
        return f"The {marker} note on {words}."

    # ---- the mix ----

    def act(self) -> None:
        actions, weights = zip(*MIX, strict=True)
        action = self.rng.choices(actions, weights)[0]
        getattr(self, f"do_{action}")()
        self.changes += 1

    def do_add(self) -> None:
        marker = self.marker()
        short = self.rng.random() < 0.25
        title = f"Team note {marker}"
        args = ["add", "--json", "--no-dedup", "--title", title]
        if short:
            args += ["--tier", "short"]
        proc = self.tmem(*args, self.sentence(marker))
        if proc.returncode != 0:
            return
        note = json.loads(proc.stdout)["note"]
        (self.short if short else self.own).append(note["id"])
        self.record(op="add", id=note["id"], marker=marker)

    def _edit(self, note_id: str) -> None:
        marker = self.marker()
        if self.tmem("update", note_id, "--append", self.sentence(marker)).returncode == 0:
            self.record(op="edit", id=note_id, marker=marker)

    def do_edit_own(self) -> None:
        mine = self.own + self.short
        if not mine:
            return self.do_add()
        self._edit(self.rng.choice(mine))

    def do_edit_other(self) -> None:
        others = [i for i in team_notes(self.root) if not i.startswith(f"team-note-zq{self.name}x")]
        if not others:
            return self.do_add()
        self._edit(self.rng.choice(others))

    def do_hand_edit(self) -> None:
        """A person's editor: one line written into a section of the shared note, no tmem."""
        marker = self.marker()
        path = self.root / HANDBOOK
        lines = path.read_text(encoding="utf-8").split("\n")
        heads = [i for i, line in enumerate(lines) if line.startswith("## ")]
        if not heads:
            return
        at = self.rng.choice(heads)
        end = next((i for i in heads if i > at), len(lines))
        while end > at + 1 and not lines[end - 1].strip():
            end -= 1
        lines.insert(end, f"- {marker} hand-written by {self.name}")
        path.write_text("\n".join(lines), encoding="utf-8")
        self.record(op="hand", path=HANDBOOK, marker=marker)

    def do_hand_owner(self) -> None:
        """A person's editor: one section's owner line replaced. Two clones doing it to one
        section between syncs changed the same line: a conflict for `tmem resolve`."""
        marker = self.marker()
        path = self.root / HANDBOOK
        lines = path.read_text(encoding="utf-8").split("\n")
        owners = [i for i, line in enumerate(lines) if line.startswith("- owner: ")]
        if not owners:
            return
        at = self.rng.choice(owners)
        old = lines[at]
        lines[at] = f"- owner: {marker} ({self.name})"
        path.write_text("\n".join(lines), encoding="utf-8")
        self.record(op="hand_owner", path=HANDBOOK, marker=marker, replaced=old)

    def do_task_add(self) -> None:
        marker = self.marker()
        proc = self.tmem("task", "add", "-p", PROJECT, "--json", f"{marker} task")
        if proc.returncode == 0:
            uid = json.loads(proc.stdout)["uid"]
            self.open_tasks.append(uid)
            self.record(op="task", uid=uid, text=f"{marker} task")

    def do_task_done(self) -> None:
        if not self.open_tasks:
            return self.do_task_add()
        uid = self.open_tasks.pop(self.rng.randrange(len(self.open_tasks)))
        if self.tmem("task", "done", "-p", PROJECT, uid).returncode == 0:
            self.record(op="task_done", uid=uid)

    def do_profile(self) -> None:
        key = f"{self.name}-pref-{self.counter + 1}"
        value = self.marker()
        if self.tmem("profile", "set", key, value).returncode == 0:
            self.record(op="profile", key=key, value=value)

    def do_st(self) -> None:
        key = f"{self.name}-ctx-{self.counter + 1}"
        value = self.marker()
        if self.tmem("st", "set", "--ttl", "1w", key, value).returncode == 0:
            self.record(op="st", key=key, value=value)

    def do_promote(self) -> None:
        if not self.short:
            return self.do_add()
        note_id = self.short.pop(0)
        if self.tmem("promote", note_id, "--to", "mid").returncode == 0:
            self.moved.add(note_id)
            self.record(op="move", id=note_id, tier="mid-term")

    def do_archive(self) -> None:
        candidates = [i for i in self.own if i not in self.moved]
        if not candidates:
            return self.do_add()
        note_id = candidates[0]
        self.own.remove(note_id)
        if self.tmem("archive", note_id, "--reason", "done with it").returncode == 0:
            self.moved.add(note_id)
            self.record(op="move", id=note_id, tier="archive")

    # ---- sync ----

    def sync(self) -> dict[str, Any] | None:
        start = time.perf_counter()
        proc = self.tmem("sync", "--json", check=False)
        took = time.perf_counter() - start
        if proc.returncode != 0:
            self.sync_failures += 1  # pushes rejected five times: a later sync retries
            if "rejected" not in proc.stderr:
                line = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
                self.failures.append(Failure(self.name, "sync", line))
            return None
        self.syncs.append(took)
        report: dict[str, Any] = json.loads(proc.stdout)
        self.rejected += max(0, int(report.get("push_attempts") or 1) - 1)
        self.resolve(self.marked(tuple(report.get("conflicts") or [])))
        return report

    def marked(self, paths: tuple[str, ...] = (), anyone: bool = False) -> list[str]:
        """Of the shared note and `paths`, those holding markers of a merge this clone made (a
        daemon's sync tells no one): the machine that merged resolves, not every one that pulls
        the marked note (two resolutions of one conflict would conflict again)."""
        found = []
        for rel in dict.fromkeys((HANDBOOK, *paths)):
            try:
                text = (self.root / rel).read_text(encoding="utf-8")
            except OSError:
                continue
            if not re.search(r"^<{7} ", text, re.M):
                continue
            last = self.git("log", "-1", "--format=%an%x00%s", "--", rel).strip().split("\0")
            if anyone or (last[0] == self.name and last[-1].startswith("sync: merge")):
                found.append(rel)
        return found

    def resolve(self, paths: list[str]) -> None:
        """A person's resolution: both sides kept (a line once), then `tmem resolve --no-edit`,
        then a sync, so the resolution reaches the others before they merge around it."""
        done = False
        for rel in paths:
            path = self.root / rel
            try:
                text = path.read_text(encoding="utf-8")
            except OSError:
                continue
            kept = "\n".join(keep_both(text.split("\n")))
            if re.search(r"^(<{7}|>{7})( |$)", kept, re.M) or dropped(text, kept):
                continue  # a person would not save this: look again after the next sync
            path.write_text(kept, encoding="utf-8")
            if self.tmem("resolve", "--no-edit", rel).returncode == 0:
                self.conflicts.append(rel)
                self.record(op="resolved", path=rel)
                done = True
        if done:
            self.sync()

    def daemon_syncs(self) -> list[float]:
        try:
            text = (self.root / ".tmem" / "daemon.log").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        return [float(m) for m in re.findall(r"scheduled sync done in ([0-9.]+) s", text)]

    def daemon_sync_failures(self) -> list[str]:
        try:
            text = (self.root / ".tmem" / "daemon.log").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        return re.findall(r"scheduled sync failed: (.*)", text)

    def daemon_sync_starts(self) -> list[float]:
        """When each scheduled sync started (seconds since the epoch), from the daemon's log."""
        try:
            text = (self.root / ".tmem" / "daemon.log").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        starts = []
        for stamp, took in re.findall(r"^(\S+ \S+),\d+ INFO scheduled sync done in ([0-9.]+) s", text, re.M):
            ended = time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S"))
            starts.append(ended - float(took))
        return starts


def keep_both(lines: list[str]) -> list[str]:
    """Conflict markers removed, each side's lines kept: ours, then theirs not already there.
    Markers carried inside a later conflict's sides (a note merged again before anyone
    resolved it) are resolved the same way, innermost first. Two conflicts merged into each
    other can leave an opening marker that nothing closes (their separators were one line both
    sides had added): its lines are kept all the same, as a person reading the file would, and a
    closing marker that nothing opened is dropped. Only a common ancestor's lines (`|||||||`)
    and the marker lines themselves ever go."""
    out: list[str] = []
    stack: list[tuple[list[list[str]], int]] = []  # ([ours, base, theirs], side being read)

    def emit(*kept: str) -> None:
        if stack:
            block, part = stack[-1]
            block[part].extend(kept)
        else:
            out.extend(kept)

    def both(block: list[list[str]]) -> list[str]:
        ours, _, theirs = block
        return ours + [ln for ln in theirs if ln not in ours or not ln.strip()]

    for line in lines:
        if re.match(r"<{7}( |$)", line):
            stack.append(([[], [], []], 0))
        elif stack and re.match(r"\|{7}( |$)", line):
            stack[-1] = (stack[-1][0], 1)
        elif stack and re.fullmatch(r"={7}", line):
            stack[-1] = (stack[-1][0], 2)
        elif re.match(r">{7}( |$)", line):
            if stack:
                emit(*both(stack.pop()[0]))
        else:
            emit(line)
    while stack:  # opened, never closed: both sides read so far are kept
        emit(*both(stack.pop()[0]))
    return out


def dropped(text: str, kept: str) -> list[str]:
    """Lines of `text` (markers and a common ancestor's lines aside) that `kept` no longer has."""
    ancestor: set[str] = set()
    in_base = False
    for line in text.split("\n"):
        if re.match(r"\|{7}( |$)", line):
            in_base = True
        elif re.fullmatch(r"={7}", line) or re.match(r"(<{7}|>{7})( |$)", line):
            in_base = False
        elif in_base:
            ancestor.add(line)
    have = set(kept.split("\n"))
    return [
        line
        for line in text.split("\n")
        if line.strip()
        and line not in have
        and line not in ancestor
        and not re.match(r"(<{7}|\|{7}|>{7})( |$)|={7}$", line)
    ]


def team_notes(root: Path) -> list[str]:
    """Ids of the bench's notes present in a clone's working tree."""
    found = []
    for path in (root / "memory").rglob("team-note-*.md"):
        with contextlib.suppress(OSError), path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("id: "):
                    found.append(line[4:].strip())
                    break
    return found


# ---- the checker -----------------------------------------------------------------------------


def read_tree(root: Path) -> dict[str, str]:
    """Every committed text file of memory/ in HEAD, by path."""
    out = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "memory"], capture_output=True, text=True, check=True
    ).stdout
    files = {}
    for rel in out.split("\0"):
        if rel:
            with contextlib.suppress(OSError, UnicodeDecodeError):
                files[rel] = (root / rel).read_text(encoding="utf-8")
    return files


def check(logs: list[dict[str, Any]], files: dict[str, str]) -> list[str]:
    """What the logs say was done and the files do not show."""
    by_id: dict[str, tuple[str, str]] = {}
    for rel, text in files.items():
        if rel.endswith(".md"):
            m = re.search(r"^id: (.+)$", text, re.M)
            if m:
                by_id[m.group(1).strip().strip("'\"")] = (rel, text)
    try:
        tasks = json.loads(files.get(TASKS, "{}"))
        tasks = {t.get("uid"): t for t in tasks.get("tasks", [])}
    except ValueError:
        tasks = {}
    try:
        context = json.loads(files.get(CONTEXT, "{}"))
    except ValueError:
        context = {}
    profile = files.get(PROFILE, "")
    # An owner line vanishes rightly when a later edit replaced it, having seen it.
    replaced = [e["replaced"] for e in logs if e["op"] == "hand_owner"]
    lost = []
    for entry in logs:
        op, who = entry["op"], entry["clone"]
        if op in ("add", "edit"):
            rel, text = by_id.get(entry["id"], ("", ""))
            if entry["marker"] not in text:
                lost.append(f"{who} {op} {entry['id']}: {entry['marker']} missing")
        elif op in ("hand", "hand_owner"):
            text = files.get(entry["path"], "")
            if entry["marker"] not in text and not any(entry["marker"] in r for r in replaced):
                lost.append(f"{who} hand edit of {entry['path']}: {entry['marker']} missing")
        elif op == "task":
            task = tasks.get(entry["uid"])
            if task is None or task.get("text") != entry["text"]:
                lost.append(f"{who} task {entry['uid']} ({entry['text']}) missing")
        elif op == "task_done":
            task = tasks.get(entry["uid"])
            if task is None or task.get("status") != "done":
                lost.append(f"{who} task {entry['uid']} not done")
        elif op == "profile":
            if f"- {entry['key']}: {entry['value']}" not in profile:
                lost.append(f"{who} profile line {entry['key']} missing")
        elif op == "st":
            item = _context_item(context, entry["key"])
            if item is None or item.get("value") != entry["value"]:
                lost.append(f"{who} short-term key {entry['key']} missing")
        elif op == "move":
            rel, _ = by_id.get(entry["id"], ("", ""))
            if not rel.startswith(f"memory/{entry['tier']}/"):
                lost.append(f"{who} move of {entry['id']} to {entry['tier']}: at {rel or 'nowhere'}")
    numbers = [t.get("id") for t in tasks.values()]
    if len(numbers) != len(set(numbers)):
        lost.append(f"{TASKS}: tasks share a number ({sorted(n for n in numbers if numbers.count(n) > 1)})")
    for rel, text in files.items():
        if re.search(r"^(<{7}|>{7}) ", text, re.M):
            lost.append(f"{rel}: conflict markers left in the final tree")
    return lost


def _context_item(context: Any, key: str) -> dict[str, Any] | None:
    items = context.get("items", context) if isinstance(context, dict) else context
    if isinstance(items, dict):
        item = items.get(key)
        return item if isinstance(item, dict) else None
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("key") == key:
            return item
    return None


# ---- one run -----------------------------------------------------------------------------------


@dataclass
class Result:
    clones: int
    rounds: int
    daemons: int
    changes: int = 0
    lost: list[str] = field(default_factory=list)
    converged: bool = False
    conflicts: list[str] = field(default_factory=list)
    syncs: list[float] = field(default_factory=list)
    rejected: int = 0
    gave_up: int = 0  # syncs that ended "rejected five times" (the next sync carried on)
    commits: int = 0
    minutes: float = 0.0
    final_passes: int = 0
    failures: list[str] = field(default_factory=list)
    wall: float = 0.0
    daemon_failed: list[str] = field(default_factory=list)  # scheduled syncs that failed
    daemon_gap: float | None = None  # median seconds from a daemon's sync to another's nearest

    def notes(self) -> list[str]:
        gap = "-" if self.daemon_gap is None else f"{self.daemon_gap:.1f} s"
        lines = [
            f"N={self.clones}: {self.final_passes} final sync passes; daemons' scheduled syncs failed "
            f"{len(self.daemon_failed)} times; median time from one daemon's sync to another's: {gap}"
        ]
        lines += [f"N={self.clones}: daemon sync failed: {why}" for why in sorted(set(self.daemon_failed))]
        lines += [f"N={self.clones}: {line}" for line in self.lost[:20] + self.failures[:20]]
        return lines

    def row(self) -> str:
        p50 = statistics.median(self.syncs) if self.syncs else 0.0
        p95 = _percentile(self.syncs, 95)
        listed = ", ".join(sorted(set(self.conflicts))) or "-"
        return (
            f"| {self.clones} ({self.daemons} daemons) | {self.rounds} | {self.changes} | "
            f"{len(self.lost)} | {'yes' if self.converged else 'NO'} | {len(self.conflicts)}: {listed} | "
            f"{p50:.2f} / {p95:.2f} s | {self.rejected} / {self.gave_up} | "
            f"{self.commits / max(self.minutes, 1e-9):.0f} | {len(self.failures)} | {self.wall / 60:.1f} min |"
        )


HEADER = (
    "| clones | rounds | changes | lost | converged | conflicts resolved (notes) | sync p50 / p95 | "
    "pushes rejected / syncs given up | commits/min | failed commands | wall |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


def _percentile(values: list[float], pct: int) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def make_seed(base: Path, url: str, env: dict[str, str]) -> None:
    """The first machine's vault: config, a project, the shared hand-written note; pushed."""
    seed = base / "seed"
    subprocess.run([TMEM, "init", str(seed)], env=env, check=True, capture_output=True)
    (seed / "tmem.yaml").write_text(CONFIG, encoding="utf-8")
    sections = "\n".join(f"## Area {i}\n\n- owner: nobody yet\n" for i in range(1, SECTIONS + 1))
    (seed / HANDBOOK).write_text(f"# Team handbook\n\n{sections}", encoding="utf-8")
    subprocess.run(
        [TMEM, "--vault", str(seed), "project", "new", PROJECT, "--title", "Team project"],
        env=env,
        check=True,
        capture_output=True,
    )
    subprocess.run(["git", "-C", str(seed), "remote", "add", "origin", f"{url}/remote.git"], check=True)
    proc = subprocess.run([TMEM, "--vault", str(seed), "sync"], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"first push failed: {proc.stderr}")


def run_team(args: argparse.Namespace, clones_n: int, rounds: int) -> Result:
    base = Path(tempfile.mkdtemp(prefix=f"tmem-team-{clones_n}-", dir=args.tmp))
    daemons = round(clones_n * args.daemons)
    result = Result(clones=clones_n, rounds=rounds, daemons=daemons)
    t0 = time.perf_counter()
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(base / "remote.git")], check=True)
    seed_home = base / "homes" / "seed"
    seed_home.mkdir(parents=True)
    env = {**os.environ, "HOME": str(seed_home), "TMEM_AUTOSTART": "0", "XDG_CONFIG_HOME": str(seed_home)}
    env |= {"GIT_AUTHOR_NAME": "seed", "GIT_AUTHOR_EMAIL": "s@x"}
    env |= {"GIT_COMMITTER_NAME": "seed", "GIT_COMMITTER_EMAIL": "s@x"}
    clones = [Clone(base, f"c{i:02d}", i < daemons, args.seed) for i in range(clones_n)]
    try:
        with git_server(base) as url:
            make_seed(base, url, env)
            for clone in clones:
                clone.setup_home()
                subprocess.run(
                    ["git", "clone", "-q", f"{url}/remote.git", str(clone.root)],
                    env=clone.env,
                    check=True,
                )
                clone.tmem("init", "--adopt", str(clone.root))
            # The daemons start together, as a team's agents started by one scheduler do.
            starting = [threading.Thread(target=c.tmem, args=("daemon", "start")) for c in clones if c.daemon]
            for thread in starting:
                thread.start()
            for thread in starting:
                thread.join()
            start = time.perf_counter()
            threads = [threading.Thread(target=_work, args=(c, rounds)) for c in clones]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            result.minutes = (time.perf_counter() - start) / 60
            for clone in clones:
                if clone.daemon:
                    clone.tmem("daemon", "stop")
            result.final_passes = _settle(clones)
            commits = clones[0].git("rev-list", "--count", "HEAD").strip()
            seed_commits = subprocess.run(
                ["git", "-C", str(base / "seed"), "rev-list", "--count", "HEAD"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            result.commits = int(commits) - int(seed_commits)
        logs = [
            json.loads(line)
            for clone in clones
            if clone.log_path.exists()
            for line in clone.log_path.read_text(encoding="utf-8").splitlines()
        ]
        result.changes = sum(c.changes for c in clones)
        trees = {c.git("rev-parse", "HEAD^{tree}").strip() for c in clones}
        dirty = [c.name for c in clones if c.git("status", "--porcelain", "--", "memory").strip()]
        result.converged = len(trees) == 1 and not dirty
        lost: list[str] = []
        for clone in clones if not result.converged else clones[:1]:
            lost += [f"{clone.name}: {line}" for line in check(logs, read_tree(clone.root))]
        result.lost = lost
        for clone in clones:
            result.syncs += clone.syncs + clone.daemon_syncs()
            result.rejected += clone.rejected
            result.gave_up += clone.sync_failures
            result.conflicts += clone.conflicts
            result.failures += [f"{f.clone} {f.command}: {f.line}" for f in clone.failures]
            result.daemon_failed += clone.daemon_sync_failures()
        starts = {c.name: c.daemon_sync_starts() for c in clones if c.daemon}
        gaps = [
            min(abs(t - u) for other, ts in starts.items() if other != name for u in ts)
            for name, ts in starts.items()
            for t in ts
            if any(starts[o] for o in starts if o != name)
        ]
        result.daemon_gap = statistics.median(gaps) if gaps else None
    finally:
        for clone in clones:
            if clone.daemon and (clone.root / ".tmem" / "daemon.pid").exists():
                clone.tmem("daemon", "stop", check=False)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
        else:
            print(f"kept {base}", file=sys.stderr)
    result.wall = time.perf_counter() - t0
    return result


def _work(clone: Clone, rounds: int) -> None:
    until_sync = clone.rng.randint(1, 6)
    for _ in range(rounds):
        clone.act()
        if clone.daemon:  # its daemon syncs every minute; a person resolves what it marked
            clone.resolve(clone.marked())
            continue
        until_sync -= 1
        if until_sync <= 0:
            clone.sync()
            until_sync = clone.rng.randint(1, 6)


def _settle(clones: list[Clone], passes: int = 8) -> int:
    """Sync every clone, round after round, until none has anything to push or pull."""
    for n in range(1, passes + 1):
        quiet = True
        for clone in clones:
            report = clone.sync()
            if report is None or report.get("outgoing") or report.get("incoming") or report.get("committed"):
                quiet = False
        left = clones[0].marked(anyone=True)  # marked by a merge whose maker merged on since
        if left:
            clones[0].resolve(left)
            quiet = False
        if quiet:
            return n
    return passes


# ---- one note through a big vault ----------------------------------------------------------------


def run_big(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_search import build_vault

    base = Path(tempfile.mkdtemp(prefix="tmem-team-big-", dir=args.tmp))
    env0 = {**os.environ, "TMEM_AUTOSTART": "0", "HOME": str(base / "home")}
    env0 |= {"GIT_AUTHOR_NAME": "seed", "GIT_AUTHOR_EMAIL": "s@x"}
    env0 |= {"GIT_COMMITTER_NAME": "seed", "GIT_COMMITTER_EMAIL": "s@x"}
    (base / "home").mkdir()
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(base / "remote.git")], check=True)
    try:
        with git_server(base) as url:
            t0 = time.perf_counter()
            written = build_vault(base / "seed", args.notes)
            seed = base / "seed"
            (seed / "tmem.yaml").write_text(CONFIG, encoding="utf-8")
            subprocess.run(
                ["git", "-C", str(seed), "remote", "add", "origin", f"{url}/remote.git"], check=True
            )
            subprocess.run([TMEM, "--vault", str(seed), "sync"], env=env0, check=True, capture_output=True)
            clones = [Clone(base, f"c{i:02d}", False, args.seed) for i in range(args.clones)]
            for i, clone in enumerate(clones):
                clone.setup_home()
                if i == 0:
                    subprocess.run(
                        ["git", "clone", "-q", f"{url}/remote.git", str(clone.root)],
                        env=clone.env,
                        check=True,
                    )
                    clone.tmem("init", "--adopt", str(clone.root))
                    clone.tmem("reindex", "--keyword-only")
                else:  # a copy of an indexed machine: the same files, mtimes and indexes
                    shutil.copytree(clones[0].root, clone.root, symlinks=True)
            print(
                f"setup {time.perf_counter() - t0:.0f} s: {args.notes} notes, {args.clones} clones",
                flush=True,
            )
            pushes, pulls, finds = [], [], []
            for n in range(args.big_rounds):
                writer = clones[n % len(clones)]
                rel, _ = written[(n + 1) * len(written) // (args.big_rounds + 1)]
                marker = f"quokkaflux{n}"
                path = writer.root / rel
                path.write_text(
                    path.read_text(encoding="utf-8") + f"\nThe {marker} rollout.\n", encoding="utf-8"
                )
                start = time.perf_counter()
                writer.tmem("sync")
                pushes.append(time.perf_counter() - start)
                took: dict[str, float] = {}

                def pull(
                    clone: Clone, took: dict[str, float] = took, marker: str = marker, rel: str = rel
                ) -> None:
                    start = time.perf_counter()
                    clone.tmem("sync")
                    hits = clone.tmem("search", "--json", "--mode", "keyword", marker)
                    found = [h["path"] for h in json.loads(hits.stdout or '{"results": []}')["results"]]
                    took[clone.name] = time.perf_counter() - start if found[:1] == [rel] else float("inf")

                # One after another: each clone stands for a machine of its own, and nine Python
                # processes at once on this one's cores would measure its CPU, not a sync.
                for clone in clones:
                    if clone is not writer:
                        pull(clone)
                pulls.extend(took.values())
                finds.append(pushes[-1] + statistics.median(took.values()))
                print(
                    f"round {n + 1}: {writer.name} sync {pushes[-1]:.2f} s; each of the {len(took)} "
                    f"others sync + search: median {statistics.median(took.values()):.2f} s, "
                    f"slowest {max(took.values()):.2f} s",
                    flush=True,
                )
            failures = [f"{f.clone} {f.command}: {f.line}" for c in clones for f in c.failures]
            print(
                f"\n| notes | clones | writer's sync p50 | each other clone's sync + search p50 / p95 | "
                f"writer's sync + one other's sync + search (p50) | target |\n|---|---|---|---|---|---|\n"
                f"| {args.notes} | {args.clones} | {statistics.median(pushes):.2f} s | "
                f"{statistics.median(pulls):.2f} / {_percentile(pulls, 95):.2f} s | "
                f"{statistics.median(finds):.2f} s | <= 5 s |"
            )
            for line in failures:
                print(f"failed: {line}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clones", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--scaling", default="", help="comma-separated clone counts, e.g. 2,5,10,20")
    parser.add_argument("--daemons", type=float, default=0.5, help="fraction of clones running the daemon")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--notes", type=int, default=0, help="time one changed note through a vault this big")
    parser.add_argument("--big-rounds", type=int, default=3)
    parser.add_argument("--tmp", default=None, help="folder for the temp dirs")
    parser.add_argument("--keep", action="store_true", help="keep the clones (for a look)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    # Stopped from outside: still stop the server and the daemons, and remove the clones.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not 0 <= args.daemons <= 1:
        parser.error("--daemons is a fraction, 0..1")
    if args.notes:
        run_big(args)
        return
    counts = [int(n) for n in args.scaling.split(",") if n.strip()] or [args.clones]
    results = []
    for n in counts:
        result = run_team(args, n, args.rounds)
        results.append(result)
        if not args.json:
            print(f"N={n} done in {result.wall:.0f} s", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps([r.__dict__ for r in results]))
    else:
        print(HEADER)
        for result in results:
            print(result.row())
        for result in results:
            for line in result.notes():
                print(line)
    bad = any(r.lost or not r.converged or r.failures for r in results)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
