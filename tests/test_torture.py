"""The concurrency and kill -9 suites of scripts/torture.py, with small counts and a fixed seed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "torture.py"


@pytest.mark.timeout(900)
def test_parallel_writers_and_kills_lose_nothing() -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--writers", "20", "--kills", "4", "--seed", "7", "--json"],
        capture_output=True,
        text=True,
        timeout=880,
    )
    report = json.loads(out.stdout)
    runs = {r["what"]: r for r in report["runs"]}
    assert len(runs) == 10  # five write commands in parallel, five commands killed
    for what, run in runs.items():
        assert run["failed"] == [], what
        assert run["lost"] == 0 and run["present"] == run["expected"] > 0, what
        if what.startswith("20 parallel"):
            assert run["ok"] == 20, what
    assert out.returncode == 0
