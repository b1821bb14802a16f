"""Near-duplicate long-term notes for maintenance to merge: cosine similarity of embeddings when an
embedder is available, else word-set overlap (Jaccard). Only finds pairs; `maintain` merges them."""

from __future__ import annotations

__all__ = ["MIN_MERGE_TOKENS", "Merge", "find_merges", "writable"]

import hashlib
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tiered_memory.errors import EmbedderUnavailable
from tiered_memory.index.embeddings import Embedder, normalize_rows
from tiered_memory.index.indexer import embed_text
from tiered_memory.model import note as notes
from tiered_memory.model import tiers

MIN_MERGE_TOKENS = 5  # shorter notes (a heading, a stub) say too little to call them duplicates
_TOKEN = re.compile(r"\w+")


@dataclass
class Merge:
    kept: str
    kept_id: str
    dropped: str
    dropped_id: str
    similarity: float
    method: str  # "embeddings" or "token overlap"


def writable(note: notes.Note) -> bool:
    """tmem rewrites only Markdown notes whose frontmatter it could parse."""
    return not note.is_json and not note.parse_warning


def find_merges(
    found: list[notes.Note],
    threshold: float,
    embedder: Embedder | None,
    warn: Callable[[str], None] = lambda message: None,
    cache: Path | None = None,
) -> list[Merge]:
    """Which of `found` (the notes that will be long-term) to merge into which: same category,
    similarity >= threshold. Each Merge names the note kept and one note it absorbs."""
    pool = [
        n
        for n in found
        if writable(n)
        and not tiers.is_fixed(n.path)
        and n.status not in ("superseded", "cancelled")
        and not n.superseded_by
        and len(_TOKEN.findall(n.text)) >= MIN_MERGE_TOKENS
    ]
    if len(pool) < 2:
        return []
    pairs, method = _similar_pairs(embedder, pool, threshold, warn, cache)
    # Greedy, best pair first, over notes still active: a note that absorbed others can itself be
    # absorbed by a better one (its absorbed notes then point at the new keeper). Every pair left
    # between two active notes gets merged, so the survivors hold no pair: a second run merges nothing.
    keeper = {n.path: n.path for n in pool}  # dropped path -> the note it now lives on in
    by_path = {n.path: n for n in pool}
    merged: dict[str, Merge] = {}
    for sim, i, j in sorted(pairs, key=lambda t: (-t[0], t[1], t[2])):
        a, b = pool[i], pool[j]
        if a.category != b.category or keeper[a.path] != a.path or keeper[b.path] != b.path:
            continue
        if _rank(b) > _rank(a):
            a, b = b, a
        for path, target in keeper.items():
            if target == b.path:
                keeper[path] = a.path
        merged[b.path] = Merge(a.path, a.id, b.path, b.id, round(float(sim), 4), method)
    out = []
    for path, merge in merged.items():
        final = by_path[keeper[path]]
        out.append(Merge(final.path, final.id, merge.dropped, merge.dropped_id, merge.similarity, method))
    return out


def _rank(note: notes.Note) -> tuple[float, int, float, str]:
    updated = note.updated
    # Higher confidence, more recalls, newer; the path breaks ties the same way every run.
    return (note.confidence, note.access_count, updated.timestamp() if updated else 0.0, _reverse(note.path))


def _reverse(text: str) -> str:
    return "".join(chr(0x10FFFF - ord(c)) for c in text)


def _similar_pairs(
    embedder: Embedder | None,
    pool: list[notes.Note],
    threshold: float,
    warn: Callable[[str], None],
    cache: Path | None,
) -> tuple[list[tuple[float, int, int]], str]:
    if embedder is not None:
        try:
            return _cosine_pairs(embedder, pool, threshold, cache), "embeddings"
        except EmbedderUnavailable as exc:
            warn(f"merging by token overlap: {exc}")
    return _jaccard_pairs(pool, threshold), "token overlap"


def _cosine_pairs(
    embedder: Embedder, pool: list[notes.Note], threshold: float, cache: Path | None
) -> list[tuple[float, int, int]]:
    matrix = _embed(embedder, pool, cache)
    pairs: list[tuple[float, int, int]] = []
    block = 512
    for start in range(0, len(pool), block):
        sims = matrix[start : start + block] @ matrix.T
        rows, cols = np.nonzero(sims >= threshold)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            i = start + r
            if c > i:
                pairs.append((float(sims[r, c]), i, c))
    return pairs


def _embed(embedder: Embedder, pool: list[notes.Note], cache: Path | None) -> Any:
    """Unit vectors of the pool's notes; unchanged notes come from the cache of the last run
    (`.tmem/merge-vectors.npz`, derived data), so a daily run embeds only what is new."""
    texts = [embed_text(n)[:4000] for n in pool]
    keys = [hashlib.blake2b(t.encode("utf-8"), digest_size=12).hexdigest() for t in texts]
    known: dict[str, Any] = {}
    if cache is not None and cache.is_file():
        try:
            with np.load(cache, allow_pickle=False) as data:
                if str(data["model"]) == embedder.model_id and data["vectors"].shape[1:] == (embedder.dim,):
                    known = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
        except (OSError, ValueError, KeyError):
            known = {}  # a broken cache is just rebuilt
    missing = sorted({k for k in keys if k not in known})
    if missing:
        first = {k: i for i, k in reversed(list(enumerate(keys)))}
        fresh = normalize_rows(embedder.embed([texts[first[k]] for k in missing]))
        known.update(zip(missing, fresh, strict=True))
    matrix = np.stack([known[k] for k in keys]).astype(np.float32)
    if cache is not None and missing:
        unique = sorted(set(keys))
        tmp = cache.with_name(cache.name + ".tmp.npz")
        np.savez(
            tmp,
            model=np.array(embedder.model_id),
            keys=np.array(unique),
            vectors=np.stack([known[k] for k in unique]),
        )
        os.replace(tmp, cache)
    return matrix


def _jaccard_pairs(pool: list[notes.Note], threshold: float) -> list[tuple[float, int, int]]:
    """Pairs with word-set Jaccard >= threshold, by prefix filtering: with words in a global order
    (rarest first), two sets that reach the threshold share a word among the first
    |A| - ceil(threshold * |A|) + 1 of each, so only sets meeting there are compared."""
    sets = [frozenset(_TOKEN.findall(n.text.casefold())) for n in pool]
    frequency: dict[str, int] = {}
    for found in sets:
        for word in found:
            frequency[word] = frequency.get(word, 0) + 1
    index: dict[str, list[int]] = {}
    pairs: list[tuple[float, int, int]] = []
    for i in sorted(range(len(sets)), key=lambda k: (len(sets[k]), k)):
        words = sorted(sets[i], key=lambda w: (frequency[w], w))
        prefix = words[: len(words) - math.ceil(threshold * len(words) - 1e-9) + 1]
        seen: set[int] = set()
        for word in prefix:
            for j in index.get(word, ()):
                if j in seen:
                    continue
                seen.add(j)
                # Sets come smallest first: |A| / |B| bounds the Jaccard of A and B.
                if len(sets[j]) < threshold * len(sets[i]):
                    continue
                sim = len(sets[i] & sets[j]) / len(sets[i] | sets[j])
                if sim >= threshold:
                    pairs.append((sim, min(i, j), max(i, j)))
            index.setdefault(word, []).append(i)
    return pairs
