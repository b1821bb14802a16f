"""A conversation pasted as the query is searched by meaning from where it has got to: its vector
mixes the whole conversation's with its last turn's, so a memory bearing on the last turn is not
outranked by one on the conversation's earlier topics. A question is embedded as it is."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers import FAKE_CONFIG, FIXED_NOW, write

from tiered_memory.app.memory import Memory
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.retrieve import LAST_TURN_SHARE, Gathering, query_texts, query_vector
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault, init_vault

EARLIER = (
    "Bart: I went hiking in the mountains with my grandfather last summer.\n"
    "Assistant: The mountains must have been lovely, hiking with your grandfather.\n"
    "Bart: We hiked a mountain trail and camped by the river with grandfather.\n"
    "Assistant: Camping by a river sounds peaceful.\n"
)
LAST = "Bart: Now I want to bake a chocolate cake for mum."
DIALOGUE = EARLIER + LAST
HIKE = "memory/long-term/hike.md"
CAKE = "memory/long-term/cake.md"


class RecordingEmbedder(FakeEmbedder):
    """The fake model, recording the texts it is asked to embed."""

    def __init__(self) -> None:
        super().__init__(64)
        self.texts: list[str] = []
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        self.calls.append(list(texts))
        return super().embed(texts)


@pytest.fixture
def embedder() -> RecordingEmbedder:
    return RecordingEmbedder()


@pytest.fixture
def memory(tmp_path: Path, embedder: RecordingEmbedder) -> Iterator[Memory]:
    """Two memories: one on the conversation's earlier topic, one on its last turn's."""
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    write(
        root,
        HIKE,
        "---\ntitle: one\n---\nBart went hiking in the mountains with his grandfather "
        "and camped by the river.\n",
    )
    write(root, CAKE, "---\ntitle: two\n---\nBart baked a chocolate cake for his mum.\n")
    built = Memory(Vault(root), embedder_factory=lambda: embedder, now=lambda: FIXED_NOW)
    built.refresh(vectors=True)
    try:
        yield built
    finally:
        built.close()


def _vector_hits(memory: Memory, query: str, how: Gathering | None = None) -> list[str]:
    request = SearchRequest(query=query, mode="vector", limit=10)
    found = memory.searcher.gather(request, how=how)
    return [h.path for h in memory.searcher.rank(found, request, passages=False).hits]


def test_a_pasted_conversation_finds_the_memory_its_last_turn_bears_on(memory: Memory) -> None:
    assert _vector_hits(memory, DIALOGUE)[0] == CAKE


def test_embedded_whole_alone_the_earlier_topics_would_outrank_it(memory: Memory) -> None:
    # What the mix changes: the same conversation searched by its whole vector alone.
    assert _vector_hits(memory, DIALOGUE, Gathering(last_turn_share=0.0))[0] == HIKE


def test_the_conversation_and_its_last_turn_are_embedded(memory: Memory, embedder: RecordingEmbedder) -> None:
    embedder.texts.clear()
    _vector_hits(memory, DIALOGUE)
    assert embedder.texts == [DIALOGUE, LAST]


def test_each_is_embedded_alone_so_the_short_turn_is_not_padded_to_the_whole(
    memory: Memory, embedder: RecordingEmbedder
) -> None:
    embedder.calls.clear()
    _vector_hits(memory, DIALOGUE)
    assert embedder.calls == [[DIALOGUE], [LAST]]


def test_a_question_is_embedded_as_it_is(memory: Memory, embedder: RecordingEmbedder) -> None:
    embedder.texts.clear()
    question = "Who baked a cake?\nAnd for whom?"  # two lines, but no speaker: not a conversation
    _vector_hits(memory, question)
    assert embedder.texts == [question]
    assert query_texts(question) == [question]


def test_the_query_vector_is_the_mix_at_unit_length() -> None:
    whole, last = np.eye(4, dtype=np.float32)[:2]
    mixed = query_vector(np.stack([whole, last]))
    assert np.linalg.norm(mixed) == pytest.approx(1.0)
    expected = (1 - LAST_TURN_SHARE) * whole + LAST_TURN_SHARE * last
    assert np.allclose(mixed, expected / np.linalg.norm(expected))
    assert np.array_equal(query_vector(np.stack([whole])), whole)
