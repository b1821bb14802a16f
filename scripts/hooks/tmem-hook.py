#!/usr/bin/env python3
"""Agent hook for tiered-memory: inject `tmem context` at session start, `tmem ingest` the transcript
at session end or before compaction.

    tmem-hook.py session-start     prints the context block (Claude Code adds a SessionStart
                                   hook's stdout to the model's context)
    tmem-hook.py ingest [PATH]     ingests the transcript: PATH, else `transcript_path` from the
                                   hook's JSON on stdin (Claude Code sends it to SessionEnd and PreCompact)

Standard library only. Fails open: any problem is one line on stderr and exit 0, so memory
trouble never blocks the agent. Environment: TMEM_BIN (default `tmem` on PATH), TMEM_VAULT
(the vault), TMEM_PROJECT (the project for context and ingest), TMEM_BUDGET (tokens).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def hook_input() -> dict:
    if sys.stdin is None or sys.stdin.isatty():
        return {}
    try:
        data = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def run_tmem(*args: str) -> subprocess.CompletedProcess[str]:
    command = [os.environ.get("TMEM_BIN", "tmem"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def session_start(payload: dict) -> int:
    args = ["context"]
    if os.environ.get("TMEM_PROJECT"):
        args += ["--project", os.environ["TMEM_PROJECT"]]
    if os.environ.get("TMEM_BUDGET"):
        args += ["--budget", os.environ["TMEM_BUDGET"]]
    done = run_tmem(*args)
    if done.returncode != 0:
        print(f"tmem hook: context failed: {done.stderr.strip()}", file=sys.stderr)
        return 0
    sys.stdout.write(done.stdout)
    return 0


def ingest(payload: dict, argv: list[str]) -> int:
    path = argv[0] if argv else payload.get("transcript_path")
    if not path:
        print(
            "tmem hook: no transcript path (give one, or send hook JSON with transcript_path)",
            file=sys.stderr,
        )
        return 0
    if not os.path.isfile(os.path.expanduser(path)):
        print(f"tmem hook: transcript {path} does not exist", file=sys.stderr)
        return 0
    args = ["ingest", os.path.expanduser(path)]
    if os.environ.get("TMEM_PROJECT"):
        args += ["--project", os.environ["TMEM_PROJECT"]]
    done = run_tmem(*args)
    message = (done.stdout if done.returncode == 0 else done.stderr).strip()
    print(f"tmem hook: {message}", file=sys.stderr)
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("session-start", "ingest"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    payload = hook_input()
    try:
        if argv[0] == "session-start":
            return session_start(payload)
        return ingest(payload, argv[1:])
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"tmem hook: {exc}", file=sys.stderr)
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
