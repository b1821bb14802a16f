"""Every operation tmem offers and the function that carries it out: read this table to find
where any command's logic lives. The CLI, the daemon's socket and the MCP server all run
operations through it (via `tiered_memory.backend`), so each means the same thing everywhere.

The table names modules rather than importing them: a process imports only the records
(`app.api.<module>`) and the implementation of the operations it runs, so a keyword search does
not load sync, sessions, importers, encryption and the rest (tests/test_operations.py checks
every entry resolves to an operation of that name).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from tiered_memory.app import input_size
from tiered_memory.app.api import Op
from tiered_memory.errors import BadInput

Implementation = Callable[[Any, Any], Any]  # (Memory, request) -> result
# (name, its Op as "module.CONSTANT" of tiered_memory.app.api, module of tiered_memory.app, function)
Row = tuple[str, str, str, str]

_TABLE: list[Row] = [
    ("remember", "notes.REMEMBER", "notes", "remember"),
    ("show", "notes.SHOW", "notes", "show"),
    ("list", "notes.LIST", "notes", "list_notes"),
    ("forget", "notes.FORGET", "notes", "forget"),
    ("save_edit", "notes.SAVE_EDIT", "notes", "save_edit"),
    ("search", "recall.SEARCH", "recall", "search"),
    ("reindex", "notes.REINDEX", "notes", "reindex"),
    ("status", "notes.STATUS", "status", "status"),
    ("promote", "lifecycle.PROMOTE", "lifecycle", "promote"),
    ("archive", "lifecycle.ARCHIVE", "lifecycle", "archive"),
    ("restore_from_archive", "lifecycle.RESTORE_FROM_ARCHIVE", "lifecycle", "restore_from_archive"),
    ("maintain", "lifecycle.MAINTAIN", "maintain", "maintain"),
    ("st_set", "lifecycle.ST_SET", "shortterm", "st_set"),
    ("st_get", "lifecycle.ST_GET", "shortterm", "st_get"),
    ("st_list", "lifecycle.ST_LIST", "shortterm", "st_list"),
    ("st_clear", "lifecycle.ST_CLEAR", "shortterm", "st_clear"),
    ("st_expire", "lifecycle.ST_EXPIRE", "shortterm", "st_expire"),
    ("profile_show", "longterm.PROFILE_SHOW", "longterm", "profile_show"),
    ("profile_set", "longterm.PROFILE_SET", "longterm", "profile_set"),
    ("knowledge_add", "longterm.KNOWLEDGE_ADD", "longterm", "knowledge_add"),
    ("decide", "longterm.DECIDE", "longterm", "decide"),
    ("lesson_add", "longterm.LESSON_ADD", "longterm", "lesson_add"),
    ("pattern_add", "longterm.PATTERN_ADD", "longterm", "pattern_add"),
    ("project_new", "projects.PROJECT_NEW", "projects", "new"),
    ("project_show", "projects.PROJECT_SHOW", "projects", "show"),
    ("project_list", "projects.PROJECT_LIST", "projects", "list_projects"),
    ("project_update", "projects.PROJECT_UPDATE", "projects", "update"),
    ("project_complete", "projects.PROJECT_COMPLETE", "projects", "complete"),
    ("project_cancel", "projects.PROJECT_CANCEL", "projects", "cancel"),
    ("task_add", "projects.TASK_ADD", "projects", "add_task"),
    ("task_done", "projects.TASK_DONE", "projects", "done_task"),
    ("task_list", "projects.TASK_LIST", "projects", "list_tasks"),
    ("read", "notes.READ", "notes", "read"),
    ("read_many", "reading.READ_MANY", "reading", "read_many"),
    ("update", "notes.UPDATE", "notes", "update"),
    ("related", "notes.RELATED", "notes", "related"),
    ("session_start", "sessions.SESSION_START", "sessions", "start_session"),
    ("session_append", "sessions.SESSION_APPEND", "sessions", "append_message"),
    ("session_end", "sessions.SESSION_END", "sessions", "end_session"),
    ("session_show", "sessions.SESSION_SHOW", "sessions", "show_session"),
    ("session_list", "session_list.SESSION_LIST", "sessions", "session_list"),
    ("recent", "session_list.RECENT", "sessions", "recent_sessions"),
    ("ingest", "sessions.INGEST", "sessions", "ingest_transcript"),
    ("extract", "sessions.EXTRACT", "extraction", "extract_memories"),
    ("context", "agents.CONTEXT", "context", "context"),
    ("entity_add", "agents.ENTITY_ADD", "entities", "entity_add"),
    ("entity_update", "agents.ENTITY_UPDATE", "entities", "entity_update"),
    ("entity_show", "agents.ENTITY_SHOW", "entities", "entity_show"),
    ("entity_list", "agents.ENTITY_LIST", "entities", "entity_list"),
    ("forget_entity", "agents.FORGET_ENTITY", "entities", "entity_forget"),
    ("scan", "agents.SCAN", "scan", "scan"),
    ("sync", "sync.SYNC", "syncing", "sync"),
    ("resolve", "sync.RESOLVE", "conflicts", "resolve"),
    ("log", "sync.LOG", "syncing", "log"),
    ("restore", "sync.RESTORE", "syncing", "restore"),
    ("backup", "sync.BACKUP", "syncing", "backup"),
    ("post_merge", "sync.POST_MERGE", "syncing", "post_merge"),
    ("links", "links.LINKS", "links", "links"),
    ("export", "portability.EXPORT", "export", "export"),
    ("import", "portability.IMPORT", "importers", "import_file"),
    ("unlock", "crypto.UNLOCK", "encryption", "unlock"),
    ("lock", "crypto.LOCK", "encryption", "lock"),
    ("encrypt", "crypto.ENCRYPT", "encryption", "encrypt"),
    ("decrypt", "crypto.DECRYPT", "encryption", "decrypt"),
    ("rekey", "crypto.REKEY", "encryption", "rekey"),
    ("textconv", "crypto.TEXTCONV", "encryption", "textconv"),
    ("save_text", "crypto.SAVE_TEXT", "encryption", "save_text"),
]

# Operations with no vault to open yet: each function takes only its request.
_VAULTLESS: list[Row] = [
    ("init", "setup.INIT", "setup", "init"),
    ("config", "setup.CONFIG", "setup", "config"),
    ("config_approve", "setup.CONFIG_APPROVE", "setup", "approve"),
    ("restore_backup", "sync.RESTORE_BACKUP", "syncing", "restore_backup"),
]

OPERATIONS: dict[str, Row] = {row[0]: row for row in _TABLE}
VAULTLESS: dict[str, Row] = {row[0]: row for row in _VAULTLESS}


def _op(where: str) -> Op[Any, Any]:
    module, constant = where.split(".")
    found: Op[Any, Any] = getattr(importlib.import_module(f"tiered_memory.app.api.{module}"), constant)
    return found


def _load(module: str, function: str) -> Callable[..., Any]:
    loaded: Callable[..., Any] = getattr(importlib.import_module(f"tiered_memory.app.{module}"), function)
    return loaded


def find(name: str) -> tuple[Op[Any, Any], Implementation]:
    """The operation of that name and its function (their modules imported now, if not yet), which
    first checks the request's size (`app.input_size`): whichever door it came through, input over
    the limit is refused before any other work."""
    try:
        _name, where, module, function = OPERATIONS[name]
    except KeyError:
        raise BadInput(f"unknown operation '{name}' (known: {', '.join(sorted(OPERATIONS))})") from None
    return _op(where), _bounded(_load(module, function), _UNBOUNDED.get(name, ()))


# Fields the size check leaves to the operation: a transcript, of which only the messages make a
# note (tool output and the like are dropped), checked once parsed; and a file's own text as a
# person wrote it (git's textconv of any note, the save of an encrypted note edited by hand).
_UNBOUNDED: dict[str, tuple[str, ...]] = {
    "ingest": ("text",),
    "extract": ("text",),
    "textconv": ("text",),
    "save_text": ("text",),
}


def _bounded(function: Implementation, skip: tuple[str, ...]) -> Implementation:
    def run(memory: Any, request: Any) -> Any:
        input_size.check_request(memory, request, skip)
        return function(memory, request)

    return run


def find_vaultless(name: str) -> tuple[Op[Any, Any], Callable[[Any], Any]]:
    """An operation that needs no vault (creating one, say) and its function."""
    _name, where, module, function = VAULTLESS[name]
    return _op(where), _load(module, function)
