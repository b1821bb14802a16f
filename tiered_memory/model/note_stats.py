"""Bookkeeping of hand-written notes kept beside them (`.tmem-stats.json`), never in them. Pure.

tmem's own notes carry `access_count`, `last_accessed`, `confidence` and `decayed_at` in their
frontmatter. A person's notes do not: tmem must not rewrite a file nobody asked it to change, so
these fields live in one JSON object keyed by note id, tracked by git so they travel between
machines. Two machines' versions merge entry by entry: recall counts add up (base + both deltas),
timestamps take the later one, and confidence follows the side whose latest event is newer.
"""

from __future__ import annotations

__all__ = ["FIELDS", "Stats", "confidence", "count", "dumps", "loads", "merge", "time"]

import json
from datetime import datetime
from typing import Any

from tiered_memory.model.dates import to_datetime

FIELDS = ("access_count", "last_accessed", "confidence", "decayed_at")
_TIMES = ("last_accessed", "decayed_at")

Stats = dict[str, dict[str, Any]]


def loads(text: str | None) -> Stats:
    """The stats in a file's text; anything unreadable counts as none (it is derived bookkeeping)."""
    if not text or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): dict(v) for k, v in data.items() if isinstance(v, dict)}


def dumps(stats: Stats, stamp: str = "") -> str:
    """Sorted keys, one entry per few lines: git diffs and merges stay small. `stamp` names the
    write: two machines that recorded the same recalls in the same second would otherwise write
    identical files, which git takes as one change, and one machine's recalls would be lost."""
    clean = {k: {f: _plain(v[f]) for f in FIELDS if v.get(f) is not None} for k, v in stats.items()}
    data: dict[str, Any] = {"_write": stamp} if stamp else {}
    data.update((k, v) for k, v in sorted(clean.items()) if v)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def count(entry: dict[str, Any] | None) -> int:
    try:
        return max(0, int((entry or {}).get("access_count") or 0))
    except (TypeError, ValueError, OverflowError):
        return 0


def confidence(entry: dict[str, Any] | None, default: float) -> float:
    try:
        value = float((entry or {}).get("confidence", default))
    except (TypeError, ValueError):
        return default
    return default if value != value else min(1.0, max(0.0, value))


def time(entry: dict[str, Any] | None, key: str) -> datetime | None:
    return to_datetime((entry or {}).get(key))


def merge(base: str | None, ours: str, theirs: str) -> str:
    """Three-way merge of two machines' stats files, entry by entry (never a conflict)."""
    b, o, t = loads(base), loads(ours), loads(theirs)
    out: Stats = {}
    for key in list(o) + [k for k in t if k not in o]:
        bo, oo, to = b.get(key, {}), o.get(key), t.get(key)
        if oo is None or to is None:
            # Present on one side only: kept (a note's stats are only dropped when the note goes).
            out[key] = dict(oo or to or {})
            continue
        entry: dict[str, Any] = {}
        nb, no, nt = count(bo), count(oo), count(to)
        total = max(0, nb + (no - nb) + (nt - nb))
        if total:
            entry["access_count"] = total
        for name in _TIMES:
            stamps = [(time(side, name), side.get(name)) for side in (oo, to)]
            known = [s for s in stamps if s[0] is not None]
            if known:
                entry[name] = max(known, key=lambda s: s[0])[1]  # type: ignore[arg-type,return-value]
        if "confidence" in oo or "confidence" in to:
            entry["confidence"] = _confidence(oo, to)
        out[key] = entry
    return dumps(out)


def _latest(entry: dict[str, Any]) -> datetime | None:
    found = [d for d in (time(entry, n) for n in _TIMES) if d is not None]
    return max(found) if found else None


def _confidence(ours: dict[str, Any], theirs: dict[str, Any]) -> Any:
    if "confidence" not in ours:
        return theirs["confidence"]
    if "confidence" not in theirs:
        return ours["confidence"]
    lo, lt = _latest(ours), _latest(theirs)
    if lo is not None and lt is not None and lt > lo:
        return theirs["confidence"]
    return ours["confidence"]
