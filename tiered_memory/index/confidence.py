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
`search.min_confidence` the search returns nothing. A request ("can you suggest a restaurant for
me") is answered by a preference that names none of its words, so it gets the allowance `b`.
The three constants were chosen by leave-one-set-out on six conversation sets
(docs/retrieval.md, "Confidence: when nothing answers").
"""

from __future__ import annotations

__all__ = ["CONFIDENCE_MODELS", "confidence", "is_request"]

import re
from collections.abc import Mapping, Sequence

from tiered_memory.model.lazy_re import LazyPattern

# The embedding models whose cosines the cut was measured on: another model's cosines are on a
# scale of their own, so a search with it is not cut by confidence (its hits keep the evidence cut).
CONFIDENCE_MODELS = frozenset({"sentence-transformers:all-MiniLM-L6-v2"})

# A query asking for something to be done or suggested, not about a fact: second-person asks,
# imperatives, "what are some", "how can I", "for me".
_REQUEST = LazyPattern(
    r"\b(?:can|could|would|will) you\b"
    r"|\byou(?:'d| would)? (?:recommend|suggest)\b"
    r"|^\s*(?:please\s+)?(?:recommend|suggest|give|tell|show|write|plan|list|find|help|create|draft|make)\b"
    r"|\bwhat are some\b|\bhow (?:can|should|do|could) i\b|\bfor me\b|\bhelp me\b"
    r"|\bany (?:tips|ideas|suggestions|recommendations)\b"
    r"|\bi(?:'m| am) (?:looking|planning|thinking)\b",
    re.IGNORECASE,
)


def is_request(query: str) -> bool:
    """Whether the query asks for something (a suggestion, a piece of work) rather than a fact."""
    return _REQUEST.search(query) is not None


def confidence(
    cosines: Sequence[tuple[str, float]],
    coverage: Mapping[str, tuple[float, int]],
    query: str,
    cosine_weight: float,
    request_allowance: float,
) -> float:
    """How sure a search is that some note answers `query`: `cosine_weight` × its best cosine plus
    the rest × its best keyword coverage, plus `request_allowance` for a request (`is_request`).
    `cosines`: the vector side's (path, cosine); `coverage`: the keyword side's path →
    (share of the query's weight held, terms held)."""
    best_cosine = max((score for _, score in cosines), default=0.0)
    best_coverage = max((share for share, _ in coverage.values()), default=0.0)
    score = cosine_weight * best_cosine + (1.0 - cosine_weight) * best_coverage
    return score + (request_allowance if is_request(query) else 0.0)
