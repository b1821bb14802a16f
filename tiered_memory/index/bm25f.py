"""Term-at-a-time BM25F over whoosh's segments, with whoosh's formula and statistics: a query's
scores equal those of an Or of boosted Term queries, without whoosh's matcher tree, which steps one
posting at a time in Python (40-110 ms per question at 10k notes, against a few ms here).

Postings and field lengths are decoded straight from whoosh3's blocks into compact `array`s,
cached by the caller per segment (segments never change, only their deletion sets do).

Scores are accumulated one of two ways, with the same float64 operations in the same order, so
both give the same scores and the same order, bit for bit:
- on numpy arrays, in a process that has loaded numpy anyway (the daemon, any vector search):
  ~10x faster on long posting lists;
- in plain Python for a process's first search: a one-shot keyword search never needs numpy,
  whose import alone costs about as much as the whole search on 10,000 notes. The second search
  loads it (`prefer_arrays`): a process that searches twice will search again.
"""

from __future__ import annotations

import heapq
import itertools
import sys
from array import array
from collections.abc import Iterable
from typing import Any, NamedTuple

from whoosh.codec.whoosh3 import LENGTHS_COLUMN
from whoosh.matching import WrappingMatcher
from whoosh.reading import TermNotFound
from whoosh.util.numeric import byte_to_length

K1, B = 1.2, 0.75  # whoosh's BM25F defaults, so scores equal whoosh's own
# whoosh stores each document's field length as one byte; this is the length each byte stands for.
LENGTH_TABLE: tuple[float, ...] = tuple(float(byte_to_length(i)) for i in range(256))


class Postings(NamedTuple):
    """One term's postings in one segment: segment-local docnums (ascending), term frequencies."""

    ids: array[int]
    tfs: array[float]


NO_POSTINGS = Postings(array("q"), array("d"))


class Contribution(NamedTuple):
    """What one (field, term) adds in one segment: `factor` is the field's boost times the
    term's weighted idf, `lengths` the segment's field lengths, `avgfl` the field's average."""

    offset: int
    postings: Postings
    lengths: array[float]
    factor: float
    avgfl: float


_SEARCHES = itertools.count()


def numpy_loaded() -> bool:
    return "numpy" in sys.modules


def prefer_arrays() -> None:
    """For a process that answers search after search (the daemon): load numpy now, so that every
    search adds up its scores on arrays, whether or not anything else in it needs vectors."""
    import numpy  # noqa: F401


def top(
    n: int,
    contributions: Iterable[Contribution],
    limit: int,
    deleted: frozenset[int],
    allowed: frozenset[int] | None,
) -> list[tuple[int, float]]:
    """The `limit` best (docnum, score) pairs with a positive score, best first and ties by docnum,
    over `n` documents; deleted documents, and those not in `allowed` when given, are left out."""
    if next(_SEARCHES) >= 1:
        prefer_arrays()  # a process that searches twice will search again: numpy pays for itself
    if numpy_loaded():
        return _top_arrays(n, contributions, limit, deleted, allowed)
    return _top_plain(contributions, limit, deleted, allowed)


def _top_plain(
    contributions: Iterable[Contribution],
    limit: int,
    deleted: frozenset[int],
    allowed: frozenset[int] | None,
) -> list[tuple[int, float]]:
    scores: dict[int, float] = {}
    get = scores.get
    for offset, (ids, tfs), lengths, factor, avgfl in contributions:
        for d, tf in zip(ids, tfs, strict=True):
            norm = K1 * ((1 - B) + B * lengths[d] / avgfl)
            doc = d + offset
            scores[doc] = get(doc, 0.0) + factor * (tf * (K1 + 1)) / (tf + norm)
    hits = [
        (doc, s)
        for doc, s in scores.items()
        if s > 0 and doc not in deleted and (allowed is None or doc in allowed)
    ]
    return heapq.nsmallest(limit, hits, key=lambda hit: (-hit[1], hit[0]))


