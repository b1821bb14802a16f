"""Whether anything in the vault answers a query at all: one number per search.

Each candidate already needs evidence of its own to be a hit (`retrieve.with_evidence`: enough of
the query's words, or a cosine above the model's floor). What passes is still the best of whatever
the vault holds, and in a vault of chat about people, places and feelings some note always shares
two words with a question about someone else. So a hybrid search also asks how good its best
evidence is, for the query as a whole:

    confidence = w · best cosine + (1 − w) · best keyword coverage (+ b when the query is a request)

the best cosine of the vector side (absolute, the packaged model's scale) and the best coverage
of the keyword side (the idf-weighted share of the query's terms one note holds; a term no note
holds counts too, so a question naming someone the vault never mentions covers little). Below
`search.min_confidence` the search returns nothing. A request for a suggestion ("can you suggest a
restaurant for me") is answered by a preference that names none of its words, so it gets the
allowance `b`.
The three constants were chosen by leave-one-set-out on six conversation sets
(docs/retrieval.md, "Confidence: when nothing answers").
"""

from __future__ import annotations

__all__ = ["CLEAR_MARGIN", "CONFIDENCE_MODELS", "clear_nearest", "confidence", "is_request"]

import re
from collections.abc import Mapping, Sequence

from tiered_memory.model.lazy_re import LazyPattern

# The embedding models whose cosines the cut was measured on: another model's cosines are on a
# scale of their own, so a search with it is not cut by confidence (its hits keep the evidence cut).
CONFIDENCE_MODELS = frozenset({"sentence-transformers:all-MiniLM-L6-v2"})
# A note this much closer in meaning than any other, and above the model's cosine floor, answers:
# in a small vault "when is my teeth cleaning" finds the one dentist note at cosine 0.42, the next
# at 0.09. In the evaluation's conversations (hundreds of turns) a best cosine stands this far out
# for 0-2 % of the unanswerable questions.
CLEAR_MARGIN = 0.15

# A query asking for a suggestion (what to try, buy, visit, do): the kind a person's preference
# answers without sharing a word with it. A request to list or explain what was said names its
# topic, and is judged like a question.
_REQUEST = LazyPattern(
    r"\b(?:can|could|would|will) you (?:please )?(?:recommend|reccommend|suggest"
    r"|help me (?:find|choose|pick|plan|decide|identify)"
    r"|give me (?:some )?(?:ideas|tips|suggestions|recommendations))\b"
    r"|\byou(?:'d| would)? (?:recommend|suggest)\b"
    r"|^\s*(?:please\s+)?(?:recommend|suggest)\b"
    r"|\bwhat are some\b|\bhow (?:can|should|could) i\b|\bfor me\b"
    r"|\bwhat(?:'s| is| are| would be) (?:the |a |some )?(?:best|good)\b"
    r"|\bshould i (?:consider|try|use|visit|get|buy|choose)\b"
    r"|\bany (?:tips|ideas|suggestions|recommendations)\b|\bideas for\b"
    r"|\bi need (?:a |some )?(?:recommendation|advice|suggestion)s?\b|\byour advice\b"
    r"|\bi(?:'m| am) (?:looking for|planning|thinking of|thinking about|considering)\b",
    re.IGNORECASE,
)


def is_request(query: str) -> bool:
    """Whether the query asks for a suggestion rather than a fact (`_REQUEST`)."""
    return _REQUEST.search(query) is not None


def clear_nearest(cosines: Sequence[tuple[str, float]], floor: float) -> bool:
    """Whether the nearest note in meaning is at least `floor` close and CLEAR_MARGIN closer than the next."""
    best, second = [*sorted((score for _, score in cosines), reverse=True)[:2], -1.0, -1.0][:2]
    return best >= floor and best - second >= CLEAR_MARGIN


def confidence(
    cosines: Sequence[tuple[str, float]],
    coverage: Mapping[str, tuple[float, int]],
    query: str,
    cosine_weight: float,
    request_allowance: float,
    floor: float,
) -> float:
    """How sure a search is that some note answers `query`: `cosine_weight` × its best cosine plus
    the rest × its best keyword coverage, plus `request_allowance` for a request (`is_request`).
    `cosines`: the vector side's (path, cosine); `coverage`: the keyword side's path →
    (share of the query's weight held, terms held). A clear nearest note (`clear_nearest` with the
    model's cosine `floor`) is confidence 1."""
    if clear_nearest(cosines, floor):
        return 1.0
    best_cosine = max((score for _, score in cosines), default=0.0)
    best_coverage = max((share for share, _ in coverage.values()), default=0.0)
    score = cosine_weight * best_cosine + (1.0 - cosine_weight) * best_coverage
    return score + (request_allowance if is_request(query) else 0.0)
