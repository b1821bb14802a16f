"""scripts/torture.py's `burst`, which starts the parallel writers of the torture run and of
helpers.all_at_once: a writer that fails is reported with its exit code and its error line, the
others as having succeeded (a launcher that lost a failure would let every many-writers test
pass whatever the writers did)."""

from __future__ import annotations

import os
from pathlib import Path

from helpers import ROOT, git, torture


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_each_writer_is_reported_by_its_own_exit(vault_path: Path, tmp_path: Path) -> None:
    argvs = [
        ["--vault", str(vault_path), "st", "set", "first", "one"],
        ["--vault", str(vault_path), "no-such-command"],
        ["--vault", str(vault_path), "update", "no-such-note", "--append", "x"],
        ["--vault", str(vault_path), "st", "set", "second", "two"],
    ]
    problems = torture.burst(argvs, tmp_path / "out", 60, env())
    assert problems[0] is None and problems[3] is None
    assert problems[1] is not None and problems[1].startswith("exit 2: ")
    assert problems[2] is not None and problems[2].startswith("exit ") and "tmem: " in problems[2]
    assert git(vault_path, "status", "--porcelain") == ""
