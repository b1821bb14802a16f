"""Session neighbours and long turns: a long turn (an assistant's essay, a pasted document) is not
lifted by the short turn next to it, which it used to outrank; and a request for a suggestion
gives most of its fusion weight to meaning."""

from __future__ import annotations

import pytest
from helpers import FIXED_NOW, among_others, session_turn

from tiered_memory.app.filing import NewNote, add_many
from tiered_memory.app.memory import Memory
from tiered_memory.config import SearchConfig
from tiered_memory.index.catalog import NoteRow
from tiered_memory.index.retrieve import (
    LONG_NOTE_BYTES,
    MIN_COSINE_SPAN,
    MULTILINGUAL_COSINE_SPAN,
    REQUEST_VECTOR_SHARE,
    Candidates,
    fusion_weights,
    neighbour_scores,
    propagate,
)
from tiered_memory.model.search import SearchRequest


def turn(i: int, speaker: str, size: int = 300) -> NoteRow:
    return NoteRow(path=f"t{i}.md", id=f"t{i}", session="s1", seq=i, speaker=speaker, size=size)


def hit(score: float) -> dict[str, float]:
    return {"keyword": score, "vector": 0.0, "fused": score}


# ---- the rule -----------------------------------------------------------------------------------


def test_a_long_turn_is_not_lifted_and_still_lifts_its_neighbours() -> None:
    rows = [turn(0, "User"), turn(1, "Assistant", LONG_NOTE_BYTES + 1), turn(2, "User")]
    # The question (t0) matches: the long reply after it gains nothing from it.
    assert neighbour_scores(rows, [1.0, 0.0, 0.0]) == [0.0, 0.0, 0.0]
    # The long reply matches: the short turns on either side are lifted by it, as before.
    assert neighbour_scores(rows, [0.0, 0.8, 0.0]) == [0.8, 0.0, 0.8]


def test_a_turn_of_the_long_size_itself_is_still_lifted() -> None:
    rows = [turn(0, "User"), turn(1, "Assistant", LONG_NOTE_BYTES)]
    assert neighbour_scores(rows, [1.0, 0.0]) == [0.0, 1.0]


def test_a_long_reply_does_not_overtake_the_question_that_would_lift_it() -> None:
    # A short question, its long answer and the next question, all matching a little: the answer
    # used to take 0.7 of the question's score on top of its own and rank first.
    rows = [turn(0, "User"), turn(1, "Assistant", 4000), turn(2, "User")]
    fused = {"t0.md": hit(1.0), "t1.md": hit(0.6), "t2.md": hit(0.2)}
    out = propagate(fused, {"s1": rows}, neighbor_weight=0.7, session_weight=0.0)
    assert out["t1.md"]["fused"] == pytest.approx(0.6)
    assert "context" not in out["t1.md"]
    assert out["t0.md"]["fused"] == pytest.approx(1.0 + 0.7 * 0.6)  # lifted by the long answer
    assert out["t2.md"]["fused"] == pytest.approx(0.2 + 0.7 * 0.6)
    assert max(out, key=lambda p: out[p]["fused"]) == "t0.md"


# ---- a vault ------------------------------------------------------------------------------------

QUESTION = "User: Which rental car would suit my upcoming road trip?"
# An assistant's long answer that shares no word with the query below: only a lift can make it a hit.
ESSAY = "Assistant: " + " ".join(
    f"Option {i}: a compact hatchback with good mileage, cheap insurance and room for two bags."
    for i in range(40)
)
STATEMENT = "User: I always book my rental car with unlimited mileage included."


def _chat(memory: Memory) -> dict[str, str]:
    notes = [
        session_turn("chat-1", 0, "User", QUESTION),
        session_turn("chat-1", 1, "Assistant", ESSAY),
        session_turn("chat-2", 0, "User", STATEMENT),
        session_turn("chat-2", 1, "Assistant", "Assistant: Noted."),
    ]
    written = among_others(memory, notes, "ingest: two chats")
    return {"question": written[0], "essay": written[1], "statement": written[2]}


