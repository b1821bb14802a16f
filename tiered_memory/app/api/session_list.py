"""What a session looks like to every door, and listing them: `tmem session list`, and `tmem recall
--recent`, which a search command offers and so must load without the rest of the sessions' records."""

from __future__ import annotations

__all__ = [
    "MemoryOutcome",
    "MessageView",
    "RECENT",
    "SESSION_LIST",
    "SessionList",
    "SessionListRequest",
    "SessionView",
]

from dataclasses import dataclass, field
from datetime import datetime

from tiered_memory.app.api import Op
from tiered_memory.model.records import Record


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


@dataclass
class SessionListRequest(Record):
    limit: int = 20


SESSION_LIST = Op(
    "session_list", SessionListRequest, SessionList, runs="tiered_memory.app.sessions:session_list"
)
RECENT = Op("recent", SessionListRequest, SessionList, runs="tiered_memory.app.sessions:recent_sessions")
