"""`pytest -m "not slow"` is the quick loop while working: it leaves out every test that runs a
daemon process and every test over 20 s, and `make test` (so CI) still runs them all
(tests/test_docs.py checks the Makefile's pytest line)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Files whose tests start daemons (all, or some: those are marked one by one).
DAEMON_FILES = [
    "tests/daemon/test_daemon.py",
    "tests/daemon/test_doctor.py",
    "tests/mcp/test_mcp.py",
    "tests/e2e/test_torture.py",
]


def _collected(*args: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode in (0, 5), proc.stdout + proc.stderr  # 5: nothing selected
    assert "PytestUnknownMarkWarning" not in proc.stdout + proc.stderr  # the marker is registered
    return {line for line in proc.stdout.splitlines() if "::" in line}


def test_the_quick_loop_runs_no_daemon_and_the_full_run_all() -> None:
    quick = _collected("-m", "not slow", *DAEMON_FILES)
    slow = _collected("-m", "slow", *DAEMON_FILES)
    assert quick and slow and not quick & slow
    assert not {t for t in quick if t.startswith("tests/daemon/test_daemon.py::")}
    assert "tests/e2e/test_torture.py::test_parallel_writers_and_kills_lose_nothing" in slow
    assert "tests/daemon/test_doctor.py::test_a_healthy_daemon_passes" in slow
    assert "tests/mcp/test_mcp.py::test_operations_run_in_the_daemon_it_starts" in slow
    # What needs no daemon stays in the quick loop.
    assert "tests/daemon/test_doctor.py::test_a_new_vault_needs_indexing_and_fix_does_it" in quick
    assert "tests/mcp/test_mcp.py::test_tools_have_schemas_descriptions_and_hints" in quick


def test_the_models_onnx_export_is_kept_between_runs(
    request: pytest.FixtureRequest, model_cache: Path
) -> None:
    """The first model test of a run no longer pays the export: the cache outlives the run."""
    cache = getattr(request.config, "cache", None)
    if cache is None:
        pytest.skip("pytest's cache is turned off (-p no:cacheprovider)")
    assert model_cache == Path(cache.mkdir("tmem-cache"))
