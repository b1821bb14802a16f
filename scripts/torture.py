#!/usr/bin/env python3
"""Try to lose or corrupt data the way a busy, crashing computer would, and count what survives.

1. Parallel writers: W processes of each write command at once (add, decide, lesson add, session
   append, MCP remember). Every writer must exit 0, every note must be on disk and in git, each in
   its own commit. The CLI writers are forked from one Python that imported the application and
   released together (`burst`), so they race from one instant; each MCP writer is a `tmem mcp`
   server this script talks to over stdio, as an agent does.
   The same for the commands that rewrite one existing file, all W on the same one (update
   --append and --set of one note, entity update --note, project update --note, task add,
   profile set, st set, MCP update): every writer's change must be in the committed file.
2. kill -9: each command (add, update, maintain, project complete, forget --entity, sync) is killed at a
   random moment K times (a run that ends before its kill is run again with fresh work, up to
   three times, so a kill lands in nearly every round). After every kill the next command must succeed; at the end every note a
   command reported written must be in git and the working tree must be clean after one more command.

3. Encrypted sync (`--encrypted-loops N`): two clones of a vault with `encrypt: sensitive` and
   one passphrase append to the same few sealed notes and sync in random order, N loops, some
   syncs without the key. At the end (what waits for the key resolved, both clones synced) every
   appended line must be in the decrypted notes, every envelope must authenticate, and no appended
   line may be in any git object in plain text.

Prints a table (or --json) of writers, kills, notes expected vs present and lost. Exit 1 when
anything was lost or a next command failed. Every command has a time limit (--round-timeout): one
that hangs is killed and counted as a failure, so a stuck run reports instead of eating CI's time.
The setup a killed command needs (a project with decisions, an entity with notes) runs as one
process per round, not one per note, and every vault is a copy of one `tmem init`: setup is not
what is being tested, and on a two-core machine Python start-up was most of the run's time. CI
runs it with small counts and a fixed seed (tests/e2e/test_torture.py); larger counts are for
the README figures:

    .venv/bin/python scripts/torture.py --writers 20 50 100 --kills 30 --seed 7
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FAKE = "embeddings:\n  provider: fake\ndaemon:\n  autocommit_seconds: 0\n"
NEW_NOTE_COMMANDS = ("add", "decide", "lesson", "session-append", "mcp-remember")
# Each of these rewrites one existing file: all writers of a run change the same one.
REWRITE_COMMANDS = (
    "update-append",
    "update-set",
    "entity-note",
    "project-note",
    "task-add",
    "profile-set",
    "st-set",
    "mcp-update",
)
WRITE_COMMANDS = NEW_NOTE_COMMANDS + REWRITE_COMMANDS
KILL_COMMANDS = ("add", "update", "maintain", "project-complete", "forget-entity", "sync")
SHARED_NOTE = "memory/long-term/shared.md"  # the note every `update` writer changes
SHARED = "shared"  # the project and the entity every writer of theirs changes

# Runs several tmem commands in one process (setup only): exits non-zero on the first that fails.
BATCH = textwrap.dedent(
    """
    import json, sys
    from tiered_memory.cli import cli

    for argv in json.loads(sys.argv[1]):
        try:
            cli.main(args=argv, prog_name="tmem", standalone_mode=False)
        except SystemExit as exit:
            if exit.code:
                print(f"{argv}: exit {exit.code}", file=sys.stderr)
                sys.exit(2)
    """
)
ROUND_TIMEOUT = 300.0  # seconds for one command; --round-timeout
ATTEMPTS = 3  # runs of a killed command per round, until one is still running when its kill comes

# Starts one `tmem` command per argv (argv[1], JSON) at one instant, each in a process of its
# own: forked from this one Python once it has imported the CLI and the application, and all
# released together, so N writers race from the same moment rather than from N interpreters
# booting at different speeds, and no writer pays the start-up that a burst of N would pay N
# times on a two-core machine. Each child's stdout and stderr go to files in argv[2]; prints the
# exit codes (JSON).
BURST = textwrap.dedent(
    """
    import contextlib, importlib, json, os, pkgutil, sys, traceback
    import tiered_memory.cli
    from tiered_memory.cli.main import cli

    preload = ["tiered_memory.app.local", "tiered_memory.app.memory", "tiered_memory.index.indexer"]
    preload += [f"tiered_memory.cli.{m.name}" for m in pkgutil.iter_modules(tiered_memory.cli.__path__)]
    for name in preload:
        if name != "tiered_memory.cli.mcp":  # the SDK: no writer of a burst needs it
            with contextlib.suppress(ImportError):  # only a speed-up: a moved module is loaded late
                importlib.import_module(name)
    argvs, folder = json.loads(sys.argv[1]), sys.argv[2]
    go, release = os.pipe()
    children = []
    for i, argv in enumerate(argvs):
        pid = os.fork()
        if pid:
            children.append(pid)
            continue
        code = 1
        try:
            os.close(release)
            for fd, suffix in ((1, "out"), (2, "err")):
                os.dup2(os.open(os.path.join(folder, f"{i}.{suffix}"), os.O_WRONLY | os.O_CREAT), fd)
            os.read(go, 1)  # returns when the parent closes `release`: every child at once
            cli.main(args=argv, prog_name="tmem")
            code = 0
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(release)
    print(json.dumps([os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]))
    """
)


def burst(
    argvs: list[list[str]], folder: Path, timeout: float, env: dict[str, str] | None = None
) -> list[str | None]:
    """Run `tmem ARGV` for every argv at one instant (see BURST); for each, its error (exit code
    and last line of stderr) or None when it exited 0. A burst still running after `timeout`
    seconds is killed, every one of its processes, and each counts as a failure."""
    folder.mkdir(parents=True, exist_ok=True)
    launcher = subprocess.Popen(
        [sys.executable, "-c", BURST, json.dumps(argvs), str(folder)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # its process group: the launcher and every writer it forked
    )
    try:
        out, err = launcher.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(launcher.pid, signal.SIGKILL)
        launcher.communicate()
        return [f"still running after {timeout:.0f} s (killed)"] * len(argvs)
    if launcher.returncode != 0:
        return [f"the launcher failed: {last_line(err)}"] * len(argvs)
    problems: list[str | None] = []
    for i, code in enumerate(json.loads(out)):
        stderr = (folder / f"{i}.err").read_text(encoding="utf-8", errors="replace")
        problems.append(None if code == 0 else f"exit {code}: {last_line(stderr)}")
    return problems


# An agent's conversation with `tmem mcp` over stdio, as JSON-RPC lines: the handshake, then
# one tool call. The script speaks it itself, so a writer is one server process (as an agent's
# is), not a server plus a client process loading the MCP SDK beside it.
MCP_PROTOCOL = "2025-06-18"


def mcp_line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode()


def mcp_answer(proc: subprocess.Popen[bytes], request_id: int) -> dict[str, Any]:
    """The server's answer to `request_id` (notifications it sends meanwhile are skipped)."""
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise EOFError("the server closed its output")
        message = json.loads(line)
        if message.get("id") == request_id:
            return dict(message)


