"""The access log: counts read whole (maintenance) or a little at a time (a process that searches)."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from click.testing import Result
from helpers import ok, remember

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


def _log_many(root: Path, n: int, when: datetime = WHEN) -> None:
    access.record(root, [f"note-{i % 50}" for i in range(n)], when)


def test_a_new_process_starts_from_the_cached_counts_and_reads_only_what_came_after(tmp_path: Path) -> None:
    cache = tmp_path / "recalls.json"
    _log_many(tmp_path, 2000)  # more than CACHE_AFTER bytes: the first look keeps its counts
    first = access.Recalls(tmp_path, cache)
    assert first.counts() == access.counts(tmp_path)
    assert cache.exists()
    access.record(tmp_path, ["note-1", "new"], LATER)
    second = access.Recalls(tmp_path, cache)
    assert second._offset == first._offset  # where the cache left off, not the log's start
    assert second.counts() == access.counts(tmp_path)
    assert second.counts()["note-1"] == 41 and second.counts()["new"] == 1


def test_a_cache_of_another_log_is_not_used(tmp_path: Path) -> None:
    cache = tmp_path / "recalls.json"
    _log_many(tmp_path, 2000)
    access.Recalls(tmp_path, cache).counts()
    access.clear(tmp_path)  # maintenance folded the log away; a new one starts
    _log_many(tmp_path, 3, LATER)
    assert (
        access.Recalls(tmp_path, cache).counts()
        == access.counts(tmp_path)
        == {
            "note-0": 1,
            "note-1": 1,
            "note-2": 1,
        }
    )
    os.remove(tmp_path / ACCESS_LOG)
    assert access.Recalls(tmp_path, cache).counts() == {}


def test_a_same_sized_log_with_a_different_first_line_is_read_again(tmp_path: Path) -> None:
    cache = tmp_path / "recalls.json"
    _log_many(tmp_path, 2000)
    access.Recalls(tmp_path, cache).counts()
    data = (tmp_path / ACCESS_LOG).read_bytes()
    # Rewritten in place (same inode) with other ids: the first line tells it apart.
    (tmp_path / ACCESS_LOG).write_bytes(data.replace(b'"note-', b'"other'))
    fresh = access.Recalls(tmp_path, cache).counts()
    assert fresh == access.counts(tmp_path) and "note-0" not in fresh


def test_a_damaged_cache_is_ignored(tmp_path: Path) -> None:
    cache = tmp_path / "recalls.json"
    _log_many(tmp_path, 10)
    for junk in (
        "",
        "{",
        '{"device": 1}',
        '{"device": "x", "inode": 2, "head": "", "offset": 0, "counts": {}}',
        "[]",
    ):
        cache.write_text(junk)
        assert access.Recalls(tmp_path, cache).counts() == access.counts(tmp_path)


NESTED = b"[" * 100_000 + b"]" * 100_000 + b"\n"  # deeper than json's recursion allows


def test_a_line_nested_past_what_json_decodes_is_skipped(tmp_path: Path) -> None:
    access.record(tmp_path, ["a"], WHEN)
    with open(tmp_path / ACCESS_LOG, "ab") as log:
        log.write(NESTED + b'{"id": ' + b"[" * 100_000 + b"\n")
    access.record(tmp_path, ["a"], LATER)
    assert access.load(tmp_path) == {"a": (2, LATER.isoformat())}
    assert access.Recalls(tmp_path).counts() == {"a": 2}


def test_search_and_maintenance_go_on_past_a_hostile_recall_log(
    run: Callable[..., Result], vault_path: Path
) -> None:
    """A crash or a hand can leave anything in the live log or a log a run moved aside; each line
    that is not a recall is skipped and the rest folded."""
    remember(run, "the lighthouse keeper logs the fog at dawn")
    ok(run("search", "lighthouse fog"))
    state = vault_path / ".tmem"
    (state / "recalls.folding.1-dead.jsonl").write_bytes(NESTED + b'{"id": "x", "at": "y"}\n')
    with open(vault_path / ACCESS_LOG, "ab") as log:
        log.write(NESTED)
    assert ok(run("search", "lighthouse fog")).stdout
    ok(run("maintain"))
    assert not list(state.glob("recalls.folding.*"))
    assert not (vault_path / ACCESS_LOG).exists()


def test_the_log_is_never_written_or_read_through_a_link_nor_waited_on(tmp_path: Path) -> None:
    victim = tmp_path / "bashrc"
    victim.write_text('{"id": "a", "at": "1"}\n')
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / ACCESS_LOG).symlink_to(victim)
    access.record(vault, ["b"], WHEN)
    assert victim.read_text() == '{"id": "a", "at": "1"}\n'
    assert access.load(vault) == {} and access.Recalls(vault).counts() == {}
    (vault / ACCESS_LOG).unlink()
    os.mkfifo(vault / ACCESS_LOG)  # no writer: an open that waited would never return
    assert access.load(vault) == {} and access.Recalls(vault).counts() == {}
    assert access.load_files([vault / ACCESS_LOG]) == {}
