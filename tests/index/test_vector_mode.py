"""Vector mode ranks like plain cosine once a query is answered: the cosine floor decides whether
the query gets hits at all, not which candidates are listed; a pasted conversation is not held to a
question's floor; and a session's lift in vector mode is lent only by a note that is evidence by
its own cosine, never to or from a turn of several chunks."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import FAKE_CONFIG, FIXED_NOW, write

from tiered_memory.app.memory import Memory
from tiered_memory.index import retrieve
from tiered_memory.index.catalog import NoteRow
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.retrieve import Candidates
from tiered_memory.model.search import Hit, SearchRequest
from tiered_memory.storage.vault import Vault, init_vault

MINILM = "sentence-transformers:all-MiniLM-L6-v2"
QUERY = "which restaurants would you recommend in Rome"
DIALOGUE = "Bart: I am off to Rome next week.\nAssistant: How exciting!\nBart: Where should I eat there?"
NOTES = [f"memory/long-term/note-{i:02d}.md" for i in range(12)]
CHAT = [f"memory/long-term/chats/chat/{i}.md" for i in range(4)]
ASKED, ANSWER = "memory/long-term/chats/pair/0.md", "memory/long-term/chats/pair/1.md"


@pytest.fixture
def memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Memory]:
    """Twelve notes of no session, a chat of four short turns, and a short question answered at
    length; the fake model takes MiniLM's measured floor and margin."""
    fake = FakeEmbedder(64)
    monkeypatch.setitem(retrieve.COSINE_FLOORS, fake.model_id, retrieve.COSINE_FLOORS[MINILM])
    monkeypatch.setitem(retrieve.COSINE_MARGINS, fake.model_id, retrieve.COSINE_MARGINS[MINILM])
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    for i, path in enumerate(NOTES):
        write(root, path, f"---\ntitle: Note {i}\n---\nA note about topic number {i}.\n")
    for i, path in enumerate(CHAT):
        write(root, path, f"---\ntitle: turn {i}\nsession: chat\nseq: {i}\n---\nA: short turn {i}.\n")
    write(root, ASKED, "---\ntitle: asked\nsession: pair\nseq: 0\n---\nUser: where to eat?\n")
    long_answer = "\n\n".join(" ".join(f"word{i}x{j}" for j in range(150)) + "." for i in range(4))
    write(root, ANSWER, f"---\ntitle: answered\nsession: pair\nseq: 1\n---\nAssistant: {long_answer}\n")
    built = Memory(Vault(root), embedder_factory=lambda: fake, now=lambda: FIXED_NOW)
    built.refresh(vectors=False)
    built.indexer.ensure_vectors(deep=True)
    assert built.indexer.vectors().chunks_of(ANSWER) > 1
    try:
        yield built
    finally:
        built.close()


def _ranked(memory: Memory, cosines: dict[str, float], query: str = QUERY) -> list[Hit]:
    """Vector mode's hits for a vector side holding exactly these cosines."""
    found = memory.searcher.gather(SearchRequest(query=query, mode="vector"))
    pool = sorted(cosines.items(), key=lambda item: -item[1])
    found = dataclasses.replace(found, vector=pool, ranking=[], undiscounted={})
    assert isinstance(found, Candidates)
    request = SearchRequest(query=query, mode="vector", limit=10)
    return memory.searcher.rank(found, request, mode="vector", passages=False).hits


def test_an_answered_query_lists_its_nearest_notes_in_full_to_the_limit(memory: Memory) -> None:
    # One note above the floor; the rest below it, and none standing out from the others.
    cosines = {NOTES[0]: 0.5} | {p: 0.3 - i / 100 for i, p in enumerate(NOTES[1:])}
    hits = _ranked(memory, cosines)
    assert [h.path for h in hits] == NOTES[:10]  # ranked by cosine, not cut at the floor


def test_a_query_nothing_answers_still_gets_no_hit(memory: Memory) -> None:
    cosines = {p: 0.3 - i / 200 for i, p in enumerate(NOTES)}  # a flat pool below the floor
    assert _ranked(memory, cosines) == []


def test_a_pasted_conversation_gets_its_nearest_notes_below_the_floor(memory: Memory) -> None:
    cosines = {p: 0.3 - i / 200 for i, p in enumerate(NOTES)}
    hits = _ranked(memory, cosines, DIALOGUE)
    assert [h.path for h in hits] == NOTES[:10]