def mcp_call(proc: subprocess.Popen[bytes], tool: str, arguments: dict[str, Any]) -> str | None:
    """Initialize the server and call `tool` (its input is left open, for the caller to close);
    the error (a tool error, an error answer, a server gone), or None when the call succeeded."""
    assert proc.stdin is not None
    client = {"name": "torture", "version": "0"}
    params = {"protocolVersion": MCP_PROTOCOL, "capabilities": {}, "clientInfo": client}
    try:
        proc.stdin.write(mcp_line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
        proc.stdin.flush()
        mcp_answer(proc, 1)
        call = {"name": tool, "arguments": arguments}
        proc.stdin.write(mcp_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        proc.stdin.write(mcp_line({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}))
        proc.stdin.flush()
        answer = mcp_answer(proc, 2)
    except (OSError, ValueError, EOFError) as exc:
        return f"{tool}: {exc.__class__.__name__}: {exc}"
    result = answer.get("result")
    if not isinstance(result, dict):
        return f"{tool}: {answer.get('error')}"
    if result.get("isError"):
        return f"{tool}: {result['content'][0]['text']}"
    return None


@dataclass
class Tally:
    what: str
    runs: int = 0
    ok: int = 0
    failed: list[str] = field(default_factory=list)
    expected: int = 0
    present: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    @property
    def lost(self) -> int:
        return self.expected - self.present


def run(argv: list[str], timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """`argv`, killed after `timeout` (default --round-timeout): then exit -9 and a one-line error."""
    limit = ROUND_TIMEOUT if timeout is None else timeout
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, -9, "", f"timed out after {limit:.0f} s: {argv[3:6]}")


def tmem(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "tiered_memory", "--vault", str(vault), *args])


def tmem_batch(vault: Path, commands: list[list[str]]) -> subprocess.CompletedProcess[str]:
    argvs = [["--vault", str(vault), *c] for c in commands]
    return run([sys.executable, "-c", BATCH, json.dumps(argvs)])


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def git(vault: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(vault), *args], capture_output=True, text=True, check=True).stdout


