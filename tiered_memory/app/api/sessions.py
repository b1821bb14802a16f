"""Sessions, transcripts and extraction: start, append, end, show, ingest, extract (listing them:
`app.api.session_list`)."""

from __future__ import annotations

__all__ = [
    "AppendRequest",
    "CandidateView",
    "EXTRACT",
    "EndRequest",
    "ExtractRequest",
    "ExtractResult",
    "FORMATS",
    "INGEST",
    "IngestRequest",
    "MemoryOutcome",
    "ROLES",
    "SESSION_APPEND",
    "SESSION_END",
    "SESSION_SHOW",
    "SESSION_START",
    "SessionRequest",
    "StartRequest",
]

from collections.abc import Iterable
from dataclasses import dataclass, field

from tiered_memory.app.api import Op
from tiered_memory.app.api.session_list import MemoryOutcome, SessionView
from tiered_memory.model.records import Record

FORMATS = ("auto", "openai", "jsonl", "claude-code", "codex", "opencode", "markdown")
ROLES = ("user", "assistant", "system", "tool")


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


# A transcript's JSON Lines handed over a line at a time by the door that reads them (an open
# file's lines, parsed as they come): the operation then runs in the door's process.
LINES = field(default=None, metadata={"wire": False})


@dataclass
class IngestRequest(Record):
    """A whole transcript's text (or its `lines`); `name` is the file it came from (for titles
    and messages)."""

    text: str
    fmt: str = "auto"
    name: str = "input"
    title: str | None = None
    project: str | None = None
    extract: bool = True
    lines: Iterable[str] | None = LINES


@dataclass
class ExtractRequest(Record):
    """Memories from a transcript or summary (`text`) or from a stored session (`session`)."""

    text: str | None = None
    session: str | None = None
    fmt: str = "auto"
    name: str = "input"
    project: str | None = None
    dry_run: bool = False
    lines: Iterable[str] | None = LINES


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


SESSION_START = Op(
    "session_start", StartRequest, SessionView, runs="tiered_memory.app.sessions:start_session", writes=True
)
SESSION_APPEND = Op(
    "session_append",
    AppendRequest,
    SessionView,
    runs="tiered_memory.app.sessions:append_message",
    writes=True,
)
SESSION_END = Op(
    "session_end", EndRequest, SessionView, runs="tiered_memory.app.sessions:end_session", writes=True
)
SESSION_SHOW = Op("session_show", SessionRequest, SessionView, runs="tiered_memory.app.sessions:show_session")
# A transcript's size is checked once parsed, by the function: only its messages make a note (tool
# output and the like are dropped).
INGEST = Op(
    "ingest",
    IngestRequest,
    SessionView,
    runs="tiered_memory.app.sessions:ingest_transcript",
    writes=True,
    unbounded=("text",),
    repeatable=True,  # the same transcript again: "already ingested", nothing changed
)
EXTRACT = Op(
    "extract",
    ExtractRequest,
    ExtractResult,
    runs="tiered_memory.app.extraction:extract_memories",
    writes=True,
    unbounded=("text",),
)
