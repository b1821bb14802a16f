"""Who said a conversation turn: the `speaker:` of a turn filed as a note, kept in the catalog, and
the session lift that tells the other person's reply from the same person's next message by it."""

from __future__ import annotations

import sqlite3

import pytest
from helpers import FIXED_NOW, among_others, session_turn

from tiered_memory.app.filing import NewNote, add_many
from tiered_memory.app.memory import Memory
from tiered_memory.index.catalog import SCHEMA_VERSION, Catalog, NoteRow
from tiered_memory.index.retrieve import neighbour_scores, propagate
from tiered_memory.model.search import SearchRequest


def turn(i: int, speaker: str = "", session: str = "s1") -> NoteRow:
    return NoteRow(path=f"t{i}.md", id=f"t{i}", session=session, seq=i, speaker=speaker)


def hit(score: float) -> dict[str, float]:
    return {"keyword": score, "vector": 0.0, "fused": score}


# ---- the rule -----------------------------------------------------------------------------------


def test_turns_without_a_speaker_are_lifted_by_the_turns_next_to_them() -> None:
    rows = [turn(i) for i in range(4)]
    assert neighbour_scores(rows, [0.0, 1.0, 0.0, 0.0]) == [1.0, 0.0, 1.0, 0.0]


def test_a_turn_lifts_the_other_persons_turns_next_to_it_and_not_its_own() -> None:
    # Ann asks twice in a row; Bob answers; Bob adds one more; Ann replies.
    rows = [turn(0, "Ann"), turn(1, "Ann"), turn(2, "Bob"), turn(3, "bob"), turn(4, "Ann")]
    assert neighbour_scores(rows, [0.0, 1.0, 0.0, 0.0, 0.0]) == [0.0, 0.0, 1.0, 0.0, 0.0]
    # Bob's answer lifts the question before it, not his own next message (names match in any case).
    assert neighbour_scores(rows, [0.0, 0.0, 0.8, 0.0, 0.0]) == [0.0, 0.8, 0.0, 0.0, 0.0]


def test_a_turn_without_a_speaker_lifts_and_is_lifted_by_any_neighbour() -> None:
    rows = [turn(0, "Ann"), turn(1), turn(2, "Ann")]
    assert neighbour_scores(rows, [1.0, 0.0, 0.0]) == [0.0, 1.0, 0.0]
    assert neighbour_scores(rows, [0.0, 0.5, 0.0]) == [0.5, 0.0, 0.5]


def test_propagate_keeps_the_session_share_and_reads_unlifted_scores() -> None:
    rows = [turn(0, "Ann"), turn(1, "Ann"), turn(2, "Bob")]
    fused = {"t1.md": hit(1.0)}
    out = propagate(fused, {"s1": rows}, neighbor_weight=0.5, session_weight=0.1)
    assert out["t0.md"]["fused"] == pytest.approx(0.1)  # the same speaker: the session share only
    assert out["t2.md"]["fused"] == pytest.approx(0.5 + 0.1)
    assert out["t1.md"]["fused"] == pytest.approx(1.0 + 0.1)
    assert fused["t1.md"]["fused"] == 1.0


# ---- the catalog --------------------------------------------------------------------------------


def _chat(memory: Memory, turns: list[tuple[str, str]]) -> list[str]:
    notes = [session_turn("chat-1", i, who, f"{who}: {text}") for i, (who, text) in enumerate(turns)]
    return among_others(memory, notes, "ingest: a chat")


def test_the_catalog_keeps_each_turns_speaker(memory: Memory) -> None:
    paths = _chat(memory, [("Ann", "Hello there"), ("Bob  Smith", "Hi")])
    other = add_many(memory, [NewNote(text="A plain note", extra={"speaker": ["a", "list"]})], "add")[0]
    catalog = memory.indexer.catalog
    assert [catalog.get(p).speaker for p in paths] == ["Ann", "Bob Smith"]  # type: ignore[union-attr]
    assert catalog.get(other.path).speaker == ""  # type: ignore[union-attr]
    sessions = catalog.session_rows(["chat-1"])
    assert [r.speaker for r in sessions["chat-1"]] == ["Ann", "Bob Smith"]


def test_a_catalog_from_before_speakers_is_rebuilt_with_them(memory: Memory) -> None:
    paths = _chat(memory, [("Ann", "Hello there"), ("Bob", "Hi")])
    catalog_path = memory.indexer.catalog.path
    memory.close()
    db = sqlite3.connect(catalog_path)
    db.execute("ALTER TABLE notes DROP COLUMN speaker")
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION - 1}")
    db.commit()
    db.close()
    assert Catalog(catalog_path).created  # another version's catalog: started over
    reopened = Memory(memory.vault, now=lambda: FIXED_NOW)
    try:
        reopened.refresh()
        assert reopened.indexer.catalog.get(paths[0]).speaker == "Ann"  # type: ignore[union-attr]
    finally:
        reopened.close()


# ---- a vault ------------------------------------------------------------------------------------


def test_the_other_persons_reply_outranks_the_askers_next_fragment(memory: Memory) -> None:
    """Ann asks, then sends a fragment; Bob's answer comes after it and shares one word with the
    query. The fragment used to take the question's lift and rank above the answer; it no longer
    does."""
    turns = [
        ("Ann", "Where did you end up going for the team offsite?"),
        ("Ann", "I missed the email, sorry!!"),
        ("Bob", "Hangzhou, by the West Lake. The offsite boat ride was lovely."),
        ("Bob", "Barely stayed on budget, the hotel was pricey."),
    ]
    paths = _chat(memory, turns)
    request = SearchRequest(query="where was the team offsite", mode="keyword", limit=5)
    found = [h.path for h in memory.search(request, record_access=False).hits]
    assert found[:2] == [paths[0], paths[2]], found
