"""Hybrid retrieval: candidates from Whoosh and hnswlib, fused, decayed by age, weighted by a prior.

The scoring functions (`fuse_linear`, `fuse_rrf`, `score_hits`) are pure and tested directly;
`Searcher` only gathers candidates from the indexes and hands them over.

final = fused × exp(-λ·days since updated) × tier weight × (1 − w + w·prior)
prior = mean(importance, confidence, 1 − exp(−accesses / 5))
Archived notes come after every other tier unless the search asks for the archive or they hold
every term of the query. A candidate is a hit only with evidence of its own (`with_evidence`); in
vector mode, every candidate of a query that some candidate's cosine answers (`answered_by_meaning`).
"""

from __future__ import annotations

__all__ = [
    "CJK_QUERY_SHARE",
    "COSINE_FLOORS",
    "COSINE_MARGINS",
    "Candidates",
    "LAST_TURN_SHARE",
    "LINK_SOURCES",
    "LONG_NOTE_BYTES",
    "MAX_JSON_READS",
    "MAX_LONG_NOTES",
    "MAX_NAMES_ASKED",
    "MIN_COSINE_SPAN",
    "MIN_TERMS_HELD",
    "MULTILINGUAL_COSINE_SPAN",
    "NO_FLOOR",
    "OWN_STATEMENT_SHARE",
    "SCORING_PASSAGE_CHARS",
    "SESSION_CANDIDATES",
    "REQUEST_COSINE_FLOORS",
    "REQUEST_VECTOR_SHARE",
    "STANDOUT_DEPTH",
    "Scored",
    "Searcher",
    "answered_by_meaning",
    "cap_short_lifts",
    "fuse_linear",
    "fuse_rrf",
    "fusion_weights",
    "cosine_floor",
    "holds_every_term",
    "json_keys",
    "keyword_alone",
    "lifted",
    "link_lift",
    "names_a_key",
    "neighbour_lenders",
    "neighbour_scores",
    "own_statements",
    "prior",
    "propagate",
    "query_texts",
    "query_vector",
    "same_speaker",
    "score_hits",
    "titled_by",
    "with_evidence",
]

import dataclasses
import itertools
import json
import math
import re
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

from tiered_memory.config import SearchConfig
from tiered_memory.errors import BadInput, NoteParseError
from tiered_memory.index import attachments, authors
from tiered_memory.index.catalog import NoteRow
from tiered_memory.index.confidence import (
    CONFIDENCE_MODELS,
    STATEMENT_DEPTH,
    STATEMENT_MIN_COSINE,
    confidence,
    is_request,
    keyword_confidence,
    names_unheard,
    notes_known,
    states_the_person,
    vector_confidence,
)
from tiered_memory.index.fts import analyze
from tiered_memory.index.names import named_words
from tiered_memory.index.passages import best_passage, passages
from tiered_memory.index.query_language import asked_in_other_language, english_function_words
from tiered_memory.index.query_terms import CONTEXT_WEIGHT, cjk_share, dialogue_turns, first_person
from tiered_memory.index.reader import IndexReader
from tiered_memory.index.turn_cosine import CHUNK_COUNT_DISCOUNT, measured_as, note_cosine
from tiered_memory.model.folders import fixed_prefix, within
from tiered_memory.model.note import REPORT, is_report
from tiered_memory.model.obsidian import expand_tags, without_inline_data
from tiered_memory.model.search import (
    MAX_QUERY_CHARS,
    Filters,
    Hit,
    Mode,
    SearchRequest,
    SearchResult,
    searched_query,
)

if TYPE_CHECKING:
    from concurrent.futures import Future

    import numpy as np

    from tiered_memory.index.cjk_vectors import CjkVectors
    from tiered_memory.index.in_memory import InMemoryIndex  # encrypted notes: app.sealed loads it
    from tiered_memory.index.vectors import VectorIndex

SESSION_CANDIDATES = 30
MIN_COSINE_SPAN = 0.3
# multilingual-e5's cosines crowd together (any two texts score ~0.7-0.9): a pool of 100 notes
# spans ~0.04 where MiniLM's spans several tenths (measured on madial-zh; see docs/retrieval.md).
MULTILINGUAL_COSINE_SPAN = 0.05
# A query at least this much Chinese/Japanese/Korean searches the multilingual vectors of CJK notes
# with weight `multilingual_vector_weight` when a multilingual model is installed
# (index.cjk_vectors), else gets `cjk_vector_weight` for its MiniLM side: an English-only model
# ranks such text close to randomly.
CJK_QUERY_SHARE = 0.3
# A query in another language than English (not CJK) searches the multilingual vectors only where
# they cover at least this share of the vault's notes (index.cjk_vectors: every note's, or those of
# a vault written in that language).
MULTILINGUAL_COVERAGE = 0.9
# Notes longer than this (bytes on disk, about 300 words) are also scored passage by passage,
# the first MAX_LONG_NOTES of them among a query's keyword candidates (each is a file read).
LONG_NOTE_BYTES = 2000
MAX_LONG_NOTES = 20
SCORING_PASSAGE_CHARS = 600
LINK_SOURCES = 5  # the strongest candidates whose links lift their targets (search.link_weight)
MAX_JSON_READS = 20  # JSON candidates read per query to see whether it names their keys
# The cosine similarity below which a model's "nearest" note is no evidence (`search.min_cosine`
# when unset), measured per model: docs/retrieval.md, "Abstention". A model not listed has no
# floor (every vector candidate counts, NO_FLOOR), since cosines of two models are not on one scale.
# In hybrid mode it judges each vector candidate; in vector mode it decides whether the query has
# hits at all, which are then every candidate (`answered_by_meaning`; docs/retrieval.md, "Vector
# mode against plain cosine"). Measured on questions: a pasted conversation in vector mode has none.
COSINE_FLOORS = {"sentence-transformers:all-MiniLM-L6-v2": 0.4}
NO_FLOOR = -1.0
# Below the floor, a note still counts when it stands out from the query's nearest notes: its
# cosine at least this far above the mean of the next STANDOUT_DEPTH - 1 below the best, and at
# least half the floor (`search.cosine_margin` when set). A stated preference ("I avoid gluten",
# cosine 0.28 to a request for restaurants in Rome) is far from the request yet far nearer than
# anything else in the vault; a question nothing answers finds a flat pool. Measured per model
# like the floor: docs/retrieval.md, "What is embedded, and the cosine floor". In vector mode, a
# note that counts this way (or by the floor) is also the only kind that lends a session lift.
COSINE_MARGINS = {"sentence-transformers:all-MiniLM-L6-v2": 0.08}
STANDOUT_DEPTH = 10  # a smaller pool (a tiny vault, a filtered search) keeps the absolute floor
MIN_TERMS_HELD = 2  # query terms a note holds that are evidence enough, whatever their share
# A first-person request's keyword candidate that is a short first-person statement counts with
# this share of `search.min_coverage`: "I avoid gluten" answers "recommend restaurants in Rome for
# me" by one word. Measured: docs/retrieval.md, "PrefEval's keyword gap".
OWN_STATEMENT_SHARE = 0.25
# A hybrid request for a suggestion (`fusion_weights`) gives at least this share of its weight to
# meaning. Measured on the sets holding requests (PrefEval, BEAM; the others have none): 0.7 (the
# configured weights swapped) .640 / .762 / .497 and .481 / .578 / .517, 0.8 .658 / .779 / .510 and
# .478 / .581 / .518, 0.9 .671 / .790 / .511 and .479 / .580 / .520 (docs/retrieval.md, "A request
# for a suggestion lists what meaning finds"). Since then such a request ranks as vector mode does
# (`Searcher.ranks_by_meaning`); the share is left for one whose keyword candidates are not all
# embedded yet.
REQUEST_VECTOR_SHARE = 0.9
# A request for a suggestion (`confidence.is_request`) is answered by meaning in vector mode and
# hybrid once its nearest note is at least this near (`search.request_min_cosine` when unset), per
# model, as well as by the floor or the standout rule; a model not listed has those alone. The
# preference that answers a request names none of its words: PrefEval's answerable requests reach
# down to cosine 0.19, and the floor and standout rule left 9 % of them with no hit (R@5 -4.9
# against no cut in vector mode, -4.4 in hybrid). Fitted below every answerable request but the
# lowest 1 % of each set (0.247 on all six); left one set out, PrefEval then loses 0.9 / 1.1
# points of R@5 on its answerable requests, where every floor fitted for the most abstention
# loses it 4, and never silencing a request gives up all of theirs (docs/retrieval.md, "Requests
# for a suggestion: a floor of their own").
REQUEST_COSINE_FLOORS = {"sentence-transformers:all-MiniLM-L6-v2": 0.25}
# A conversation pasted as the query is embedded whole and its last turn alone, and searched with
# this share of the last turn's vector: the memory it should bring back bears on where the talk
# has got to, which one vector of the whole dilutes with every earlier topic (the keyword side
# weighs the last turn's terms double for the same reason, `query_terms.CONTEXT_WEIGHT`).
# Measured on MADial's pasted dialogues, MiniLM (en) and multilingual-e5 (zh), vector mode R@5 /
# R@10 / MRR: whole alone .563 / .690 / .624 and .481 / .652 / .551, 0.3 .612 / .739 / .695 and
# .544 / .684 / .629, 0.5 .605 / .738 / .706 and .570 / .682 / .648; 0.4 and 0.5 are the shares
# whose worst (set, mode) loses least (0.8 points of hybrid's mean on MADial en) (docs/retrieval.md,
# "A pasted conversation is searched from its last turn").
LAST_TURN_SHARE = 0.5
# A request for a suggestion ranks its vector candidates by the cosines of the request embedded
# as a Markdown heading (`request_heading`), the form every note's title takes in what is
# embedded of it; its floors and confidence keep the plain request's cosines, on which they were
# fitted. Measured where requests are (PrefEval's 995, BEAM's 63; the other sets hold three or
# none): pure cosine of the notes' vectors, PrefEval R@5 .749 -> .774, LoCoMo's questions lose
# 2.2 points as headings, hence requests only (docs/retrieval.md, "A request searched as a heading").
HEADING_MARK = "# "
Scored = Sequence[tuple[str, float]]