def test_a_long_answer_is_no_hit_by_its_question_alone(memory: Memory) -> None:
    paths = _chat(memory)
    assert memory.indexer.catalog.get(paths["essay"]).size > LONG_NOTE_BYTES  # type: ignore[union-attr]
    request = SearchRequest(query="rental car for a road trip", mode="keyword", limit=5)
    found = [h.path for h in memory.search(request, record_access=False).hits]
    assert paths["essay"] not in found, found
    assert found[:2] == [paths["question"], paths["statement"]], found


# ---- fusion weights -----------------------------------------------------------------------------


def test_a_request_for_a_suggestion_weighs_meaning_most() -> None:
    cfg = SearchConfig()  # keyword 0.7, vector 0.3
    configured = (cfg.keyword_weight, cfg.vector_weight, MIN_COSINE_SPAN)
    share = REQUEST_VECTOR_SHARE
    leaning = pytest.approx((1 - share, share, MIN_COSINE_SPAN))
    assert fusion_weights("What hotels in Las Vegas would you recommend for me?", cfg, False) == leaning
    assert fusion_weights("Can you suggest a quiet hotel?", cfg, False) == leaning
    # A question, about someone else or about what the person did, keeps the configured weights.
    assert fusion_weights("Which hotel did Ann book in Las Vegas?", cfg, False) == configured
    assert fusion_weights("Have I booked the hotel in Las Vegas yet?", cfg, False) == configured
    # A pasted conversation holding a request: the configured weights.
    pasted = "Ann: I am off to Las Vegas.\nAssistant: Lovely! Any plans?\nAnn: Can you recommend a hotel?"
    assert fusion_weights(pasted, cfg, False) == configured
    # The share is of the configured total; a vector weight already above it stays as it is.
    half = SearchConfig(vector_weight=0.15, keyword_weight=0.35)
    assert fusion_weights("recommend me a hotel", half, False) == pytest.approx((0.05, 0.45, MIN_COSINE_SPAN))
    heavy = SearchConfig(vector_weight=0.95, keyword_weight=0.05)
    assert fusion_weights("recommend me a hotel", heavy, False) == pytest.approx(
        (0.05, 0.95, MIN_COSINE_SPAN)
    )


def test_cjk_and_multilingual_queries_keep_their_own_weights() -> None:
    cfg = SearchConfig()
    assert fusion_weights("我想找一家安静的酒店", cfg, False) == (
        cfg.keyword_weight,
        cfg.cjk_vector_weight,
        MIN_COSINE_SPAN,
    )
    assert fusion_weights("我想找一家安静的酒店", cfg, True) == (
        cfg.keyword_weight,
        cfg.multilingual_vector_weight,
        MULTILINGUAL_COSINE_SPAN,
    )


def test_the_nearer_meaning_wins_a_request_for_a_suggestion_in_hybrid(memory: Memory) -> None:
    """The same candidates ranked for a request for a suggestion and for a question about someone
    else: the one nearer in meaning comes first only for the former."""
    notes = [
        NewNote(text="I avoid hotels with a bustling nightlife.", title="Quiet please", tier="archive"),
        NewNote(text="Rental cars for the Las Vegas trip are booked.", title="Cars", tier="archive"),
    ]
    quiet, cars = (n.path for n in add_many(memory, notes, "add two notes"))
    memory.fresh(vectors=True)

    def first(query: str) -> str:
        # Words favour the car note, meaning the quiet one (cosines a model could give).
        found = Candidates(
            query,
            "hybrid",
            keyword=[(cars, 8.0), (quiet, 2.0)],
            vector=[(quiet, 0.62), (cars, 0.35)],
            coverage={cars: (0.6, 2), quiet: (0.45, 1)},
        )
        hits = memory.searcher.rank(found, SearchRequest(query=query, mode="hybrid"), mode="hybrid").hits
        assert memory.searcher.now() == FIXED_NOW
        return hits[0].path

    assert first("Which hotels in Las Vegas does Ann like?") == cars
    assert first("Which hotels in Las Vegas would you recommend for me?") == quiet