def committed_with(vault: Path, token: str) -> bool:
    """Whether HEAD holds a file containing `token` (the unique word each writer wrote)."""
    return (
        subprocess.run(
            ["git", "-C", str(vault), "grep", "-q", "-F", token, "HEAD", "--"], check=False
        ).returncode
        == 0
    )


TEMPLATE = "template"  # the first vault, made by `tmem init`; each run copies it


def new_vault(base: Path, name: str) -> Path:
    """A fresh vault of its own for one run: a copy of one `tmem init` (plus the fast embedder)
    rather than an init per run, which would be a Python start-up per run proving nothing new."""
    template = base / TEMPLATE
    if not template.exists():
        subprocess.run(
            [sys.executable, "-m", "tiered_memory", "init", str(template)], capture_output=True, check=True
        )
        # The fast deterministic embedder: this is about files and git.
        (template / "tmem.yaml").write_text(FAKE)
        git(template, "add", "-A")
        git(template, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "torture: fast embedder")
    root = base / name
    shutil.copytree(template, root, symlinks=True)
    return root


def shared_note(vault: Path) -> None:
    """A note written by hand (and committed) for `update` writers to change."""
    (vault / SHARED_NOTE).write_text(
        "---\nid: shared-note\ntitle: Shared note\n---\n# Shared note\n\nLines:\n"
    )
    git(vault, "add", "-A")
    git(vault, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "torture: a shared note")


def rewrite_target(vault: Path, command: str, tally: Tally) -> None:
    """What the writers of a rewrite command all change, made before they start."""
    if command in ("update-append", "update-set", "mcp-update"):
        shared_note(vault)
    elif command == "entity-note":
        setup(tally, -1, tmem(vault, "entity", "add", SHARED))
    elif command in ("project-note", "task-add"):
        setup(tally, -1, tmem(vault, "project", "new", SHARED))


Call = tuple[str, dict[str, Any]]  # an MCP tool's name and arguments
# One writer: its `tmem` arguments, and the MCP tool call it makes (None: a CLI command).
Writer = tuple[list[str], Call | None]


def writer(vault: Path, command: str, token: str) -> Writer:
    base = ["--vault", str(vault)]
    text = f"Adopt the same policy {token}"
    if command == "update-append":
        return [*base, "update", SHARED_NOTE, "--append", f"- line {token}"], None
    if command == "update-set":
        return [*base, "update", SHARED_NOTE, "--set", f"{token}={token}"], None
    if command == "entity-note":
        return [*base, "entity", "update", SHARED, "--note", f"met {token}"], None
    if command == "project-note":
        return [*base, "project", "update", SHARED, "--note", f"progress {token}"], None
    if command == "task-add":
        return [*base, "task", "add", "-p", SHARED, f"task {token}"], None
    if command == "profile-set":
        return [*base, "profile", "set", token, f"value of {token}"], None
    if command == "st-set":
        return [*base, "st", "set", token, f"value of {token}"], None
    if command == "mcp-update":
        return [*base, "mcp"], ("update", {"id": SHARED_NOTE, "append": f"- line {token}"})
    if command == "add":
        return [*base, "add", "--json", "--no-dedup", text], None
    if command == "decide":
        return [*base, "decide", "--json", text, "--why", "everyone agreed"], None
    if command == "lesson":
        return [*base, "lesson", "add", "--json", text], None
    if command == "session-append":
        return [*base, "session", "append", "--json", text], None
    if command == "mcp-remember":
        return [*base, "mcp"], ("remember", {"text": text, "category": "fact"})
    raise ValueError(command)


def finish(proc: subprocess.Popen[bytes], call: Call) -> str | None:
    """Let one MCP server run to its end, making its tool call first; its error, or None."""
    try:
        error = mcp_call(proc, *call)
        proc.communicate()  # closes its input: the agent went away, the server stops
    except Exception as exc:  # noqa: BLE001 - a writer's failure is counted, never raised
        return f"{exc.__class__.__name__}: {exc}"
    if proc.returncode != 0:
        return f"exit {proc.returncode}"
    return error


