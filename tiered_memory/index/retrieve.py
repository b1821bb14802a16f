"""Hybrid retrieval: candidates from Whoosh and hnswlib, fused, decayed by age, weighted by a prior.

The scoring functions (`fuse_linear`, `fuse_rrf`, `score_hits`) are pure and tested directly;
`Searcher` only gathers candidates from the indexes and hands them over.

final = fused × exp(-λ·days since updated) × tier weight × (1 − w + w·prior)
prior = mean(importance, confidence, 1 − exp(−accesses / 5))
Archived notes come after every other tier unless the search asks for the archive.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime

from tiered_memory.config import SearchConfig
from tiered_memory.errors import BadInput
from tiered_memory.index.catalog import NoteRow
from tiered_memory.index.indexer import Indexer
from tiered_memory.model.obsidian import expand_tags
from tiered_memory.model.search import Hit, Mode, SearchRequest, SearchResult

SESSION_CANDIDATES = 30
MIN_COSINE_SPAN = 0.3
Scored = Sequence[tuple[str, float]]


# ---- pure scoring ------------------------------------------------------------------------------


def fuse_linear(
    keyword: Scored, vector: Scored, keyword_weight: float, vector_weight: float
) -> dict[str, dict[str, float]]:
    """Weighted sum of normalised scores: BM25 divided by the best BM25, cosine min-max scaled."""
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
        # MIN_COSINE_SPAN are treated as that far apart.
        low = min(low, high - MIN_COSINE_SPAN)
        for path, score in vector:
            scaled = max(0.0, (score - low) / (high - low))
            out.setdefault(path, {"keyword": 0.0, "vector": 0.0})["vector"] = scaled
    total = (keyword_weight + vector_weight) or 1.0
    for parts in out.values():
        parts["fused"] = (keyword_weight * parts["keyword"] + vector_weight * parts["vector"]) / total
    return out


def fuse_rrf(
    keyword: Scored, vector: Scored, k: int, keyword_weight: float, vector_weight: float
) -> dict[str, dict[str, float]]:
    """Reciprocal rank fusion, scaled so a document first in both lists scores 1."""
    out: dict[str, dict[str, float]] = {}
    for name, ranked, weight in (("keyword", keyword, keyword_weight), ("vector", vector, vector_weight)):
        for rank, (path, _score) in enumerate(ranked, 1):
            out.setdefault(path, {"keyword": 0.0, "vector": 0.0})[name] = weight * (k + 1) / (k + rank)
    total = (keyword_weight + vector_weight) or 1.0
    for parts in out.values():
        parts["fused"] = (parts["keyword"] + parts["vector"]) / total
    return out


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

    Each note of a session gains `neighbor_weight` × the better fused score of its two adjacent
    notes and `session_weight` × the session's best fused score. Scores are read from the input,
    so lifts never compound.
    """
    out = {path: dict(parts) for path, parts in fused.items()}
    for rows in sessions.values():
        base = [fused[r.path]["fused"] if r.path in fused else 0.0 for r in rows]
        best = max(base, default=0.0)
        for i, row in enumerate(rows):
            neighbor = max(base[i - 1] if i > 0 else 0.0, base[i + 1] if i + 1 < len(rows) else 0.0)
            lift = neighbor_weight * neighbor + session_weight * best
            if lift <= 0.0:
                continue
            parts = out.setdefault(row.path, {"keyword": 0.0, "vector": 0.0, "fused": 0.0})
            parts["context"] = lift
            parts["fused"] += lift
    return out


def prior(row: NoteRow, pending_accesses: int = 0) -> float:
    frequency = 1.0 - math.exp(-(row.access_count + pending_accesses) / 5.0)
    return (row.importance + row.confidence + frequency) / 3.0


def score_hits(
    fused: dict[str, dict[str, float]],
    rows: dict[str, NoteRow],
    cfg: SearchConfig,
    now: datetime,
    accesses: dict[str, int] | None = None,
    archive_requested: bool = False,
) -> list[Hit]:
    """Apply decay, tier weight and prior to fused scores; cut below min_score; sort."""
    accesses = accesses or {}
    hits: list[Hit] = []
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
        if final < cfg.min_score:
            continue
        components = {
            "keyword": round(parts["keyword"], 4),
            "vector": round(parts["vector"], 4),
            "context": round(parts.get("context", 0.0), 4),
            "fused": round(parts["fused"], 4),
            "days": round(days, 1),
            "decay": round(decay, 4),
            "tier_weight": tier_weight,
            "prior": round(note_prior, 4),
            "prior_factor": round(factor, 4),
            "final": round(final, 6),
        }
        hits.append(
            Hit(
                row.path,
                row.id,
                row.title,
                row.tier,
                row.category,
                final,
                row.snippet,
                row.updated,
                components,
            )
        )
    hits.sort(key=lambda h: (h.tier == "archive" and not archive_requested, -h.score, h.path))
    return hits


# ---- gathering candidates --------------------------------------------------------------------


