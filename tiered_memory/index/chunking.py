"""Split long notes into overlapping chunks small enough for an embedding model's window.

Tokens are approximated without a tokenizer (a tokenizer would mean importing the model's stack
on every indexing pass): a whitespace-separated word counts 1, a very long run (URL, hash, base64)
counts by its length, and CJK text, which has no spaces, counts each character as 1/1.5. Chunks
are slices of the original text, so they keep its Markdown, and prefer to end at a paragraph or
sentence boundary when one is near the limit.
"""

from __future__ import annotations

__all__ = ["CJK_CHARS_PER_TOKEN", "LONG_RUN_CHARS", "chunk_text", "select_passages"]

import functools
import re
from bisect import bisect_left
from itertools import accumulate
from typing import NamedTuple

# Scripts written without spaces between words: Han, kana, Hangul, CJK and fullwidth punctuation.
_CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"


class _Patterns(NamedTuple):
    token: re.Pattern[str]
    cjk_char: re.Pattern[str]
    sentence_end: re.Pattern[str]
    clause_end: re.Pattern[str]


@functools.cache
def _patterns() -> _Patterns:
    # Compiled on first use: the CJK ranges make these slow to compile, and most
    # commands that import the indexer never chunk a note.
    return _Patterns(
        token=re.compile(rf"[{_CJK}]|[^\s{_CJK}]{{1,48}}"),
        cjk_char=re.compile(rf"[{_CJK}]"),
        sentence_end=re.compile(r"[.!?;:。！？；…][\"'”’)\]）」』]*$"),
        clause_end=re.compile(r"[,，、]$"),
    )


CJK_CHARS_PER_TOKEN = 1.5
LONG_RUN_CHARS = 12  # past this, a run of non-space characters counts as several tokens


def _weight(token: str, cjk_char: re.Pattern[str]) -> float:
    if len(token) == 1 and cjk_char.match(token):
        return 1.0 / CJK_CHARS_PER_TOKEN
    return max(1.0, len(token) / LONG_RUN_CHARS)


def _break_score(text: str, token: str, gap_end: int, gap: str) -> int:
    """How good a place to cut is the gap after `token`: paragraph 3, sentence 2, clause 1."""
    if "\n\n" in gap or ("\n" in gap and text.startswith("#", gap_end)):
        return 3  # a blank line, or the line before a Markdown heading
    patterns = _patterns()
    if patterns.sentence_end.search(token) or "\n" in gap:
        return 2
    return 1 if patterns.clause_end.search(token) else 0


def chunk_text(text: str, max_tokens: int = 250, overlap: int = 50) -> list[str]:
    """Overlapping chunks of about `max_tokens` approximate tokens; [] for blank, [text] if short."""
    if not text.strip():
        return []
    max_tokens = max(1, max_tokens)
    overlap = max(0, min(overlap, max_tokens // 2))  # each chunk must move the window forward
    patterns = _patterns()
    spans = [(m.start(), m.end()) for m in patterns.token.finditer(text)]
    weights = [_weight(text[s:e], patterns.cjk_char) for s, e in spans]
    total = list(accumulate(weights, initial=0.0))  # total[i] = weight of tokens before i
    if total[-1] <= max_tokens:
        return [text]

    chunks: list[str] = []
    n = len(spans)
    start = 0
    while start < n:
        # Last token that still fits: at least one token, so a lone huge token cannot stall us.
        end = max(start + 1, bisect_left(total, total[start] + max_tokens + 1e-9) - 1)
        end = min(end, n)
        if end < n:
            end = _best_cut(text, spans, total, start, end, max_tokens)
        chunks.append(text[spans[start][0] : spans[end - 1][1]].strip())
        if end >= n:
            break
        # Step back `overlap` tokens' worth, but always move forward.
        back = bisect_left(total, total[end] - overlap - 1e-9)
        start = max(start + 1, min(back, end))
    return [c for c in chunks if c]


def _best_cut(
    text: str, spans: list[tuple[int, int]], total: list[float], start: int, end: int, limit: int
) -> int:
    """Cut after the best boundary in the last third of the window; the latest one wins a tie."""
    best, best_score = end, 0
    floor = total[start] + limit * (2 / 3)
    for i in range(end, start, -1):  # a cut after token i-1, i.e. before token i
        if total[i] < floor:
            break
        gap_start, gap_end = spans[i - 1][1], spans[i][0]
        score = _break_score(text, text[spans[i - 1][0] : gap_start], gap_end, text[gap_start:gap_end])
        if score > best_score:
            best, best_score = i, score
            if score == 3:
                break
    return best


# Chunks of a note a first vector pass embeds: the lead and the two passages that add most. The
# rest of a long note waits for a later pass (index.indexer): on the Obsidian help vault a third
# of the chunks are in the 130 notes of more than three chunks, the most of them 35.
FIRST_PASSAGES = 3
HEADING_WEIGHT = 1.5  # a passage that opens with a Markdown heading names its own subject
_HEADING = re.compile(r"#{1,6}\s")  # not a #tag


def select_passages(chunks: list[str], budget: int = FIRST_PASSAGES) -> list[int]:
    """Indices (ascending) of the chunks worth embedding first: the lead (the first chunk, which
    carries the title), then, one at a time, the chunk whose words not yet covered are the most
    distinctive within the note (each word weighs 1 / the number of the note's chunks it is in,
    so a word every chunk repeats adds little), 1.5 times that for a chunk that opens with a
    heading; the earlier chunk wins a tie. Cheap (no model, no corpus statistics) and the same
    for the same text, so a later pass knows which chunks are left."""
    if len(chunks) <= budget:
        return list(range(len(chunks)))
    if budget <= 0:
        return []
    token = _patterns().token
    words = [{w.lower() for w in token.findall(chunk) if len(w) > 2 or not w.isascii()} for chunk in chunks]
    spread: dict[str, int] = {}
    for seen in words:
        for word in seen:
            spread[word] = spread.get(word, 0) + 1
    chosen = [0]
    covered = set(words[0])
    while len(chosen) < budget:
        best, best_gain = -1, -1.0
        for i in range(1, len(chunks)):
            if i in chosen:
                continue
            gain = sum(1.0 / spread[w] for w in words[i] - covered)
            if _HEADING.match(chunks[i].lstrip()):
                gain *= HEADING_WEIGHT
            if gain > best_gain:
                best, best_gain = i, gain
        chosen.append(best)
        covered |= words[best]
    return sorted(chosen)
