#!/usr/bin/env python3
"""Two machines, many agents, one remote, and kill -9 at random: does anything get lost?

Two clones A and B of one vault share a bare remote. On each, for --seconds: --writers agent
processes run a seeded random mix of `tmem add --file`, `update --append`, `promote`, `archive`,
`forget` then `restore`, and `ingest` of a small Claude Code transcript; a person writes and
rewrites notes of their own by hand (plain file writes, no tmem) and appends lines to notes tmem
wrote; `tmem maintain` runs now and then; `tmem sync` runs in a loop; A runs the daemon (which
commits hand edits after a second of quiet). A killer sends SIGKILL to a random running tmem
process (a command, the daemon, a merge driver git started) at random moments.

Then everything stops, the daemon is stopped, and `tmem sync` runs on A, B, A, B (each must
exit 0 within --settle seconds: no leftover lock or half-done state blocks it). Checked:

- every note whose `tmem add` exited 0 is on both sides (by id, in any tier or the archive) with
  its text, every line an `update --append` that exited 0 added is still in it, unless a
  `forget` of it exited 0 with no `restore` after; every ingested session is on both sides;
- every file the person wrote is on both sides byte for byte; every line the person appended to
  a tmem note is still in it;
- `git fsck` is clean on A, B and the remote; no file holds conflict markers; both working trees
  are clean; `tmem doctor` exits 0 on both sides;
- the remote's branch only ever moved forward (its reflog: each update a descendant of the last);
- no tmem command printed a traceback; nothing was written under the real home's tmem folders or
  in this checkout.

Prints what it did (operations by kind, kills by kind, non-zero exits by message) and every
broken invariant; exit 1 when any broke. The random choices (operations, targets, texts, kill
moments) come from --seed; the interleaving is the machine's, so a seed is a mix, not a replay.

    .venv/bin/python scripts/chaos_sync.py --seconds 120 --seed 1
    .venv/bin/python scripts/chaos_sync.py --seconds 20 --seed 3 --keep /tmp/chaos  # look after
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = "embeddings:\n  provider: fake\ndaemon:\n  autocommit_seconds: 1\n"
SIDES = ("A", "B")
WORDS = (
    "amber basalt cedar delta ember fjord garnet harbor iris juniper kelp lagoon meadow nectar "
    "onyx pebble quartz raven saffron tundra umber velvet willow xenon yarrow zephyr copper "
    "lantern marble orchid prairie quill ripple summit thistle violet walnut"
).split()
MARKER = re.compile(r"^(<<<<<<<|>>>>>>>)( |$)", re.MULTILINE)
FRONTMATTER_ID = re.compile(r"\A---\n(?:.*\n)*?id: *['\"]?([^'\"\n]+)['\"]?\n(?:.*\n)*?---\n")


@dataclass
class Note:
    """A note an agent added (its add exited 0) and what must still be in it."""

    id: str
    side: str
    lines: list[str]  # its text, then every line an update or the person appended
    forgotten: bool = False


@dataclass
class Report:
    seconds: float = 0.0
    seed: int = 0
    ops: Counter[str] = field(default_factory=Counter)
    kills: Counter[str] = field(default_factory=Counter)
    exits: Counter[str] = field(default_factory=Counter)  # non-zero exits: "op: first line"
    failures: list[str] = field(default_factory=list)
    settle: list[float] = field(default_factory=list)  # seconds of each final sync
    twins: list[str] = field(default_factory=list)  # ids in two files at the end (not a loss)

    def to_dict(self) -> dict[str, object]:
        return {
            "seconds": round(self.seconds, 1),
            "seed": self.seed,
            "ops": dict(self.ops),
            "kills": dict(self.kills),
            "exits": dict(self.exits.most_common(20)),
            "settle": [round(s, 2) for s in self.settle],
            "twins": self.twins,
            "failures": self.failures,
        }


class Chaos:
    def __init__(self, base: Path, seed: int, writers: int, timeout: float) -> None:
        self.base = base
        self.seed = seed
        self.writers = writers
        self.timeout = timeout
        self.token = uuid.uuid4().hex  # marks every process of this run, for the killer
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.report = Report(seed=seed)
        self.notes: dict[str, Note] = {}
        self.sessions: list[str] = []
        self.hand: dict[tuple[str, str], bytes] = {}  # (side, path) -> the bytes the person wrote
        self.running: dict[int, str] = {}  # pid of a command of ours -> "side op"
        home = base / "home"
        (home / ".config").mkdir(parents=True, exist_ok=True)
        (base / "tmp").mkdir(exist_ok=True)
        (base / "scratch").mkdir(exist_ok=True)
        (base / "cwd").mkdir(exist_ok=True)  # every command's working folder: it must stay empty
        self.env = {
            **os.environ,
            "HOME": str(home),
            "TMPDIR": str(base / "tmp"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
            "TMEM_CONFIG_HOME": str(home / ".config" / "tmem"),
            "TMEM_AUTOSTART": "0",
            "HF_HUB_OFFLINE": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "CHAOS_RUN": self.token,
        }
        for name in ("TMEM_VAULT", "XDG_CONFIG_HOME", "TMEM_RAISE_ERRORS", "EDITOR", "VISUAL"):
            self.env.pop(name, None)
        (home / ".gitconfig").write_text("[user]\n\tname = chaos\n\temail = chaos@example.org\n")
        self.remote = base / "remote.git"
        self.vault = {side: base / side for side in SIDES}

    # -- running commands -------------------------------------------------------------------

    def tmem(
        self, side: str, op: str, *args: str, timeout: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "tiered_memory", "--vault", str(self.vault[side]), *args]
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            cwd=self.base / "cwd",
        )
        with self.lock:
            self.running[proc.pid] = f"{side} {op}"
        try:
            out, err = proc.communicate(timeout=timeout or self.timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            self.fail(f"{side} {op} still running after {timeout or self.timeout:.0f} s: {' '.join(args)}")
        finally:
            with self.lock:
                self.running.pop(proc.pid, None)
        result = subprocess.CompletedProcess(argv, proc.returncode, out, err)
        with self.lock, (self.base / "commands.log").open("a") as log:
            log.write(f"{side} {op} {' '.join(args)} -> {proc.returncode} at {time.time():.3f}\n{err}")
            self.report.ops[op] += 1
            if "Traceback" in err:
                self.report.failures.append(f"{side} {op} printed a traceback: {err.strip()[-600:]}")
            elif proc.returncode not in (0, -signal.SIGKILL):
                first = err.strip().splitlines()[0][:110] if err.strip() else f"exit {proc.returncode}"
                self.report.exits[
                    f"{op}: {re.sub(r'[0-9a-f]{7,}|[a-z]+-[a-z-]+-[0-9a-f]{4}', '*', first)}"
                ] += 1
        return result

    def fail(self, text: str) -> None:
        with self.lock:
            self.report.failures.append(text)

    def git(self, where: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, env=self.env)
        if check and proc.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} in {where.name}: {proc.stderr.strip()}")
        return proc

    # -- setup ------------------------------------------------------------------------------

    def setup(self) -> None:
        a, b = self.vault["A"], self.vault["B"]
        self.must(
            subprocess.run(
                [sys.executable, "-m", "tiered_memory", "init", str(a)],
                capture_output=True,
                text=True,
                env=self.env,
                cwd=self.base / "cwd",
            ),
            "init A",
        )
        (a / "tmem.yaml").write_text(CONFIG)
        self.git(self.base, "init", "-q", "--bare", "-b", "main", str(self.remote))
        # the remote's reflog is the record that its branch only moved forward
        self.git(self.remote, "config", "core.logAllRefUpdates", "always")
        self.git(a, "remote", "add", "origin", str(self.remote))
        self.must(self.tmem("A", "setup", "sync"), "first sync of A")
        self.git(self.base, "clone", "-q", "-b", "main", str(self.remote), str(b))
        self.must(self.tmem("B", "setup", "init", "--adopt", str(b)), "adopt B")
        self.must(self.tmem("B", "setup", "sync"), "first sync of B")
        self.report.ops.clear()

    def must(self, proc: subprocess.CompletedProcess[str], what: str) -> None:
        if proc.returncode != 0:
            raise RuntimeError(f"{what}: {proc.stderr.strip() or proc.stdout.strip()}")

    # -- the actors -------------------------------------------------------------------------

    def text(self, rng: random.Random, n: int = 8) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n)) + f" {rng.getrandbits(48):012x}"

    def pick(self, rng: random.Random) -> Note | None:
        with self.lock:
            ids = sorted(i for i, n in self.notes.items() if not n.forgotten)
        return self.notes[rng.choice(ids)] if ids else None

    def writer(self, side: str, n: int) -> None:
        rng = random.Random(f"{self.seed}-{side}-writer-{n}")
        scratch = self.base / "scratch" / f"{side}{n}"
        scratch.mkdir(parents=True, exist_ok=True)
        while not self.stop.is_set():
            op = rng.choices(
                ["add", "append", "promote", "archive", "forget", "ingest"], [35, 15, 12, 8, 8, 10]
            )[0]
            note = self.pick(rng)
            if op == "add" or note is None:
                self.add(side, rng, scratch)
            elif op == "append":
                line = f"- update {self.text(rng, 4)}"
                if self.tmem(side, "update", "update", note.id, "--append", line).returncode == 0:
                    with self.lock:
                        note.lines.append(line)
            elif op == "promote":
                self.tmem(side, "promote", "promote", note.id)
            elif op == "archive":
                self.tmem(side, "archive", "archive", note.id, "--reason", "chaos")
            elif op == "forget":
                # A forget killed after its commit did forget, and so may one the daemon took and
                # then died in (unless tmem could tell it did not): only a clean refusal did not.
                gone = self.tmem(side, "forget", "forget", "-y", note.id)
                lost = "stopped answering" in gone.stderr and "it did not happen" not in gone.stderr
                if gone.returncode in (0, -signal.SIGKILL) or lost:
                    with self.lock:
                        note.forgotten = True
                    back = self.tmem(side, "restore", "restore", note.id)
                    # "exists at": a sync brought it back first (another machine had changed it)
                    if back.returncode == 0 or " exists at " in back.stderr:
                        with self.lock:
                            note.forgotten = False
            else:
                self.ingest(side, rng, scratch)

    def add(self, side: str, rng: random.Random, scratch: Path) -> None:
        text = self.text(rng)
        path = scratch / "note.md"
        path.write_text(text + "\n")
        tier = rng.choice(["short", "mid", "long", "long"])
        proc = self.tmem(side, "add", "add", "--json", "--no-dedup", "--tier", tier, "--file", str(path))
        if proc.returncode == 0:
            note_id = json.loads(proc.stdout)["note"]["id"]
            with self.lock:
                self.notes[note_id] = Note(note_id, side, [text])

    def ingest(self, side: str, rng: random.Random, scratch: Path) -> None:
        session = str(uuid.UUID(int=rng.getrandbits(128)))
        said = f"We decided the {self.text(rng, 5)} stays as it is"
        lines = []
        for i, (kind, content) in enumerate([("user", said), ("assistant", "Noted, I will keep it.")]):
            lines.append(
                {
                    "type": kind,
                    "sessionId": session,
                    "uuid": f"u{i}",
                    "parentUuid": f"u{i - 1}" if i else None,
                    "cwd": "/home/chaos/work",
                    "timestamp": f"2026-11-20T10:00:0{i}.000Z",
                    "message": {"role": kind, "content": content},
                }
            )
        path = scratch / "session.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        proc = self.tmem(side, "ingest", "ingest", "--json", "--no-extract", str(path))
        if proc.returncode == 0:
            with self.lock:
                self.sessions.append(json.loads(proc.stdout)["id"])

    def person(self, side: str) -> None:
        """Edits by hand, as a person in an editor would: plain writes, no tmem, no lock."""
        rng = random.Random(f"{self.seed}-{side}-person")
        vault = self.vault[side]
        mine: list[str] = []
        while not self.stop.wait(rng.uniform(0.2, 1.0)):
            choice = rng.random()
            if choice < 0.3 or not mine:
                rel = f"memory/long-term/hand-{side.lower()}-{len(mine):03d}.md"
                mine.append(rel)
                data = f"# Hand note {side} {len(mine)}\n\n{self.text(rng)}\n".encode()
            elif choice < 0.7:
                rel = rng.choice(mine)
                data = self.hand[(side, rel)] + f"- by hand {self.text(rng, 4)}\n".encode()
            else:
                self.append_by_hand(side, rng)
                continue
            (vault / rel).write_bytes(data)
            with self.lock, (self.base / "commands.log").open("a") as log:
                log.write(f"{side} person wrote {rel} ({len(data)} bytes) at {time.time():.3f}\n")
                self.report.ops["hand-write"] += 1
                self.hand[(side, rel)] = data

    def append_by_hand(self, side: str, rng: random.Random) -> None:
        """A line added by hand at the end of a note an agent of this side added."""
        with self.lock:
            ids = sorted(i for i, n in self.notes.items() if n.side == side and not n.forgotten)
        if not ids:
            return
        note = self.notes[rng.choice(ids)]
        path = find_note(self.vault[side], note.id)
        if path is None:
            return
        line = f"- hand {self.text(rng, 4)}"
        data = path.read_bytes()
        path.write_bytes(data + (b"" if data.endswith(b"\n") else b"\n") + line.encode() + b"\n")
        with self.lock, (self.base / "commands.log").open("a") as log:
            log.write(f"{side} person appended {line!r} to {path.name} at {time.time():.3f}\n")
            self.report.ops["hand-append"] += 1
            note.lines.append(line)

    def syncer(self, side: str) -> None:
        rng = random.Random(f"{self.seed}-{side}-sync")
        while not self.stop.wait(rng.uniform(0.2, 1.5)):
            self.tmem(side, "sync", "sync")

    def maintainer(self, side: str) -> None:
        rng = random.Random(f"{self.seed}-{side}-maintain")
        while not self.stop.wait(rng.uniform(3, 8)):
            self.tmem(side, "maintain", "maintain")

    def daemon_keeper(self) -> None:
        """Starts A's daemon again when the killer got it."""
        while not self.stop.wait(2.0):
            if self.daemon_pid() is None:
                self.tmem("A", "daemon-start", "daemon", "start", "--timeout", "60")

    def daemon_pid(self) -> int | None:
        for pid, argv in self.ours():
            if "daemon" in argv and "run" in argv:
                return pid
        return None

    def ours(self) -> list[tuple[int, list[str]]]:
        """Every live tmem process of this run (the marker is in its environment)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                environ = (entry / "environ").read_bytes()
                argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state == "Z" or f"CHAOS_RUN={self.token}".encode() not in environ:
                continue
            if any("tiered_memory" in a or a.endswith("tmem") for a in argv):
                found.append((int(entry.name), argv))
        return found

    def killer(self) -> None:
        rng = random.Random(f"{self.seed}-killer")
        while not self.stop.wait(rng.uniform(0.3, 2.0)):
            victims = sorted(self.ours())
            if not victims:
                continue
            pid, argv = rng.choice(victims)
            with self.lock:
                what = self.running.get(pid) or self.describe(argv)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            with self.lock:
                self.report.kills[what.split(" ", 1)[1]] += 1

    def describe(self, argv: list[str]) -> str:
        if "merge-driver" in argv:
            return "? merge-driver"
        if "daemon" in argv or any("daemon" in a for a in argv):
            return "A daemon"
        words = [a for a in argv[1:] if not a.startswith("-") and "/" not in a]
        return f"? {words[1] if len(words) > 1 else ' '.join(argv[-2:])}"

    # -- the run ----------------------------------------------------------------------------

    def run(self, seconds: float) -> Report:
        start = time.monotonic()
        self.setup()
        self.must(self.tmem("A", "setup", "daemon", "start", "--timeout", "60"), "daemon start on A")
        self.report.ops.clear()
        marker_time = time.time()
        threads = [
            threading.Thread(target=self.writer, args=(s, n)) for s in SIDES for n in range(self.writers)
        ]
        threads += [
            threading.Thread(target=f, args=(s,))
            for s in SIDES
            for f in (self.person, self.syncer, self.maintainer)
        ]
        threads += [threading.Thread(target=self.daemon_keeper), threading.Thread(target=self.killer)]
        for thread in threads:
            thread.run = self.guarded(thread.run)  # type: ignore[method-assign]
            thread.start()
        self.stop.wait(seconds)
        self.stop.set()
        for thread in threads:
            thread.join()
        self.settle()
        self.check(marker_time)
        self.report.seconds = time.monotonic() - start
        return self.report

    def guarded(self, body: Callable[[], None]) -> Callable[[], None]:
        """An actor that crashes is a failure of the run (the script's own), never a silent one."""

        def run() -> None:
            try:
                body()
            except Exception as exc:  # noqa: BLE001 - reported as a failure, then the run goes on
                self.fail(f"chaos script error: {exc.__class__.__name__}: {exc}")

        return run

    def settle(self) -> None:
        """Stop the daemon, then sync both sides twice, each within --settle seconds."""
        self.tmem("A", "final", "daemon", "stop", timeout=60)
        for side in ("A", "B", "A", "B"):
            began = time.monotonic()
            proc = self.tmem(side, "final", "sync", timeout=SETTLE)
            self.report.settle.append(time.monotonic() - began)
            if proc.returncode != 0:
                self.fail(f"final sync of {side} failed: {(proc.stderr or proc.stdout).strip()[-400:]}")

    # -- the invariants ---------------------------------------------------------------------

    def check(self, since: float) -> None:
        files = {side: note_files(self.vault[side]) for side in SIDES}
        for side in SIDES:
            for note_id, paths in sorted(files[side].items()):
                if len(paths) > 1 and note_id in self.notes:
                    # Both machines brought one note back at once (say, an archive here, a restore
                    # there): two files, one id. Nothing is lost, but commands by id refuse it.
                    self.report.twins.append(f"{side}: {note_id} in {len(paths)} files")
        for note in self.notes.values():
            if note.forgotten:
                continue
            for side in SIDES:
                paths = files[side].get(note.id, [])
                if not paths:
                    self.fail(f"note {note.id} (added on {note.side}) is missing on {side}")
                    continue
                # A sync that found the note in two files of different texts keeps the other
                # under `<id>-2` or `<id>-archived`, said in its report: nothing is lost there.
                kept = [p for other, found in files[side].items() if twin_of(other, note.id) for p in found]
                if kept:
                    self.report.twins.append(f"{side}: {note.id} kept a second file under another id")
                text = "\n".join(read(path) for path in (*paths, *kept))
                for line in note.lines:
                    if line not in text:
                        where = ", ".join(str(p.relative_to(self.vault[side])) for p in paths)
                        self.fail(f"note {note.id} on {side} lost {line!r} ({where})")
        for session in self.sessions:
            for side in SIDES:
                if session not in files[side]:
                    self.fail(f"session {session} is missing on {side}")
        for (_, rel), data in self.hand.items():
            for side in SIDES:
                path = self.vault[side] / rel
                if not path.exists():
                    self.fail(f"hand-written {rel} is missing on {side}")
                elif path.read_bytes() != data:
                    self.fail(
                        f"hand-written {rel} differs on {side}: ends {path.read_bytes()[-60:]!r}, "
                        f"the person's last write ends {data[-60:]!r}"
                    )
        for where in (*self.vault.values(), self.remote):
            fsck = self.git(where, "fsck", "--no-dangling", check=False)
            if fsck.returncode != 0 or fsck.stdout.strip():
                self.fail(f"git fsck in {where.name}: {(fsck.stdout + fsck.stderr).strip()[:300]}")
        for side, vault in self.vault.items():
            for path in walk(vault):
                if MARKER.search(path.read_text(errors="replace")):
                    self.fail(f"conflict markers in {side}:{path.relative_to(vault)}")
            status = self.git(vault, "status", "--porcelain", check=False).stdout.strip()
            if status:
                self.fail(f"{side} is not clean after the final syncs: {status[:300]}")
            if (
                self.git(vault, "rev-parse", "HEAD").stdout
                != self.git(self.remote, "rev-parse", "main").stdout
            ):
                self.fail(f"{side} is not at the remote's main after the final syncs")
            doctor = self.tmem(side, "final", "doctor", timeout=SETTLE)
            if doctor.returncode != 0:
                # What doctor can repair by itself (an embedding backlog, a fragmented index) is
                # not a broken vault; what remains after its --fix is.
                self.report.ops["doctor-fix"] += 1
                self.tmem(side, "final", "doctor", "--fix", timeout=SETTLE * 4)
                doctor = self.tmem(side, "final", "doctor", timeout=SETTLE)
            if doctor.returncode != 0:
                self.fail(f"tmem doctor on {side}: {(doctor.stdout + doctor.stderr).strip()[-400:]}")
        self.check_forward_only()
        self.check_outside(since)

    def check_forward_only(self) -> None:
        log = self.remote / "logs" / "refs" / "heads" / "main"
        lines = log.read_text().splitlines() if log.exists() else []
        if not lines:
            self.fail("the remote has no reflog for main")
        for line in lines:
            old, new = line.split()[:2]
            if (
                set(old) != {"0"}
                and self.git(self.remote, "merge-base", "--is-ancestor", old, new, check=False).returncode
            ):
                self.fail(
                    f"the remote's main moved from {old[:8]} to {new[:8]}, not a descendant (force-push)"
                )

    def check_outside(self, since: float) -> None:
        """Every command ran with HOME, TMPDIR and its working folder inside the run's folder; what
        tmem would write outside the vaults lands there, or in the real home's tmem folders, or in
        the machine's temporary folder under a name of its own."""
        for path in (self.base / "cwd").rglob("*"):
            self.fail(f"written in the working folder: {path.relative_to(self.base)}")
        home = Path.home()
        places = [home / ".config" / "tmem", home / ".cache" / "tmem", home / ".local" / "share" / "tmem"]
        for place in places:  # others' tmem may write there meanwhile: only a trace of ours counts
            for path in place.rglob("*") if place.is_dir() else []:
                if path.is_file() and path.stat().st_mtime > since and str(self.base) in read(path):
                    self.fail(f"written outside the vaults: {path}")
        tmp = Path(tempfile.gettempdir())
        for path in tmp.iterdir():
            name = path.name
            if (
                "tmem" in name
                and not name.startswith("tmem-chaos-")
                and path not in (self.base, *self.base.parents)
            ):
                try:
                    if path.lstat().st_mtime > since:
                        self.fail(f"written outside the vaults: {path}")
                except OSError:
                    continue


SETTLE = 60.0  # seconds a final sync or doctor may take; --settle


def walk(vault: Path) -> list[Path]:
    """The vault's files, without git's and tmem's own folders."""
    out = []
    for dirpath, dirnames, filenames in os.walk(vault):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".tmem")]
        out.extend(Path(dirpath, name) for name in filenames)
    return out


