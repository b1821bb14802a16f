"""Whether anything in the vault answers a query at all: one number per search, in each mode.

Each candidate already needs evidence of its own to be a hit (`retrieve.with_evidence`: enough of
the query's words, or a cosine above the model's floor). What passes is still the best of whatever
the vault holds, and in a vault of chat about people, places and feelings some note always shares
two words with a question about someone else. So a search also asks how good its best evidence
is, for the query as a whole:

    hybrid   HYBRID_SCALE · (w · best cosine + (1 − w) · best keyword coverage + KNOWN_WEIGHT · known)
    keyword  KEYWORD_SCALE · best keyword coverage (0 for a question naming what no note mentions)
    vector   VECTOR_SCALE · (best cosine + KNOWN_WEIGHT · known)

(+ an allowance when the query is a request and one of its nearest notes, at least 0.2 near in
meaning, is the person's own word about themselves, `states_the_person`): the best cosine of the vector side (absolute, the
packaged model's scale), the best coverage of the keyword side (the idf-weighted share of the
query's terms one note holds; a term no note holds counts too, so a question naming someone the
vault never mentions covers little), and `known`, that share held by the vault's notes together
(`FtsIndex.known`): a question whose names, places and libraries no note mentions is about
something else, however near in meaning some note is. It was measured on archives of
conversation, which hold the everyday words. In a person's own notes a hybrid search weighs it in
proportion to how many notes there are (`notes_known`) and the best cosine less
(`search.notes_confidence_cosine_weight`); a vector search there passes 1. The best cosine's lead over the next
nearest notes (`lead`) was weighed too, and is no longer (LEAD_WEIGHT). The
scales put the three on one scale: below `search.min_confidence` a search of any mode returns
nothing. A request for a suggestion ("can you suggest a restaurant for me") is answered by a
preference that names none of its words, so it gets an allowance, but only from a vault where the
person said something about themselves near it: a vault of what others did ("Lisa had a great
time at the amusement park") answers "can you recommend some thrilling games for me" no better than
a question about someone else.
The constants were chosen by leave-one-set-out on six conversation sets (docs/retrieval.md,
"Confidence: when nothing answers", "Confidence in every mode" and "What the vault holds of a
question").
"""

from __future__ import annotations

__all__ = [
    "CLEAR_MARGIN",
    "CONFIDENCE_MODELS",
    "HYBRID_SCALE",
    "KEYWORD_SCALE",
    "KNOWN_FULL_NOTES",
    "KNOWN_WEIGHT",
    "LEAD_DEPTH",
    "LEAD_WEIGHT",
    "PERSONAL_CATEGORIES",
    "STATEMENT_DEPTH",
    "STATEMENT_MIN_COSINE",
    "VECTOR_LEAD_WEIGHT",
    "VECTOR_SCALE",
    "clear_nearest",
    "confidence",
    "is_own_statement",
    "is_request",
    "keyword_confidence",
    "names_unheard",
    "notes_known",
    "lead",
    "request_allowance",
    "request_form",
    "states_the_person",
    "vector_confidence",
]

import functools
import re
from collections.abc import Mapping, Sequence

from tiered_memory.index.query_terms import dialogue_turns, first_person
from tiered_memory.model.lazy_re import LazyPattern