def test_a_note_that_is_no_evidence_by_itself_lends_no_lift(memory: Memory) -> None:
    # The note stands out from its pool; the chat's turns are near the query by chance (below the
    # floor, not standing out), and would lift one another above it.
    cosines = {NOTES[0]: 0.36} | {p: 0.26 - i / 100 for i, p in enumerate(CHAT)}
    cosines |= {p: 0.2 - i / 100 for i, p in enumerate(NOTES[1:8])}
    hits = _ranked(memory, cosines)
    assert hits[0].path == NOTES[0]
    assert set(CHAT) <= {h.path for h in hits}  # listed: the query is answered
    assert all(h.components["context"] == 0.0 for h in hits)


def test_a_long_turn_neither_lends_nor_gains_a_lift(memory: Memory) -> None:
    cosines = {ASKED: 0.5, ANSWER: 0.45} | {p: 0.3 - i / 100 for i, p in enumerate(NOTES)}
    hits = {h.path: h for h in _ranked(memory, cosines)}
    assert hits[ANSWER].components["context"] == 0.0  # not lifted by the short turn it answers
    assert hits[ASKED].components["context"] == 0.0  # nor lifting it
    assert [h for h in hits][:2] == [ASKED, ANSWER]


def _hybrid(
    memory: Memory, cosines: dict[str, float], query: str, how: retrieve.Gathering | None = None
) -> list[Hit]:
    """Hybrid mode's hits for a vector side holding exactly these cosines (no note holds a word of
    the queries below, so the keyword side is empty)."""
    found = memory.searcher.gather(SearchRequest(query=query, mode="hybrid"))
    assert not found.keyword
    pool = sorted(cosines.items(), key=lambda item: -item[1])
    found = dataclasses.replace(found, vector=pool, ranking=[], undiscounted={}, how=how or found.how)
    request = SearchRequest(query=query, mode="hybrid", limit=10)
    return memory.searcher.rank(found, request, mode="hybrid", passages=False).hits


def test_a_hybrid_request_once_answered_lists_its_nearest_notes_in_full(memory: Memory) -> None:
    cosines = {NOTES[0]: 0.5} | {p: 0.3 - i / 100 for i, p in enumerate(NOTES[1:])}
    hits = _hybrid(memory, cosines, QUERY)
    assert [h.path for h in hits] == NOTES[:10]


def test_a_hybrid_question_still_judges_each_candidate_by_the_floor(memory: Memory) -> None:
    cosines = {NOTES[0]: 0.5} | {p: 0.3 - i / 100 for i, p in enumerate(NOTES[1:])}
    hits = _hybrid(memory, cosines, "what did the Rome trip cost last spring")
    assert [h.path for h in hits] == [NOTES[0]]


def test_a_hybrid_request_takes_lifts_only_from_notes_that_are_evidence(memory: Memory) -> None:
    cosines = {NOTES[0]: 0.36} | {p: 0.26 - i / 100 for i, p in enumerate(CHAT)}
    cosines |= {p: 0.2 - i / 100 for i, p in enumerate(NOTES[1:8])}
    hits = _hybrid(memory, cosines, QUERY)
    assert hits[0].path == NOTES[0]
    assert set(CHAT) <= {h.path for h in hits}
    assert all(h.components["context"] == 0.0 for h in hits)


def test_a_long_answer_lifts_the_short_turn_beside_it_only_where_a_hybrid_request_is_ranked_by_words_too(
    memory: Memory,
) -> None:
    # A hybrid request ranks as vector mode ranks, where no long turn lends a lift; ranked with
    # its words too (a keyword candidate not embedded yet), its long answer still lifts.
    cosines = {ANSWER: 0.5} | {p: 0.3 - i / 100 for i, p in enumerate(NOTES)}
    by_meaning = {h.path: h for h in _hybrid(memory, cosines, QUERY)}
    assert ASKED not in by_meaning  # no vector candidate, and not lifted into the list
    words_too = _hybrid(memory, cosines, QUERY, retrieve.Gathering(request_by_meaning=False))
    assert {h.path: h for h in words_too}[ASKED].components["context"] > 0.0


