"""The simple baselines the recall evaluation compares tmem with, computed on the same documents.

- FTS5: SQLite FTS5 with porter stemming, an OR of the query's non-stopword terms, ranked by
  bm25(); Chinese/Japanese/Korean runs are split into overlapping character bigrams first (text
  and query alike), as the data set README's reference does.
- dense: all-MiniLM-L6-v2 cosine (the model tmem ships), or any other embedder passed in.
- RRF: reciprocal rank fusion (k = 60) of the two, equal weights.

Each document is indexed as `"<speaker>: <text>"` plus ` [image: <caption>]` when it has one.
Document embeddings are cached as .npy files keyed by a hash of the texts and the model.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORDS = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]+")
# The usual English function words (question words too: questions are the queries here).
STOP_WORDS = frozenset(
    """a about after again against all also am an and any are as at be because been before being between
    both but by can could did do does doing done during each either else ever for from further had has
    have having he her here hers herself him himself his how i if in into is it its itself just me my
    myself no nor not of on once only or other our ours ourselves please same she should so some such tell
    than that the their theirs them themselves then there these they this those through to too very was
    we were what whatever when whenever where wherever whether which while who whoever whom whose why with
    would yet you your yours yourself s t""".split()
)
RRF_K = 60


def doc_text(doc: dict[str, Any]) -> str:
    text = f"{doc.get('speaker') or ''}: {doc['text']}"
    if doc.get("image_caption"):
        text += f" [image: {doc['image_caption']}]"
    return text


def _bigrams(text: str) -> str:
    def split(match: re.Match[str]) -> str:
        run = match.group()
        return run if len(run) == 1 else " ".join(run[i : i + 2] for i in range(len(run) - 1))

    return _CJK_RUN.sub(lambda m: f" {split(m)} ", text)


class Fts5:
    """One FTS5 table over the documents of one conversation (or archive)."""

    def __init__(self, docs: Sequence[dict[str, Any]]) -> None:
        self.ids = [d["id"] for d in docs]
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE d USING fts5(body, tokenize='porter unicode61')")
        self.db.executemany(
            "INSERT INTO d(rowid, body) VALUES (?, ?)",
            [(i, _bigrams(doc_text(d))) for i, d in enumerate(docs)],
        )

    def search(self, query: str, limit: int) -> list[str]:
        terms = [t for t in dict.fromkeys(_WORDS.findall(_bigrams(query).lower())) if t not in STOP_WORDS]
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', "") + '"' for t in terms)
        rows = self.db.execute(
            "SELECT rowid FROM d WHERE d MATCH ? ORDER BY bm25(d) LIMIT ?", (match, limit)
        ).fetchall()
        return [self.ids[r] for (r,) in rows]


class Dense:
    """Cosine over cached document embeddings."""

    def __init__(
        self,
        docs: Sequence[dict[str, Any]],
        embed_docs: Callable[[list[str]], np.ndarray],
        embed_query: Callable[[str], np.ndarray],
        cache: Path | None,
        model_id: str,
    ) -> None:
        self.ids = [d["id"] for d in docs]
        texts = [doc_text(d) for d in docs]
        key = hashlib.sha256(("\n".join(texts) + model_id).encode()).hexdigest()[:16]
        path = cache / f"dense-{_slug(model_id)}-{key}.npy" if cache else None
        if path is not None and path.exists():
            self.matrix = np.load(path)
        else:
            self.matrix = np.asarray(embed_docs(texts), dtype=np.float32)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                np.save(path, self.matrix)
        self.embed_query = embed_query

    def search(self, query: str, limit: int) -> list[str]:
        scores = self.matrix @ np.asarray(self.embed_query(query), dtype=np.float32)
        order = np.argsort(-scores, kind="stable")[:limit]
        return [self.ids[i] for i in order]


def rrf(*rankings: Sequence[str], k: int = RRF_K, limit: int = 10) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, 1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda d: (-scores[d], d))[:limit]


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")
