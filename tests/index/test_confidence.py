"""A hybrid search that finds nothing good returns nothing: its query-level confidence (best cosine
and best keyword coverage, a request allowed a little less) is below `search.min_confidence`,
even where a note passes the per-note evidence cut."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import FIXED_NOW, write

from tiered_memory.app.memory import Memory
from tiered_memory.config import SearchConfig
from tiered_memory.index.confidence import clear_nearest, confidence, is_request
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault, init_vault

# A few notes about one person; the vault says nothing about anyone else.
MARIA = {
    "memory/mid-term/garden.md": "---\ntitle: Maria's vegetable garden\n---\n"
    "Maria planted tomatoes, basil and peppers in the raised beds behind her house this spring.\n",
    "memory/mid-term/dog.md": "---\ntitle: Maria adopted a dog\n---\n"
    "Maria adopted Max, a three-year-old beagle, from the animal shelter on Elm Street.\n",
    "memory/mid-term/job.md": "---\ntitle: Maria's new job\n---\n"
    "Maria started as a nurse at the children's hospital in March; she works night shifts.\n",
    "memory/mid-term/trip.md": "---\ntitle: Trip to Lisbon\n---\n"
    "Maria and her sister spent a week in Lisbon in June and loved the pastel de nata.\n",
}
# Shares "sister" and "June" with the Lisbon note (two terms: the evidence cut keeps it), yet
# nothing in the vault is about John, cooking or a party.
NO_ANSWER = "What did John's sister cook for the party in June?"
ANSWERED = "Where did Maria adopt her dog?"


def test_a_request_is_told_from_a_question_about_a_fact() -> None:
    for text in (
        "Can you suggest some comfortable workout clothes for me?",
        "What are some good conditioners you'd suggest for dry hair?",
        "recommend a restaurant in Rome",
        "How can I reduce stress effectively?",
        "I'm planning my editing schedule for the week. How would you split it?",
    ):
        assert is_request(text), text
    for text in (
        "Where did Maria adopt her dog?",
        "What book recommendation did Tim give to John for the trip?",
        "When is the non-provisional patent filing scheduled?",
        "which coordinate system do we use",
    ):
        assert not is_request(text), text


def test_confidence_weighs_the_best_cosine_and_the_best_coverage() -> None:
    cosines = [("a.md", 0.5), ("b.md", 0.45)]
    coverage = {"a.md": (0.2, 1), "c.md": (0.6, 2)}
    assert confidence(cosines, coverage, "when did we move", 0.7, 0.1, 0.4) == pytest.approx(
        0.7 * 0.5 + 0.3 * 0.6
    )
    assert confidence(cosines, coverage, "can you suggest a move for me", 0.7, 0.1, 0.4) == pytest.approx(
        0.7 * 0.5 + 0.3 * 0.6 + 0.1
    )
    assert confidence([], {}, "anything", 0.7, 0.1, 0.4) == 0.0


def test_a_clear_nearest_note_is_an_answer() -> None:
    # Above the model's floor and well ahead of the next note: the teeth-cleaning paraphrase.
    assert clear_nearest([("dentist", 0.42), ("pizza", 0.09)], 0.4)
    assert (
        confidence([("dentist", 0.42), ("pizza", 0.09)], {}, "when is my teeth cleaning", 0.8, 1.0, 0.4)
        == 1.0
    )
    assert not clear_nearest([("dentist", 0.42), ("pizza", 0.35)], 0.4)  # not ahead of the rest
    assert not clear_nearest([("trip", 0.30), ("job", 0.09)], 0.4)  # below the floor
    assert clear_nearest([("only", 0.45)], 0.4)


@pytest.fixture
def maria(tmp_path: Path) -> Iterator[Memory]:
    from tiered_memory.index.embeddings import SentenceTransformerEmbedder

    root = tmp_path / "maria"
    init_vault(root)  # the default config: the packaged model the cut was measured on
    for rel, text in MARIA.items():
        write(root, rel, text)
    memory = Memory(Vault(root), embedder_factory=SentenceTransformerEmbedder, now=lambda: FIXED_NOW)
    yield memory
    memory.close()


def _titles(memory: Memory, query: str, cfg: SearchConfig | None = None, **request: float) -> list[str]:
    found = memory.searcher.gather(SearchRequest(query=query))
    return [h.title for h in memory.searcher.rank(found, SearchRequest(query=query, **request), cfg=cfg).hits]


@pytest.mark.model
def test_a_question_nothing_answers_returns_nothing_though_a_note_passes_the_evidence_cut(
    maria: Memory,
) -> None:
    maria.fresh(vectors=True)
    without_the_cut = dataclasses.replace(maria.searcher.cfg, min_confidence=0.0)
    assert _titles(maria, NO_ANSWER, without_the_cut) == ["Trip to Lisbon"]
    assert _titles(maria, NO_ANSWER) == []
    result = maria.search(SearchRequest(query=NO_ANSWER), record_access=False)
    assert result.hits == [] and result.notice and "min score of 0" in result.notice
    # Asking for every hit however unsure (min score 0) lists it anyway.
    assert _titles(maria, NO_ANSWER, min_score=0.0) == ["Trip to Lisbon"]
    # The question the vault answers still finds its note first.
    assert _titles(maria, ANSWERED)[0] == "Maria adopted a dog"
    assert maria.search(SearchRequest(query=ANSWERED), record_access=False).notice is None


@pytest.mark.model
def test_a_request_for_a_suggestion_is_not_cut(maria: Memory) -> None:
    # A preference or a past trip may answer it without sharing its words: the vault's best
    # evidence is as weak as a question nothing answers, yet it is kept.
    request = "Could you suggest a weekend trip for me?"
    maria.fresh(vectors=True)
    assert _titles(maria, request) == ["Trip to Lisbon"]
    no_allowance = dataclasses.replace(maria.searcher.cfg, confidence_request_allowance=0.0)
    assert _titles(maria, request, no_allowance) == []


@pytest.mark.model
def test_keyword_mode_and_a_pasted_conversation_are_not_cut_by_confidence(maria: Memory) -> None:
    maria.fresh(vectors=True)
    found = maria.searcher.gather(SearchRequest(query=NO_ANSWER))
    assert maria.searcher.confidence(found, maria.searcher.cfg, "keyword") is None
    assert maria.searcher.confidence(found, maria.searcher.cfg, "hybrid") is not None
    pasted = "Ann: my sister is in town in June\nBob: nice, what will you cook for the party?\n"
    assert (
        maria.searcher.confidence(
            maria.searcher.gather(SearchRequest(query=pasted)), maria.searcher.cfg, "hybrid"
        )
        is None
    )
