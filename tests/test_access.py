"""The access log: counts read whole (maintenance) or a little at a time (a process that searches)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from tiered_memory.model.layout import ACCESS_LOG, STATS_FILE
from tiered_memory.storage import access

WHEN = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)
LATER = datetime(2026, 11, 26, 11, 0, tzinfo=UTC)


def test_a_searching_process_reads_only_what_was_appended(tmp_path: Path) -> None:
    recalls = access.Recalls(tmp_path)
    assert recalls.counts() == {}
    access.record(tmp_path, ["a", "b", "a"], WHEN)
    assert recalls.counts() == {"a": 2, "b": 1}
    offset = recalls._offset
    access.record(tmp_path, ["b"], LATER)
    assert recalls.counts() == {"a": 2, "b": 2}
    assert recalls._offset > offset  # it moved on from where it was, not from the start
    assert recalls.counts() == access.counts(tmp_path)
    assert access.load(tmp_path)["b"] == (2, LATER.isoformat())


def test_a_line_being_written_is_counted_once_it_is_whole(tmp_path: Path) -> None:
    recalls = access.Recalls(tmp_path)
    access.record(tmp_path, ["a"], WHEN)
    with open(tmp_path / ACCESS_LOG, "ab") as log:
        log.write(b'{"id": "b", "at": "2026-')
    assert recalls.counts() == {"a": 1}
    with open(tmp_path / ACCESS_LOG, "ab") as log:
        log.write(b'11-26T10:00:00+00:00"}\n')
    assert recalls.counts() == {"a": 1, "b": 1}


def test_an_emptied_or_replaced_log_is_read_from_the_start(tmp_path: Path) -> None:
    recalls = access.Recalls(tmp_path)
    access.record(tmp_path, ["a", "a"], WHEN)
    assert recalls.counts() == {"a": 2}
    access.clear(tmp_path)  # maintenance folded them into the notes
    assert recalls.counts() == {}
    access.record(tmp_path, ["c"], LATER)
    assert recalls.counts() == {"c": 1}
    (tmp_path / ACCESS_LOG).write_text('{"id": "d", "at": "x"}\n')  # a shorter file in place
    assert recalls.counts() == {"d": 1}


def test_torn_and_foreign_lines_are_skipped_and_the_rest_counted(tmp_path: Path) -> None:
    (tmp_path / ACCESS_LOG).write_bytes(
        b'{"id": "a", "at": "1"}\n{"id": "b", "a\n\xff\xfe\n5\n\n{"id": "a", "at": "2"}\n{"at": "3"}\n'
    )
    assert access.load(tmp_path) == {"a": (2, "2")}
    assert access.Recalls(tmp_path).counts() == {"a": 2}


def test_the_stats_file_is_read_again_only_when_it_changes(tmp_path: Path) -> None:
    recalls = access.Recalls(tmp_path)
    assert recalls.stats() == {}
    path = tmp_path / STATS_FILE
    path.write_text('{"n1": {"access_count": 3}}')
    first = recalls.stats()
    assert first == {"n1": {"access_count": 3}}
    assert recalls.stats() is first  # unchanged: not parsed again
    part = tmp_path / "stats.part"
    part.write_text('{"n1": {"access_count": 4}}')
    os.replace(part, path)  # how maintenance writes it
    assert recalls.stats() == {"n1": {"access_count": 4}}


def test_a_new_log_with_the_old_ones_inode_is_still_read_from_the_start(tmp_path: Path) -> None:
    """A removed file's inode may go to the next one: the first line tells the logs apart."""
    recalls = access.Recalls(tmp_path)
    access.record(tmp_path, ["a"], WHEN)
    assert recalls.counts() == {"a": 1}
    log = tmp_path / ACCESS_LOG
    with open(log, "r+b") as same_inode:  # rewritten in place: same inode, longer than before
        same_inode.write(b'{"id": "b", "at": "2026-11-27T00:00:00+00:00"}\n' * 3)
    assert recalls.counts() == {"b": 3}
