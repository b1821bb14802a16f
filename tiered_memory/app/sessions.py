"""Sessions: what agents and people call to record conversations (issue #7, seed 003).

    start(memory, title=None, project=None) -> Session
    append(memory, text, role="user", session_id=None) -> Session     # starts one if none is live
    append_many(memory, [Message...], session_id=None) -> Session     # several messages, one commit
    end(memory, session_id=None, summary=None, extract=True) -> Session
    show(memory, session_id) -> Session                                # with its messages
    list(memory, limit=20) -> [Session]                                # newest first
    recent(memory, n=5) -> [Session]                                   # `tmem recall --recent`
    current(memory) -> Session | None                                  # the live one
    ingest(memory, text, fmt=None, name=..., extract=True) -> Session  # a whole transcript

The work is done in session_store.py (operations) and session_notes.py (the file format); this
module only names the API, which is why `list` can shadow the builtin here and nowhere else.
"""

from __future__ import annotations

from tiered_memory.app.session_store import append, append_many, current, end, ingest, recent, show, start
from tiered_memory.app.session_store import list_sessions as list  # noqa: A004 - the API's name
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
