"""Processes that open a new catalog at the same instant: each finds the whole schema, none drops
the tables another has just made (many agents' first command in a fresh vault do this)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tiered_memory.errors import LockTimeout
from tiered_memory.index.catalog import Catalog

PROCESSES = 6
ROUNDS = 12  # the race lost about one round in four before the schema was set up in one go

OPEN_AND_CLEAR = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tiered_memory.index.catalog import Catalog

    path, start = Path(sys.argv[1]), float(sys.argv[2])
    while time.time() < start:
        pass
    try:
        catalog = Catalog(path)
        catalog.clear()
        catalog.set_meta("format", "x")
        print(catalog.count())
        catalog.close()
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}")
    """
)


def test_processes_opening_a_new_catalog_together_each_find_its_tables(tmp_path: Path) -> None:
    problems = []
    for round_ in range(ROUNDS):
        path = tmp_path / f"catalog-{round_}.sqlite"
        start = time.time() + 0.4  # every process started and waiting before the instant
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_AND_CLEAR, str(path), str(start)],
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(PROCESSES)
        ]
        answers = [p.communicate(timeout=60)[0].strip() for p in procs]
        problems += [f"round {round_}: {a}" for a in answers if a != "0"]
    assert problems == []


def test_a_catalog_locked_past_the_timeout_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite"
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")  # another process's transaction that does not end
    try:
        with pytest.raises(LockTimeout, match="stayed locked by another process"):
            Catalog(path, busy_timeout=0.2)
    finally:
        holder.rollback()
        holder.close()
    Catalog(path).close()  # the lock gone, the file was not harmed: it opens
