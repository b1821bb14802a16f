from __future__ import annotations

import re

from tiered_memory.index.chunking import chunk_text, select_passages


def _long_english(sentences: int = 300) -> str:
    parts = [f"Sentence {i} covers topic{i % 11} with a few extra words." for i in range(sentences)]
    # paragraphs of 12 sentences
    return "\n\n".join(" ".join(parts[i : i + 12]) for i in range(0, sentences, 12))


def test_empty_and_blank() -> None:
    assert chunk_text("") == []
    assert chunk_text("  \n\t ") == []


def test_short_text_is_one_chunk_unchanged() -> None:
    text = "# Title\n\nA short note about the database."
    assert chunk_text(text) == [text]


def test_long_text_is_split_within_limit() -> None:
    text = _long_english()
    chunks = chunk_text(text, max_tokens=100, overlap=20)
    assert len(chunks) > 1
    assert all(len(c.split()) <= 100 for c in chunks)
    assert all(len(c.split()) >= 40 for c in chunks[:-1])  # no degenerate slivers


def test_all_words_covered_in_order() -> None:
    text = _long_english()
    chunks = chunk_text(text, max_tokens=80, overlap=10)
    covered = set()
    for chunk in chunks:
        covered.update(re.findall(r"Sentence \d+ ", chunk))
    assert covered == set(re.findall(r"Sentence \d+ ", text))
    assert "".join(chunks).count("Sentence 0 ") >= 1 and chunks[-1].endswith("extra words.")


def test_consecutive_chunks_overlap() -> None:
    chunks = chunk_text(_long_english(), max_tokens=100, overlap=30)
    for left, right in zip(chunks, chunks[1:], strict=False):
        head = " ".join(right.split()[:5])
        assert head in left  # the next chunk starts inside the previous one


def test_no_overlap_when_zero() -> None:
    words = [f"w{i}" for i in range(1000)]
    chunks = chunk_text(" ".join(words), max_tokens=100, overlap=0)
    assert sum(len(c.split()) for c in chunks) == 1000


def test_prefers_sentence_and_paragraph_boundaries() -> None:
    chunks = chunk_text(_long_english(), max_tokens=100, overlap=0)
    assert all(c.endswith(".") for c in chunks)


def test_cjk_text_is_chunked() -> None:
    text = "数据库迁移到新的服务器需要仔细规划和测试。" * 120  # 2400 characters, no spaces
    chunks = chunk_text(text, max_tokens=100, overlap=10)
    assert len(chunks) > 5
    assert all(len(c) <= 160 for c in chunks)  # about 1.5 characters per token
    assert all(c.endswith("。") for c in chunks)  # cut at the end of a sentence
    assert sum(len(c) for c in chunks) >= len(text)


def test_long_unbroken_run_is_split() -> None:
    blob = "A" * 20000  # a base64 blob or a minified line
    chunks = chunk_text(blob, max_tokens=50, overlap=5)
    assert len(chunks) > 10
    assert all(len(c) <= 50 * 12 + 48 for c in chunks)
    assert "".join(chunks).count("A") >= 20000


def test_mixed_cjk_and_latin() -> None:
    text = ("Postgres 迁移 notes: 我们把数据库迁移到了 Postgres 16。 " * 80).strip()
    chunks = chunk_text(text, max_tokens=60, overlap=10)
    assert len(chunks) > 3 and all(chunks)


def test_select_passages_keeps_short_notes_whole() -> None:
    assert select_passages(["a"], 3) == [0]
    assert select_passages(["a", "b", "c"], 3) == [0, 1, 2]
    assert select_passages(["a", "b"], 0) == []


def test_select_passages_takes_the_lead_and_the_most_distinctive_passages() -> None:
    filler = "the project notes say the meeting went fine and the plan holds " * 3
    chunks = [
        "# Release checklist\n\n" + filler,  # the lead: always first
        filler,  # says nothing the lead did not
        filler + "rollback canary kubernetes helm chart staging",  # new words
        filler + "again",  # one new word
        "## Certificates\n\n" + filler + "rotation expiry",  # a heading: its new words weigh more
        filler + "vacation",
    ]
    assert select_passages(chunks, 3) == [0, 2, 4]
    assert select_passages(chunks, 2) == [0, 2]


def test_select_passages_prefers_words_of_one_passage_and_earlier_on_a_tie() -> None:
    chunks = ["lead text here", "alpha beta gamma", "delta epsilon zeta", "alpha beta gamma"]
    assert select_passages(chunks, 2) == [0, 2]  # its words are in no other passage
    assert select_passages(chunks, 3) == [0, 1, 2]  # 1 and 3 tie: the earlier one
    assert select_passages(list(chunks), 3) == select_passages(chunks, 3)


def test_a_tag_is_not_a_heading() -> None:
    chunks = ["lead", "#tag words one two", "#### words one three"]
    assert select_passages(chunks, 2) == [0, 2]  # same new words; the heading wins