# ---- pure scoring ------------------------------------------------------------------------------


def fuse_linear(
    keyword: Scored,
    vector: Scored,
    keyword_weight: float,
    vector_weight: float,
    min_span: float = MIN_COSINE_SPAN,
    peaked: bool = False,
) -> dict[str, dict[str, float]]:
    """Weighted sum of normalised scores: BM25 divided by the best BM25, cosine min-max scaled.
    `min_span`: the least spread of cosines scaled to 0..1 (it depends on the model). `peaked`:
    each side's weight also scaled by its `peak` for this query (score-distribution-aware)."""
    out: dict[str, dict[str, float]] = {}
    if keyword:
        best = max(s for _, s in keyword) or 1.0
        for path, score in keyword:
            out.setdefault(path, {"keyword": 0.0, "vector": 0.0})["keyword"] = score / best
    if vector:
        high = max(s for _, s in vector)
        low = min(s for _, s in vector)
        # A small pool (a filtered search, a tiny vault) has little spread; scaling it to 0..1
        # would hand a barely similar note a full vector score. Cosines closer than
        # `min_span` are treated as that far apart.
        low = min(low, high - min_span)
        for path, score in vector:
            scaled = max(0.0, (score - low) / (high - low))
            parts = out.setdefault(path, {"keyword": 0.0, "vector": 0.0})
            parts["vector"] = scaled
            parts["cosine"] = score
    if peaked and keyword and vector:
        # Each side's weight scaled by how far its best candidate stands out from its next ones
        # for this query: a side whose scores are flat has no idea which note answers.
        peaked_weights = (
            keyword_weight * peak([parts["keyword"] for parts in out.values()]),
            vector_weight * peak([parts["vector"] for parts in out.values()]),
        )
        if sum(peaked_weights) > 0:  # both sides flat (notes tied on both): the fixed weights
            keyword_weight, vector_weight = peaked_weights
    total = (keyword_weight + vector_weight) or 1.0
    for parts in out.values():
        parts["fused"] = (keyword_weight * parts["keyword"] + vector_weight * parts["vector"]) / total
    return out


def fusion_weights(query: str, cfg: SearchConfig, multilingual: bool) -> tuple[float, float, float]:
    """A hybrid query's keyword weight, vector weight, and the least spread of cosines its fusion
    scales to 0..1 (`fuse_linear`'s `min_span`).

    The multilingual side has a weight and a span of its own; a query mostly in Chinese, Japanese
    or Korean without it has at most `cjk_vector_weight` (an English-only model ranks such text
    close to randomly). A request for a suggestion ("what hotels would you recommend for me?",
    `confidence.is_request`) is answered by what the person said they like or avoid, which it
    implies more than it says ("I avoid nightlife"): at least REQUEST_VECTOR_SHARE of the two
    weights goes to meaning. A pasted conversation keeps the configured weights."""
    keyword_weight, vector_weight = cfg.keyword_weight, cfg.vector_weight
    if multilingual:
        return keyword_weight, cfg.multilingual_vector_weight, MULTILINGUAL_COSINE_SPAN
    if cjk_share(query) >= CJK_QUERY_SHARE:
        return keyword_weight, min(vector_weight, cfg.cjk_vector_weight), MIN_COSINE_SPAN
    if is_request(query) and dialogue_turns(query) is None:
        total = keyword_weight + vector_weight
        vector = max(vector_weight, REQUEST_VECTOR_SHARE * total)
        return total - vector, vector, MIN_COSINE_SPAN
    return keyword_weight, vector_weight, MIN_COSINE_SPAN


PEAK_DEPTH = 10


def query_texts(query: str, last_turn_share: float = LAST_TURN_SHARE) -> list[str]:
    """What is embedded for a query: the query, and for a pasted conversation its last turn too."""
    turns = dialogue_turns(query)
    return [query] if turns is None or last_turn_share <= 0 else [query, turns[-1]]


def request_heading(query: str) -> str | None:
    """What a request for a suggestion is searched as for ranking (`HEADING_MARK`): the request
    as a Markdown heading. None for any other query, a pasted conversation included."""
    if is_request(query) and dialogue_turns(query) is None:
        return HEADING_MARK + query
    return None


def same_notes(
    plain: Scored,
    heading: Scored,
    cosines: Callable[[np.ndarray, list[str]], dict[str, float]],
    plain_vector: np.ndarray,
    heading_vector: np.ndarray,
) -> tuple[Scored, Scored]:
    """The two searches' candidates, each list over the notes either found, best first: a note
    one search did not reach is scored by `cosines` against that search's vector."""
    found_plain, found_heading = dict(plain), dict(heading)
    found_plain.update(cosines(plain_vector, [p for p in found_heading if p not in found_plain]))
    found_heading.update(cosines(heading_vector, [p for p in found_plain if p not in found_heading]))
    return (
        sorted(found_plain.items(), key=lambda item: -item[1]),
        sorted(found_heading.items(), key=lambda item: -item[1]),
    )


def query_vector(vectors: np.ndarray, last_turn_share: float = LAST_TURN_SHARE) -> np.ndarray:
    """The vector a query searches with, from the rows `query_texts` were embedded into: the
    query's own, or a pasted conversation's whole and last turn mixed (`LAST_TURN_SHARE`), of unit
    length as every stored vector is."""
    import numpy as np

    if len(vectors) < 2:
        return vectors[0]
    mixed = (1.0 - last_turn_share) * vectors[0] + last_turn_share * vectors[1]
    norm = float(np.linalg.norm(mixed))
    return np.asarray(mixed / norm if norm > 0 else vectors[0], dtype=np.float32)


def peak(scores: Sequence[float], depth: int = PEAK_DEPTH) -> float:
    """How far the best of these scores (each 0..1, the best 1) stands above the next `depth - 1`:
    1 minus their mean; 1 when there is no other."""
    ordered = sorted(scores, reverse=True)[:depth]
    rest = ordered[1:]
    return 1.0 - sum(rest) / len(rest) if rest else 1.0


def fuse_rrf(
    keyword: Scored, vector: Scored, k: int, keyword_weight: float, vector_weight: float
) -> dict[str, dict[str, float]]:
    """Reciprocal rank fusion, scaled so a document first in both lists scores 1."""
    out: dict[str, dict[str, float]] = {}
    for name, ranked, weight in (("keyword", keyword, keyword_weight), ("vector", vector, vector_weight)):
        for rank, (path, _score) in enumerate(ranked, 1):
            out.setdefault(path, {"keyword": 0.0, "vector": 0.0})[name] = weight * (k + 1) / (k + rank)
    for path, score in vector:
        out[path]["cosine"] = score
    total = (keyword_weight + vector_weight) or 1.0
    for parts in out.values():
        parts["fused"] = (parts["keyword"] + parts["vector"]) / total
    return out


def cosine_floor(cosines: Sequence[float], floor: float, margin: float | None) -> float:
    """The cosine a vector candidate needs for this query: `floor`, or less for notes that stand
    out from the query's nearest ones by `margin` (never below half the floor). A pool of fewer
    than STANDOUT_DEPTH candidates has nothing to stand out from: the floor alone."""
    if margin is None or floor <= 0 or len(cosines) < STANDOUT_DEPTH:
        return floor
    nearest = sorted(cosines, reverse=True)[:STANDOUT_DEPTH]
    below_best = sum(nearest[1:]) / (len(nearest) - 1)
    return min(floor, max(floor / 2, below_best + margin))


