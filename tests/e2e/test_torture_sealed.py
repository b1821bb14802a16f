"""The two-clone encrypted sync of scripts/torture.py, with a few loops and a fixed seed: both
clones append to the same sealed notes and sync (some syncs without the key), and every appended
line must survive in authenticating envelopes, never in plain text in git."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "torture.py"
TOTAL_TIMEOUT = 600


@pytest.mark.timeout(TOTAL_TIMEOUT + 60)
@pytest.mark.slow
def test_two_clones_editing_encrypted_notes_lose_and_leak_nothing() -> None:
    argv = [sys.executable, str(SCRIPT), "--commands", "encrypted-sync", "--encrypted-loops", "4"]
    out = subprocess.run(
        [*argv, "--seed", "7", "--round-timeout", "240", "--json"],
        capture_output=True,
        text=True,
        timeout=TOTAL_TIMEOUT,
    )
    report = json.loads(out.stdout)
    [run] = report["runs"]
    assert run["failed"] == []
    assert run["ok"] == run["runs"] == 8  # two syncs a loop
    assert run["lost"] == 0 and run["present"] == run["expected"] == 16  # two lines a loop, on each clone
    assert out.returncode == 0