# The embedding models whose cosines the cut was measured on: another model's cosines are on a
# scale of their own, so a search with it is not cut by confidence (its hits keep the evidence cut).
CONFIDENCE_MODELS = frozenset({"sentence-transformers:all-MiniLM-L6-v2"})
# A note this much closer in meaning than any other, and above the model's cosine floor, answers:
# in a small vault "when is my teeth cleaning" finds the one dentist note at cosine 0.42, the next
# at 0.09. In the evaluation's conversations (hundreds of turns) a best cosine stands this far out
# for 0-2 % of the unanswerable questions.
CLEAR_MARGIN = 0.15
# How many of the next nearest notes the best one's lead is measured over (`lead`).
LEAD_DEPTH = 9
# Fitted by leave-one-set-out with search.min_confidence (scripts/eval_confidence.py;
# docs/retrieval.md, "What the vault holds of a question"): the weight of the share of the query
# the vault holds (`known`) in a hybrid and a vector search, the weight of the best cosine's lead
# (none since `known` is weighed: fitted on five sets it came out 0 in every hybrid fold and all
# but one vector fold), and
# the factors that put a hybrid search's rule (its own cut 0.62), a keyword search's best coverage
# (0.28) and a vector search's (0.64) on one scale (0.38), so that one cut,
# `search.min_confidence`, serves the three modes and scales them together.
KNOWN_WEIGHT = 0.3
LEAD_WEIGHT = 0.0
VECTOR_LEAD_WEIGHT = 0.0
HYBRID_SCALE = 0.38 / 0.62
KEYWORD_SCALE = 0.38 / 0.28
VECTOR_SCALE = 0.38 / 0.64
# A request keeps its allowance only when one of this many of its nearest notes in meaning is the
# person's own word about themselves (`states_the_person`). Measured on the six evaluation sets
# (docs/retrieval.md, "A request is answered by what the person said"): the answerable requests
# of PrefEval and BEAM that need the allowance all have one; the requests other sets ask of
# MADial's archive of what two children did, written in the third person, never do.
STATEMENT_DEPTH = 20
# In a person's own notes (not a conversation's turns), what the vault holds of a question weighs
# in full from this many notes, and in proportion below (`notes_known`): a handful of notes holds
# few words, so a word none of them holds says little of the question ("coordinate system" of a new
# vault's two notes, one of which is the decision on control points it asks about).
KNOWN_FULL_NOTES = 100
# ... and at least this near in meaning (the packaged model's cosine). Another person's "I'm
# struggling with probability" is among the nearest notes of "how should I organize my CV" in a
# vault about nothing else, at cosine 0.1; "I strictly avoid gluten" is near "which restaurants
# in Rome would you recommend for me" at 0.2 and more. Measured on the six evaluation sets
# (docs/retrieval.md, "Probes that cannot be answered"): at 0.2 BEAM's requests asked of another
# chat return nothing 85 % of the time rather than 74 %, and PrefEval's answerable requests lose
# 0.2 points of R@5.
STATEMENT_MIN_COSINE = 0.2
# A note filed under one of these categories of what a person is like (`model.note.CATEGORIES`)
# is the person's own word, however long or phrased ("The user prefers pull requests under 300
# lines").
PERSONAL_CATEGORIES = frozenset({"preference", "profile"})

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
    r"|\bi(?:'m| am) (?:looking for|planning|thinking of|thinking about|considering)\b"
    # Asked of what to do rather than what is known (PrefEval's requests the forms above missed):
    # "where should I eat in Istanbul", "which indie games should I try", "what are my best options".
    r"|\bwhere (?:should|can) i (?:stay|eat|take|find|buy|go)\b"
    r"|\bi should (?:try|attend|consider|check out|add|read|watch|play|visit)\b"
    r"|\bshould i (?:attend|check out|add|read|watch|play|include|wear|do)\b"
    r"|\bwhat are my best\b|\bhighly recommended\b|\byour recommendations\b"
    r"|\bsuggestions do you have\b|\bcan you (?:please )?(?:create|provide some|help me select)\b"
    r"|\bcan i (?:try|do)\b|\bwhat(?:'s|\u2019s) the best\b|\bstrategies could help\b",
    re.IGNORECASE,
)


# A word or phrase every form `_REQUEST` recognises holds: a query with none of them is not a
# request, and a keyword search (which now asks) compiles no pattern for it.
_REQUEST_HINTS = (
    "recommend", "reccommend", "suggest", "help me", "give me", "what are some", "how ", "for me",
    "best", "good", "should i", "any ", "ideas for", "i need", "your advice", "looking for",
    "planning", "thinking", "considering", "where ", "i should", "what are my best", "recommended",
    "recommendations", "suggestions", "can you", "can i", "strategies",
)  # fmt: skip


# One search asks both of its query some ten times (gathering, then ranking), each a pass of a
# pattern of some forty forms over the whole query: 0.6 s of a 64 KB query's search. The answers
# of the last few queries are kept.
@functools.lru_cache(maxsize=16)
def is_request(query: str) -> bool:
    """Whether the query asks for a suggestion rather than a fact (`_REQUEST`)."""
    lowered = query.lower()
    return any(hint in lowered for hint in _REQUEST_HINTS) and _REQUEST.search(query) is not None


@functools.lru_cache(maxsize=16)
def _request_spans(query: str) -> tuple[str, ...]:
    if dialogue_turns(query) is not None or not is_request(query):
        return ()
    return tuple(m.group() for m in _REQUEST.finditer(query))


def request_form(query: str) -> list[str]:
    """The words that make the query a request for a suggestion, each span `_REQUEST` finds ("can
    you recommend", "for me", "what's the best"); none for any other query or a pasted
    conversation. They say how the person asks, not what about: the keyword side weighs them
    less (`query_terms.weighted_terms`)."""
    return list(_request_spans(query))


def is_own_statement(snippet: str) -> bool:
    """Whether a note is a person's short statement about themselves: its whole body is its
    snippet (a longer one is cut with an ellipsis) and it says I, me or my ("I avoid gluten").
    What a request is judged by (`states_the_person`)."""
    return bool(snippet) and not snippet.endswith("…") and first_person(snippet)


def states_the_person(snippet: str, category: str) -> bool:
    """Whether a note is the person's own word about themselves, what a request for a suggestion
    is answered by: filed as a preference or a profile (PERSONAL_CATEGORIES), or a short
    first-person statement (`is_own_statement`: "I avoid gluten")."""
    return category in PERSONAL_CATEGORIES or is_own_statement(snippet)


