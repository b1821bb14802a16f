"""Term-at-a-time BM25F over whoosh's segments, with whoosh's formula and statistics: a query's
scores equal those of an Or of boosted Term queries, without whoosh's matcher tree, which steps one
posting at a time in Python (many times slower on a large vault).

Postings are decoded straight from whoosh3's blocks into compact `array`s, and field lengths are
kept as whoosh stores them, one byte per document; both are cached by the caller per segment
(segments never change, only their deletion sets do). A length byte stands for one of 256
lengths, so each field's length normalisation is a table of 256 floats made once per search, and
scoring a posting looks its norm up instead of computing it.

Scores are accumulated one of two ways, with the same float64 operations in the same order, so
both give the same scores and the same order, bit for bit:
- on numpy arrays, in a process that has loaded numpy anyway (the daemon, any vector search):
  much faster on long posting lists;
- in plain Python for a process's first search: a one-shot keyword search never needs numpy,
  whose import alone costs about as much as the whole search on 10,000 notes. The second search
  loads it (`prefer_arrays`): a process that searches twice will search again.
"""

from __future__ import annotations

__all__ = [
    "B",
    "Contribution",
    "K1",
    "LENGTH_TABLE",
    "NO_POSTINGS",
    "Postings",
    "decode_lengths",
    "decode_postings",
    "norms",
    "numpy_loaded",
    "prefer_arrays",
    "top",
]

import heapq
import itertools
import sys
from array import array
from collections.abc import Iterable
from typing import Any, NamedTuple

from whoosh.codec.whoosh3 import LENGTHS_COLUMN
from whoosh.matching import WrappingMatcher
from whoosh.reading import TermNotFound
from whoosh.util.numeric import byte_to_length, length_to_byte

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
    term's weighted idf, `lengths` the segment's field length bytes (`decode_lengths`), `norms`
    the field's length normalisation by length byte (`norms`)."""

    offset: int
    postings: Postings
    lengths: bytes
    factor: float
    norms: tuple[float, ...]


def norms(avgfl: float) -> tuple[float, ...]:
    """BM25's length normalisation, K1 * (1 - B + B * length / average), for each length byte."""
    return tuple(K1 * ((1 - B) + B * length / avgfl) for length in LENGTH_TABLE)


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
    k1_plus_1 = K1 + 1  # a local: the loop runs once per posting
    for offset, (ids, tfs), lengths, factor, norm_of in contributions:
        for d, tf in zip(ids, tfs, strict=True):
            doc = d + offset
            scores[doc] = get(doc, 0.0) + factor * (tf * k1_plus_1) / (tf + norm_of[lengths[d]])
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
    # A field's contributions come one after another with the same norms: one array each time
    # the norms change (compared by identity; the tuple is held, so its identity cannot pass on).
    last_norms: tuple[float, ...] = ()
    table: Any = None
    for offset, (ids_raw, tfs_raw), lengths, factor, norm_of in contributions:
        if norm_of is not last_norms:
            last_norms, table = norm_of, np.array(norm_of, dtype=np.float64)
        ids = np.frombuffer(ids_raw, dtype=np.int64)
        tfs = np.frombuffer(tfs_raw, dtype=np.float64)
        norm = table[np.frombuffer(lengths, dtype=np.uint8)[ids]]
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
        if len(found.ids) == len(found.tfs):
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
        # Each block holds its first id, then the gaps to the next ones: ascending ids (what the
        # format promises, and what a misread would break) means a first id above the last
        # block's and no gap below 1, checked in C rather than pair by pair.
        if not raw_ids or raw_ids[0] <= (ids[-1] if ids else -1) or min(raw_ids[1:], default=1) < 1:
            raise ValueError("postings not ascending")
        ids.extend(itertools.accumulate(raw_ids))  # each block's ids start again from 0
        # Weights are minified to None (all 1.0) or a single float when all equal.
        if isinstance(raw_tfs, tuple):
            tfs.extend(raw_tfs)
        else:
            tfs.extend(itertools.repeat(float(raw_tfs or 1.0), m._blocklength))
        if m._lastblock:
            return Postings(ids, tfs)
        m._goto(m._nextoffset)


def decode_lengths(seg: Any, field: str) -> bytes:
    """Per-document field length bytes of one segment, as whoosh stores and scores them
    (`LENGTH_TABLE` gives the length each byte stands for)."""
    n = seg.doc_count_all()
    try:
        raw = _length_column(seg, field, n)
    except Exception:
        raw = bytes(length_to_byte(seg.doc_field_length(d, field, 0) or 0) for d in range(n))
    return raw.ljust(n, b"\0")  # documents past the column's end have no length, as in whoosh


def _length_column(seg: Any, field: str, n: int) -> bytes:
    # The raw length column (private), one byte per document: read whole, in C.
    col = seg._perdoc._cached_reader(f"_{field}_len", LENGTHS_COLUMN)
    return bytes(col._dbfile.get(col._basepos, min(col._count, n)))
