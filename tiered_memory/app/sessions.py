"""Session operations, as every door runs them: start, append, end, show, list, recent, ingest.

Each takes a request from `app.api.sessions` and returns a `SessionView` (or a list of them). The
work is done in `session_store.py`; the file format is `model/session_format.py`. The domain
functions are named here too, for operations built from them:

    start(memory, title=None, project=None) -> Session
    append(memory, text, role="user", session_id=None) -> Session     # starts one if none is live
    append_many(memory, [Message...], session_id=None) -> Session     # several messages, one commit
    end(memory, session_id=None, summary=None, extract=True) -> Session
    show(memory, session_id) -> Session                                # with its messages
    list(memory, limit=20) -> [Session]                                # newest first
    recent(memory, n=5) -> [Session]                                   # `tmem recall --recent`
    current(memory) -> Session | None                                  # the live one
    ingest(memory, text, fmt=None, name=..., extract=True) -> Session  # a whole transcript
"""

from __future__ import annotations

from tiered_memory.app import export
from tiered_memory.app.api.session_list import MessageView, SessionList, SessionListRequest, SessionView
from tiered_memory.app.api.sessions import (
    AppendRequest,
    EndRequest,
    IngestRequest,
    SessionRequest,
    StartRequest,
)
from tiered_memory.app.extraction import outcome_view
from tiered_memory.app.memory import Memory
from tiered_memory.app.session_store import append, append_many, current, end, ingest, recent, show, start
from tiered_memory.app.session_store import list_sessions as list  # noqa: A004 - the API's name
from tiered_memory.errors import BadInput
from tiered_memory.model.session_format import Session
from tiered_memory.model.transcripts import Message

__all__ = [
    "Message",
    "Session",
    "append",
    "append_many",
    "current",
    "end",
    "ingest",
    "list",
    "recent",
    "show",
    "start",
]


def session_view(session: Session, *, messages: bool = False) -> SessionView:
    return SessionView(
        id=session.id,
        title=session.title,
        path=session.path,
        status=session.status,
        project=session.project,
        started=session.started,
        ended=session.ended,
        messages=session.message_count,
        summary=session.summary,
        source=session.source,
        origin=session.origin,
        transcript=[MessageView(m.role, m.content, m.timestamp) for m in session.messages]
        if messages
        else [],
        memories=[outcome_view(o) for o in session.outcomes],
        commit=session.sha,
        notice=session.notice,
    )


# ---- the operations -------------------------------------------------------------------------------


def start_session(memory: Memory, request: StartRequest) -> SessionView:
    return session_view(start(memory, request.title or None, request.project))


def append_message(memory: Memory, request: AppendRequest) -> SessionView:
    return session_view(append(memory, request.text, request.role, request.session))


def end_session(memory: Memory, request: EndRequest) -> SessionView:
    session = end(memory, request.session, request.summary, extract=request.extract)
    export.on_session_end(memory, session.path)  # when `export.on_session_end` names a file
    return session_view(session)


def show_session(memory: Memory, request: SessionRequest) -> SessionView:
    session = show(memory, request.id)
    if request.grep:
        words = request.grep.lower().split()
        session.messages = [m for m in session.messages if all(w in m.content.lower() for w in words)]
    return session_view(session, messages=True)


def session_list(memory: Memory, request: SessionListRequest) -> SessionList:
    return SessionList([session_view(s) for s in list(memory, request.limit)])


def recent_sessions(memory: Memory, request: SessionListRequest) -> SessionList:
    """The latest sessions with their summaries: "what did we talk about?"."""
    if request.limit < 1:
        raise BadInput("--recent must be at least 1")
    return SessionList([session_view(s) for s in recent(memory, request.limit)])


def ingest_transcript(memory: Memory, request: IngestRequest) -> SessionView:
    session = ingest(
        memory,
        request.text if request.lines is None else request.lines,
        fmt=request.fmt,
        name=request.name,
        title=request.title,
        project=request.project,
        extract=request.extract,
    )
    export.on_session_end(memory, session.path)  # when `export.on_session_end` names a file
    return session_view(session)
