"""The freshness scan's mark: an unchanged vault is told fresh without loading the catalog's rows,
and any change on disk or in the catalog, in any process, is still seen."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import FIXED_NOW, write

from tiered_memory.app.memory import Memory
from tiered_memory.index import scan_mark
from tiered_memory.index.catalog import Catalog
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault

OpenMemory = Callable[[], Memory]
NOTE = "memory/long-term/zebra.md"


@pytest.fixture
def open_memory(vault_path: Path) -> Iterator[OpenMemory]:
    opened: list[Memory] = []

    def make() -> Memory:
        memory = Memory(Vault(vault_path), embedder_factory=lambda: FakeEmbedder(32), now=lambda: FIXED_NOW)
        opened.append(memory)
        return memory

    yield make
    for memory in opened:
        memory.close()


def keyword(memory: Memory, query: str) -> list[str]:
    return [h.path for h in memory.search(SearchRequest(query, mode="keyword"), record_access=False).hits]


def rows_loaded(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts each time the scan loads every row of the catalog."""
    calls: list[int] = []
    real = Catalog.stats

    def counting(self: Catalog, paths: object = None) -> object:
        if paths is None:
            calls.append(1)
        return real(self, paths)  # type: ignore[arg-type]

    monkeypatch.setattr(Catalog, "stats", counting)
    return calls


@pytest.fixture
def indexed(open_memory: OpenMemory, vault_path: Path) -> Path:
    write(vault_path, NOTE, "# Zebra\n\nThe zebra crossing was repainted.\n")
    first = open_memory()
    first.refresh()
    assert keyword(first, "zebra") == [NOTE]  # this scan found everything indexed: it left the mark
    first.close()
    return vault_path / ".tmem" / scan_mark.FILE


def test_an_unchanged_vault_is_fresh_without_loading_the_catalog(
    indexed: Path, open_memory: OpenMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert scan_mark.read(indexed) is not None
    memory = open_memory()
    loaded = rows_loaded(memory, monkeypatch)
    report = memory.refresh()
    assert loaded == [] and report.touched == 0
    assert report.unchanged == memory.indexer.catalog.count() + len(memory.indexer.catalog.skipped())
    assert keyword(memory, "zebra") == [NOTE]


def test_an_edit_on_disk_is_seen_through_the_mark(
    indexed: Path, open_memory: OpenMemory, vault_path: Path
) -> None:
    write(vault_path, NOTE, "# Zebra\n\nThe okapi crossing was repainted.\n", bump=2)
    memory = open_memory()
    assert keyword(memory, "okapi") == [NOTE]
    (vault_path / NOTE).unlink()
    assert keyword(memory, "okapi") == []


def test_a_catalog_changed_by_another_process_voids_the_mark(
    indexed: Path, open_memory: OpenMemory, vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The files are as the mark saw them, but another process removed the note's row since.
    other = Catalog(vault_path / ".tmem" / "catalog.sqlite")
    before = other.generation()
    other.delete([NOTE])
    assert other.generation() != before
    other.close()
    memory = open_memory()
    loaded = rows_loaded(memory, monkeypatch)
    report = memory.refresh()
    assert loaded and report.added == 1
    assert keyword(memory, "zebra") == [NOTE]


def test_a_row_whose_vectors_change_keeps_the_mark(indexed: Path, vault_path: Path) -> None:
    catalog = Catalog(vault_path / ".tmem" / "catalog.sqlite")
    before = catalog.generation()
    catalog.set_vec_hash([(NOTE, "abc")])
    assert catalog.generation() == before
    catalog.touch([(NOTE, 1.0, 3)])
    assert catalog.generation() != before
    catalog.close()


@pytest.mark.parametrize("damage", ["", "garbage", "a b", "0123 x 5\n"])
def test_a_damaged_or_missing_mark_takes_the_full_comparison(
    indexed: Path, open_memory: OpenMemory, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    if damage:
        indexed.write_text(damage)
    else:
        indexed.unlink()
    memory = open_memory()
    loaded = rows_loaded(memory, monkeypatch)
    assert keyword(memory, "zebra") == [NOTE]
    assert loaded == [1]
    assert scan_mark.read(indexed) is not None  # and leaves a good one


def test_a_rebuilt_catalog_never_matches_an_old_mark(indexed: Path, vault_path: Path) -> None:
    old = scan_mark.read(indexed)
    assert old is not None
    for suffix in ("", "-wal", "-shm"):
        Path(f"{vault_path}/.tmem/catalog.sqlite{suffix}").unlink(missing_ok=True)
    fresh = Catalog(vault_path / ".tmem" / "catalog.sqlite")
    assert fresh.generation() != old.generation
    fresh.close()
