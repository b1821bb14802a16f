"""The passage of a note that matched a query: what a result shows so a reader sees why it came back.

A note is cut into passages of a sentence or two (kept whole up to PASSAGE_CHARS); each passage
scores the idf-weighted sum of the query terms it holds, and the best one is returned, trimmed to
sentence bounds. Pure functions: the caller supplies the analyzer and the term weights.
"""

from __future__ import annotations

__all__ = ["PASSAGE_CHARS", "best_passage", "passages", "sentences"]

import re
from collections.abc import Callable, Sequence

PASSAGE_CHARS = 240
_PARAGRAPH = re.compile(r"\n\s*\n")

# Besides Markdown's marks: what Obsidian draws rather than shows as text, an embed (`![[x.png]]`,
# `![alt](x.png)`) and a callout's type (`> [!info]-`, `> [!danger|flat]`).
_MARKUP = re.compile(
    r"<!--.*?-->|!\[\[[^\[\]\n]*\]\]|!\[[^\[\]\n]*\]\([^()\n]*\)|^[ \t>]*\[![^\]\n]*\][+-]?"
    r"|^#{1,6}\s+|[*_`>]|^\s*[-+]\s+\[[ xX]\]\s*|^\s*[-+]\s+",
    re.DOTALL | re.MULTILINE,
)
# A sentence ends at . ! ? followed by space, at CJK sentence punctuation, or at a line break; a
# mark inside a word (`3.11`, `numpy.linalg`, `Gate-1.webp`, `[!info]`) is part of the sentence.
_SENTENCE = re.compile(r"(?:[^\n.!?。！？；]|[.!?](?!\s|$))*(?:[.!?](?=\s|$)|[。！？；]|\n|$)")


def sentences(text: str) -> list[str]:
    """The sentences of `text`, markup removed, blank ones dropped."""
    flat = _MARKUP.sub("", text)
    out: list[str] = []
    for match in _SENTENCE.finditer(flat):
        piece = " ".join(match.group().split())
        if piece:
            out.append(piece)
    return out


def passages(text: str, max_chars: int = PASSAGE_CHARS) -> list[str]:
    """Sentences grouped into passages of at most `max_chars` (a longer sentence stands alone);
    a passage never spans two paragraphs."""
    out: list[str] = []
    for paragraph in _PARAGRAPH.split(text):
        current = ""
        for sentence in sentences(paragraph):
            if current and len(current) + 1 + len(sentence) > max_chars:
                out.append(current)
                current = sentence
            else:
                current = f"{current} {sentence}" if current else sentence
        if current:
            out.append(current)
    return out


def best_passage(
    text: str,
    terms: Sequence[tuple[str, float]],
    analyze: Callable[[str], list[str]],
    max_chars: int = PASSAGE_CHARS,
    title: str = "",
) -> tuple[str, float]:
    """(passage, score): the passage holding the most query weight; ("", 0) when none holds any.

    `terms` are analyzed query terms with their weights (idf × position weight). A passage longer
    than `max_chars` (one very long sentence) is cut at a word boundary with an ellipsis. A first
    heading equal to `title` is not part of any passage."""
    weights = dict(terms)
    if not weights:
        return "", 0.0
    head, _, rest = text.lstrip().partition("\n")
    if title and head.lstrip("#").strip() == title.strip():
        text = rest  # the result shows the title already
    best, best_score = "", 0.0
    for passage in passages(text, max_chars):
        held = set(analyze(passage))
        score = sum(w for t, w in weights.items() if t in held)
        if score > best_score:
            best, best_score = passage, score
    if len(best) > max_chars:
        best = best[: max_chars - 1].rsplit(" ", 1)[0] + "…"
    return best, best_score
