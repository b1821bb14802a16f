"""scripts/bench_portability.py end to end on a small generated vault, with the real `tmem`
executable: the numbers it prints come from a round trip that kept every note where it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_benchmark_reports_a_round_trip_that_kept_every_note(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench_portability.py"), "--notes", "30", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert "export: 30 notes (" in out.stdout and "notes/s, peak RSS " in out.stdout
    assert "(30 added, 0 skipped, 1 commit(s)), peak RSS " in out.stdout and " MB exported) in " in out.stdout
    assert "round trip: 30/30 notes at their own path, 30/30 byte for byte" in out.stdout
    assert "0 added, commit None, 1 commit(s) in all" in out.stdout
    assert (tmp_path / "fresh/Proyectos/tunel/nota 0.md").read_bytes() == (
        tmp_path / "adopted/Proyectos/tunel/nota 0.md"
    ).read_bytes()
