"""Moving memories in and out of a vault: `export` (JSON or JSON Lines another program can read)
and `import` (a tmem export, or what another memory tool wrote)."""

from __future__ import annotations

__all__ = [
    "EXPORT",
    "EXPORT_FORMATS",
    "ExportRequest",
    "ExportResult",
    "IMPORT",
    "IMPORT_FORMATS",
    "ImportRequest",
    "ImportResult",
    "ImportedItem",
    "Writer",
]

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from tiered_memory.app.api import Op
from tiered_memory.model.records import Record

EXPORT_FORMATS = ("json", "jsonl")


class Writer(Protocol):
    """Where an export's text goes a piece at a time (an open text file, the door's stdout)."""

    def write(self, text: str, /) -> Any: ...


IMPORT_FORMATS = (
    "tmem",
    "claude",
    "chatgpt",
    "mcp-memory",
    "basic-memory",
    "claude-code",
    "mem0",
    "claude-mem",
)


@dataclass
class ExportRequest(Record):
    """Notes and sessions to a file. An existing export at `output` is updated entry by entry
    (same kind and id: replaced in place; new ones appended), so repeated exports accumulate."""

    output: str  # a file path; "-" returns the text in the result instead
    format: str = "json"  # json (one document) or jsonl (one entry a line)
    since: datetime | None = None  # only notes and sessions updated at or after this time
    since_last: bool = False  # `--since last`: the time the export at `output` was written
    tiers: list[str] = field(default_factory=list)
    projects: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    include_sensitive: bool = False
    history: bool = False  # each note's commits (hash, time, message)
    # With `output` "-": the door's stdout, written an entry at a time (the text is not kept in
    # the result). A stream cannot travel to another process: the export runs in the door's.
    stream: Writer | None = field(default=None, metadata={"wire": False})


@dataclass
class ExportResult(Record):
    output: str
    format: str
    notes: int = 0
    sessions: int = 0
    messages: int = 0
    replaced: int = 0  # entries of an earlier export at `output` updated in place
    appended: int = 0
    kept: int = 0  # entries of the earlier export this run did not touch
    left_out: int = 0  # sensitive or encrypted notes not exported
    since: datetime | None = None
    text: str = ""  # the export itself when `output` is "-"


@dataclass
class ImportRequest(Record):
    format: str  # one of IMPORT_FORMATS, or "" to tell it from the file (a tmem export says so)
    path: str
    project: str | None = None  # file everything under this project
    dry_run: bool = False


@dataclass
class ImportedItem(Record):
    source: str  # the item's id in the source tool, as `format:id`
    action: str  # added, merged, superseded, updated or skipped
    title: str = ""
    path: str = ""
    why: str = ""


@dataclass
class ImportResult(Record):
    format: str
    path: str
    added: int = 0
    merged: int = 0
    skipped: int = 0
    updated: int = 0
    sessions: int = 0
    items: list[ImportedItem] = field(default_factory=list)
    commit: str | None = None
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)


# Both read or write the caller's own files: they run in the calling process.
EXPORT = Op("export", ExportRequest, ExportResult, runs="tiered_memory.app.export:export", where="local")
IMPORT = Op(
    "import",
    ImportRequest,
    ImportResult,
    runs="tiered_memory.app.importers:import_file",
    writes=True,
    where="local",
)
