"""Moves, maintenance runs and short-term keys, as text and as JSON."""

from __future__ import annotations

__all__ = [
    "maintain_text",
    "moved_text",
    "st_cleared_text",
    "st_expired_text",
    "st_list_json",
    "st_list_text",
    "st_set_text",
    "st_value_json",
    "st_value_text",
]

import json
from typing import Any

from tiered_memory.app.api.lifecycle import (
    MaintainResult,
    MoveDone,
    StCleared,
    StEntry,
    StExpired,
    StList,
    unchanged_recalls,
)


def moved_text(done: MoveDone, verb: str) -> str:
    return f"{verb} {done.id}: {done.src} -> {done.dst}"


def maintain_text(report: MaintainResult) -> str:
    if not report.changed:
        return "nothing to do"
    head = "plan (dry run, nothing changed):" if report.dry_run else f"maintenance done ({report.report})"
    counts = ", ".join(f"{tier} {n}" for tier, n in report.tier_counts.items())
    lines = [head, f"notes per tier: {counts}"]

    def section(title: str, items: list[str]) -> None:
        if items:
            lines.extend([f"{title} ({len(items)}):", *(f"  {item}" for item in items)])

    section("moves", [f"{m.src} -> {m.dst or '(deleted)'}: {m.reason} [{m.kind}]" for m in report.moves])
    section(
        "merges",
        [
            f"kept {m.kept_id}; {m.dropped_id} archived as superseded by it ({m.similarity:.2f}, {m.method})"
            for m in report.merges
        ],
    )
    # Only what changed: a confidence that stayed the same is no line, its recalls one in all.
    section(
        "confidence decayed",
        [f"{c.id}: {c.before:g} -> {c.after:g}" for c in report.decays if c.changed],
    )
    section(
        "recalled",
        [
            f"{c.id}: {c.accesses} recall(s), confidence {c.before:g} -> {c.after:g}"
            for c in report.boosts
            if c.changed
        ],
    )
    if (quiet := unchanged_recalls(report.boosts)) is not None:
        lines.append(quiet)
    section("expired short-term keys", report.expired_keys)
    section("temp files archived", [f"{m.src} -> {m.dst}: {m.reason}" for m in report.temp_archived])
    section("side-file entries dropped (notes the index leaves out)", report.stale_stats)
    section("skipped", [f"{s.path}: {s.why}" for s in report.skipped])
    return "\n".join(lines)


# ---- short-term keys ---------------------------------------------------------------------------


def _entry_dict(entry: StEntry) -> dict[str, Any]:
    data = entry.to_dict()
    del data["key"]
    return data


def st_set_text(entry: StEntry) -> str:
    until = f" (expires {entry.expires_at:%Y-%m-%d %H:%M %Z})" if entry.expires_at else " (no expiry)"
    return f"set {entry.key}{until}"


def st_value_json(entry: StEntry) -> dict[str, Any]:
    """`st get`: the key and its value (when it was set and expires are `st list`'s)."""
    return {"key": entry.key, "value": entry.value}


def st_value_text(entry: StEntry) -> str:
    return entry.value if isinstance(entry.value, str) else json.dumps(entry.value, ensure_ascii=False)


def st_list_json(listing: StList) -> dict[str, Any]:
    """Key -> {value, set_at, expires_at}: the shape of context_stack.json itself."""
    return {e.key: _entry_dict(e) for e in listing.entries}


def st_list_text(listing: StList) -> str:
    if not listing.entries:
        return "no short-term keys"
    return "\n".join(
        f"{e.key} = {e.value}" + (f"  (expires {e.expires_at:%Y-%m-%d %H:%M})" if e.expires_at else "")
        for e in listing.entries
    )


def st_cleared_text(done: StCleared) -> str:
    return f"cleared {done.cleared} key(s)"


def st_expired_text(done: StExpired) -> str:
    return f"expired {done.expired} item(s)"
