#!/usr/bin/env python3
"""What a person waits for when no daemon runs: every command a new user or an agent's hook
starts cold, timed as a whole process (not a test: prints a table).

    .venv/bin/python scripts/bench_cold.py [--notes 300] [--runs 3] [--busy N] [--only TEXT] [--out DIR]

A synthetic vault (bench_search.build_vault: notes of 80-200 words) is built and indexed with
vectors once. Then each command runs --runs times with no daemon running before it: the daemon a
command starts in the background (as a hybrid search or a hook does) is stopped after it, outside
the timing. `--busy N` runs N CPU hogs beside the benchmark (a laptop is never idle).

Columns: the median and the slowest wall time, and whether the command printed anything on
stderr within its first second (a command that waits longer must show what it waits for).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_search import build_vault, load_line, start_hogs, stop_hogs  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TMEM = str(Path(sys.executable).parent / "tmem")
PROMPT = json.dumps({"session_id": "bench", "prompt": "how do we roll back a database migration", "cwd": "."})
START = json.dumps({"session_id": "bench", "source": "startup", "cwd": "."})
# The session a compaction or a session's end stores (`tmem ingest` of the agent's transcript).
TRANSCRIPT = [
    ("user", "The tile server must keep its cache in Redis; always run migrations with a dry run first."),
    ("assistant", "Understood. I set the cache to Redis and added a dry-run step before every migration."),
    ("user", "We decided to roll back the schema change if the dry run reports a lock longer than 5 s."),
    ("assistant", "Noted: a lock over 5 s in the dry run means the schema change is rolled back."),
]
# What an agent waits for: the server started, `initialize` and `tools/list` answered. The agent's
# own MCP client is already loaded, so this one speaks JSON-RPC by hand: importing the SDK's
# client (~1 s here) would be timed as the server's.
MCP_SCRIPT = """
import json, subprocess, sys
server = subprocess.Popen([sys.argv[1], "--vault", sys.argv[2], "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def ask(message):
    server.stdin.write((json.dumps(message) + "\\n").encode())
    server.stdin.flush()
    return json.loads(server.stdout.readline()) if "id" in message else None
hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
assert "result" in ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
assert ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"]
server.stdin.close()  # the server stops by itself; its shutdown is not what the agent waits for
"""


def transcript_payload(scratch: Path, event: str) -> Callable[[], str]:
    """A hook's stdin naming a new Claude Code transcript each run (a session ingested once is
    not stored again, so every run must bring a session of its own), kept outside the vault."""
    runs = iter(range(1, 1_000_000))

    def payload() -> str:
        run = next(runs)
        session = f"bench-{event}-{run}"
        lines = []
        for i, (role, text) in enumerate(TRANSCRIPT):
            content: object = text if role == "user" else [{"type": "text", "text": text}]
            lines.append(
                {
                    "type": role,
                    "sessionId": session,
                    "cwd": ".",
                    "message": {"role": role, "content": content},
                    "timestamp": f"2026-11-20T09:{run % 60:02d}:{i:02d}Z",
                }
            )
        file = scratch / f"{session}.jsonl"
        file.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
        return json.dumps({"session_id": session, "transcript_path": str(file), "cwd": "."})

    return payload


def commands(vault: Path, scratch: Path) -> list[tuple[str, list[str], str | Callable[[], str] | None]]:
    """(label, argv, stdin) for every command timed; stdin made anew per run where it is a function."""
    t = [TMEM, "--vault", str(vault)]
    n = iter(range(1, 1_000_000))
    note = next(iter(sorted((vault / "memory").rglob("*.md"))), None)
    return [
        ("tmem --help", [TMEM, "--help"], None),
        ("add", [*t, "add", "--", f"Bench fact {next(n)}: the tile cache lives in Redis"], None),
        ("remember (stdin)", [*t, "remember"], "Bench: the staging cluster runs three nodes\n"),
        ("decide", [*t, "decide", "Use Postgres for the sync server", "--why", "bench"], None),
        ("lesson add", [*t, "lesson", "add", "Flaky CI came from naive datetimes"], None),
        ("update --append", [*t, "update", str(note), "--append", "Bench: checked again."], None),
        ("search --mode keyword", [*t, "search", "--mode", "keyword", "database migration"], None),
        ("search (hybrid)", [*t, "search", "database migration rollback"], None),
        ("context", [*t, "context"], None),
        ("hook session-start", [*t, "hook", "session-start"], START),
        ("hook user-prompt-submit", [*t, "hook", "user-prompt-submit"], PROMPT),
        ("hook pre-compact", [*t, "hook", "pre-compact"], transcript_payload(scratch, "pre-compact")),
        ("hook session-end", [*t, "hook", "session-end"], transcript_payload(scratch, "session-end")),
        ("MCP initialize + tools/list", [sys.executable, "-c", MCP_SCRIPT, TMEM, str(vault)], None),
    ]


def timed(
    argv: list[str], stdin: str | Callable[[], str] | None, env: dict[str, str]
) -> tuple[float, bool, int]:
    """Wall seconds, whether stderr had something within the first second, the exit code."""
    if callable(stdin):
        stdin = stdin()
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    first: list[float] = []

    def watch() -> None:
        assert proc.stderr is not None
        if proc.stderr.read(1):
            first.append(time.perf_counter() - start)
        proc.stderr.read()

    reader = threading.Thread(target=watch, daemon=True)
    reader.start()
    if stdin is not None and proc.stdin is not None:
        proc.stdin.write(stdin.encode())
        proc.stdin.close()
    code = proc.wait()
    elapsed = time.perf_counter() - start
    reader.join(timeout=5)
    return elapsed, bool(first and first[0] <= 1.0), code


def stop_daemon(vault: Path, env: dict[str, str]) -> None:
    subprocess.run([TMEM, "--vault", str(vault), "daemon", "stop", "--force"], env=env, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--busy", type=int, default=0, metavar="N", help="run N CPU hogs beside it")
    parser.add_argument("--out", type=Path, help="the vault's folder (default: a temporary one)")
    parser.add_argument("--only", metavar="TEXT", help="time only the commands whose label contains TEXT")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="tmem-cold-"))
    vault = args.out or scratch / "vault"
    env = {**os.environ, "TMEM_VAULT": str(vault)}
    env.pop("TMEM_PASSPHRASE", None)
    try:
        if not (vault / "tmem.yaml").is_file():
            build_vault(vault, args.notes)  # a vault with its notes committed
            subprocess.run([TMEM, "--vault", str(vault), "reindex"], env=env, check=True, capture_output=True)
        hogs = start_hogs(args.busy)
        try:
            print(f"# {args.notes} notes, {args.runs} runs each, {args.busy} CPU hog(s); {load_line()}")
            print("| command (no daemon running) | median s | slowest s | says something within 1 s | exit |")
            print("|---|---|---|---|---|")
            for label, argv, stdin in commands(vault, scratch):
                if args.only and args.only not in label:
                    continue
                stop_daemon(vault, env)
                walls, spoke, codes = [], [], set()
                for _ in range(args.runs):
                    stop_daemon(vault, env)
                    elapsed, said, code = timed(argv, stdin, env)
                    walls.append(elapsed)
                    spoke.append(said)
                    codes.add(code)
                quick = max(walls) <= 1.0
                told = "n/a (≤ 1 s)" if quick else ("yes" if all(spoke) else "no")
                print(
                    f"| {label} | {statistics.median(walls):.2f} | {max(walls):.2f} | {told} | "
                    f"{','.join(str(c) for c in sorted(codes))} |"
                )
            stop_daemon(vault, env)
            print(f"# end: {load_line()}")
        finally:
            stop_hogs(hogs)
    finally:
        if args.out is None:
            stop_daemon(vault, env)
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
