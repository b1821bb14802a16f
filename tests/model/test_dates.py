"""A date key tmem moves keeps the form its writer gave it."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

from tiered_memory.model.dates import stamp_like

NOW = datetime(2026, 11, 28, 2, 39, 43, tzinfo=UTC)


def test_a_time_a_person_s_editor_wrote_as_text_moves_in_its_own_form() -> None:
    assert stamp_like("2024-10-03T16:19", NOW) == "2026-11-28T02:39"
    assert stamp_like("2024-10-03 16:19", NOW) == "2026-11-28 02:39"
    assert stamp_like("2024-10-03 16:19:05", NOW) == "2026-11-28 02:39:43"
    assert stamp_like("2024-10-03T16:19", NOW.astimezone(timezone(timedelta(hours=2)))) == "2026-11-28T02:39"
    assert stamp_like(date(2024, 10, 3), NOW) == date(2026, 11, 28)


def test_anything_else_gets_the_datetime() -> None:
    for old in (None, "", "last week", "2026-11-20T08:00:00Z", datetime(2024, 1, 1, tzinfo=UTC), 3):
        assert stamp_like(old, NOW) == NOW
