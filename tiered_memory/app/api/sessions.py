"""Sessions, transcripts and extraction: start, append, end, show, list, recent, ingest, extract."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from tiered_memory.app.api import Op
from tiered_memory.model.records import Record

FORMATS = ("auto", "openai", "jsonl", "claude-code", "markdown")
ROLES = ("user", "assistant", "system", "tool")


@dataclass
class MessageView(Record):
    role: str
    content: str
    timestamp: datetime | None = None


@dataclass
class MemoryOutcome(Record):
    """One memory a session or a transcript gave: added, merged into a note, or superseding one."""

    action: str
    id: str
    title: str
    path: str
    category: str
    confidence: float
    other: str | None = None  # the note merged into, or the first one superseded
    superseded: list[str] = field(default_factory=list)
    reason: str = ""
    message: str = ""


@dataclass
class SessionView(Record):
    id: str
    title: str
    path: str
    status: str
    project: str = ""
    started: datetime | None = None
    ended: datetime | None = None
    messages: int = 0
    summary: str = ""
    source: str = ""
    origin: str | None = None
    transcript: list[MessageView] = field(default_factory=list)  # filled by `show` only
    memories: list[MemoryOutcome] = field(default_factory=list)
    commit: str | None = None
    notice: str = ""

    @property
    def live(self) -> bool:
        return self.status == "active"


@dataclass
class SessionList(Record):
    sessions: list[SessionView] = field(default_factory=list)


# ---- requests -----------------------------------------------------------------------------------


@dataclass
class StartRequest(Record):
    title: str | None = None
    project: str | None = None


@dataclass
class AppendRequest(Record):
    """A message for a session (default: the current live one, started when there is none)."""

    text: str
    role: str = "user"
    session: str | None = None


@dataclass
class EndRequest(Record):
    session: str | None = None  # default: the current live one
    summary: str | None = None  # a summary the agent wrote; tmem adds counts, topics, highlights
    extract: bool = True


@dataclass
class SessionRequest(Record):
    id: str
    grep: str | None = None  # only the messages containing all these words


@dataclass
class SessionListRequest(Record):
    limit: int = 20


@dataclass
class IngestRequest(Record):
    """A whole transcript's text; `name` is the file it came from (for titles and messages)."""

    text: str
    fmt: str = "auto"
    name: str = "input"
    title: str | None = None
    project: str | None = None
    extract: bool = True


@dataclass
class ExtractRequest(Record):
    """Memories from a transcript or summary (`text`) or from a stored session (`session`)."""

    text: str | None = None
    session: str | None = None
    fmt: str = "auto"
    name: str = "input"
    project: str | None = None
    dry_run: bool = False


@dataclass
class CandidateView(Record):
    """What extraction found and what storing it would do (a dry run)."""

    category: str
    confidence: float
    text: str
    cue: str
    would: str  # add, merge or supersede
    other: str | None = None
    reason: str = ""


@dataclass
class ExtractResult(Record):
    extractor: str
    dry_run: bool = False
    candidates: list[CandidateView] = field(default_factory=list)  # a dry run's
    memories: list[MemoryOutcome] = field(default_factory=list)  # what was stored
    commit: str | None = None


SESSION_START = Op("session_start", StartRequest, SessionView, writes=True)
SESSION_APPEND = Op("session_append", AppendRequest, SessionView, writes=True)
SESSION_END = Op("session_end", EndRequest, SessionView, writes=True)
SESSION_SHOW = Op("session_show", SessionRequest, SessionView)
SESSION_LIST = Op("session_list", SessionListRequest, SessionList)
RECENT = Op("recent", SessionListRequest, SessionList)
INGEST = Op("ingest", IngestRequest, SessionView, writes=True)
EXTRACT = Op("extract", ExtractRequest, ExtractResult, writes=True)