def _top_arrays(
    n: int,
    contributions: Iterable[Contribution],
    limit: int,
    deleted: frozenset[int],
    allowed: frozenset[int] | None,
) -> list[tuple[int, float]]:
    import numpy as np

    scores = np.zeros(n, dtype=np.float64)
    for offset, (ids_raw, tfs_raw), lengths, factor, avgfl in contributions:
        ids = np.frombuffer(ids_raw, dtype=np.int64)
        tfs = np.frombuffer(tfs_raw, dtype=np.float64)
        fl = np.frombuffer(lengths, dtype=np.float64)[ids]
        norm = K1 * ((1 - B) + B * fl / avgfl)
        scores[ids + offset] += factor * (tfs * (K1 + 1)) / (tfs + norm)
    if allowed is None:
        mask = np.ones(n, dtype=bool)
    else:
        mask = np.zeros(n, dtype=bool)
        mask[np.fromiter(allowed, dtype=np.int64, count=len(allowed))] = True
    if deleted:
        mask[np.fromiter(deleted, dtype=np.int64, count=len(deleted))] = False
    hits = np.flatnonzero((scores > 0) & mask)
    if len(hits) > limit:
        # Everything scoring at least the limit-th best, so ties at the cut go by docnum as below.
        kth = scores[hits[np.argpartition(-scores[hits], limit - 1)[limit - 1]]]
        hits = hits[scores[hits] >= kth]
    hits = hits[np.lexsort((hits, -scores[hits]))][:limit]
    return [(int(d), float(scores[d])) for d in hits]


def decode_postings(seg: Any, field: str, term: str) -> Postings:
    """One term's postings in one segment, deleted documents included."""
    try:
        m = seg.postings(field, term)
    except TermNotFound:
        return NO_POSTINGS
    while isinstance(m, WrappingMatcher):
        m = m.child
    try:
        found = _block_postings(m)
        ids = found.ids
        if len(ids) == len(found.tfs) and all(a < b for a, b in itertools.pairwise(ids)):
            return found
    except Exception:  # not a whoosh3 block matcher (e.g. inlined postings): slow, public path
        pass
    m = seg.postings(field, term)
    ids, tfs = array("q"), array("d")
    while m.is_active():
        ids.append(m.id())
        tfs.append(m.weight())
        m.next()
    return Postings(ids, tfs)


def _block_postings(m: Any) -> Postings:
    # whoosh3's W3LeafMatcher keeps postings in blocks of (delta-coded ids, weights, values);
    # decoding whole blocks at once is what makes scoring fast. These are private attributes: any
    # mismatch raises and the caller takes the public per-posting path instead.
    if m._byteids:
        raise TypeError("byte ids")
    ids, tfs = array("q"), array("d")
    while True:
        m._read_data()
        raw_ids, raw_tfs = m._data[0], m._data[1]
        ids.extend(itertools.accumulate(raw_ids))  # each block's ids start again from 0
        # Weights are minified to None (all 1.0) or a single float when all equal.
        if isinstance(raw_tfs, tuple):
            tfs.extend(raw_tfs)
        else:
            tfs.extend(itertools.repeat(float(raw_tfs or 1.0), m._blocklength))
        if m._lastblock:
            return Postings(ids, tfs)
        m._goto(m._nextoffset)


def decode_lengths(seg: Any, field: str) -> array[float]:
    """Per-document field lengths of one segment, byte-quantised exactly as whoosh scores them."""
    n = seg.doc_count_all()
    out = array("d", bytes(8 * n))
    try:  # the raw length column (private), one byte per document
        col = seg._perdoc._cached_reader(f"_{field}_len", LENGTHS_COLUMN)
        raw = col._dbfile.get(col._basepos, min(col._count, n))
        out[: len(raw)] = array("d", map(LENGTH_TABLE.__getitem__, raw))
    except Exception:
        for d in range(n):
            out[d] = float(seg.doc_field_length(d, field, 0) or 0)
    return out