class Searcher:
    """Runs a SearchRequest against an Indexer's catalog, full-text and vector indexes."""

    def __init__(self, indexer: Indexer, cfg: SearchConfig, now: Callable[[], datetime]) -> None:
        self.indexer = indexer
        self.cfg = cfg
        self.now = now

    def search(self, request: SearchRequest, accesses: dict[str, int] | None = None) -> SearchResult:
        query = request.query.strip()
        if not query:
            raise BadInput("empty query: say what to search for")
        limit = request.limit or self.cfg.limit
        pool = max(self.cfg.candidates, limit * 3)
        where = self._where(request)
        mode: Mode = request.mode
        notice = None
        keyword: Scored = []
        vector: Scored = []
        if mode in ("hybrid", "vector"):
            vectors = self.indexer.vectors()
            embedder = self.indexer.embedder()
            if vectors is None or embedder is None:
                notice = f"vector search unavailable ({self.indexer.embedder_error}); keyword results only"
                mode = "keyword"
            else:
                allowed = self._allowed(request)
                qvec = embedder.embed([query])[0]
                vector = vectors.search(qvec, pool, (lambda p: p in allowed) if allowed is not None else None)
        if mode in ("hybrid", "keyword"):
            keyword = self.indexer.fts.search(query, pool, where or None)
        if mode == "keyword":
            fused = fuse_linear(keyword, [], 1.0, 0.0)
        elif mode == "vector":
            fused = fuse_linear([], vector, 0.0, 1.0)
        elif self.cfg.fusion == "rrf":
            fused = fuse_rrf(keyword, vector, self.cfg.rrf_k, self.cfg.keyword_weight, self.cfg.vector_weight)
        else:
            fused = fuse_linear(keyword, vector, self.cfg.keyword_weight, self.cfg.vector_weight)
        if mode == "hybrid" and (vectors := self.indexer.vectors()) is not None:
            # A note not embedded yet (a build still under way) has no vector score, not a score of 0.
            unembedded = [p for p, _ in keyword if not vectors.has(p)]
            keyword_alone(fused, unembedded, self.cfg.keyword_weight if self.cfg.fusion == "rrf" else 1.0)
        rows = self.indexer.catalog.rows(fused)
        if self.cfg.neighbor_weight or self.cfg.session_weight:
            fused, rows = self._with_sessions(fused, rows)
        rows = {p: r for p, r in rows.items() if self._keep(r, request)}
        hits = score_hits(fused, rows, self.cfg, self.now(), accesses, "archive" in request.tiers)
        return SearchResult(hits[:limit], mode, notice)

    def _with_sessions(
        self, fused: dict[str, dict[str, float]], rows: dict[str, NoteRow]
    ) -> tuple[dict[str, dict[str, float]], dict[str, NoteRow]]:
        # Only the sessions of the strongest candidates: their neighbours are where answers hide.
        top = sorted(fused, key=lambda p: -fused[p]["fused"])[:SESSION_CANDIDATES]
        sessions = self.indexer.catalog.session_rows(rows[p].session for p in top if p in rows)
        if not sessions:
            return fused, rows
        rows = dict(rows)
        for members in sessions.values():
            for row in members:
                rows.setdefault(row.path, row)
        return propagate(fused, sessions, self.cfg.neighbor_weight, self.cfg.session_weight), rows

    @staticmethod
    def _where(request: SearchRequest) -> dict[str, list[str]]:
        where: dict[str, list[str]] = {}
        for key, values in (
            ("tier", request.tiers),
            ("category", request.categories),
            ("tags", request.tags),
            ("project", request.projects),
            ("entities", request.entities),
            ("status", request.statuses),
        ):
            if values:
                where[key] = list(values)
        if request.session:
            where["session"] = [request.session]
        return where

    def _allowed(self, request: SearchRequest) -> set[str] | None:
        """Paths the vector search may return, when the request filters by field."""
        if not self._where(request):
            return None
        return {p for p, r in self.indexer.catalog.rows().items() if self._keep(r, request)}

    @staticmethod
    def _keep(row: NoteRow, request: SearchRequest) -> bool:
        if row.skipped:
            return False
        if not request.include_superseded and (row.status == "superseded" or row.superseded_by):
            return False
        if not request.include_sensitive and row.sensitive:
            return False
        checks: list[tuple[Sequence[str], Sequence[str]]] = [
            (request.tiers, [row.tier]),
            (request.categories, [row.category]),
            (request.tags, expand_tags(row.tags)),  # `geodesy` keeps notes tagged `geodesy/datum`
            (request.projects, [row.project]),
            (request.entities, row.entities),
            (request.statuses, [row.status]),
        ]
        for wanted, have in checks:
            if wanted and not _overlaps(wanted, have):
                return False
        if request.session and row.session != request.session:
            return False
        if request.since and row.updated < request.since.timestamp():
            return False
        return not (request.until and row.updated > request.until.timestamp())


def _overlaps(wanted: Sequence[str], have: Sequence[str]) -> bool:
    lowered = {h.lower() for h in have}
    return any(w.lower() in lowered for w in wanted)
