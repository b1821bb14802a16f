"""What a search reads of a huge query: all of a question, a paragraph or a pasted conversation;
of a megabyte, its start and its end, cut at whitespace."""

from __future__ import annotations

from tiered_memory.model.search import MAX_QUERY_CHARS, searched_query


def test_a_query_up_to_the_bound_is_searched_whole() -> None:
    for query in ("gps drift", "why did uploads block?\n" * 100, "x" * MAX_QUERY_CHARS):
        assert searched_query(query) is query


def test_a_huge_text_keeps_its_start_and_end_in_whole_words() -> None:
    words = [f"word{i}" for i in range(200_000)]
    searched = searched_query(" ".join(words))
    assert len(searched) <= MAX_QUERY_CHARS
    kept = searched.split()
    assert kept[0] == "word0" and kept[-1] == "word199999"
    assert set(kept) <= set(words)  # no word cut in two
    assert kept[:1000] == words[:1000] and kept[-1000:] == words[-1000:]


def test_a_huge_conversation_keeps_its_last_turns_whole() -> None:
    turns = [f"User: question {i} about the survey\nAssistant: answer {i}" for i in range(20_000)]
    turns.append("User: where do the GNSS control points come from?")
    searched = searched_query("\n".join(turns))
    lines = searched.splitlines()
    assert lines[-1] == "User: where do the GNSS control points come from?"
    assert all(line.startswith(("User: ", "Assistant: ")) for line in lines[1:])


def test_one_huge_word_is_cut_all_the_same() -> None:
    assert len(searched_query("x" * 10_000_000)) <= MAX_QUERY_CHARS
