"""Every operation tmem offers and the function that carries it out: read this table to find
where any command's logic lives. The CLI, the daemon's socket and the MCP server all run
operations through it (via `tiered_memory.backend`), so each means the same thing everywhere."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tiered_memory.app import encryption, export, importers, notes, setup, status
from tiered_memory.app.api import Op
from tiered_memory.app.api import crypto as api_crypto
from tiered_memory.app.api import notes as api_notes
from tiered_memory.app.api import portability as api_portability
from tiered_memory.app.api import setup as api_setup
from tiered_memory.app.memory import Memory
from tiered_memory.errors import BadInput

Implementation = Callable[[Memory, Any], Any]

_TABLE: list[tuple[Op[Any, Any], Implementation]] = [
    (api_notes.REMEMBER, notes.remember),
    (api_notes.SHOW, notes.show),
    (api_notes.LIST, notes.list_notes),
    (api_notes.FORGET, notes.forget),
    (api_notes.SAVE_EDIT, notes.save_edit),
    (api_notes.SEARCH, notes.search),
    (api_notes.REINDEX, notes.reindex),
    (api_notes.STATUS, status.status),
    (api_portability.EXPORT, export.export),
    (api_portability.IMPORT, importers.import_file),
    (api_crypto.UNLOCK, encryption.unlock),
    (api_crypto.LOCK, encryption.lock),
    (api_crypto.ENCRYPT, encryption.encrypt),
    (api_crypto.DECRYPT, encryption.decrypt),
    (api_crypto.REKEY, encryption.rekey),
    (api_crypto.TEXTCONV, encryption.textconv),
    (api_crypto.SAVE_TEXT, encryption.save_text),
]

OPERATIONS: dict[str, tuple[Op[Any, Any], Implementation]] = {op.name: (op, fn) for op, fn in _TABLE}

# Operations with no vault to open yet: each function takes only its request.
VAULTLESS: dict[str, tuple[Op[Any, Any], Callable[[Any], Any]]] = {
    api_setup.INIT.name: (api_setup.INIT, setup.init),
    api_setup.CONFIG.name: (api_setup.CONFIG, setup.config),
}


def find(name: str) -> tuple[Op[Any, Any], Implementation]:
    try:
        return OPERATIONS[name]
    except KeyError:
        raise BadInput(f"unknown operation '{name}' (known: {', '.join(sorted(OPERATIONS))})") from None
