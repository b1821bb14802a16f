"""The one record of the last daily maintenance, shared by everything that starts it on its own: the
daemon's schedule (`jobs`) and the installed timer's `tmem schedule tick` (`schedule`).

With both in place (a daemon at login and a crontab line or systemd timer), each used to keep a
record of its own and the maintenance ran twice a day. Now whichever comes first claims the day:
under the `schedule` lock it reads `.tmem/maintain.schedule.json`, and when the maintenance is due
writes the claim before letting go, so a second starter, at the same moment or hours later, finds
the day taken. The claim is written before the maintenance runs: one that fails is tried again
the next day, not at every look. A `tmem maintain` run by hand neither claims nor looks: asked
for, it runs.

A record that is missing (a fresh clone, the first start after an install) only notes where the
day stands: the maintenance runs at its next time, not the moment a daemon or timer first looks.
Anything amiss in the file (half-written, another version's shape) counts as missing.
"""

from __future__ import annotations

__all__ = ["RECORD", "claim", "last_run"]

import contextlib
import json
import os
from datetime import datetime, timedelta
from pathlib import Path

from tiered_memory.storage import locks

# In the vault's .tmem/ (this machine's, not in git); the name the tick's own record had, so a
# timer installed before keeps its day.
RECORD = "maintain.schedule.json"
_KEY = "maintenance"
# Only a read, a comparison and a small write happen under the lock: a waiter is never long.
_WAIT = 30.0


def last_run(state_dir: Path) -> datetime | None:
    """When the daily maintenance was last claimed on this machine (None: never, or unreadable)."""
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
        data = json.loads((state_dir / RECORD).read_text(encoding="utf-8"))
        return datetime.fromisoformat(str(data.get(_KEY)))
    return None


def claim(state_dir: Path, maintenance_time: str, now: datetime, *, known: datetime | None = None) -> bool:
    """Whether the caller runs today's maintenance at `now` (local time): `maintenance_time`
    (HH:MM) has come today and nobody has claimed today yet. A yes is recorded before it is given.
    `known` is a run the caller recorded elsewhere before this record existed (an older daemon's
    own schedule file): it stands for a missing record."""
    hour, minute = (int(part) for part in maintenance_time.split(":"))
    past = (now.hour, now.minute) >= (hour, minute)
    with locks.hold(state_dir, "schedule", wait=_WAIT):
        recorded = last_run(state_dir)
        last = recorded or known
        if last is None:
            _write(state_dir, now if past else now - timedelta(days=1))
            return False
        if not past or last.date() >= now.date():
            if recorded is None:
                _write(state_dir, last)
            return False
        _write(state_dir, now)
        return True


def _write(state_dir: Path, when: datetime) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    tmp = state_dir / f"{RECORD}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({_KEY: when.isoformat()}) + "\n", encoding="utf-8")
    os.replace(tmp, state_dir / RECORD)
