"""Reading several notes in one call (MCP `read_many`): by ids or paths, or by a path glob."""

from __future__ import annotations

__all__ = [
    "MAX_CHARS",
    "MAX_NOTES",
    "READ_MANY",
    "ReadManyRequest",
    "ReadManyResult",
    "ReadMiss",
    "TOTAL_CHARS",
]

from dataclasses import dataclass, field

from tiered_memory.app.api import Op
from tiered_memory.app.api.notes import NoteText
from tiered_memory.model.records import Record

MAX_NOTES = 50  # most notes one call returns
MAX_CHARS = 100_000  # most characters of one note's body it returns
TOTAL_CHARS = 200_000  # most characters of bodies, all notes together


@dataclass
class ReadManyRequest(Record):
    """`ids`: note ids or vault paths, read in that order; `glob`: vault paths matching it (relative
    to the vault or to memory/; `*` stays within a folder, `**` crosses folders), in path order.
    At most `limit` notes, each body cut at `max_chars`."""

    ids: list[str] = field(default_factory=list)
    glob: str | None = None
    limit: int = 10
    max_chars: int = 10_000


@dataclass
class ReadMiss(Record):
    """A note asked for that could not be read, and why (one line)."""

    ref: str
    error: str


@dataclass
class ReadManyResult(Record):
    notes: list[NoteText] = field(default_factory=list)
    missing: list[ReadMiss] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)  # paths whose body was cut at max_chars
    matched: int = 0  # notes the ids and the glob named
    omitted: int = 0  # of those, left out by the limit or the total size


READ_MANY = Op("read_many", ReadManyRequest, ReadManyResult, runs="tiered_memory.app.reading:read_many")