def with_evidence(
    fused: dict[str, dict[str, float]],
    coverage: dict[str, tuple[float, int]],
    min_coverage: float,
    min_cosine: float,
) -> set[str]:
    """The candidates with evidence of their own: a note holding at least `min_coverage` of the
    query's weight (its keyword coverage, absolute, unlike BM25 over the best BM25), or
    MIN_TERMS_HELD of its terms and half that share (a query listing several topics: "postgres
    queue kafka oolong tea"), or whose cosine similarity to the query is at least `min_cosine` (absolute, unlike the min-max scaled
    vector score). Scaled scores make the best of a poor lot look like an answer: in a vault with
    nothing about dentists a pizza note is still the nearest vector, and would be listed. A
    keyword candidate whose coverage is unknown counts as evidenced. Each candidate's coverage is recorded in its parts (`--explain`)."""
    out: set[str] = set()
    for path, parts in fused.items():
        known = coverage.get(path)
        if known is not None:
            parts["coverage"] = known[0]
        by_words = parts["keyword"] > 0 and (
            known is None
            or known[0] >= min_coverage
            or (known[1] >= MIN_TERMS_HELD and known[0] >= min_coverage / 2)
        )
        by_meaning = parts["vector"] > 0 and parts.get("cosine", 0.0) >= min_cosine
        if by_words or by_meaning:
            out.add(path)
    return out


def answered_by_meaning(fused: dict[str, dict[str, float]]) -> set[str]:
    """Vector mode's evidence, decided per query: once some candidate's cosine is evidence (the
    floor or the standout rule, `cosine_floor`, `with_evidence`), every vector candidate is, and
    the list is ranked in full to the limit, as plain cosine ranks it. Judged per candidate, a
    query nothing answers got no hit (the same query-level silence) but an answered query lost
    every answer below the floor: R@5 / R@10 .637 / .656 on PrefEval, .483 / .535 on MADial, where
    plain MiniLM cosine over the same turns has .761 / .882 and .592 / .713 (docs/retrieval.md,
    "Vector mode against plain cosine"). The caller asks only when some candidate is evidence."""
    return {path for path, parts in fused.items() if "cosine" in parts}


def own_statements(
    fused: dict[str, dict[str, float]], rows: dict[str, NoteRow], evidenced: set[str], min_share: float
) -> set[str]:
    """Keyword candidates without evidence that are a person's short statement about themselves
    (the whole body is the snippet, and it says I, me or my) holding at least `min_share` of the
    query's weight. Asked in the first person, a request ("recommend restaurants in Rome for me")
    shares one word with what constrains it ("I avoid restaurants serving gluten"): below the
    coverage cut, yet what a request for oneself, or any request for a suggestion, should bring
    back (`Searcher.rank`)."""
    return {
        path
        for path, parts in fused.items()
        if path not in evidenced
        and parts["keyword"] > 0
        and parts.get("coverage", 0.0) >= min_share
        and (row := rows.get(path)) is not None
        and not row.snippet.endswith("…")  # a longer body is cut with an ellipsis
        and first_person(row.snippet)
    }


def lifted(fused: dict[str, dict[str, float]], lift: str) -> set[str]:
    """The notes a lift (`context`: `propagate`, `link`: `link_lift`) gave a share of score to."""
    return {p for p, parts in fused.items() if parts.get(lift, 0.0) > 0}


def keyword_alone(fused: dict[str, dict[str, float]], paths: Sequence[str], keyword_weight: float) -> None:
    """Rank these notes by their keyword score alone, on the fused scale (in place). `keyword_weight`
    is the weight already inside their keyword part (RRF's parts are weighted, linear ones are not)."""
    if keyword_weight <= 0:
        return
    for path in paths:
        parts = fused.get(path)
        if parts is not None and not parts["vector"]:
            parts["fused"] = parts["keyword"] / keyword_weight


def propagate(
    fused: dict[str, dict[str, float]],
    sessions: dict[str, list[NoteRow]],
    neighbor_weight: float,
    session_weight: float,
) -> dict[str, dict[str, float]]:
    """Lift notes by their session: the turn after a matching question often holds the answer.

    Each note of a session gains `neighbor_weight` × the best fused score among the turns next to
    it (`neighbour_scores`) and `session_weight` × the session's best fused score. Scores are read
    from the input, so lifts never compound.
    """
    out = {path: dict(parts) for path, parts in fused.items()}
    for rows in sessions.values():
        base = [fused[r.path]["fused"] if r.path in fused else 0.0 for r in rows]
        best = max(base, default=0.0)
        for row, neighbor in zip(rows, neighbour_scores(rows, base), strict=True):
            lift = neighbor_weight * neighbor + session_weight * best
            if lift <= 0.0:
                continue
            parts = out.setdefault(row.path, {"keyword": 0.0, "vector": 0.0, "fused": 0.0})
            parts["context"] = lift
            parts["fused"] += lift
    return out


def neighbour_scores(rows: Sequence[NoteRow], base: Sequence[float]) -> list[float]:
    """Per turn of a session (in order), the better score of the two turns next to it that may
    lift it: a turn by the same speaker may not. Where people text in bursts, the message after a
    matching question is often the asker's own next fragment, and the answer is the other
    person's; turns with no speaker (most sessions' notes) lift each other as before (measured:
    docs/retrieval.md, "Speakers").

    A long turn (over LONG_NOTE_BYTES on disk, an assistant's essay or a pasted document) is not
    lifted: it holds enough words and meaning to be judged on its own, and lifted by the short
    question before it, it outranked the person's own statements that answer (measured:
    docs/retrieval.md, "Session neighbours: a long turn is not lifted"). It still lifts its
    neighbours."""
    return [0.0 if j is None else base[j] for j in neighbour_lenders(rows, base)]


def neighbour_lenders(rows: Sequence[NoteRow], base: Sequence[float]) -> list[int | None]:
    """Per turn of a session (in order), the index of the turn next to it whose score lifts it
    (`neighbour_scores`: the better of the two that may), or None where none may."""
    out: list[int | None] = []
    for i, row in enumerate(rows):
        lender: int | None = None
        if row.size <= LONG_NOTE_BYTES:
            for j in (i - 1, i + 1):
                if 0 <= j < len(rows) and not same_speaker(row, rows[j]):
                    if lender is None or base[j] > base[lender]:
                        lender = j
        out.append(lender)
    return out


def cap_short_lifts(
    lifted: dict[str, dict[str, float]],
    fused: dict[str, dict[str, float]],
    sessions: dict[str, list[NoteRow]],
) -> None:
    """In place: a note of `lifted` that a short turn lifted (`neighbour_lenders`; not longer than
    LONG_NOTE_BYTES) ranks at most just below the best note on its own words (`fused`, the scores
    before the lift). For a keyword request for a suggestion (`Searcher.rank`): its form words are
    shared by every other request of the person's and by the option lists answering them, so
    another chat's short prompt and its reply lift each other above the stated preference that
    holds the request's topic. The lift still brings them into the list: a choice ("I'll go with
    option 1") is found beside the options it chose from. A long answer's lift is not capped: it
    lifts the short turn it answers (measured: docs/retrieval.md, "A request's form words, and its
    own statements")."""
    best = max((parts["fused"] for parts in fused.values()), default=0.0)
    if best <= 0.0:
        return
    ceiling = best * (1.0 - 1e-9)  # just below it, and still below once the prior scales both alike
    for rows in sessions.values():
        base = [fused[r.path]["fused"] if r.path in fused else 0.0 for r in rows]
        for row, lender, own in zip(rows, neighbour_lenders(rows, base), base, strict=True):
            parts = lifted.get(row.path)
            if parts is None or lender is None or rows[lender].size > LONG_NOTE_BYTES:
                continue
            if parts.get("context", 0.0) > 0.0 and parts["fused"] > ceiling and own < best:
                parts["fused"] = ceiling


def same_speaker(one: NoteRow, other: NoteRow) -> bool:
    """Whether two turns are known to be said by one person (a turn with no speaker is not)."""
    return bool(one.speaker) and one.speaker.casefold() == other.speaker.casefold()


def link_lift(
    fused: dict[str, dict[str, float]], links: dict[str, list[str]], weight: float
) -> dict[str, dict[str, float]]:
    """Lift notes the strongest candidates link to: each target gains `weight` × the best fused
    score among the candidates linking to it (`links`: source → resolved targets). Scores are read
    from the input, so lifts never compound; a target not yet a candidate becomes one."""
    out = {path: dict(parts) for path, parts in fused.items()}
    best: dict[str, float] = {}
    for source, targets in links.items():
        score = fused.get(source, {}).get("fused", 0.0)
        for target in targets:
            if target != source:
                best[target] = max(best.get(target, 0.0), score)
    for target, score in best.items():
        lift = weight * score
        if lift <= 0.0:
            continue
        parts = out.setdefault(target, {"keyword": 0.0, "vector": 0.0, "fused": 0.0})
        parts["link"] = lift
        parts["fused"] += lift
    return out


