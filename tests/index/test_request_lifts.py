"""A keyword request for a suggestion: a short turn's session lift still brings its neighbour into
the list, but never above the best note on its own words. Every request shares its form words with
the person's other requests and the option lists answering them, so another chat's prompt and its
reply lifted each other above the stated preference that holds the request's topic."""

from __future__ import annotations

import pytest
from helpers import among_others, session_turn

from tiered_memory.app.memory import Memory
from tiered_memory.index.catalog import NoteRow
from tiered_memory.index.retrieve import (
    LONG_NOTE_BYTES,
    Gathering,
    cap_short_lifts,
    neighbour_lenders,
    propagate,
)
from tiered_memory.model.search import SearchRequest


def turn(i: int, speaker: str, size: int = 300, session: str = "s1") -> NoteRow:
    return NoteRow(
        path=f"{session}-t{i}.md", id=f"{session}-t{i}", session=session, seq=i, speaker=speaker, size=size
    )


def hit(score: float) -> dict[str, float]:
    return {"keyword": score, "vector": 0.0, "fused": score}


def test_each_turn_is_lifted_by_the_better_neighbour_that_may_lift_it() -> None:
    rows = [turn(0, "User"), turn(1, "Assistant"), turn(2, "User"), turn(3, "Assistant", LONG_NOTE_BYTES + 1)]
    assert neighbour_lenders(rows, [0.2, 0.0, 0.9, 0.5]) == [1, 2, 3, None]  # a long turn: none
    assert neighbour_lenders([turn(0, "User")], [1.0]) == [None]


def test_a_short_turn_lifts_its_neighbour_to_just_below_the_best_note_on_its_own_words() -> None:
    prompt, reply = turn(0, "User"), turn(1, "Assistant")
    preference = turn(0, "User", session="s2")
    sessions = {"s1": [prompt, reply], "s2": [preference]}
    fused = {preference.path: hit(1.0), prompt.path: hit(0.86), reply.path: hit(0.64)}
    out = propagate(fused, sessions, neighbor_weight=0.7, session_weight=0.0)
    assert out[prompt.path]["fused"] > 1.0  # lifted above the preference
    cap_short_lifts(out, fused, sessions)
    # Both turns of the other chat, lifted past it by each other, now come just below it.
    for path in (prompt.path, reply.path):
        assert out[path]["fused"] == pytest.approx(1.0) and out[path]["fused"] < 1.0
    assert out[preference.path]["fused"] == 1.0
    # A lifted note that stays below the best keeps its lift.
    low = {preference.path: hit(1.0), prompt.path: hit(0.3), reply.path: hit(0.2)}
    out = propagate(low, sessions, neighbor_weight=0.7, session_weight=0.0)
    cap_short_lifts(out, low, sessions)
    assert out[reply.path]["fused"] == pytest.approx(0.2 + 0.7 * 0.3)


def test_a_long_answer_s_lift_is_not_capped() -> None:
    question, essay = turn(0, "User"), turn(1, "Assistant", LONG_NOTE_BYTES + 1)
    other = turn(0, "User", session="s2")
    sessions = {"s1": [question, essay], "s2": [other]}
    fused = {other.path: hit(1.0), question.path: hit(0.5), essay.path: hit(0.9)}
    out = propagate(fused, sessions, neighbor_weight=0.7, session_weight=0.0)
    cap_short_lifts(out, fused, sessions)
    assert out[question.path]["fused"] == pytest.approx(0.5 + 0.7 * 0.9)  # above the best, as before


# ---- a vault ------------------------------------------------------------------------------------

PROMPT = "User: What are some good ways to stay motivated during my workout routine?"
REPLY = "Assistant: Set yourself small goals, and stay with a friend who trains too."
PREFERENCE = "User: I have a strong aversion to hotels located in high-rise buildings."
REQUEST = "What are some of the best hotels for my stay in Tokyo?"


def _chats(memory: Memory) -> dict[str, str]:
    notes = [
        session_turn("chat-1", 0, "User", PROMPT),
        session_turn("chat-1", 1, "Assistant", REPLY),
        session_turn("chat-2", 0, "User", PREFERENCE),
    ]
    written = among_others(memory, notes, "ingest: two chats")
    return {"prompt": written[0], "reply": written[1], "preference": written[2]}


def test_a_keyword_request_finds_its_preference_before_another_chat_s_prompt(memory: Memory) -> None:
    paths = _chats(memory)
    found = memory.searcher.gather(SearchRequest(query=REQUEST, mode="keyword"))
    assert [p for p, _ in found.keyword][0] == paths["preference"]  # first on its own words
    hits = [
        h.path for h in memory.search(SearchRequest(query=REQUEST, mode="keyword"), record_access=False).hits
    ]
    assert hits[0] == paths["preference"], hits
    assert paths["prompt"] in hits  # the lift still lists it


def test_a_question_keeps_its_lifts_whole(memory: Memory) -> None:
    # Not a request for a suggestion: the other chat's turns, lifted by each other, still rank first.
    paths = _chats(memory)
    question = "hotels to stay at"
    hits = [
        h.path for h in memory.search(SearchRequest(query=question, mode="keyword"), record_access=False).hits
    ]
    assert set(hits[:2]) == {paths["prompt"], paths["reply"]} and hits[2] == paths["preference"], hits


def test_switched_off_a_keyword_request_s_short_turns_lift_uncapped(memory: Memory) -> None:
    # The ablation's switch, carried by the candidates to ranking: the other chat's turns, lifted
    # by each other, come before the preference again.
    paths = _chats(memory)
    request = SearchRequest(query=REQUEST, mode="keyword")
    found = memory.searcher.gather(request, how=Gathering(capped_lifts=False))
    assert [p for p, _ in found.keyword][0] == paths["preference"]
    hits = [h.path for h in memory.searcher.rank(found, request).hits]
    assert hits.index(paths["prompt"]) < hits.index(paths["preference"]), hits
