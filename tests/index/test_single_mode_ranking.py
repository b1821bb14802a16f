"""A hybrid gathering ranked in one mode ranks as a search in that mode does: vector mode sees
meaning alone, so the keyword coverage a hybrid gathering holds cannot lift an archived note that
holds every term of the query above nearer notes (the evaluation ranks every mode on one
gathering, and its vector figures are what `--mode vector` gives)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import FAKE_CONFIG, FIXED_NOW, write

from tiered_memory.app.memory import Memory
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.retrieve import Candidates
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault, init_vault

QUERY = "dentist appointment on tuesday"
EVERY_TERM = "memory/archive/every-term.md"  # holds every term of the query, far by meaning
NEAREST = "memory/archive/nearest.md"
OTHERS = [f"memory/archive/other-{i:02d}.md" for i in range(10)]
COSINES = {NEAREST: 0.62, EVERY_TERM: 0.41} | {p: 0.35 - i / 100 for i, p in enumerate(OTHERS)}


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    write(root, EVERY_TERM, "---\ntitle: week\n---\nTuesday: the dentist appointment was moved.\n")
    write(root, NEAREST, "---\ntitle: teeth\n---\nA check-up of the teeth is due.\n")
    for i, path in enumerate(OTHERS):
        write(root, path, f"---\ntitle: other {i}\n---\nSomething else entirely, number {i}.\n")
    fake = FakeEmbedder(64)
    built = Memory(Vault(root), embedder_factory=lambda: fake, now=lambda: FIXED_NOW)
    built.refresh(vectors=True)
    try:
        yield built
    finally:
        built.close()


def _vector_mode(memory: Memory, gathered_as: str) -> list[str]:
    """Vector mode's hits over a gathering made in `gathered_as` mode, its vector side holding
    exactly COSINES."""
    found = memory.searcher.gather(SearchRequest(query=QUERY, mode=gathered_as))  # type: ignore[arg-type]
    pool = sorted(COSINES.items(), key=lambda item: -item[1])
    found = dataclasses.replace(found, vector=pool, ranking=[], undiscounted={})
    assert isinstance(found, Candidates)
    request = SearchRequest(query=QUERY, mode="vector", limit=10)
    return [h.path for h in memory.searcher.rank(found, request, mode="vector", passages=False).hits]


def test_the_hybrid_gathering_knows_the_note_holds_every_term(memory: Memory) -> None:
    found = memory.searcher.gather(SearchRequest(query=QUERY, mode="hybrid"))
    assert found.coverage[EVERY_TERM][0] == pytest.approx(1.0)
    assert memory.searcher.gather(SearchRequest(query=QUERY, mode="vector")).coverage == {}


def test_a_vector_search_ranks_by_meaning(memory: Memory) -> None:
    assert _vector_mode(memory, "vector")[:2] == [NEAREST, EVERY_TERM]


def test_a_hybrid_gathering_ranked_in_vector_mode_ranks_as_a_vector_search(memory: Memory) -> None:
    assert _vector_mode(memory, "hybrid") == _vector_mode(memory, "vector")


def test_hybrid_still_lifts_the_archived_note_holding_every_term(memory: Memory) -> None:
    request = SearchRequest(query=QUERY, mode="hybrid", limit=10)
    found = memory.searcher.gather(request)
    found = dataclasses.replace(found, vector=sorted(COSINES.items(), key=lambda item: -item[1]), ranking=[])
    hits = memory.searcher.rank(found, request, mode="hybrid", passages=False).hits
    assert hits[0].path == EVERY_TERM