def holds_every_term(parts: dict[str, float]) -> bool:
    """Whether a candidate holds every term of the query (its keyword coverage is whole)."""
    return parts.get("coverage", 0.0) >= 1.0 - 1e-9


def prior(row: NoteRow, pending_accesses: int = 0) -> float:
    frequency = 1.0 - math.exp(-(row.access_count + pending_accesses) / 5.0)
    return (row.importance + row.confidence + frequency) / 3.0


class _Scored(NamedTuple):
    """One candidate's final score and what went into it, before it becomes a Hit."""

    row: NoteRow
    parts: dict[str, float]
    days: float
    decay: float
    tier_weight: float
    prior: float
    factor: float
    final: float

    def hit(self) -> Hit:
        parts, row = self.parts, self.row
        components = {
            "keyword": round(parts["keyword"], 4),
            "vector": round(parts["vector"], 4),
            "coverage": round(parts.get("coverage", 0.0), 4),
            "cosine": round(parts.get("cosine", 0.0), 4),
            "context": round(parts.get("context", 0.0), 4),
            "link": round(parts.get("link", 0.0), 4),
            "fused": round(parts["fused"], 4),
            "days": round(self.days, 1),
            "decay": round(self.decay, 4),
            "tier_weight": self.tier_weight,
            "prior": round(self.prior, 4),
            "prior_factor": round(self.factor, 4),
            "final": round(self.final, 6),
        }
        return Hit(
            row.path,
            row.id,
            row.title,
            row.tier,
            row.category,
            self.final,
            row.snippet,
            row.updated,
            components,
        )


def titled_by(query: str, candidates: Sequence[NoteRow]) -> set[str]:
    """The candidates whose title or one of whose aliases is the query itself (case, spacing,
    quotes and a `.md` suffix aside)."""
    wanted = _name_form(query)
    if not wanted:
        return set()
    return {r.path for r in candidates if any(_name_form(n) == wanted for n in (r.title, *r.aliases))}


def _name_form(text: str) -> str:
    text = " ".join(text.split()).strip("\"'“”「」").casefold()
    return text.removesuffix(".md").strip()


def score_hits(
    fused: dict[str, dict[str, float]],
    rows: dict[str, NoteRow],
    cfg: SearchConfig,
    now: datetime,
    accesses: dict[str, int] | None = None,
    archive_requested: bool = False,
    named: Collection[str] = (),
    limit: int | None = None,
    titled: Collection[str] = (),
) -> list[Hit]:
    """Apply decay, tier weight and prior to fused scores; cut below min_score; sort; keep the
    first `limit` (all when None).

    JSON state files and attachments come after every other note, archived ones included: they
    are not memories, yet their key names or file names match many queries a little. A query that
    names one of a JSON file's keys, or every word of an attachment's file name (`named`: their
    paths), is asking for that file, so it ranks as a note. A note whose title or alias is the
    query itself (`titled`) comes before all: the person typed its name. Archived notes come
    after the other tiers unless the search asks for the archive, or they hold every term of the
    query (`holds_every_term`): "dentist" finds the one dentist note even when it is archived."""
    accesses = accesses or {}
    scored: list[_Scored] = []
    now_ts = now.timestamp()
    for path, parts in fused.items():
        row = rows.get(path)
        if row is None:
            continue
        days = max(0.0, (now_ts - (row.updated or now_ts)) / 86400.0)
        decay = math.exp(-cfg.decay_lambda * days)
        tier_weight = getattr(cfg.tier_weights, row.tier, 1.0) if row.tier else 1.0
        note_prior = prior(row, accesses.get(row.id, 0))
        factor = 1.0 - cfg.prior_weight + cfg.prior_weight * note_prior
        final = parts["fused"] * decay * tier_weight * factor
        if final <= 0.0 or final < cfg.min_score:
            # Zero is no evidence at all: a vector-only candidate of a Chinese query, whose vector
            # side has no weight, would otherwise trail the answers as a 0.000 "hit".
            continue
        scored.append(_Scored(row, parts, days, decay, tier_weight, note_prior, factor, final))

    def order(item: _Scored) -> tuple[bool, bool, bool, float, str]:
        row = item.row
        behind = (
            row.path.endswith(".json") or row.category == attachments.CATEGORY
        ) and row.path not in named
        # An archived note that holds every term of the query answers it as well as any other: the
        # archive's demotion is for the rest, which would otherwise crowd out current notes.
        archived = row.tier == "archive" and not archive_requested and not holds_every_term(item.parts)
        return (row.path not in titled, behind, archived, -item.final, row.path)

    scored.sort(key=order)
    # Hits, with their rounded components, only for what is returned: most candidates are cut.
    return [item.hit() for item in scored[:limit]]


