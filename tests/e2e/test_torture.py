"""The concurrency and kill -9 suites of scripts/torture.py, with small counts and a fixed seed.

Sized for a two-core CI machine: ten writers per write command (still all at once, so they race
for the same file names and the lock) and four kills per command, every check of the full run
kept. Each command has its own time limit, so a hang fails one round with a line saying which,
and the whole run stays within a few minutes of CPU (the script reports its CPU seconds).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "torture.py"
WRITERS = 10
ROUND_TIMEOUT = 240  # one command, or one round of parallel writers
TOTAL_TIMEOUT = 1500  # the whole run, even on a loaded machine


@pytest.mark.timeout(TOTAL_TIMEOUT + 60)
@pytest.mark.slow
def test_parallel_writers_and_kills_lose_nothing() -> None:
    argv = [sys.executable, str(SCRIPT), "--writers", str(WRITERS), "--kills", "4", "--seed", "7"]
    out = subprocess.run(
        [*argv, "--round-timeout", str(ROUND_TIMEOUT), "--json"],
        capture_output=True,
        text=True,
        timeout=TOTAL_TIMEOUT,
    )
    report = json.loads(out.stdout)
    runs = {r["what"]: r for r in report["runs"]}
    # thirteen write commands in parallel (eight of them all rewriting one file), six killed
    assert len(runs) == 19
    for what, run in runs.items():
        assert run["failed"] == [], what
        assert run["lost"] == 0 and run["present"] == run["expected"] > 0, what
        if what.startswith(f"{WRITERS} parallel"):
            assert run["ok"] == WRITERS, what
        else:
            assert run["runs"] > 0, what  # at least one kill landed while the command ran
    assert out.returncode == 0
