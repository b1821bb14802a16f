"""Operations that move notes through the tiers and keep the vault tidy: promote, archive,
restore-from-archive, the daily maintenance, and the short-term key/value store (`st`)."""

from __future__ import annotations

__all__ = [
    "ARCHIVE",
    "ArchiveRequest",
    "ConfidenceChange",
    "MAINTAIN",
    "MaintainRequest",
    "MaintainResult",
    "Merged",
    "MoveDone",
    "Moved",
    "PROMOTE",
    "PromoteRequest",
    "RESTORE_FROM_ARCHIVE",
    "Recalled",
    "ST_CLEAR",
    "ST_EXPIRE",
    "ST_GET",
    "ST_LIST",
    "ST_SET",
    "StClearRequest",
    "StCleared",
    "StEntry",
    "StExpired",
    "StKeyRequest",
    "StList",
    "StSetRequest",
    "unchanged_recalls",
]

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tiered_memory.app.api import Empty, Op
from tiered_memory.app.api.notes import NoteRequest, Skipped
from tiered_memory.model.records import Record


@dataclass
class Moved(Record):
    """One file moved (or, with `dst` None, deleted) and why."""

    id: str
    src: str
    dst: str | None
    kind: str  # promote, archive, restore, temp-expired, or the flow-table rule that moved it
    reason: str


@dataclass
class MoveDone(Moved):
    """A move a person asked for: one commit."""

    commit: str | None = None


# ---- moves a person asks for -------------------------------------------------------------------


@dataclass
class PromoteRequest(Record):
    ref: str
    to: str | None = None  # mid or long; default the next tier up


@dataclass
class ArchiveRequest(Record):
    ref: str
    reason: str | None = None
    superseded_by: str | None = None  # a note's id or path: marks this one superseded by it


# ---- maintenance -------------------------------------------------------------------------------


@dataclass
class MaintainRequest(Record):
    dry_run: bool = False
    now: datetime | None = None  # pretend it is this time (tests); default the clock


@dataclass
class Merged(Record):
    """Two near-duplicate long-term notes: `dropped` is archived as superseded by `kept`."""

    kept: str
    kept_id: str
    dropped: str
    dropped_id: str
    similarity: float
    method: str  # "embeddings" or "token overlap"


@dataclass
class ConfidenceChange(Record):
    path: str
    id: str
    before: float
    after: float
    accesses: int = 0  # recalls folded in (0 for a decay)

    @property
    def changed(self) -> bool:
        """Whether the confidence moved (a recalled note already at 1 stays at 1)."""
        return self.after != self.before


def unchanged_recalls(boosts: list[ConfidenceChange]) -> str | None:
    """One line for the recalls that changed no confidence (counted, not listed), else None."""
    quiet = [c for c in boosts if not c.changed]
    if not quiet:
        return None
    times = sum(c.accesses for c in quiet)
    return f"{len(quiet)} note(s) recalled {times} time(s), confidence unchanged: counted"


@dataclass
class Recalled(Record):
    id: str
    title: str
    recalls: int  # since the last run
    total: int


@dataclass
class MaintainResult(Record):
    date: str  # YYYY-MM-DD of `now`
    now: datetime
    dry_run: bool = False
    changed: bool = False
    moves: list[Moved] = field(default_factory=list)
    merges: list[Merged] = field(default_factory=list)
    decays: list[ConfidenceChange] = field(default_factory=list)
    boosts: list[ConfidenceChange] = field(default_factory=list)
    expired_keys: list[str] = field(default_factory=list)
    temp_archived: list[Moved] = field(default_factory=list)
    # Side-file entries of notes the index leaves out (templates), dropped from `.tmem-stats.json`.
    stale_stats: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)  # left alone: edited since planned, say
    tier_counts: dict[str, int] = field(default_factory=dict)
    most_recalled: list[Recalled] = field(default_factory=list)
    report: str | None = None  # the daily report file (planned, on a dry run)
    commit: str | None = None


# ---- short-term keys ---------------------------------------------------------------------------


@dataclass
class StSetRequest(Record):
    key: str
    value: Any
    ttl: str | None = None  # 90s, 30m, 2h, 1d, 1w or never; default lifecycle.short_term_ttl_hours


@dataclass
class StEntry(Record):
    key: str
    value: Any
    set_at: datetime | None = None
    expires_at: datetime | None = None


@dataclass
class StKeyRequest(Record):
    key: str


@dataclass
class StClearRequest(Record):
    key: str | None = None  # None clears every key


@dataclass
class StList(Record):
    entries: list[StEntry] = field(default_factory=list)


@dataclass
class StCleared(Record):
    cleared: int


@dataclass
class StExpired(Record):
    expired: int


PROMOTE = Op("promote", PromoteRequest, MoveDone, runs="tiered_memory.app.lifecycle:promote", writes=True)
ARCHIVE = Op("archive", ArchiveRequest, MoveDone, runs="tiered_memory.app.lifecycle:archive", writes=True)
RESTORE_FROM_ARCHIVE = Op(
    "restore_from_archive",
    NoteRequest,
    MoveDone,
    runs="tiered_memory.app.lifecycle:restore_from_archive",
    writes=True,
)
MAINTAIN = Op(
    "maintain", MaintainRequest, MaintainResult, runs="tiered_memory.app.maintain:maintain", writes=True
)
ST_SET = Op("st_set", StSetRequest, StEntry, runs="tiered_memory.app.shortterm:st_set", writes=True)
ST_GET = Op("st_get", StKeyRequest, StEntry, runs="tiered_memory.app.shortterm:st_get")
ST_LIST = Op("st_list", Empty, StList, runs="tiered_memory.app.shortterm:st_list")
ST_CLEAR = Op("st_clear", StClearRequest, StCleared, runs="tiered_memory.app.shortterm:st_clear", writes=True)
ST_EXPIRE = Op("st_expire", Empty, StExpired, runs="tiered_memory.app.shortterm:st_expire", writes=True)
