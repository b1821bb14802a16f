"""Which terms of a long query to search for, and how much each one counts.

A pasted paragraph or a whole dialogue must not become a thousand-term query, but cutting it at
its first N terms throws away its end, which in a conversation is the part that says what is being
talked about now. Instead every term gets a weight from where it stands (in a conversation-shaped
query the last turn counts fully, earlier turns less) and the terms kept are the ones with the
highest weight × idf, wherever they are.
"""

from __future__ import annotations

__all__ = [
    "CONTEXT_WEIGHT",
    "MAX_LOOKED_UP",
    "MAX_QUERY_TERMS",
    "REQUEST_FORM_WEIGHT",
    "cjk_share",
    "dialogue_turns",
    "first_person",
    "weighted_terms",
]

from collections.abc import Callable, Sequence

from tiered_memory.model.lazy_re import LazyPattern

MAX_QUERY_TERMS = 96  # searched terms per query; BM25 cost grows with each one
# The distinct terms of one query whose idf is looked up (five index lookups each): a query of
# 200,000 different words took over a minute before the search began. Past it, the terms kept are
# those of the highest weight, the earlier first: a dialogue's last turn before its earlier ones.
MAX_LOOKED_UP = 10 * MAX_QUERY_TERMS
CONTEXT_WEIGHT = 0.5  # earlier turns of a dialogue-shaped query, relative to its last turn
# The words of a request's form ("can you recommend", "what are some good", "for me"), relative to
# its other words. Every request shares them, and so do the answers listing options ("here are some
# options I'd recommend"); the one word a person's preference shares with the request is its topic
# ("hotels"). Measured: docs/retrieval.md, "A request's form words, and its own statements".
REQUEST_FORM_WEIGHT = 0.3

# `Name: utterance` lines (a transcript pasted as a query); the name is short and has no colon.
_SPEAKER_LINE = LazyPattern(r"^\s*[^\s:：][^:：\n]{0,40}[:：]\s*\S")
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
# Compiled on first use (their Unicode classes cost milliseconds): ASCII queries never need them.
_CJK = LazyPattern(f"[{_CJK_CHARS}]")
_OTHER_WORD = LazyPattern(f"[^\\W_{_CJK_CHARS}]+")
# The speaker's own words for themselves ("I'm", "my", "for me"); stop words, so no search term.
_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})
# Split off like spaces (`first_person`): "I'm" holds the word "i", "me?" the word "me".
_APART = str.maketrans({c: " " for c in "'’.,;:!?()[]{}/\"“”"})


def dialogue_turns(query: str) -> list[str] | None:
    """The turns of a query shaped like a transcript (two or more `Name: text` lines), else None."""
    lines = [line for line in query.splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    speaking = sum(1 for line in lines if _SPEAKER_LINE.match(line))
    return lines if speaking >= 2 and speaking >= len(lines) / 2 else None


def cjk_share(text: str) -> float:
    """How much of `text` is Chinese, Japanese or Korean: CJK characters over CJK characters plus
    other words (a character of those scripts carries about as much as a word of others)."""
    if text.isascii():
        return 0.0
    cjk = len(_CJK.findall(text))
    words = len(_OTHER_WORD.findall(text))
    return cjk / (cjk + words) if cjk + words else 0.0


def first_person(text: str) -> bool:
    """Whether `text` speaks of its speaker: "I avoid gluten", "recommend a hotel for me". Plain
    string operations, no pattern: a keyword search asks this of every query and compiles none."""
    return not _FIRST_PERSON.isdisjoint(text.lower().translate(_APART).split())


def weighted_terms(
    query: str,
    analyze: Callable[[str], list[str]],
    idf: Callable[[str], float],
    limit: int = MAX_QUERY_TERMS,
    context_weight: float = CONTEXT_WEIGHT,
    form: Sequence[str] = (),
) -> list[tuple[str, float]]:
    """[(term, weight)] to search for: the `limit` terms with the highest weight × idf.

    `idf` returns 0 for a term no note contains (it is dropped: it can only take a place). In a
    dialogue-shaped query terms of the last turn weigh 1 and terms only in earlier turns
    `context_weight`; in any other query every term weighs 1. `form`: the spans of the query that
    make it a request (`confidence.request_form`); their terms weigh REQUEST_FORM_WEIGHT, unless
    the request holds no other term."""
    turns = dialogue_turns(query)
    weights: dict[str, float] = {}
    if turns is None:
        for term in analyze(query):
            weights.setdefault(term, 1.0)
    else:
        for i, line in enumerate(turns):
            weight = 1.0 if i == len(turns) - 1 else context_weight
            for term in analyze(line):
                weights[term] = max(weights.get(term, 0.0), weight)
    if len(weights) > MAX_LOOKED_UP:
        items = list(weights.items())
        kept = sorted(range(len(items)), key=lambda i: -items[i][1])[:MAX_LOOKED_UP]  # stable
        weights = dict(items[i] for i in sorted(kept))
    scored = [(term, weight, idf(term)) for term, weight in weights.items()]
    scored = [item for item in scored if item[2] > 0]
    asking = {term for span in form for term in analyze(span)}
    if asking and any(term not in asking for term, _, _ in scored):
        scored = [
            (term, weight * REQUEST_FORM_WEIGHT if term in asking else weight, i)
            for term, weight, i in scored
        ]
    if len(scored) > limit:
        # Stable on ties: earlier terms first, so the result does not depend on hash order.
        order = sorted(range(len(scored)), key=lambda i: -scored[i][1] * scored[i][2])[:limit]
        scored = [scored[i] for i in sorted(order)]
    return [(term, weight) for term, weight, _ in scored]
