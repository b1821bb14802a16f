"""A conversation turn's cosine to a query, from its best chunk's, and the model whose measured
constants a vector index's cosines take: light enough for a keyword search's imports (no hnswlib,
no numpy)."""

from __future__ import annotations

__all__ = ["CHUNK_COUNT_DISCOUNT", "measured_as", "note_cosine"]

import math

# A long turn of a conversation has many chances to be near a query by accident: its best chunk's
# cosine is discounted by this much times the log of its chunk count (a one-chunk turn keeps its
# cosine). Without it, long assistant answers crowded short user turns out of BEAM's vector
# results (first 90 questions, cosine alone: best chunk R@5 .399 against .472 for plain MiniLM
# over whole messages; discounted .528).
# Only conversation turns (index.retrieve): in notes a person writes, the one passage of a long
# note that answers is what best-chunk scoring is for (Obsidian help vault, a sentence of a deep
# passage as the query: R@5 .806 best chunk, .597 discounted). Measured per model, like the cosine
# floor: docs/retrieval.md, "What is embedded, and the cosine floor". For the same reason a turn of
# several chunks neither lends nor gains a session lift in vector mode (index.retrieve,
# `Searcher._sessions_lent_by_evidence`; docs/retrieval.md, "Vector mode against plain cosine").
CHUNK_COUNT_DISCOUNT = {"sentence-transformers:all-MiniLM-L6-v2": 0.08}


def measured_as(model_id: str) -> str:
    """The model id whose measured constants (cosine floor and margin, chunk-count discount,
    confidence cut) hold for vectors of `model_id`: an int8 copy's (`…+int8`) are on its float32
    model's scale (cosine 0.99 to its vectors), and its queries are embedded in float32."""
    return model_id.split("+", 1)[0]


def note_cosine(best: float, chunks: int, model_id: str) -> float:
    """A turn's cosine to a query: its best chunk's, discounted for the turn's number of chunks."""
    discount = CHUNK_COUNT_DISCOUNT.get(measured_as(model_id), 0.0)
    return best - discount * math.log(chunks) if discount and chunks > 1 else best
