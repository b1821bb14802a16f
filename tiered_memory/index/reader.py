"""The read side of a vault's indexes: what ranking looks at (the catalog's rows, the full text, the
vectors and their embedder, the link graph, the notes' text), handed out by the `Indexer`, the one
writer of `.tmem/`. A `Searcher` holds this and never the writer, so nothing on the ranking side
can refresh, wipe or write an index."""

from __future__ import annotations

__all__ = ["NoteTexts", "IndexReader"]

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from tiered_memory.index.attachments import Attachments
from tiered_memory.index.catalog import Catalog

if TYPE_CHECKING:
    from tiered_memory.index.cjk_vectors import CjkVectors
    from tiered_memory.index.embeddings import Embedder
    from tiered_memory.index.fts import FtsIndex
    from tiered_memory.index.graph import LinkGraph
    from tiered_memory.index.vectors import VectorIndex


class NoteTexts(Protocol):
    """Reading a note's file (the vault's reading side): a hit's passage, a JSON file's keys."""

    def read_text(self, rel: str) -> str: ...

    def read_body(self, rel: str) -> str: ...


class IndexReader:
    """The indexes as a search reads them. The parts open on first use, as the writer opens them
    (a keyword search never loads the vectors or the model): each is asked of the writer's own
    lazily opened one, so both always look at the same index."""

    def __init__(
        self,
        *,
        catalog: Catalog,
        attachments: Attachments,
        texts: NoteTexts,
        fulltext: Callable[[], FtsIndex],
        vectors: Callable[[], VectorIndex | None],
        embedder: Callable[[], Embedder | None],
        embedder_error: Callable[[], str | None],
        cjk_vectors: Callable[[], CjkVectors | None],
        graph: Callable[[], LinkGraph],
    ) -> None:
        self.catalog = catalog
        self.attachments = attachments
        self.texts = texts
        self._fulltext = fulltext
        self._vectors = vectors
        self._embedder = embedder
        self._embedder_error = embedder_error
        self._cjk_vectors = cjk_vectors
        self._graph = graph

    def fts(self) -> FtsIndex:
        return self._fulltext()

    def vectors(self) -> VectorIndex | None:
        """The vector index (loading the embedder); None when no embedder can load."""
        return self._vectors()

    def embedder(self) -> Embedder | None:
        return self._embedder()

    def embedder_error(self) -> str | None:
        """Why no embedder loaded (None while one has, or none was tried)."""
        return self._embedder_error()

    def cjk_vectors(self) -> CjkVectors | None:
        return self._cjk_vectors()

    def graph(self) -> LinkGraph:
        return self._graph()