def json_keys(text: str) -> list[str]:
    """The keys a JSON state file is about: its top-level keys (of each object of a top-level list)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return []
    objects = (
        [data]
        if isinstance(data, dict)
        else [x for x in data if isinstance(x, dict)]
        if isinstance(data, list)
        else []
    )
    return list(dict.fromkeys(str(k) for obj in objects for k in obj))


_KEY_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])|[^\W_]+")


def names_a_key(query_terms: Collection[str], keys: Sequence[str]) -> bool:
    """Whether the query holds every word of one of these keys (`active_contexts` and
    `activeContexts` are the words `active contexts`), compared as the index analyses them."""
    for key in keys:
        terms = analyze(" ".join(_KEY_WORD.findall(key)))
        if terms and all(t in query_terms for t in terms):
            return True
    return False


# ---- gathering candidates --------------------------------------------------------------------


@dataclass(frozen=True)
class Gathering:
    """Parts of gathering that can be switched off, and rules of ranking a request that its
    candidates carry to ranking (`Candidates.how`), to measure what each adds (the recall
    evaluation's ablation, scripts/eval_recall.py --ablate); searches use the defaults."""

    passages: bool = True  # a long note scores by its best passage when that is better
    context_weight: float = CONTEXT_WEIGHT  # terms only in earlier turns of a dialogue-shaped query
    field_boosts: bool = True  # title, tags, entities and project count more than the body
    last_turn_share: float = LAST_TURN_SHARE  # a pasted conversation's vector: its last turn's share
    # A request for a suggestion (`confidence.is_request`) on the keyword side:
    request_form: bool = True  # its form words weigh REQUEST_FORM_WEIGHT in every keyword scoring
    whole_turns: bool = True  # a long conversation turn is scored whole, not by its best passage
    # ... on the vector side: its candidates rank by its cosines as a heading (`request_heading`)
    request_heading: bool = True
    # ... and when its candidates are ranked in keyword mode:
    request_statements: bool = True  # it takes the own-statement allowance, in the first person or not
    capped_lifts: bool = True  # a short turn's lift stops below the best note on its own words
    # ... and in hybrid mode: ranked as vector mode ranks (`Searcher.ranks_by_meaning`)
    request_by_meaning: bool = True


# A query naming more than this many is a list or a pasted text, not a question about someone.
MAX_NAMES_ASKED = 8


def _names_asked(query: str) -> list[str]:
    """The names a query gives (`names.named_words`), none of a pasted conversation."""
    if dialogue_turns(query) is not None:
        return []
    return named_words(query)[:MAX_NAMES_ASKED]


@dataclass
class Candidates:
    """What the indexes returned for one request, before any ranking: ranking is pure over this,
    so one gathering can be ranked under many settings (the evaluation harness tunes that way)."""

    query: str
    mode: Mode
    keyword: Scored
    vector: Scored
    notice: str | None = None
    # Each keyword candidate's share of the query's weight (FtsIndex.search's `coverage`).
    coverage: dict[str, tuple[float, int]] = field(default_factory=dict)
    # Rows of the candidates found in an in-memory index (encrypted notes), which the catalog does
    # not describe, and those of them that have a vector.
    apart: dict[str, NoteRow] = field(default_factory=dict)
    apart_vectors: frozenset[str] = frozenset()
    multilingual: bool = False  # `vector` holds cosines of the multilingual vectors (index.cjk_vectors)
    # The paths the request's `by` names as written by that machine or agent; None: no such filter.
    authored: frozenset[str] | None = None
    # The best chunk's cosine of the long turns `vector` holds discounted (vectors.note_cosine):
    # the absolute cosine floor judges that, since one chunk that near is evidence however many
    # chunks the turn has.
    undiscounted: dict[str, float] = field(default_factory=dict)
    # How they were gathered: ranking follows the switches of a request's rules it holds.
    how: Gathering = Gathering()
    # The share of the query's weight some note of the vault holds (`FtsIndex.known`).
    known: float = 1.0
    # The names the query gives that no note holds nor spells near (`FtsIndex.unheard`).
    unheard: tuple[str, ...] = ()
    # The cosines the vector candidates rank by, when not `vector`'s: a request searched as a
    # heading (`request_heading`). `vector`'s, of the query as asked, judge them (floors,
    # confidence); both lists hold the same notes.
    ranking: Scored = field(default_factory=list)


class Searcher:
    """Runs a SearchRequest against the read side of a vault's catalog, full-text and vector
    indexes (`Indexer.reader()`)."""

    def __init__(self, index: IndexReader, cfg: SearchConfig, now: Callable[[], datetime]) -> None:
        self.index = index
        self.cfg = cfg
        self.now = now

    def search(
        self,
        request: SearchRequest,
        accesses: dict[str, int] | None = None,
        apart: InMemoryIndex | None = None,
    ) -> SearchResult:
        """`apart`: notes held in memory only (encrypted ones while unlocked), searched with the
        others and ranked on the same scale."""
        return self.rank(self.gather(request, apart), request, accesses)

    def gather(
        self, request: SearchRequest, apart: InMemoryIndex | None = None, how: Gathering | None = None
    ) -> Candidates:
        how = how or Gathering()
        asked = request.query.strip()
        if not asked:
            raise BadInput("empty query: say what to search for")
        query = searched_query(asked)  # a huge one in part: every step below reads it whole
        limit = request.limit or self.cfg.limit
        pool = max(self.cfg.candidates, limit * 3)
        authored = self._authored(request)
        if authored is not None and not authored:
            return Candidates(query, request.mode, [], [], authored=authored, how=how)  # nobody by that name
        where = self._where(request, request.session, authored)
        mode: Mode = request.mode
        notice = None
        keyword: Scored = []
        vector: Scored = []
        undiscounted: dict[str, float] = {}
        apart = apart if apart is not None and len(apart) else None
        wanted: Callable[[NoteRow], bool] = lambda row: self.matches(row, request, authored)  # noqa: E731
        embedding: Future[np.ndarray] | None = None
        heading: str | None = None  # a request's form for ranking (`request_heading`)
        vectors = self.index.vectors() if mode in ("hybrid", "vector") else None
        embedder = self.index.embedder() if mode in ("hybrid", "vector") else None
        cjk = self._multilingual_side(query) if vectors is not None else None
        if mode in ("hybrid", "vector"):
            if vectors is None or embedder is None:
                notice = f"vector search unavailable ({self.index.embedder_error()}); keyword results only"
                mode = "keyword"
            elif cjk is not None:
                embedding = _in_background(
                    _each_alone(cjk.embed_query), query_texts(query, how.last_turn_share)
                )
            else:
                # The model runs outside the GIL: embedding the query beside the keyword search
                # overlaps the two on a second core instead of adding them up. An embedder that
                # can leave that work a core of its own does so (`embed_beside`).
                embed = getattr(embedder, "embed_beside", embedder.embed)
                heading = request_heading(query) if how.request_heading else None
                texts = query_texts(query, how.last_turn_share) + ([heading] if heading else [])
                embedding = _in_background(_each_alone(embed), texts)
        coverage: dict[str, tuple[float, int]] = {}
        if mode in ("hybrid", "keyword"):
            found_words = self.index.fts().search(
                query,
                pool,
                where or None,
                coverage=coverage,
                context_weight=how.context_weight,
                field_boosts=how.field_boosts,
                weigh_form=how.request_form,
            )
            keyword = self._best_passages(query, found_words, how) if how.passages else found_words
            if not analyze(query):
                keyword = self._named_only(query, keyword, coverage)
            if apart is not None:
                held = apart.keyword(query, self.index.fts(), wanted)
                keyword = _merged(keyword, held, pool)
                # Judged by their share of the query as the index's own hits are: a keyword
                # search's confidence is its best coverage, and these had none.
                coverage.update(
                    apart.coverage(query, self.index.fts(), [p for p, _ in held], weigh_form=how.request_form)
                )
        ranking: Scored = []
        if embedding is not None and vectors is not None and embedder is not None:
            embedded = embedding.result()
            heading_vector = embedded[-1] if heading else None
            qvec = query_vector(embedded[:-1] if heading else embedded, how.last_turn_share)
            allowed = self._allowed(request, authored)
            admit = (lambda p: p in allowed) if allowed is not None else None
            searched = vectors if cjk is None else cjk.index
            vector = searched.search(qvec, pool, admit)
            if heading_vector is not None:
                ranking = vectors.search(heading_vector, pool, admit)
                vector, ranking = same_notes(vector, ranking, vectors.note_cosines, qvec, heading_vector)
                ranking, _ = self._long_turns_discounted(ranking, vectors)
            if cjk is None:
                vector, undiscounted = self._long_turns_discounted(vector, vectors)
            if apart is not None and cjk is None:  # notes held in memory have MiniLM vectors only
                held = apart.vector(qvec, embedder.model_id, wanted)
                if heading_vector is None:
                    vector = _merged(vector, held, pool)
                else:  # every held note is scored by both: both lists keep the same notes, uncut
                    vector = _merged(vector, held, len(vector) + len(held))
                    held = apart.vector(heading_vector, embedder.model_id, wanted)
                    ranking = _merged(ranking, held, len(ranking) + len(held))
        held_apart = apart.terms(wanted) if apart is not None else ()
        if query is not asked:
            cut = (
                f"the query has {len(asked):,} characters: its first and last "
                f"{MAX_QUERY_CHARS // 2048} K of them were searched"
            )
            notice = f"{cut}; {notice}" if notice else cut
        found = Candidates(
            query,
            mode,
            keyword,
            vector,
            notice,
            coverage,
            multilingual=cjk is not None,
            authored=authored,
            undiscounted=undiscounted,
            how=how,
            known=self.index.fts().known(query, weigh_form=how.request_form, apart=held_apart),
            unheard=tuple(self.index.fts().unheard(_names_asked(query), apart=held_apart)),
            ranking=ranking,
        )
        if apart is not None:
            rows = apart.rows()
            paths = {p for p, _ in (*keyword, *vector)}
            found.apart = {p: r for p, r in rows.items() if p in paths}
            found.apart_vectors = frozenset(p for p in found.apart if apart.has_vector(p))
        return found

    def _named_only(self, query: str, keyword: Scored, coverage: dict[str, tuple[float, int]]) -> Scored:
        """A query with no word the index keeps (`C++`, `C#`, `R`: a stray letter and marks) that
        is a note's name finds that note: its title, alias or file name is all of the query."""
        held = {p for p, _ in keyword}
        named = [p for p in self.index.graph().named(query) if p.endswith(".md") and p not in held]
        top = keyword[0][1] if keyword else 1.0
        coverage.update({p: (1.0, 1) for p in named})
        return [*((p, top) for p in named), *keyword]

    def _long_turns_discounted(self, vector: Scored, vectors: VectorIndex) -> tuple[Scored, dict[str, float]]:
        """Conversation turns (notes of a session) of several chunks score their best chunk's cosine
        discounted for their chunk count (`vectors.note_cosine`): a long answer would otherwise
        outrank the short turn that holds what was said. Other notes keep their best chunk's.
        Returns the rescored list and the discounted turns' best-chunk cosines."""
        if not vector or not CHUNK_COUNT_DISCOUNT.get(measured_as(vectors.model_id)):
            return vector, {}
        many = {p: n for p, _ in vector if (n := vectors.chunks_of(p)) > 1}
        if not many:
            return vector, {}
        turns = {p for p, row in self.index.catalog.rows(many).items() if row.session}
        if not turns:
            return vector, {}
        rescored = [(p, note_cosine(c, many[p], vectors.model_id) if p in turns else c) for p, c in vector]
        return sorted(rescored, key=lambda item: -item[1]), {p: c for p, c in vector if p in turns}

    def _multilingual_side(self, query: str) -> CjkVectors | None:
        """The multilingual vectors, when the model loads, for a query mostly in CJK; and, where
        they cover nearly every note (a vault in another language, or `embeddings.multilingual:
        all`), for a query asked in another language (`asked_in_other_language`) or holding no
        English function word ("installare immich con docker compose", "qué CRM lleva EcoBox").
        Where they cover part of the vault, the question in Italian may well ask of a note in
        English, which only the English side holds."""
        cjk = self.index.cjk_vectors()
        if cjk is None:
            return None
        if cjk_share(query) < CJK_QUERY_SHARE:
            if not asked_in_other_language(query) and english_function_words(query):
                return None
            vectors = self.index.vectors()
            if vectors is None or cjk.index.count() < MULTILINGUAL_COVERAGE * vectors.count():
                return None
        return cjk if cjk.model() is not None else None

    def _best_passages(self, query: str, keyword: Scored, how: Gathering) -> Scored:
        """A long note scores by its best passage when that beats its whole-note score: BM25's
        length normalisation would otherwise let a one-line mention outrank a long note whose
        last paragraph answers the question.

        Not a conversation turn (a note of a session) for a request for a suggestion: what answers
        one is a person's short statement, and a long answer's best passage of many holds the
        words every request and option list shares by chance (the keyword side of what vector
        mode's chunk-count discount does for turns; measured: docs/retrieval.md, "A request's form
        words, and its own statements"). A long note a person wrote keeps its passages.
        `how`: the switches of a request's rules (`Gathering`)."""
        if not keyword:
            return keyword
        sizes = self.index.catalog.sizes([p for p, _ in keyword])
        long = [p for p, _ in keyword if sizes.get(p, 0) > LONG_NOTE_BYTES and p.endswith(".md")]
        if long and how.whole_turns and is_request(query) and dialogue_turns(query) is None:
            turns = {p for p, row in self.index.catalog.rows(long).items() if row.session}
            long = [p for p in long if p not in turns]
        split: dict[str, list[str]] = {}
        for path in long[:MAX_LONG_NOTES]:
            try:
                body = without_inline_data(self.index.texts.read_body(path))
            except NoteParseError:
                continue
            parts = passages(body, SCORING_PASSAGE_CHARS)
            if len(parts) > 1:
                split[path] = parts
        if not split:
            return keyword
        # One call for every note's passages: the query's terms and idfs are looked up once.
        texts = [p for parts in split.values() for p in parts]
        scores = iter(self.index.fts().passage_scores(query, texts, weigh_form=how.request_form))
        better = {path: max(itertools.islice(scores, len(parts))) for path, parts in split.items()}
        rescored = [(p, max(s, better.get(p, 0.0))) for p, s in keyword]
        return sorted(rescored, key=lambda item: -item[1])

    def rank(
        self,
        found: Candidates,
        request: SearchRequest,
        accesses: dict[str, int] | None = None,
        cfg: SearchConfig | None = None,
        mode: Mode | None = None,
        passages: bool = True,
    ) -> SearchResult:
        """Fuse, lift, decay and sort gathered candidates. `cfg` and `mode` override the searcher's
        settings and the request's mode (a hybrid gathering holds both single-mode lists)."""
        cfg = cfg or self.cfg
        if request.min_score is not None:
            cfg = dataclasses.replace(cfg, min_score=request.min_score)
        mode = mode or found.mode
        judged_as = mode  # the mode whose confidence cut judges the hits
        if mode == "hybrid" and self.ranks_by_meaning(found):
            mode = "vector"
        limit = request.limit or cfg.limit
        keyword, vector = found.keyword, found.vector
        ordering = found.ranking or vector  # what the vector candidates rank by
        keyword_weight = cfg.keyword_weight
        if mode == "keyword":
            fused = fuse_linear(keyword, [], 1.0, 0.0)
        elif mode == "vector":
            span = MULTILINGUAL_COSINE_SPAN if found.multilingual else MIN_COSINE_SPAN
            fused = fuse_linear([], ordering, 0.0, 1.0, span)
        else:
            keyword_weight, vector_weight, span = fusion_weights(found.query, cfg, found.multilingual)
            if cfg.fusion == "rrf":
                fused = fuse_rrf(keyword, ordering, cfg.rrf_k, keyword_weight, vector_weight)
            else:
                peaked = cfg.fusion == "peaked"
                fused = fuse_linear(keyword, ordering, keyword_weight, vector_weight, span, peaked)
        if found.ranking and mode != "keyword":
            for path, cosine in vector:  # the query's own cosines judge what was ranked by others
                if path in fused:
                    fused[path]["cosine"] = cosine
        # A conversation pasted as the query (an agent's context) is not a question whose every
        # word wants an answer: the memory it should bring back holds a few of its words, so any
        # keyword match is evidence there (measured: docs/retrieval.md, "Abstention").
        # Nor is a Chinese or Japanese query's share meaningful: its overlapping bigrams across
        # word bounds ("线地" of 离线地图) are held by no note.
        cjk = cjk_share(found.query) >= CJK_QUERY_SHARE
        min_coverage = 0.0 if cjk or dialogue_turns(found.query) else cfg.min_coverage
        vectors = self.index.vectors() if found.vector else None
        min_cosine, margin = cfg.min_cosine, cfg.cosine_margin
        # A floor is one model's; the multilingual side's cosines are on a scale of their own.
        model = measured_as(vectors.model_id) if vectors is not None and not found.multilingual else None
        if min_cosine is None:
            min_cosine = COSINE_FLOORS.get(model or "", NO_FLOOR)
        if mode == "vector" and dialogue_turns(found.query):
            # Nor is a pasted conversation's cosine on a question's scale: it is the mean of several
            # topics, and the note it should bring back bears on one of them (MADial's dialogues:
            # 9 % of them had no note at the floor). Vector mode lists its nearest notes, as keyword
            # mode lists its keyword matches.
            min_cosine = NO_FLOOR
        if margin is None and model is not None:
            margin = COSINE_MARGINS.get(model)
        standout = cosine_floor([c for _, c in vector], min_cosine, margin)
        # Vector mode sees meaning alone: the keyword coverage a hybrid gathering holds would lift
        # an archived note holding every term of the query (`score_hits`), which a vector search
        # never gathers (docs/retrieval.md, "Vector mode ranked as a vector search ranks").
        coverage = {} if mode == "vector" else found.coverage
        evidenced = with_evidence(fused, coverage, min_coverage, standout)
        # A long turn's best chunk at the floor is evidence however many chunks it has: the floor
        # judges its undiscounted cosine, the standout rule the score it ranks by.
        evidenced |= {
            p
            for p, c in found.undiscounted.items()
            if c >= min_cosine and fused.get(p, {}).get("vector", 0.0) > 0
        }
        # The notes that are evidence on their own: where every candidate is listed, only they
        # lend a lift.
        standing = set(evidenced)
        suggestion = mode != "keyword" and is_request(found.query) and dialogue_turns(found.query) is None
        request_floor = cfg.request_min_cosine
        if request_floor is None and model is not None:
            request_floor = REQUEST_COSINE_FLOORS.get(model)
        # A request answered by its own floor (`search.request_min_cosine`) is answered by meaning
        # like one a note's cosine is evidence for; only those notes lend a session lift.
        by_request = suggestion and request_floor is not None and any(c >= request_floor for _, c in vector)
        if mode == "vector" and (evidenced or by_request):
            evidenced = answered_by_meaning(fused)
        # A request for a suggestion in hybrid mode is answered by what it implies more than by
        # what it says ("I avoid nightlife" for a hotel): once some candidate's cosine answers it,
        # it lists every candidate as vector mode does (measured: docs/retrieval.md, "A request
        # for a suggestion lists what meaning finds").
        listed = mode == "hybrid" and suggestion and (by_request or any(c >= standout for _, c in vector))
        if listed:
            evidenced |= answered_by_meaning(fused)
        if mode == "hybrid" and (vectors := self.index.vectors()) is not None:
            # A note not embedded yet (a build still under way) has no vector score, not a score of 0.
            unembedded = [p for p, _ in keyword if not vectors.has(p) and p not in found.apart_vectors]
            keyword_alone(fused, unembedded, keyword_weight if cfg.fusion == "rrf" else 1.0)
        rows = self.index.catalog.rows(fused)
        rows.update(self.index.attachments.rows(p for p in fused if p not in rows))
        rows.update({p: r for p, r in found.apart.items() if p in fused})
        if (
            mode == "keyword"
            and min_coverage > 0
            and (first_person(found.query) or (found.how.request_statements and is_request(found.query)))
        ):
            # Keyword mode has no meaning to find what a request implies (hybrid's vector side
            # does): a request for oneself takes the person's own short statements on one word.
            # A request for a suggestion is for the asker, said "for me" or not ("what are some
            # good tabletop games for a game night?").
            evidenced |= own_statements(fused, rows, evidenced, min_coverage * OWN_STATEMENT_SHARE)
        if (cfg.neighbor_weight or cfg.session_weight) and (mode == "vector" or listed):
            whole = mode == "vector"
            if suggestion:
                # A request is answered by a preference stated once, often a session of one turn
                # nothing lifts: a short turn near it by chance lifts its chat above that. Only a
                # long answer lends a request a lift, to the short turn it answers (BEAM); vector
                # mode lifts no long turn, so a request there takes none (measured:
                # docs/retrieval.md, "Requests for a suggestion: a floor of their own").
                standing = {p for p in standing if self._chunks(p) > 1}
            fused, rows = self._sessions_lent_by_evidence(fused, rows, cfg, evidenced, standing, whole)
        elif cfg.neighbor_weight or cfg.session_weight:
            # A keyword request's short turns lift, but not above the best note on its own words.
            capped = (
                found.how.capped_lifts
                and mode == "keyword"
                and is_request(found.query)
                and dialogue_turns(found.query) is None
            )
            fused, rows = self._with_sessions(fused, rows, cfg, evidenced, capped)
        if cfg.link_weight:
            fused, rows = self._with_links(fused, rows, cfg, evidenced)
        # The lifts rank as before, over every candidate; but only a note with evidence of its own,
        # or lifted by a session neighbour or a link from one, is a hit.
        fused = {p: parts for p, parts in fused.items() if p in evidenced}
        rows = {p: r for p, r in rows.items() if self.matches(r, request, found.authored)}
        candidates = [r for p, r in rows.items() if p in fused]
        named = self._named(found.query, candidates)
        titled = titled_by(found.query, candidates)
        hits = score_hits(
            fused, rows, cfg, self.now(), accesses, "archive" in request.tiers, named, limit, titled
        )
        unheard = mode == "keyword" and names_unheard(found.query, found.unheard)
        if not hits and unheard and found.notice is None:
            # Why nothing passed the evidence cut: the name, when that is what no note holds.
            return SearchResult(
                [], mode, f"no note mentions {', '.join(found.unheard)} (nor a near spelling)"
            )
        if hits and request.min_score != 0.0:
            sure = self.confidence(found, cfg, judged_as)
            if sure is not None and sure < cfg.min_confidence:
                notice = (
                    f"nothing in the vault answers this closely enough (confidence {sure:.2f}, "
                    f"search.min_confidence {cfg.min_confidence:g}); a search with a min score of 0 lists the nearest notes"
                )
                if unheard:
                    notice = (
                        f"no note mentions {', '.join(found.unheard)} (nor a near spelling), so nothing in the "
                        f"vault answers this (search.min_confidence {cfg.min_confidence:g}); a search with a "
                        "min score of 0 lists the nearest notes"
                    )
                return SearchResult([], judged_as, found.notice or notice)
        if passages and hits:
            self._add_passages(found.query, hits)
        return SearchResult(hits, judged_as, found.notice)

    def ranks_by_meaning(self, found: Candidates) -> bool:
        """Whether a hybrid gathering ranks as vector mode ranks: a request for a suggestion
        (`confidence.is_request`; not a pasted conversation, nor one mostly in Chinese, Japanese
        or Korean, nor searched on the multilingual side) is answered by what it implies, which
        meaning finds and its words do not ("I avoid nightlife" for a hotel in Lisbon). Its
        keyword candidates, each nearer in words than in meaning, pushed the person's statement
        down, and their sessions' lifts with them: on both sets that hold requests vector mode
        ranked them at least as well on every measure (docs/retrieval.md, "A hybrid request ranked by
        meaning"). Hybrid's confidence still judges it. Only where every keyword candidate has
        a vector: a note not embedded yet (a build under way) is found by its words alone."""
        query = found.query
        if (
            not found.how.request_by_meaning
            or not found.vector
            or found.multilingual
            or not is_request(query)
            or dialogue_turns(query) is not None
            or cjk_share(query) >= CJK_QUERY_SHARE
        ):
            return False
        vectors = self.index.vectors()
        return vectors is not None and all(
            vectors.has(p) or p in found.apart_vectors for p, _ in found.keyword
        )

    def confidence(self, found: Candidates, cfg: SearchConfig, mode: Mode) -> float | None:
        """How sure this search is that some note answers it (`index.confidence`), in its mode;
        None where that was not measured: a pasted conversation (it wants a few of its words
        back, as the evidence cut says), a Chinese/Japanese/Korean query, and a search with
        cosines of no or another model than the one measured, or of the multilingual side in
        vector mode. A keyword search's coverage needs no model; nor does a hybrid search on the
        multilingual side, judged by its words as keyword mode is."""
        if cjk_share(found.query) >= CJK_QUERY_SHARE or dialogue_turns(found.query):
            return None
        allowance = cfg.confidence_request_allowance
        if mode == "keyword" or (mode == "hybrid" and found.multilingual):
            # The multilingual model's cosines are on a scale nobody measured a cut on; a question
            # in Spanish or Russian (not CJK, whose words split apart) has words to judge by.
            return keyword_confidence(found.coverage, found.query, allowance, found.unheard)
        if not found.vector or found.multilingual:
            return None
        vectors = self.index.vectors()
        model = measured_as(vectors.model_id) if vectors is not None else None
        if model not in CONFIDENCE_MODELS:
            return None
        floor = cfg.min_cosine if cfg.min_cosine is not None else COSINE_FLOORS.get(model, NO_FLOOR)
        # A request keeps its allowance where the person said something about themselves near
        # it; in a vault of what others did it is judged as a question is.
        stated = is_request(found.query) and self._stated(found)
        turn = self._nearest_is_turn(found)
        if mode == "vector":
            # With meaning alone to judge by, what the vault holds of the query counts only near a
            # conversation's turns, which hold the everyday words: a person's few terse notes do
            # not hold "handle" of "how do we handle flaky tests", which says nothing about it.
            known = found.known if turn else 1.0
            return vector_confidence(found.vector, found.query, allowance, floor, stated, known)
        # Hybrid weighs what the vault holds everywhere, and in a person's own notes its words
        # more than near turns (notes_confidence_cosine_weight): there a question the notes do
        # not answer is still near some note in meaning ("how do I sync with Zotero" of a vault
        # about Obsidian), and one they answer often shares their words more than their meaning.
        weight, known = cfg.confidence_cosine_weight, found.known
        if not turn:
            weight = cfg.notes_confidence_cosine_weight
            known = notes_known(found.known, self.index.fts().doc_count())
        return confidence(
            found.vector,
            found.coverage,
            found.query,
            weight,
            allowance,
            floor,
            stated=stated,
            known=known,
        )

    def _nearest_is_turn(self, found: Candidates) -> bool:
        """Whether the nearest note in meaning is a conversation turn (a note of a session)."""
        if not found.vector:
            return False
        nearest = max(found.vector, key=lambda c: c[1])[0]
        row = found.apart.get(nearest) or self.index.catalog.rows([nearest]).get(nearest)
        return row is not None and bool(row.session)

    def _stated(self, found: Candidates) -> bool:
        """Whether one of the STATEMENT_DEPTH nearest notes in meaning, at least
        STATEMENT_MIN_COSINE near, is the person's own word about themselves
        (`confidence.states_the_person`), a sealed one held in memory too."""
        ranked = sorted(found.vector, key=lambda c: -c[1])[:STATEMENT_DEPTH]
        nearest = [p for p, cosine in ranked if cosine >= STATEMENT_MIN_COSINE]
        rows = self.index.catalog.rows(nearest)
        rows.update({p: r for p, r in found.apart.items() if p in nearest})
        return any(states_the_person(r.snippet, r.category) for r in rows.values())

    def _named(self, query: str, candidates: Sequence[NoteRow]) -> set[str]:
        """The JSON files and attachments among these candidates the query names: every word of
        one of a JSON file's keys (each a small file read), or of an attachment's file name."""
        terms = set(analyze(query))
        named = {
            r.path
            for r in candidates
            if r.category == attachments.CATEGORY and names_a_key(terms, [attachments.file_words(r.path)])
        }
        for path in [r.path for r in candidates if r.path.endswith(".json")][:MAX_JSON_READS]:
            try:
                text = self.index.texts.read_text(path)
            except NoteParseError:
                continue
            if names_a_key(terms, json_keys(text)):
                named.add(path)
        return named

    def _add_passages(self, query: str, hits: list[Hit]) -> None:
        """Each Markdown hit gets the passage holding most of the query's weight (the why of it)."""
        terms = self.index.fts().query_weights(query)
        if not terms:
            return
        for hit in hits:
            if not hit.path.endswith(".md"):
                continue
            try:
                body = without_inline_data(self.index.texts.read_body(hit.path))
            except NoteParseError:
                continue
            hit.passage, _ = best_passage(body, terms, analyze, title=hit.title)

    def _with_sessions(
        self,
        fused: dict[str, dict[str, float]],
        rows: dict[str, NoteRow],
        cfg: SearchConfig,
        evidenced: set[str],
        capped: bool = False,
    ) -> tuple[dict[str, dict[str, float]], dict[str, NoteRow]]:
        """Session lifts; `evidenced` gains the notes lifted by a neighbour that is in it.
        `capped`: a short turn's lift stops below the best note on its own words (`cap_short_lifts`)."""
        # Only the sessions of the strongest candidates: their neighbours are where answers hide.
        top = sorted(fused, key=lambda p: -fused[p]["fused"])[:SESSION_CANDIDATES]
        sessions = self.index.catalog.session_rows(rows[p].session for p in top if p in rows)
        if not sessions:
            return fused, rows
        rows = dict(rows)
        for members in sessions.values():
            for row in members:
                rows.setdefault(row.path, row)
        backed = {p: parts for p, parts in fused.items() if p in evidenced}
        evidenced.update(
            lifted(propagate(backed, sessions, cfg.neighbor_weight, cfg.session_weight), "context")
        )
        out = propagate(fused, sessions, cfg.neighbor_weight, cfg.session_weight)
        if capped:
            cap_short_lifts(out, fused, sessions)
        return out, rows

    def _sessions_lent_by_evidence(
        self,
        fused: dict[str, dict[str, float]],
        rows: dict[str, NoteRow],
        cfg: SearchConfig,
        evidenced: set[str],
        standing: set[str],
        short_turns_only: bool = True,
    ) -> tuple[dict[str, dict[str, float]], dict[str, NoteRow]]:
        """Session lifts (`_with_sessions`) where every candidate is listed (vector mode, a hybrid
        request), lent only by the notes that are evidence on their own (`standing`), and in vector
        mode (`short_turns_only`) never to or from a turn of several chunks. A hybrid request's
        long turns still lend: the keyword side judges them too, and BEAM's long answers lifting
        the short turn beside them is worth 2.4 points of its R@5 there.

        Once a query is answered, vector mode ranks every candidate (`answered_by_meaning`); a
        candidate near the query by chance would otherwise lift its whole session above a note
        that stands alone (PrefEval's one-line preferences among long chats: R@5 .70 → .51). A long
        turn is near many queries by chance (the reason for its chunk-count discount), and lifted
        beside the short turn it answers it takes a second place for one answer (BEAM, where
        three turns in four of the evidence are a user's short turn beside an assistant's long
        answer: R@5 .41 → .45)."""
        vectors = self.index.vectors()
        if vectors is None:
            return fused, rows

        def short(path: str) -> bool:
            return not short_turns_only or vectors.chunks_of(path) <= 1

        lenders = {p: parts for p, parts in fused.items() if p in standing and short(p)}
        lent, rows = self._with_sessions(lenders, rows, cfg, evidenced)
        out = {path: dict(parts) for path, parts in fused.items()}
        for path, parts in lent.items():
            lift = parts.get("context", 0.0)
            if lift <= 0.0 or not short(path):
                continue
            into = out.setdefault(path, {"keyword": 0.0, "vector": 0.0, "fused": 0.0})
            into["context"] = lift
            into["fused"] += lift
        return out, rows

    def _chunks(self, path: str) -> int:
        """How many chunks a note's vectors have (0 without the vector index)."""
        vectors = self.index.vectors()
        return vectors.chunks_of(path) if vectors is not None else 0

    def _with_links(
        self,
        fused: dict[str, dict[str, float]],
        rows: dict[str, NoteRow],
        cfg: SearchConfig,
        evidenced: set[str],
    ) -> tuple[dict[str, dict[str, float]], dict[str, NoteRow]]:
        """Link lifts; `evidenced` gains the notes linked from a note in it."""
        # Only the few strongest candidates vouch for what they link to (a link table lookup each).
        top = sorted((p for p in fused if p in rows), key=lambda p: -fused[p]["fused"])[:LINK_SOURCES]
        graph = self.index.graph()
        links = {p: [x.resolved for x in graph.outgoing(p) if x.resolved] for p in top if p.endswith(".md")}
        links = {p: targets for p, targets in links.items() if targets}
        if not links:
            return fused, rows
        out = link_lift(fused, links, cfg.link_weight)
        backed = {p: targets for p, targets in links.items() if p in evidenced}
        evidenced.update(lifted(link_lift(fused, backed, cfg.link_weight), "link"))
        missing = [p for p in out if p not in rows]
        if missing:
            rows = {**rows, **self.index.catalog.rows(missing)}
        return out, rows

    def _authored(self, request: SearchRequest) -> frozenset[str] | None:
        """The paths written by the machine or agent the request's `by` names (`index.authors`)."""
        if request.by is None:
            return None
        return frozenset(authors.paths_by(self.index.catalog, request.by))

    @staticmethod
    def _where(
        filters: Filters, session: str | None = None, authored: frozenset[str] | None = None
    ) -> dict[str, list[str]]:
        """The full text's narrowing for these filters (`matches` then keeps exactly what they say)."""
        where: dict[str, list[str]] = {}
        for key, values in (
            ("tier", filters.tiers),
            # The full text knows older reports as plain notes: `matches` picks reports out exactly.
            ("category", [] if REPORT in filters.categories else filters.categories),
            ("tags", filters.tags),
            ("project", filters.projects),
            ("entities", filters.entities),
            ("status", filters.statuses),
        ):
            if values:
                where[key] = list(values)
        if session:
            where["session"] = [session]
        if filters.folders:
            # The full text narrows by what the globs' paths start with; `matches` keeps them exactly.
            where["path_prefix"] = [fixed_prefix(f) for f in filters.folders]
        if authored is not None:
            where["path"] = sorted(authored)
        return where

    def _allowed(self, request: SearchRequest, authored: frozenset[str] | None = None) -> set[str] | None:
        """Paths the vector search may return, when the request filters by field."""
        if not self._where(request, request.session, authored):
            return None
        if authored is not None and not self._where(request, request.session):
            rows = self.index.catalog.rows(authored).values()  # the author's notes alone
            return {r.path for r in rows if self.matches(r, request, authored)}
        return {p for p, r in self.index.catalog.rows().items() if self.matches(r, request, authored)}

    @staticmethod
    def matches(row: NoteRow, request: SearchRequest, authored: frozenset[str] | None = None) -> bool:
        """Whether the request keeps this catalog row: its filters, its session, superseded and
        sensitive notes, maintenance reports (only a search for that category finds them), and,
        given `authored`, only the paths one machine or agent wrote."""
        if row.skipped:
            return False
        if authored is not None and row.path not in authored:
            return False
        if not request.include_superseded and (row.status == "superseded" or row.superseded_by):
            return False
        if not request.include_sensitive and row.sensitive:
            return False
        # Only the fields the request filters by are looked at: this runs for every candidate.
        if request.tiers and not _overlaps(request.tiers, [row.tier]):
            return False
        # Maintenance reports are no answers: only a search for that category finds them.
        report = is_report(row.path, row.title, row.category)
        if request.categories:
            if not _overlaps(request.categories, [REPORT if report else row.category]):
                return False
        elif report:
            return False
        # `geodesy` keeps notes tagged `geodesy/datum`
        if request.tags and not _overlaps(request.tags, expand_tags(row.tags)):
            return False
        if request.projects and not _overlaps(request.projects, [row.project]):
            return False
        if request.entities and not _overlaps(request.entities, row.entities):
            return False
        if request.statuses and not _overlaps(request.statuses, [row.status]):
            return False
        if request.session and row.session != request.session:
            return False
        if request.folders and not within(row.path, request.folders):
            return False
        if request.since and row.updated < request.since.timestamp():
            return False
        return not (request.until and row.updated > request.until.timestamp())


def _in_background(call: Callable[[list[str]], np.ndarray], texts: list[str]) -> Future[np.ndarray]:
    """`call(texts)` on a thread of its own. A daemon thread, started per query (cheap): a pool's
    idle worker would outlive every Searcher and hold up the interpreter's exit."""
    from concurrent.futures import Future  # hybrid searches only (slow to load)

    future: Future[np.ndarray] = Future()

    def run() -> None:
        try:
            future.set_result(call(texts))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, who re-raises it
            future.set_exception(exc)

    threading.Thread(target=run, name="tmem-query-embed", daemon=True).start()
    return future


def _each_alone(call: Callable[[list[str]], np.ndarray]) -> Callable[[list[str]], np.ndarray]:
    """`call` on each text alone, the rows stacked: a pasted conversation's short last turn
    embedded in one run with the whole is padded to the whole's length, which doubled the query's
    model time on MADial (15 -> 29 ms a query; each alone, 20 ms)."""

    def run(texts: list[str]) -> np.ndarray:
        import numpy as np

        return call(texts) if len(texts) < 2 else np.concatenate([call([text]) for text in texts])

    return run


def _merged(ours: Scored, apart: Scored, limit: int) -> Scored:
    """Two candidate lists on one scale, best first, at most `limit` long."""
    if not apart:
        return ours
    return sorted([*ours, *apart], key=lambda item: -item[1])[:limit]


def _overlaps(wanted: Sequence[str], have: Sequence[str]) -> bool:
    lowered = {h.lower() for h in have}
    return any(w.lower() in lowered for w in wanted)