def mcp_writers(argvs: list[list[str]], calls: list[Call]) -> list[str | None]:
    """One `tmem mcp` server per writer, all started together, each making its one call."""
    errs = [tempfile.TemporaryFile() for _ in argvs]  # a full stderr pipe nobody reads would block
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tiered_memory", *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
        )
        for argv, err in zip(argvs, errs, strict=True)
    ]
    outcome: dict[int, str | None] = {}
    threads = [
        threading.Thread(target=lambda i=i, c=call: outcome.__setitem__(i, finish(procs[i], c)), daemon=True)
        for i, call in enumerate(calls)
    ]
    assert len(threads) == len(procs)
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + ROUND_TIMEOUT
    problems: list[str | None] = []
    for i, thread in enumerate(threads):
        thread.join(max(1.0, deadline - time.monotonic()))
        if thread.is_alive():
            procs[i].kill()
            thread.join()
            problems.append(f"still running after {ROUND_TIMEOUT:.0f} s (killed)")
            continue
        errs[i].seek(0)
        stderr = last_line(errs[i].read().decode("utf-8", "replace"))
        problem = outcome.get(i, "no outcome")
        problems.append(None if problem is None else f"{problem}: {stderr}")
    for err in errs:
        err.close()
    return problems


def parallel_writers(base: Path, command: str, writers: int) -> Tally:
    vault = new_vault(base, f"par-{command}-{writers}")
    tally = Tally(f"{writers} parallel `{command}`", runs=writers)
    tokens = [f"tok{command[:3]}{writers}x{i:04d}" for i in range(writers)]
    rewrite_target(vault, command, tally)
    before = len(git(vault, "log", "--format=%H").split())
    plan = [writer(vault, command, t) for t in tokens]
    argvs = [argv for argv, _call in plan]
    calls = [call for _argv, call in plan if call is not None]
    if calls:
        problems = mcp_writers(argvs, calls)
    else:
        problems = burst(argvs, base / f"out-{command}-{writers}", ROUND_TIMEOUT)
    for token, problem in zip(tokens, problems, strict=True):
        if problem is None:
            tally.ok += 1
        else:
            tally.failed.append(f"{token}: {problem}")
    tally.expected = writers
    # Session messages all go to one live session note, and a rewrite command's changes to its one
    # file: each must be in it, one commit per writer.
    tally.present = sum(1 for t in tokens if committed_with(vault, t))
    commits = len(git(vault, "log", "--format=%H").split()) - before
    if commits < tally.ok:
        tally.failed.append(f"{commits} commits for {tally.ok} writes")
    if git(vault, "status", "--porcelain").strip():
        tally.failed.append("uncommitted changes left behind")
    return tally


# ---- two clones, encrypted notes --------------------------------------------------------------

ENCRYPTED = "encrypted-sync"
PASSPHRASE = "torture passphrase, not a secret"
SEALED_NAMES = ("zed-0", "zed-1", "zed-2")  # profiles: stored encrypted under `encrypt: sensitive`

