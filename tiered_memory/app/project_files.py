"""Where a project's files live and the registry of projects (`mid-term/active_contexts.json`).

Shared by project operations and by the lifecycle moves that carry a project's notes away.
"""

from __future__ import annotations

__all__ = [
    "PROJECT_ID",
    "REGISTRY",
    "archived_folder",
    "exists",
    "folder",
    "notes_rel",
    "registry",
    "require",
    "status_note",
    "status_rel",
    "sync_registry",
    "tasks_rel",
    "validate_id",
]

import json
import re
from typing import Any

from tiered_memory.errors import BadInput, NoteNotFound, NoteParseError
from tiered_memory.model import layout
from tiered_memory.model import note as notes
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import Vault

PROJECT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
REGISTRY = layout.ACTIVE_CONTEXTS


def validate_id(value: str) -> str:
    pid = value.strip()
    if not PROJECT_ID.match(pid) or ".." in pid:
        raise BadInput(
            f"invalid project id '{value}': use 1-64 letters, digits, '-', '_' or '.' "
            "(no spaces or path characters, not starting with '.')"
        )
    return pid


def folder(pid: str) -> str:
    return f"{layout.PROJECTS}/{pid}"


def status_rel(pid: str) -> str:
    return f"{folder(pid)}/status.md"


def tasks_rel(pid: str) -> str:
    return f"{folder(pid)}/tasks.json"


def notes_rel(pid: str) -> str:
    return f"{folder(pid)}/notes.md"


def exists(vault: Vault, pid: str) -> bool:
    return vault.abspath(folder(pid)).is_dir()


def archived_folder(vault: Vault, pid: str) -> str | None:
    rel = f"{layout.ARCHIVE_PROJECTS}/{pid}"
    return rel if vault.abspath(rel).is_dir() else None


def require(vault: Vault, value: str) -> str:
    pid = validate_id(value)
    if not exists(vault, pid):
        archived = archived_folder(vault, pid)
        if archived:
            raise BadInput(f"project '{pid}' is archived ({archived}); restore its notes to work on it again")
        raise NoteNotFound(f"no project '{pid}' (create it with `tmem project new {pid}`)")
    return pid


def status_note(source: Vault | Transaction, pid: str) -> notes.Note:
    """The project's status note, read from the vault or, to change it, through the unit of work."""
    rel = status_rel(pid)
    if source.exists(rel):
        return source.read_note(rel)
    # A folder made by `tmem add --project` has no status.md yet: start one.
    return notes.Note(
        rel,
        {"id": f"project-{pid}", "title": pid, "category": "project", "status": "active", "project": pid},
        f"# {pid}\n",
        True,
    )


# ---- projects ---------------------------------------------------------------------------------


def sync_registry(tx: Transaction) -> str | None:
    """Rewrite active_contexts.json from the project folders; returns its path when it changed.

    Keys a person or another tool added (at the top level or in an entry) are kept.
    """
    vault = tx.vault
    rel = REGISTRY
    try:
        data = json.loads(tx.read_bytes(rel).decode("utf-8"))
    except FileNotFoundError:
        data = {}
    except (OSError, ValueError, RecursionError, NoteParseError):
        data = None
    if not isinstance(data, dict):
        data = {}
    found = data.get("projects")
    old_entries: dict[str, Any] = found if isinstance(found, dict) else {}
    entries: dict[str, Any] = {}
    base = vault.abspath(layout.PROJECTS)
    for child in sorted(base.iterdir()) if base.is_dir() else []:
        if not child.is_dir() or child.name.startswith("."):
            continue
        pid = child.name
        try:
            status = status_note(vault, pid)
        except NoteParseError:
            continue
        entry = dict(old_entries.get(pid) or {}) if isinstance(old_entries.get(pid), dict) else {}
        updated = status.updated
        entry.update(
            {
                "title": status.title,
                "status": status.status,
                "path": folder(pid),
                "updated": updated.isoformat() if updated else None,
            }
        )
        entries[pid] = entry
    new = {**data, "projects": entries}
    if new == data and vault.abspath(rel).is_file():
        return None
    tx.write_json(rel, new)
    return rel


def registry(vault: Vault) -> dict[str, Any]:
    try:
        data = json.loads(vault.abspath(REGISTRY).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    entries = data.get("projects") if isinstance(data, dict) else None
    return entries if isinstance(entries, dict) else {}