def read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:  # moved or removed by a command meanwhile
        return ""


def twin_of(other: str, note_id: str) -> bool:
    """Whether id `other` is the one a sync gave the second file of `note_id` (`sync.twins`)."""
    return (
        other.startswith(note_id + "-")
        and re.fullmatch(r"\d+|archived", other[len(note_id) + 1 :]) is not None
    )


def note_files(vault: Path) -> dict[str, list[Path]]:
    """Note id (its frontmatter's `id:`) -> its files, for every Markdown file of the vault."""
    found: dict[str, list[Path]] = {}
    for path in walk(vault):
        if path.suffix == ".md":
            match = FRONTMATTER_ID.match(read(path))
            if match:
                found.setdefault(match.group(1).strip(), []).append(path)
    return found


def find_note(vault: Path, note_id: str) -> Path | None:
    paths = note_files(vault).get(note_id)
    return paths[0] if paths else None


def main() -> int:
    global SETTLE
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the chaos lasts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--writers", type=int, default=3, help="agent processes per side")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one command may take")
    parser.add_argument("--settle", type=float, default=SETTLE, help="seconds a final sync may take")
    parser.add_argument("--keep", type=Path, help="run in this (new) folder and keep it")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    SETTLE = args.settle
    if args.keep:
        args.keep.mkdir(parents=True)
        base = args.keep.resolve()
    else:
        base = Path(tempfile.mkdtemp(prefix="tmem-chaos-")).resolve()
    chaos = Chaos(base, args.seed, args.writers, args.timeout)
    try:
        report = chaos.run(args.seconds)
    finally:
        chaos.stop.set()
        for pid, _ in chaos.ours():  # a daemon a failed setup left behind
            os.kill(pid, signal.SIGKILL)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(f"{report.seconds:.0f} s, seed {report.seed}, {args.writers} writers per side")
        print("operations: " + ", ".join(f"{k} {v}" for k, v in sorted(report.ops.items())))
        print("kills: " + ", ".join(f"{k} {v}" for k, v in sorted(report.kills.items())))
        print(
            f"notes added: {len(chaos.notes)}, sessions: {len(chaos.sessions)}, hand files: {len(chaos.hand)}"
        )
        print("final syncs (s): " + ", ".join(f"{s:.1f}" for s in report.settle))
        for what, count in report.exits.most_common(20):
            print(f"  non-zero exit x{count}: {what}")
        for twin in report.twins:
            print(f"  one id, two files: {twin}")
        print(f"failures: {len(report.failures)}")
        for failure in report.failures:
            print(f"  FAIL {failure}")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