def test_a_short_turn_lends_a_request_no_lift_but_lends_a_question_one(memory: Memory) -> None:
    # The first turn of the chat is evidence by its own cosine. Beside a question it lifts the
    # turn after it; beside a request it does not: a request's answer is a preference stated
    # once, which a chance-near chat lifted around it would push down.
    cosines = {CHAT[0]: 0.5} | {p: 0.3 - i / 100 for i, p in enumerate(NOTES)}
    question = {h.path: h for h in _ranked(memory, cosines, "what did the Rome trip cost last spring")}
    assert question[CHAT[1]].components["context"] > 0.0
    for hits in (_ranked(memory, cosines), _hybrid(memory, cosines, QUERY)):
        assert all(h.components["context"] == 0.0 for h in hits), [h.path for h in hits]


# ---- a request for a suggestion's own floor ------------------------------------------------------

FLAT_BELOW_FLOOR = {p: 0.3 - i / 200 for i, p in enumerate(NOTES)}  # nothing stands out, none at 0.4


@pytest.fixture
def as_minilm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The vault's fake vectors ranked with every constant measured for the packaged model."""
    monkeypatch.setattr(retrieve, "measured_as", lambda model_id: MINILM)


@pytest.mark.usefixtures("as_minilm")
def test_a_request_whose_nearest_note_passes_the_request_floor_lists_its_nearest_notes(
    memory: Memory,
) -> None:
    # The pool is flat and below the question's floor: a preference ("I avoid nightlife") is that
    # far from the request it answers, and nothing else in the vault is nearer. (The person's own
    # word among the nearest notes is what keeps a request from being judged as a question.)
    write(memory.vault.root, NOTES[11], "---\ntitle: Note 11\n---\nI avoid nightlife.\n")
    memory.refresh(vectors=False)
    hits = _ranked(memory, FLAT_BELOW_FLOOR)
    assert [h.path for h in hits] == NOTES[:10]
    assert all(h.components["context"] == 0.0 for h in hits)  # no note is evidence alone: none lends
    assert [h.path for h in _hybrid(memory, FLAT_BELOW_FLOOR, QUERY)] == NOTES[:10]


@pytest.mark.usefixtures("as_minilm")
def test_a_request_nothing_is_near_and_a_question_below_the_floor_still_get_no_hit(memory: Memory) -> None:
    far = {p: 0.2 - i / 200 for i, p in enumerate(NOTES)}  # below the request's floor too
    assert _ranked(memory, far) == []
    assert _hybrid(memory, far, QUERY) == []
    assert _ranked(memory, FLAT_BELOW_FLOOR, "what did the Rome trip cost last spring") == []


def test_a_request_floor_of_zero_never_silences_a_request(memory: Memory) -> None:
    far = {p: 0.1 - i / 200 for i, p in enumerate(NOTES)}
    found = memory.searcher.gather(SearchRequest(query=QUERY, mode="vector"))
    found = dataclasses.replace(
        found, vector=sorted(far.items(), key=lambda item: -item[1]), ranking=[], undiscounted={}
    )
    request = SearchRequest(query=QUERY, mode="vector", limit=10)
    assert memory.searcher.rank(found, request, mode="vector", passages=False).hits == []
    cfg = dataclasses.replace(memory.searcher.cfg, request_min_cosine=0.0)
    hits = memory.searcher.rank(found, request, cfg=cfg, mode="vector", passages=False).hits
    assert [h.path for h in hits] == NOTES[:10]


@pytest.mark.usefixtures("as_minilm")
def test_a_sealed_preference_held_in_memory_keeps_a_request_its_allowance(memory: Memory) -> None:
    # Nothing in the index is the person's own word; a sealed note filed as a preference, held in
    # memory and never in the catalog, is among the request's nearest notes.
    sealed = "memory/long-term/diet.md"
    found = memory.searcher.gather(SearchRequest(query=QUERY, mode="vector"))
    pool = sorted({**FLAT_BELOW_FLOOR, sealed: 0.31}.items(), key=lambda item: -item[1])
    found = dataclasses.replace(found, vector=pool, ranking=[], undiscounted={})
    cfg = memory.searcher.cfg
    for mode in ("vector", "hybrid"):
        sure = memory.searcher.confidence(found, cfg, mode)  # type: ignore[arg-type]
        assert sure is not None and sure < cfg.min_confidence, mode
    row = NoteRow(path=sealed, id="diet", title="Diet", category="preference")
    held = dataclasses.replace(found, apart={sealed: row})
    for mode in ("vector", "hybrid"):
        sure = memory.searcher.confidence(held, cfg, mode)  # type: ignore[arg-type]
        assert sure is not None and sure > 1.0, mode
