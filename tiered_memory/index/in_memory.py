"""A side index held in this process's memory only, for notes whose text must never reach `.tmem/`
(encrypted notes, while the vault is unlocked).

For each note it keeps what the on-disk indexes keep for the others: the catalog row, the analyzed
terms of each searched field (scored by `FtsIndex.score_apart` on the full-text index's scale) and
the chunk vectors (cosine by brute force: these notes are few). Embeddings give a text away as
surely as the text does, so nothing here is ever written anywhere: losing it (`clear`, the end of
the process) costs only the time to build it again.
"""

from __future__ import annotations

__all__ = ["EMBED_BATCH", "InMemoryIndex", "Stamp"]

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tiered_memory.index.catalog import NoteRow
from tiered_memory.index.chunking import chunk_text
from tiered_memory.index.embeddings import Embedder, normalize_rows
from tiered_memory.index.fts import FtsIndex, Terms, doc_terms
from tiered_memory.index.indexer import embed_text, fts_doc, note_to_row
from tiered_memory.model import note as notes

if TYPE_CHECKING:
    import numpy as np

EMBED_BATCH = 8  # notes embedded between two looks at the clock
Stamp = tuple[float, int]  # the file's mtime and size when its entry was made


@dataclass
class _Entry:
    stamp: Stamp
    note: notes.Note
    row: NoteRow
    terms: Terms
    vectors: np.ndarray | None = None  # unit rows, one per chunk
    model_id: str = ""  # the embedder the vectors came from


class InMemoryIndex:
    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()

    # ---- contents ---------------------------------------------------------------------------------
    def current(self, path: str, stamp: Stamp) -> notes.Note | None:
        """The note held for `path` when the file has not changed since, else None."""
        with self._lock:
            entry = self._entries.get(path)
        return entry.note if entry is not None and entry.stamp == stamp else None

    def put(self, note: notes.Note, stamp: Stamp, tier: str | None = None) -> None:
        row = note_to_row(note, stamp[1], "", tier=tier)
        row.mtime = stamp[0]
        with self._lock:
            self._entries[note.path] = _Entry(stamp, note, row, doc_terms(fts_doc(note, row)))

    def retain(self, paths: Iterable[str]) -> None:
        """Drop every note but these (the others were deleted, moved or can no longer be read)."""
        keep = set(paths)
        with self._lock:
            for path in [p for p in self._entries if p not in keep]:
                del self._entries[path]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def notes(self) -> list[notes.Note]:
        with self._lock:
            return [e.note for e in self._entries.values()]

    def rows(self) -> dict[str, NoteRow]:
        with self._lock:
            return {p: e.row for p, e in self._entries.items()}

    def __len__(self) -> int:
        return len(self._entries)

    # ---- keyword ----------------------------------------------------------------------------------
    def keyword(
        self, query: str, fts: FtsIndex, allowed: Callable[[NoteRow], bool]
    ) -> list[tuple[str, float]]:
        """[(path, bm25f)] best first, on the scale of the full-text index's own scores."""
        with self._lock:
            entries = [e for e in self._entries.values() if allowed(e.row)]
        scores = fts.score_apart(query, [e.terms for e in entries])
        found = [(e.row.path, s) for e, s in zip(entries, scores, strict=True) if s > 0]
        return sorted(found, key=lambda item: (-item[1], item[0]))

    def coverage(
        self, query: str, fts: FtsIndex, paths: Iterable[str], weigh_form: bool = True
    ) -> dict[str, tuple[float, int]]:
        """{path: (share of the query's weight, terms held)} of these held notes, as the full-text
        index's coverage judges its own hits (`FtsIndex.coverage_apart`)."""
        with self._lock:
            entries = [e for p in paths if (e := self._entries.get(p)) is not None]
        shares = fts.coverage_apart(query, [e.terms for e in entries], weigh_form=weigh_form)
        return {e.row.path: share for e, share in zip(entries, shares, strict=True)}

    def terms(self, allowed: Callable[[NoteRow], bool]) -> list[Terms]:
        """The terms of the notes held (`doc_terms`): what `FtsIndex.known` counts beside the index's."""
        with self._lock:
            return [e.terms for e in self._entries.values() if allowed(e.row)]

    # ---- vectors ----------------------------------------------------------------------------------
    def embed(
        self, embedder: Embedder, chunk_tokens: int, overlap: int, deadline: float | None = None
    ) -> int:
        """Embed the notes without a vector from this embedder, a batch at a time until `deadline`
        (time.monotonic; the rest wait for the next search and rank by keyword meanwhile); how
        many are left without one."""
        import numpy as np

        model_id = embedder.model_id
        with self._lock:
            todo = [e for e in self._entries.values() if e.vectors is None or e.model_id != model_id]
        for start in range(0, len(todo), EMBED_BATCH):
            if start and deadline is not None and time.monotonic() >= deadline:
                return len(todo) - start
            part = todo[start : start + EMBED_BATCH]
            chunks = [
                chunk_text(embed_text(e.note), chunk_tokens, overlap) or [e.note.title or e.row.path]
                for e in part
            ]
            matrix = normalize_rows(
                np.asarray(embedder.embed([c for cs in chunks for c in cs]), dtype=np.float32)
            )
            offset = 0
            with self._lock:
                for entry, pieces in zip(part, chunks, strict=True):
                    entry.vectors, entry.model_id = matrix[offset : offset + len(pieces)], model_id
                    offset += len(pieces)
        return 0

    def has_vector(self, path: str) -> bool:
        with self._lock:
            entry = self._entries.get(path)
        return entry is not None and entry.vectors is not None

    def vector(
        self, query: np.ndarray, model_id: str, allowed: Callable[[NoteRow], bool]
    ) -> list[tuple[str, float]]:
        """[(path, cosine of its best chunk)] best first, over the notes embedded by `model_id`."""
        import numpy as np

        q = np.asarray(query, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        if not norm or not np.isfinite(norm):
            return []
        q = q / norm
        with self._lock:
            entries = [
                e
                for e in self._entries.values()
                if e.vectors is not None and e.model_id == model_id and allowed(e.row)
            ]
        found = [(e.row.path, float(np.max(e.vectors @ q))) for e in entries if e.vectors is not None]
        return sorted(found, key=lambda item: (-item[1], item[0]))
