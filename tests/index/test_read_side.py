"""The index's read side: ranking holds readers the Indexer hands out, never the writer; the
operations read the vault and the catalog through `Memory`; a remembered note is indexed once."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

from tiered_memory.app import dedup
from tiered_memory.app.api.notes import ListRequest, RememberRequest
from tiered_memory.app.filing import NewNote
from tiered_memory.app.memory import Memory
from tiered_memory.app.notes import list_notes, remember
from tiered_memory.config import SearchConfig
from tiered_memory.index.indexer import Indexer, IndexReport
from tiered_memory.index.retrieve import Searcher
from tiered_memory.model.search import Filters, SearchRequest

PACKAGE = Path(__file__).resolve().parents[2] / "tiered_memory"


def _imported(path: Path) -> set[str]:
    """Every module a source file imports, at any depth (type-checking and function-local too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_ranking_never_imports_the_index_writer() -> None:
    assert "tiered_memory.index.indexer" not in _imported(PACKAGE / "index" / "retrieve.py")
    assert "tiered_memory.index.indexer" not in _imported(PACKAGE / "index" / "reader.py")


def test_a_searcher_built_on_the_readers_finds_notes(memory: Memory) -> None:
    remember(memory, RememberRequest(text="The survey datum is CGCS2000 since the spring.", title="Datum"))
    searcher = Searcher(memory.indexer.reader(), SearchConfig(), memory.now)
    assert not hasattr(searcher, "indexer")
    hits = searcher.search(SearchRequest(query="survey datum", mode="keyword")).hits
    assert [h.title for h in hits] == ["Datum"]


def test_the_readers_follow_the_writers_indexes_after_a_reopen(memory: Memory) -> None:
    """`reindex --full` wipes and reopens the indexes: the searcher must read the new ones."""
    memory.indexer.wipe()
    memory.reopen()
    remember(memory, RememberRequest(text="Tea at four on Fridays.", title="Tea"))
    result = memory.search(SearchRequest(query="tea fridays", mode="keyword"), record_access=False)
    assert [h.title for h in result.hits] == ["Tea"]


def test_matches_is_the_one_public_filter(memory: Memory) -> None:
    remember(memory, RememberRequest(text="Ada's notes on geodesy.", title="Geodesy", tags=["geodesy/datum"]))
    row = next(iter(memory.rows().values()))
    assert Searcher.matches(row, SearchRequest(query="*", tags=["geodesy"]))
    assert not Searcher.matches(row, SearchRequest(query="*", tags=["cooking"]))
    assert not Searcher.matches(row, SearchRequest(query="*", tiers=["archive"]))


def test_listing_and_search_take_one_filters_value(memory: Memory) -> None:
    remember(memory, RememberRequest(text="Kafka is the queue.", title="Queue", project="atlas", tier="mid"))
    remember(memory, RememberRequest(text="Oolong tea is the favourite.", title="Tea", tags=["tea"]))
    assert [r.title for r in memory.list_notes(Filters(projects=["atlas"]))] == ["Queue"]
    assert [r.title for r in memory.list_notes(Filters(tags=["tea"]))] == ["Tea"]
    listed = list_notes(memory, ListRequest(tags=["tea"]))
    assert [n.title for n in listed.notes] == ["Tea"]
    # The same filter fields, declared once, on both requests and on the wire.
    names = {f for f in Filters().values()}
    assert names <= set(ListRequest().to_dict()) and names <= set(SearchRequest(query="x").to_dict())
    again = ListRequest.from_dict({"tiers": ["mid"], "since": "2026-01-01T00:00:00+00:00", "limit": 2})
    assert again.tiers == ["mid"] and again.since is not None and again.limit == 2


def test_an_unknown_filter_value_is_refused_by_the_listing(memory: Memory) -> None:
    from tiered_memory.errors import BadInput

    with pytest.raises(BadInput, match="unknown tier 'mide'"):
        memory.list_notes(Filters(tiers=["mide"]))


# ---- one index write per remembered note --------------------------------------------------------


@pytest.fixture
def index_calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The paths of every `Indexer.update_paths` call (the real method still runs)."""
    calls: list[list[str]] = []
    real = Indexer.update_paths

    def counted(self: Indexer, paths: Iterable[str], **kwargs: bool) -> IndexReport:
        wanted = list(paths)
        calls.append(wanted)
        return real(self, wanted, **kwargs)

    monkeypatch.setattr(Indexer, "update_paths", counted)
    return calls


def _times_indexed(calls: list[list[str]], path: str) -> int:
    return sum(1 for paths in calls if path in paths)


def test_remember_indexes_the_new_note_once(memory: Memory, index_calls: list[list[str]]) -> None:
    memory.refresh()
    result = remember(memory, RememberRequest(text="The backups run at midnight.", title="Backups"))
    assert _times_indexed(index_calls, result.note.path) == 1
    found = memory.search(SearchRequest(query="backups midnight", mode="keyword"), record_access=False)
    assert [h.id for h in found.hits] == [result.note.id]


def test_a_merge_indexes_the_note_it_changed_once(memory: Memory, index_calls: list[list[str]]) -> None:
    first = remember(memory, RememberRequest(text="The backups run at midnight every day.", source="a"))
    index_calls.clear()
    again = remember(memory, RememberRequest(text="The backups run at midnight every day.", source="b"))
    assert again.action == "merged"
    assert _times_indexed(index_calls, first.note.path) == 1


def test_a_batch_indexes_each_note_before_the_next_and_still_finds_it(
    memory: Memory, index_calls: list[list[str]]
) -> None:
    items = [NewNote("The staging database is Postgres 16."), NewNote("The staging database is Postgres 16.")]
    outcomes, _sha = dedup.remember_many(memory, items, "extract: a batch")
    assert [o.action for o in outcomes] == ["added", "merged"]
    path = outcomes[0].note.path
    # Once for the second memory to find it, once by the commit: not once more per memory.
    assert _times_indexed(index_calls, path) == 2
