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
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from tiered_memory.catalog import NoteRow
from tiered_memory.config import SearchConfig
from tiered_memory.errors import BadInput
from tiered_memory.indexer import Indexer

Mode = Literal["hybrid", "keyword", "vector"]
Scored = Sequence[tuple[str, float]]


@dataclass
class SearchRequest:
    query: str
    limit: int | None = None
    mode: Mode = "hybrid"
    tiers: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    projects: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    session: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_superseded: bool = False
    include_sensitive: bool = True


@dataclass
class Hit:
    path: str
    id: str
    title: str
    tier: str
    category: str
    score: float
    snippet: str
    updated: float
    components: dict[str, float] = field(default_factory=dict)


@dataclass
class SearchResult:
    hits: list[Hit]
    mode: Mode
    notice: str | None = None


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
        span = high - low
        for path, score in vector:
            # One candidate (or all equal) means no spread to scale by: keep the raw cosine.
            scaled = (score - low) / span if span > 1e-9 else max(0.0, score)
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
        rows = self.indexer.catalog.rows(fused)
        rows = {p: r for p, r in rows.items() if self._keep(r, request)}
        hits = score_hits(fused, rows, self.cfg, self.now(), accesses, "archive" in request.tiers)
        return SearchResult(hits[:limit], mode, notice)

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
            (request.tags, row.tags),
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
