"""One line of a listing (`NoteSummary`) from a note's catalog row: `list` and `entity show` list
notes the same way, with the same date format."""

from __future__ import annotations

__all__ = ["summary", "iso"]

from tiered_memory.app.api.notes import NoteSummary
from tiered_memory.index.catalog import NoteRow
from tiered_memory.model import dates


def summary(row: NoteRow) -> NoteSummary:
    return NoteSummary(
        id=row.id,
        title=row.title,
        path=row.path,
        tier=row.tier,
        category=row.category,
        status=row.status,
        tags=row.tags,
        project=row.project,
        entities=row.entities,
        importance=row.importance,
        confidence=row.confidence,
        updated=iso(row.updated),
    )


def iso(ts: float | None) -> str:
    """An epoch as ISO 8601 in UTC to the second (`2026-03-01T09:30:00Z`); "" for none, or for one
    no date can hold (a hand-typed epoch far outside years 1..9999)."""
    when = dates.from_epoch(ts) if ts else None
    return when.isoformat().replace("+00:00", "Z") if when is not None else ""
