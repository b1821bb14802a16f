"""Token counting with the MiniLM tokenizer shipped in the wheel, and the fallback estimate."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_memory.index import tokens
from tiered_memory.index.tokens import (
    ESTIMATE_NAME,
    MINILM_NAME,
    EstimateCounter,
    default_counter,
    load_minilm,
)


@pytest.fixture(scope="module")
def minilm() -> tokens.WordPieceCounter:
    return load_minilm()


def test_the_default_counter_is_the_packaged_minilm_tokenizer() -> None:
    counter = default_counter()
    assert counter.name == MINILM_NAME
    assert counter.count("hello world") == 2


def test_no_padding_and_no_truncation(minilm: tokens.WordPieceCounter) -> None:
    # The packaged tokenizer.json pads and truncates to 128: both must be off for counting.
    assert minilm.count("hi") == 1
    assert minilm.count("word " * 300) == 300
    assert minilm.count("") == 0


def test_counts_are_real_wordpiece_counts(minilm: tokens.WordPieceCounter) -> None:
    assert minilm.count("tokenization") == 2  # token ##ization
    assert minilm.count("CGCS2000, WGS84!") > 4  # punctuation and digits are pieces of their own
    assert minilm.count("坐标系") == 3  # one per CJK character


def test_truncate_returns_a_prefix_within_the_limit(minilm: tokens.WordPieceCounter) -> None:
    text = "The survey project uses CGCS2000 for control points; tablets record WGS84."
    total = minilm.count(text)
    assert minilm.truncate(text, total) == text
    assert minilm.truncate(text, total + 10) == text
    assert minilm.truncate(text, 0) == ""
    for limit in range(1, total):
        cut = minilm.truncate(text, limit)
        assert text.startswith(cut)
        assert 0 < minilm.count(cut) <= limit


@settings(max_examples=60, deadline=None)
@given(text=st.text(min_size=0, max_size=200), limit=st.integers(min_value=0, max_value=60))
def test_truncate_never_exceeds_the_limit(text: str, limit: int) -> None:
    for counter in (default_counter(), EstimateCounter()):
        cut = counter.truncate(text, limit)
        assert text.startswith(cut)
        assert counter.count(cut) <= limit


def test_estimate_counts_words_and_cjk_characters() -> None:
    estimate = EstimateCounter()
    assert estimate.name == ESTIMATE_NAME
    assert estimate.count("") == 0
    assert estimate.count("one two three") == 4  # 3 x 1.3, rounded up
    assert estimate.count("坐标系") == 3
    assert estimate.truncate("one two three four", 3) == "one two"


def test_falls_back_to_the_estimate_when_the_tokenizer_cannot_load(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> tokens.WordPieceCounter:
        raise OSError("tokenizer.json missing")

    monkeypatch.setattr(tokens, "load_minilm", broken)
    default_counter.cache_clear()
    try:
        assert default_counter().name == ESTIMATE_NAME
    finally:
        monkeypatch.undo()
        default_counter.cache_clear()
    assert default_counter().name == MINILM_NAME


def test_counting_loads_no_torch() -> None:
    code = (
        "import sys\nfrom tiered_memory.index.tokens import count_tokens, default_counter\n"
        "assert count_tokens('hello world') == 2, default_counter().name\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'sentence_transformers')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"
