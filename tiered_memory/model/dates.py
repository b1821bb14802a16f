"""Dates as notes hold them: frontmatter gives datetimes, dates, ISO strings or epoch numbers, and
every one becomes an aware datetime in UTC. Standard library only (the CLI parses --since with it)."""

from __future__ import annotations

__all__ = ["from_epoch", "now_utc", "to_datetime"]

from datetime import UTC, date, datetime
from typing import Any


def to_datetime(value: Any) -> datetime | None:
    """Frontmatter dates come as datetime, date or ISO strings; all become aware datetimes."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return from_epoch(float(value))
    if isinstance(value, str) and value.strip():
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def now_utc() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def from_epoch(value: float | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(value, UTC).replace(microsecond=0)
    except (OverflowError, ValueError, OSError):  # a hand-typed epoch far outside years 1..9999
        return None
