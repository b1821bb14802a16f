"""The side file of hand-written notes' bookkeeping merges per note id: counts add, times take the later."""

from __future__ import annotations

import json

from tiered_memory.model import note_stats
from tiered_memory.model.merge3 import merge_file, merge_plain


def entry(count: int, at: str, confidence: float | None = None) -> dict[str, object]:
    out: dict[str, object] = {"access_count": count, "last_accessed": at}
    if confidence is not None:
        out["confidence"] = confidence
    return out


def test_counts_add_and_times_take_the_later() -> None:
    base = note_stats.dumps({"a": entry(2, "2026-11-01T00:00:00+00:00", 0.9)})
    ours = note_stats.dumps({"a": entry(3, "2026-11-02T00:00:00+00:00", 0.95), "b": entry(1, "2026-11-02")})
    theirs = note_stats.dumps({"a": entry(5, "2026-11-03T00:00:00+00:00", 0.8)}, stamp="x1")
    merged = json.loads(note_stats.merge(base, ours, theirs))
    assert merged["a"] == {"access_count": 6, "last_accessed": "2026-11-03T00:00:00+00:00", "confidence": 0.8}
    assert merged["b"]["access_count"] == 1


def test_two_machines_writing_the_same_counts_still_add_up() -> None:
    one = note_stats.dumps({"a": entry(1, "2026-11-02T00:00:00+00:00")}, stamp="aaaa")
    two = note_stats.dumps({"a": entry(1, "2026-11-02T00:00:00+00:00")}, stamp="bbbb")
    assert one != two  # so git sees two changes and runs the driver
    assert json.loads(merge_file(None, one, two, ".tmem-stats.json").text)["a"]["access_count"] == 2
    plain = merge_plain(None, one.encode(), two.encode(), ".tmem-stats.json")
    assert plain is not None and json.loads(plain)["a"]["access_count"] == 2
    assert note_stats.loads(one) == {"a": entry(1, "2026-11-02T00:00:00+00:00")}
