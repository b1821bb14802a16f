"""A note changed by name: `tmem update`, `edit` and `forget`, as text (and `forget`'s JSON)."""

from __future__ import annotations

__all__ = [
    "NO_CHANGES",
    "edit_kept",
    "forget_question",
    "forget_refused",
    "forgot_dict",
    "forgot_text",
    "saved_text",
    "updated_text",
]

from typing import Any

from tiered_memory.app.api.crypto import SavedText
from tiered_memory.app.api.notes import Forgotten, NoteView, Saved, Updated

NO_CHANGES = "no changes"  # `tmem edit`: the editor closed with the note as it was


def updated_text(result: Updated) -> str:
    if result.changed:
        return f"updated {result.path}: {', '.join(result.changed)}"
    return f"{result.path}: nothing changed"


def saved_text(done: Saved | SavedText) -> str:
    """`tmem edit`'s save, with its commit (an encrypted note says it stayed so)."""
    sealed = " (encrypted)" if isinstance(done, SavedText) and done.encrypted else ""
    line = f"saved {done.path}{sealed}" + (f" ({done.commit[:8]})" if done.commit else "")
    if isinstance(done, SavedText) and done.conflict:
        line += f"; it was changed meanwhile on the same lines: both kept, see `tmem resolve {done.path}`"
    return line


def edit_kept(copy: str) -> str:
    """`tmem edit` could not save: where the person's text still is."""
    return f"your edit was not saved; it is kept in {copy}"


def forget_question(view: NoteView) -> str:
    return f"Forget '{view.title}' ({view.path})?"


def forget_refused(view: NoteView) -> str:
    """Why `tmem forget` without --yes does nothing where nobody can answer."""
    return f"refusing to forget '{view.title}' without confirmation: pass --yes"


def forgot_dict(done: Forgotten) -> dict[str, Any]:
    return {"forgotten": done.id, "path": done.path, "commit": done.commit}


def forgot_text(done: Forgotten) -> str:
    return f"forgot {done.id} ({done.path})"
