"""A request for a suggestion ranks its vector candidates by its cosines as a Markdown heading,
the form a note's title takes in what is embedded of it; the request as asked judges them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import FAKE_CONFIG, FIXED_NOW, write

from tiered_memory.app.memory import Memory
from tiered_memory.index import retrieve
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.in_memory import InMemoryIndex
from tiered_memory.index.retrieve import request_heading, same_notes
from tiered_memory.model import note as notes
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault, init_vault

MINILM = "sentence-transformers:all-MiniLM-L6-v2"
REQUEST = "which restaurants would you recommend in Rome"
QUESTION = "what did the Rome trip cost last spring"
NOTES = [f"memory/long-term/note-{i:02d}.md" for i in range(12)]


class HeadingApart(FakeEmbedder):
    """The fake model, but a request embedded as a heading lands on note 7's words: the two
    searches of one request then disagree, as the packaged model's do on a turn's heading."""

    def __init__(self) -> None:
        super().__init__(64)
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> Any:
        self.seen.extend(texts)
        return super().embed(["topic number 7" if text == "# " + REQUEST else text for text in texts])


@pytest.fixture
def fake() -> HeadingApart:
    return HeadingApart()


@pytest.fixture
def memory(tmp_path: Path, fake: HeadingApart, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    monkeypatch.setattr(retrieve, "measured_as", lambda model_id: MINILM)
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    for i, path in enumerate(NOTES):
        write(root, path, f"---\ntitle: Note {i}\n---\nA note about topic number {i}.\n")
    built = Memory(Vault(root), embedder_factory=lambda: fake, now=lambda: FIXED_NOW)
    built.refresh(vectors=False)
    built.indexer.ensure_vectors(deep=True)
    try:
        yield built
    finally:
        built.close()


def test_only_a_request_is_searched_as_a_heading() -> None:
    assert request_heading(REQUEST) == "# " + REQUEST
    assert request_heading(QUESTION) is None
    assert request_heading("Bart: I am off to Rome.\nAssistant: Lovely!\nBart: Where should I eat?") is None


def test_both_searches_list_the_same_notes_each_scored_by_its_own_vector() -> None:
    plain, heading = [("a", 0.6), ("b", 0.5)], [("c", 0.7), ("a", 0.4)]
    scored = {"a": {"plain": 0.6, "heading": 0.4}, "b": {"heading": 0.1}, "c": {"plain": 0.2}}

    def cosines(vector: Any, paths: list[str]) -> dict[str, float]:
        return {p: scored[p][vector] for p in paths}

    both = same_notes(plain, heading, cosines, "plain", "heading")  # type: ignore[arg-type]
    assert both == ([("a", 0.6), ("b", 0.5), ("c", 0.2)], [("c", 0.7), ("a", 0.4), ("b", 0.1)])


def test_a_request_gathers_a_ranking_of_the_same_notes_and_a_question_none(
    memory: Memory, fake: HeadingApart
) -> None:
    found = memory.searcher.gather(SearchRequest(query=REQUEST, mode="vector"))
    assert "# " + REQUEST in fake.seen
    assert found.ranking and found.ranking[0][0] == NOTES[7]
    assert {p for p, _ in found.ranking} == {p for p, _ in found.vector}
    vectors = memory.indexer.vectors()
    assert vectors is not None
    heading = vectors.note_cosines(fake.embed(["# " + REQUEST])[0], [NOTES[7]])
    assert dict(found.ranking)[NOTES[7]] == pytest.approx(heading[NOTES[7]])
    fake.seen.clear()
    asked = memory.searcher.gather(SearchRequest(query=QUESTION, mode="vector"))
    assert asked.ranking == [] and not any(text.startswith("# ") for text in fake.seen)


def test_notes_held_in_memory_are_in_both_lists_of_a_request(memory: Memory, fake: HeadingApart) -> None:
    # More sealed notes held in memory (unlocked) than a search keeps: each of a request's two
    # searches would keep the held notes nearest to its own vector.
    held = InMemoryIndex()
    for i in range(120):
        note = notes.Note(
            f"memory/long-term/held-{i:03d}.md",
            {"id": f"h{i}", "title": f"Held {i}"},
            f"topic number {i % 9} and {i}",
            True,
        )
        held.put(note, (float(i), 10))
    held.embed(fake, 180, 40)
    found = memory.searcher.gather(SearchRequest(query=REQUEST, mode="vector"), apart=held)
    assert {p for p, _ in found.ranking} == {p for p, _ in found.vector}
    assert len(found.vector) == len(NOTES) + 120


def _ranked(
    memory: Memory, mode: retrieve.Mode, plain: dict[str, float], heading: dict[str, float]
) -> list[Any]:
    found = memory.searcher.gather(SearchRequest(query=REQUEST, mode=mode))
    found = dataclasses.replace(
        found,
        keyword=[],
        coverage={},
        vector=sorted(plain.items(), key=lambda item: -item[1]),
        ranking=sorted(heading.items(), key=lambda item: -item[1]),
        undiscounted={},
    )
    request = SearchRequest(query=REQUEST, mode=mode, limit=10)
    return memory.searcher.rank(found, request, mode=mode, passages=False).hits


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_a_request_ranks_by_its_heading_and_shows_its_own_cosines(
    memory: Memory, mode: retrieve.Mode
) -> None:
    plain = {NOTES[0]: 0.55} | {p: 0.4 - i / 100 for i, p in enumerate(NOTES[1:])}
    heading = {p: 0.3 for p in NOTES} | {NOTES[9]: 0.6}
    hits = _ranked(memory, mode, plain, heading)
    assert hits[0].path == NOTES[9]
    assert {h.path: h.components["cosine"] for h in hits}[NOTES[9]] == pytest.approx(plain[NOTES[9]])


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_a_request_nothing_is_near_as_asked_gets_no_hit_however_near_its_heading(
    memory: Memory, mode: retrieve.Mode
) -> None:
    plain = {p: 0.1 - i / 200 for i, p in enumerate(NOTES)}  # below every floor a request has
    heading = {p: 0.9 - i / 200 for i, p in enumerate(NOTES)}
    assert _ranked(memory, mode, plain, heading) == []


def _with_words(memory: Memory, query: str, keyword: dict[str, float], how: Any = None) -> Any:
    """A request's gathering with the keyword side given: note 3 holds its words best."""
    found = memory.searcher.gather(SearchRequest(query=query, mode="hybrid"))
    return dataclasses.replace(
        found,
        keyword=sorted(keyword.items(), key=lambda item: -item[1]),
        coverage={p: (1.0, 4) for p in keyword},
        how=how or found.how,
    )


