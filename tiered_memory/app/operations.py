"""Every operation tmem offers and the function that carries it out: read this table to find
where any command's logic lives. The CLI, the daemon's socket and the MCP server all run
operations through it (via `tiered_memory.backend`), so each means the same thing everywhere.

The table names each function's module rather than importing it: a process imports only the
modules of the operations it runs, so a keyword search does not load sync, sessions, importers,
encryption and the rest (tests/test_operations.py checks every entry resolves).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from tiered_memory.app.api import Op
from tiered_memory.app.api import agents as api_agents
from tiered_memory.app.api import crypto as api_crypto
from tiered_memory.app.api import lifecycle as api_lifecycle
from tiered_memory.app.api import links as api_links
from tiered_memory.app.api import longterm as api_longterm
from tiered_memory.app.api import notes as api_notes
from tiered_memory.app.api import portability as api_portability
from tiered_memory.app.api import projects as api_projects
from tiered_memory.app.api import sessions as api_sessions
from tiered_memory.app.api import setup as api_setup
from tiered_memory.app.api import sync as api_sync
from tiered_memory.errors import BadInput

Implementation = Callable[[Any, Any], Any]  # (Memory, request) -> result

# (operation, module of tiered_memory.app, function in it)
_TABLE: list[tuple[Op[Any, Any], str, str]] = [
    (api_notes.REMEMBER, "notes", "remember"),
    (api_notes.SHOW, "notes", "show"),
    (api_notes.LIST, "notes", "list_notes"),
    (api_notes.FORGET, "notes", "forget"),
    (api_notes.SAVE_EDIT, "notes", "save_edit"),
    (api_notes.SEARCH, "notes", "search"),
    (api_notes.REINDEX, "notes", "reindex"),
    (api_notes.STATUS, "status", "status"),
    (api_lifecycle.PROMOTE, "lifecycle", "promote"),
    (api_lifecycle.ARCHIVE, "lifecycle", "archive"),
    (api_lifecycle.RESTORE_FROM_ARCHIVE, "lifecycle", "restore_from_archive"),
    (api_lifecycle.MAINTAIN, "maintain", "maintain"),
    (api_lifecycle.ST_SET, "shortterm", "st_set"),
    (api_lifecycle.ST_GET, "shortterm", "st_get"),
    (api_lifecycle.ST_LIST, "shortterm", "st_list"),
    (api_lifecycle.ST_CLEAR, "shortterm", "st_clear"),
    (api_lifecycle.ST_EXPIRE, "shortterm", "st_expire"),
    (api_longterm.PROFILE_SHOW, "longterm", "profile_show"),
    (api_longterm.PROFILE_SET, "longterm", "profile_set"),
    (api_longterm.KNOWLEDGE_ADD, "longterm", "knowledge_add"),
    (api_longterm.DECIDE, "longterm", "decide"),
    (api_longterm.LESSON_ADD, "longterm", "lesson_add"),
    (api_longterm.PATTERN_ADD, "longterm", "pattern_add"),
    (api_projects.PROJECT_NEW, "projects", "new"),
    (api_projects.PROJECT_SHOW, "projects", "show"),
    (api_projects.PROJECT_LIST, "projects", "list_projects"),
    (api_projects.PROJECT_UPDATE, "projects", "update"),
    (api_projects.PROJECT_COMPLETE, "projects", "complete"),
    (api_projects.PROJECT_CANCEL, "projects", "cancel"),
    (api_projects.TASK_ADD, "projects", "add_task"),
    (api_projects.TASK_DONE, "projects", "done_task"),
    (api_projects.TASK_LIST, "projects", "list_tasks"),
    (api_notes.READ, "notes", "read"),
    (api_notes.UPDATE, "notes", "update"),
    (api_notes.RELATED, "notes", "related"),
    (api_sessions.SESSION_START, "sessions", "start_session"),
    (api_sessions.SESSION_APPEND, "sessions", "append_message"),
    (api_sessions.SESSION_END, "sessions", "end_session"),
    (api_sessions.SESSION_SHOW, "sessions", "show_session"),
    (api_sessions.SESSION_LIST, "sessions", "session_list"),
    (api_sessions.RECENT, "sessions", "recent_sessions"),
    (api_sessions.INGEST, "sessions", "ingest_transcript"),
    (api_sessions.EXTRACT, "extraction", "extract_memories"),
    (api_agents.CONTEXT, "context", "context"),
    (api_agents.ENTITY_ADD, "entities", "entity_add"),
    (api_agents.ENTITY_UPDATE, "entities", "entity_update"),
    (api_agents.ENTITY_SHOW, "entities", "entity_show"),
    (api_agents.ENTITY_LIST, "entities", "entity_list"),
    (api_agents.FORGET_ENTITY, "entities", "entity_forget"),
    (api_agents.SCAN, "scan", "scan"),
    (api_sync.SYNC, "syncing", "sync"),
    (api_sync.RESOLVE, "conflicts", "resolve"),
    (api_sync.LOG, "syncing", "log"),
    (api_sync.RESTORE, "syncing", "restore"),
    (api_sync.BACKUP, "syncing", "backup"),
    (api_sync.POST_MERGE, "syncing", "post_merge"),
    (api_links.LINKS, "links", "links"),
    (api_portability.EXPORT, "export", "export"),
    (api_portability.IMPORT, "importers", "import_file"),
    (api_crypto.UNLOCK, "encryption", "unlock"),
    (api_crypto.LOCK, "encryption", "lock"),
    (api_crypto.ENCRYPT, "encryption", "encrypt"),
    (api_crypto.DECRYPT, "encryption", "decrypt"),
    (api_crypto.REKEY, "encryption", "rekey"),
    (api_crypto.TEXTCONV, "encryption", "textconv"),
    (api_crypto.SAVE_TEXT, "encryption", "save_text"),
]

# Operations with no vault to open yet: each function takes only its request.
_VAULTLESS: list[tuple[Op[Any, Any], str, str]] = [
    (api_setup.INIT, "setup", "init"),
    (api_setup.CONFIG, "setup", "config"),
    (api_sync.RESTORE_BACKUP, "syncing", "restore_backup"),
]

OPERATIONS: dict[str, tuple[Op[Any, Any], str, str]] = {op.name: (op, m, f) for op, m, f in _TABLE}
VAULTLESS: dict[str, tuple[Op[Any, Any], str, str]] = {op.name: (op, m, f) for op, m, f in _VAULTLESS}


def _load(module: str, function: str) -> Callable[..., Any]:
    loaded: Callable[..., Any] = getattr(importlib.import_module(f"tiered_memory.app.{module}"), function)
    return loaded


def find(name: str) -> tuple[Op[Any, Any], Implementation]:
    """The operation of that name and its function (its module imported now, if not yet)."""
    try:
        op, module, function = OPERATIONS[name]
    except KeyError:
        raise BadInput(f"unknown operation '{name}' (known: {', '.join(sorted(OPERATIONS))})") from None
    return op, _load(module, function)


def find_vaultless(name: str) -> tuple[Op[Any, Any], Callable[[Any], Any]]:
    """An operation that needs no vault (creating one, say) and its function."""
    op, module, function = VAULTLESS[name]
    return op, _load(module, function)