def clear_nearest(cosines: Sequence[tuple[str, float]], floor: float) -> bool:
    """Whether the nearest note in meaning is at least `floor` close and CLEAR_MARGIN closer than the next."""
    best, second = [*sorted((score for _, score in cosines), reverse=True)[:2], -1.0, -1.0][:2]
    return best >= floor and best - second >= CLEAR_MARGIN


def lead(cosines: Sequence[float]) -> float:
    """How far the best cosine stands above the mean of the LEAD_DEPTH next ones: relative to the
    query's own pool, where the best cosine alone is on the scale of every query."""
    ranked = sorted(cosines, reverse=True)
    rest = ranked[1 : 1 + LEAD_DEPTH]
    return ranked[0] - sum(rest) / len(rest) if rest else 0.0


def request_allowance(query: str, allowance: float, stated: bool = True) -> float:
    """What a query is allowed for being a request for a suggestion (`is_request`): `allowance`,
    when `stated` (one of its nearest notes is the person's own word, `states_the_person`);
    otherwise nothing: it is judged as a question is."""
    return allowance if stated and is_request(query) else 0.0


def _best(cosines: Sequence[tuple[str, float]]) -> float:
    return max((score for _, score in cosines), default=0.0)


def confidence(
    cosines: Sequence[tuple[str, float]],
    coverage: Mapping[str, tuple[float, int]],
    query: str,
    cosine_weight: float,
    allowance: float,
    floor: float,
    lead_weight: float = LEAD_WEIGHT,
    stated: bool = True,
    known: float = 1.0,
) -> float:
    """How sure a hybrid search is that some note answers `query`: `cosine_weight` × its best
    cosine plus the rest × its best keyword coverage, plus KNOWN_WEIGHT × the share of the query
    the vault holds (`known`, `FtsIndex.known`) and `lead_weight` × the best cosine's lead over the
    next ones (`lead`), on HYBRID_SCALE; plus `allowance` for a request (`is_request`) near the
    person's own word (`stated`, `request_allowance`). `cosines`: the
    vector side's (path, cosine); `coverage`: the keyword side's path → (share of the query's
    weight held, terms held). A clear nearest note (`clear_nearest` with the model's cosine
    `floor`) is confidence 1."""
    if clear_nearest(cosines, floor):
        return 1.0
    best_coverage = max((share for share, _ in coverage.values()), default=0.0)
    score = cosine_weight * _best(cosines) + (1.0 - cosine_weight) * best_coverage
    score += lead_weight * lead([c for _, c in cosines]) + KNOWN_WEIGHT * known
    return HYBRID_SCALE * score + request_allowance(query, allowance, stated)


def notes_known(known: float, notes: int) -> float:
    """What a person's own notes hold of a question (`known`), as weighed in a vault of `notes`
    notes: in full from KNOWN_FULL_NOTES, in proportion below (a vault of none holds it all)."""
    return 1.0 - (1.0 - known) * min(1.0, max(notes, 0) / KNOWN_FULL_NOTES)


def names_unheard(query: str, unheard: Sequence[str]) -> bool:
    """Whether a question names someone or something no note mentions (`unheard`,
    `FtsIndex.unheard`), so that nothing answers it. Not a request for a suggestion: "hotels in
    Lisbon for me" is answered by "I never stay in chains", which names no city."""
    return bool(unheard) and not is_request(query)


def keyword_confidence(
    coverage: Mapping[str, tuple[float, int]], query: str, allowance: float, unheard: Sequence[str] = ()
) -> float:
    """A keyword search's confidence: its best coverage on the hybrid confidence's scale
    (KEYWORD_SCALE), plus `allowance` for a request; none for a question naming someone or
    something no note mentions (`names_unheard`), which a keyword search, without meaning to
    judge by, would otherwise answer with whatever shares its other words."""
    if names_unheard(query, unheard):
        return 0.0
    best = max((share for share, _ in coverage.values()), default=0.0)
    return KEYWORD_SCALE * best + request_allowance(query, allowance)


def vector_confidence(
    cosines: Sequence[tuple[str, float]],
    query: str,
    allowance: float,
    floor: float,
    stated: bool = True,
    known: float = 1.0,
) -> float:
    """A vector search's confidence: its best cosine plus KNOWN_WEIGHT × the share of the query
    the vault holds (`known`) and VECTOR_LEAD_WEIGHT × the best cosine's lead over the next ones,
    on the hybrid confidence's scale (VECTOR_SCALE), plus `allowance` for a request near the
    person's own word (`stated`); a clear nearest note is confidence 1."""
    if clear_nearest(cosines, floor):
        return 1.0
    cosines_only = [c for _, c in cosines]
    score = _best(cosines) + VECTOR_LEAD_WEIGHT * lead(cosines_only) + KNOWN_WEIGHT * known
    return VECTOR_SCALE * score + request_allowance(query, allowance, stated)