def test_a_hybrid_request_ranks_as_vector_mode_ranks_and_keeps_its_mode(memory: Memory) -> None:
    plain = {p: 0.45 for p in NOTES} | {NOTES[9]: 0.6, NOTES[3]: 0.58}
    found = dataclasses.replace(
        _with_words(memory, REQUEST, {NOTES[3]: 12.0, NOTES[5]: 3.0}),
        vector=sorted(plain.items(), key=lambda item: -item[1]),
        ranking=sorted(plain.items(), key=lambda item: -item[1]),
        undiscounted={},
    )
    request = SearchRequest(query=REQUEST, mode="hybrid", limit=10)
    assert memory.searcher.ranks_by_meaning(found)
    hybrid = memory.searcher.rank(found, request, mode="hybrid", passages=False)
    vector = memory.searcher.rank(found, request, mode="vector", passages=False)
    assert hybrid.mode == "hybrid"
    assert [h.path for h in hybrid.hits] == [h.path for h in vector.hits]
    assert hybrid.hits[0].path == NOTES[9]  # note 3's words do not carry it past note 9's meaning
    switched = dataclasses.replace(found, how=retrieve.Gathering(request_by_meaning=False))
    assert not memory.searcher.ranks_by_meaning(switched)
    words_too = memory.searcher.rank(switched, request, mode="hybrid", passages=False)
    assert words_too.hits[0].path == NOTES[3]


def test_a_question_or_a_keyword_candidate_not_embedded_yet_keeps_hybrid_ranking(memory: Memory) -> None:
    asked = _with_words(memory, QUESTION, {NOTES[3]: 12.0})
    assert asked.vector and not memory.searcher.ranks_by_meaning(asked)
    waiting = _with_words(memory, REQUEST, {NOTES[3]: 12.0, "memory/long-term/just-added.md": 20.0})
    assert waiting.vector and not memory.searcher.ranks_by_meaning(waiting)
    assert memory.searcher.ranks_by_meaning(_with_words(memory, REQUEST, {NOTES[3]: 12.0}))
