"""Dates as notes hold them: frontmatter gives datetimes, dates, ISO strings or epoch numbers, and
every one becomes an aware datetime in UTC. Standard library only (the CLI parses --since with it)."""

from __future__ import annotations

__all__ = ["from_epoch", "now_utc", "stamp_like", "to_datetime"]

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


# The ways a person's editor writes a time as text (Obsidian's date properties and its plugins):
# YAML reads them as strings, having no seconds or a format of its own.
_TEXT_FORMATS = ("%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d")


def stamp_like(old: Any, now: datetime) -> Any:
    """`now` as a value for a date key that holds `old`: written the way `old` is (a person's
    `updated: 2024-10-03T16:19` moves to `2026-11-28T02:39`, a date stays a date), so their
    plugins and Dataview queries still read it; anything else gets the datetime. A time without a
    zone is read as UTC (`to_datetime`), so it is written in UTC."""
    now = now.astimezone(UTC)
    if isinstance(old, str):
        for fmt in _TEXT_FORMATS:
            try:
                datetime.strptime(old.strip(), fmt)
            except ValueError:
                continue
            return now.strftime(fmt)
    if isinstance(old, date) and not isinstance(old, datetime):
        return now.date()
    return now


def now_utc() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def from_epoch(value: float | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(value, UTC).replace(microsecond=0)
    except (OverflowError, ValueError, OSError):  # a hand-typed epoch far outside years 1..9999
        return None