# Reads a clone with the key: envelopes that do not authenticate, records still waiting, which
# tokens the decrypted notes hold and which ones any git object holds in plain text.
SEALED_CHECK = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from pathlib import Path
    from tiered_memory.model import envelope
    from tiered_memory.storage import crypto

    root, tokens = Path(sys.argv[1]), json.loads(sys.argv[2])
    key = crypto.unlock(root, os.environ["TMEM_PASSPHRASE"])
    bad, texts = [], []
    for path in sorted((root / "memory").rglob("*")):
        rel = path.relative_to(root).as_posix()
        if not path.is_file():
            continue
        data = path.read_bytes()
        if rel.endswith(".tmem-conflict"):
            bad.append(f"{rel}: still waiting for a merge")
        elif envelope.is_envelope(data):
            try:
                texts.append(envelope.open_envelope(key, rel, data).decode("utf-8"))
            except (envelope.Tampered, envelope.EnvelopeError) as exc:
                bad.append(f"{rel}: {exc}")
        else:
            texts.append(data.decode("utf-8", "replace"))
    objects = subprocess.run(
        ["git", "-C", str(root), "cat-file", "--batch-all-objects", "--batch"], capture_output=True
    ).stdout
    print(json.dumps({
        "bad": bad,
        "found": [t for t in tokens if any(t in text for text in texts)],
        "leaked": [t for t in tokens if t.encode() in objects],
    }))
    """
)


def sealed_env(key: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TMEM_PASSPHRASE"}
    env["TMEM_AUTOSTART"] = "0"  # a daemon would outlive the run; every command here is its own
    if key:
        env["TMEM_PASSPHRASE"] = PASSPHRASE
    return env


def tmem_sealed(vault: Path, *args: str, key: bool = True) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "tiered_memory", "--vault", str(vault), *args]
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=ROUND_TIMEOUT, env=sealed_env(key)
        )
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, -9, "", f"timed out after {ROUND_TIMEOUT:.0f} s: {args[:2]}")


def encrypted_sync(base: Path, loops: int, rng: random.Random) -> Tally:
    """Two clones append to the same sealed notes and sync in random order (see the docstring)."""
    tally = Tally(f"two clones, encrypted notes, {loops} loops")
    remote = base / "remote-sealed.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    laptop = new_vault(base, "sealed-laptop")
    (laptop / "tmem.yaml").write_text(FAKE + "privacy:\n  encrypt: sensitive\n")
    git(laptop, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "torture: encryption on")
    git(laptop, "remote", "add", "origin", str(remote))

    def step(label: str, done: subprocess.CompletedProcess[str]) -> bool:
        if done.returncode != 0:
            tally.failed.append(f"{label}: exit {done.returncode}: {last_line(done.stderr)}")
        return done.returncode == 0

    step("unlock --new", tmem_sealed(laptop, "unlock", "--new"))
    for name in SEALED_NAMES:
        step(f"entity add {name}", tmem_sealed(laptop, "entity", "add", name, "--kind", "person"))
    step("first sync", tmem_sealed(laptop, "sync"))
    desktop = base / "sealed-desktop"
    subprocess.run(["git", "clone", "-q", str(remote), str(desktop)], check=True)
    step("init --adopt", tmem_sealed(desktop, "init", "--adopt", str(desktop)))
    clones = {"laptop": laptop, "desktop": desktop}
    tokens: list[str] = []
    for loop in range(loops):
        for label, clone in clones.items():
            token = f"toksealed{label[0]}{loop:04d}"
            name = rng.choice(SEALED_NAMES)
            if step(
                f"loop {loop}: {label} update", tmem_sealed(clone, "entity", "update", name, "--note", token)
            ):
                tokens.append(token)
        order = list(clones.items())
        rng.shuffle(order)
        for label, clone in order:
            locked = rng.random() < 0.25  # the daemon's key is gone, or the keyring is down
            tally.runs += 1
            if step(
                f"loop {loop}: {label} sync{' (locked)' if locked else ''}",
                tmem_sealed(clone, "sync", key=not locked),
            ):
                tally.ok += 1
    # Converge, resolve what waits for the key (keeping both versions), converge again.
    for label, clone in (("laptop", laptop), ("desktop", desktop), ("laptop", laptop)):
        step(f"final sync: {label}", tmem_sealed(clone, "sync"))
    for record in sorted(laptop.glob("memory/**/*.tmem-conflict")):
        rel = record.relative_to(laptop).as_posix().removesuffix(".tmem-conflict")
        step(f"resolve {rel}", tmem_sealed(laptop, "resolve", rel, "--no-edit", "--force"))
    for label, clone in (("laptop", laptop), ("desktop", desktop)):
        step(f"last sync: {label}", tmem_sealed(clone, "sync"))
    if git(laptop, "rev-parse", "HEAD") != git(desktop, "rev-parse", "HEAD"):
        tally.failed.append("the clones did not converge on one commit")
    tally.expected = len(tokens) * len(clones)
    for label, clone in clones.items():
        argv = [sys.executable, "-c", SEALED_CHECK, str(clone), json.dumps(tokens)]
        done = subprocess.run(
            argv, capture_output=True, text=True, env=sealed_env(True), timeout=ROUND_TIMEOUT
        )
        if done.returncode != 0:
            tally.failed.append(f"check of the {label}: {last_line(done.stderr)}")
            continue
        seen = json.loads(done.stdout)
        tally.present += len(seen["found"])
        tally.failed += [f"{label}: {problem}" for problem in seen["bad"]]
        tally.failed += [f"{label}: {token} in a git object in plain text" for token in seen["leaked"]]
        if git(clone, "status", "--porcelain").strip():
            tally.failed.append(f"{label}: uncommitted changes left behind")
    return tally


# ---- kill -9 ------------------------------------------------------------------------------------


def prepare(vault: Path, command: str, round_: int, tally: Tally) -> list[str]:
    """Give the command work to do; returns the argv of the command to kill."""
    if command == "add":
        return ["add", "--json", "--no-dedup", f"Kill me maybe tokadd{round_:04d}"]
    if command == "update":
        return ["update", SHARED_NOTE, "--append", f"- line tokupd{round_:04d}"]
    if command == "maintain":
        old = "2020-01-01T00:00:00Z"
        for i in range(30):
            path = vault / f"memory/short-term/old-{round_}-{i}.md"
            path.write_text(
                f"---\nid: old-{round_}-{i}\nupdated: {old}\ncreated: {old}\n---\n# Old {i}\n\nstale note\n"
            )
        setup(tally, round_, tmem(vault, "reindex", "--keyword-only"))
        git(vault, "add", "-A")
        git(vault, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "torture: stale notes")
        return ["maintain", "--json"]
    if command == "project-complete":
        pid = f"p{round_:04d}"
        decisions = [
            ["decide", f"Decision {i} of {pid} tokpc{round_:04d}x{i}", "--why", "w", "--project", pid]
            for i in range(5)
        ]
        setup(tally, round_, tmem_batch(vault, [["project", "new", pid], *decisions]))
        return ["project", "complete", pid]
    if command == "forget-entity":
        name = f"Person {round_:04d}"
        adds = [["add", "--no-dedup", "--entity", name, f"{name} likes thing {i}"] for i in range(5)]
        setup(tally, round_, tmem_batch(vault, [["entity", "add", name], *adds]))
        return ["forget", "--entity", name, "--yes"]
    if command == "sync":
        (vault / f"memory/long-term/hand-{round_}.md").write_text(f"# Hand {round_}\n\ntoksync{round_:04d}\n")
        return ["sync"]
    raise ValueError(command)


def setup(tally: Tally, round_: int, done: subprocess.CompletedProcess[str]) -> None:
    """A setup step failing after an earlier kill is a finding too: the next command must work."""
    if done.returncode != 0:
        tally.failed.append(f"round {round_}: setup failed: {last_line(done.stderr)}")


def kill_after(proc: subprocess.Popen[str], delay: float) -> bool:
    """SIGKILL `proc` once `delay` seconds have passed; False when it ended before then."""
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        return True
    return False


def kill_rounds(base: Path, command: str, kills: int, rng: random.Random) -> Tally:
    vault = new_vault(base, f"kill-{command}")
    if command == "sync":
        remote = base / f"remote-{command}.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
        git(vault, "remote", "add", "origin", str(remote))
    tally = Tally(f"kill -9 `{command.replace('-', ' ')}`")
    if command == "sync":
        setup(tally, -1, tmem(vault, "sync"))
    if command == "update":  # every kill lands in a rewrite of the same note
        shared_note(vault)
    reported: list[str] = []
    # How long the command takes unkilled, so kills land anywhere inside it.
    argv = prepare(vault, command, 9999, tally)
    start = time.monotonic()
    calibration = tmem(vault, *argv)
    span = max(0.2, time.monotonic() - start)
    if calibration.returncode == 0 and command in ("add", "update"):
        reported.append(f"tok{command[:3]}9999")
    for round_ in range(kills):
        # A run that ends before its kill lands is tried again with fresh work, and the next kill
        # is drawn within that run's own length: a slow calibration run must not push every kill
        # past the end of the faster runs that follow it.
        for attempt in range(ATTEMPTS):
            argv = prepare(vault, command, round_ * ATTEMPTS + attempt, tally)
            proc = subprocess.Popen(
                [sys.executable, "-m", "tiered_memory", "--vault", str(vault), *argv],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            started = time.monotonic()
            landed = kill_after(proc, rng.uniform(0.0, span * 1.1))
            if not landed:
                span = max(0.05, time.monotonic() - started)
            try:
                proc.communicate(timeout=ROUND_TIMEOUT)
            except subprocess.TimeoutExpired:  # finished "naturally" but hangs: kill it and say so
                proc.kill()
                proc.communicate()
                tally.failed.append(
                    f"round {round_}: `{' '.join(argv[:2])}` still running after the kill window"
                )
            if proc.returncode == 0 and command in ("add", "update"):
                # A rewrite that reported success keeps its line through every later kill.
                reported.append(f"tok{command[:3]}{round_ * ATTEMPTS + attempt:04d}")
            if landed:
                tally.runs += 1
                break
        nxt = tmem(
            vault, "add", "--no-dedup", f"after kill {command} {round_} toknext{command[:3]}{round_:04d}"
        )
        if nxt.returncode != 0:
            tally.failed.append(f"round {round_}: the next command failed: {last_line(nxt.stderr)}")
        else:
            tally.ok += 1
            reported.append(f"toknext{command[:3]}{round_:04d}")
    final = tmem(vault, "status", "--json")
    if final.returncode != 0:
        tally.failed.append(f"status after the kills failed: {last_line(final.stderr)}")
    if command == "maintain":
        done = tmem(vault, "maintain", "--json")
        if done.returncode != 0:
            tally.failed.append(f"a last maintain failed: {last_line(done.stderr)}")
    dirty = [line for line in git(vault, "status", "--porcelain").splitlines() if line.strip()]
    if dirty and command != "sync":  # sync's hand-written files are committed by the next sync
        tally.failed.append(f"{len(dirty)} uncommitted path(s) left: {dirty[:3]}")
    tally.expected = len(reported)
    tally.present = sum(1 for t in reported if committed_with(vault, t))
    return tally


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(run: Any, *args: Any) -> Tally:
    """`run(*args)` with its wall-clock and CPU seconds (the CPU figure holds on a busy machine)."""
    start, cpu = time.monotonic(), children_cpu()
    tally: Tally = run(*args)
    tally.seconds = round(time.monotonic() - start, 1)
    tally.cpu_seconds = round(children_cpu() - cpu, 1)
    return tally


def main() -> int:
    global ROUND_TIMEOUT
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--writers", type=int, nargs="+", default=[20], help="parallel writers per command")
    parser.add_argument("--kills", type=int, default=30, help="kills per command")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--commands", nargs="+", default=None, help="limit to these commands")
    parser.add_argument(
        "--round-timeout",
        type=float,
        default=ROUND_TIMEOUT,
        help="seconds one command (or one round of parallel writers) may take before it counts as hung",
    )
    parser.add_argument(
        "--encrypted-loops",
        type=int,
        default=0,
        help=f"loops of the two-clone encrypted sync (`{ENCRYPTED}` in --commands: run only it)",
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    ROUND_TIMEOUT = args.round_timeout
    # Every writer its own process, as in CI: no daemon started by one of them serialises the rest
    # (and outlives the run).
    os.environ["TMEM_AUTOSTART"] = "0"
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="tmem-torture-"))
    tallies: list[Tally] = []
    started = time.monotonic()
    for command in WRITE_COMMANDS:
        if args.commands and command not in args.commands:
            continue
        for writers in args.writers:
            tallies.append(timed(parallel_writers, base, command, writers))
    for command in KILL_COMMANDS:
        if args.commands and command not in args.commands:
            continue
        if args.kills:
            tallies.append(timed(kill_rounds, base, command, args.kills, rng))
    if args.encrypted_loops and (not args.commands or ENCRYPTED in args.commands):
        tallies.append(timed(encrypted_sync, base, args.encrypted_loops, rng))
    elapsed = time.monotonic() - started
    cpu = children_cpu()  # what the run costs whatever else the machine does
    bad = [t for t in tallies if t.lost or t.failed]
    if args.json:
        print(
            json.dumps(
                {
                    "seconds": round(elapsed, 1),
                    "cpu_seconds": round(cpu, 1),
                    "runs": [asdict(t) | {"lost": t.lost} for t in tallies],
                }
            )
        )
    else:
        print(
            "| run | runs / kills | exit 0 | notes expected | present | lost | seconds (CPU) |"
            f"  total {elapsed:.0f} s, {cpu:.0f} CPU s"
        )
        print("|---|---|---|---|---|---|---|")
        for t in tallies:
            print(
                f"| {t.what} | {t.runs} | {t.ok} | {t.expected} | {t.present} | {t.lost} "
                f"| {t.seconds:.0f} ({t.cpu_seconds:.0f}) |"
            )
            for problem in t.failed[:5]:
                print(f"|   problem: {problem} | | | | | | |")
    if not args.keep:
        subprocess.run(["rm", "-rf", str(base)], check=False)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
