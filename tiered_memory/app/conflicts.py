"""Clearing the mark of a note a merge kept both versions of (`conflict: true`), once resolved.

Finding such notes is `sync/conflicts.py`: sync marks them while merging.
"""

from __future__ import annotations

from tiered_memory.app.api.sync import Resolved, ResolveRequest
from tiered_memory.app.memory import Memory
from tiered_memory.errors import BadInput
from tiered_memory.model.frontmatter import edit_frontmatter
from tiered_memory.model.merge3 import OURS_MARKER, THEIRS_MARKER


def resolve(memory: Memory, request: ResolveRequest) -> Resolved:
    rel = memory.resolve(request.ref)
    return Resolved(rel, resolve_conflict(memory, rel, force=request.force))


def resolve_conflict(memory: Memory, rel: str, *, force: bool = False) -> str | None:
    """Clear a note's `conflict: true` after a person merged the two versions; commit. Returns the sha."""
    vault = memory.vault
    note = vault.read_note(rel)
    lines = {line.rstrip("\r") for line in note.body.split("\n")}
    if not force and (OURS_MARKER in lines or THEIRS_MARKER in lines):
        raise BadInput(
            f"{rel} still has conflict markers ({OURS_MARKER[:7]} ... {THEIRS_MARKER[:7]}): "
            "keep what you want and delete the markers, or pass --force"
        )
    with memory.change(f"resolve: {note.title}") as tx:
        tx.include([rel])
        if note.meta.get("conflict") is not None:
            # Only the mark goes; a note that had no other frontmatter is left with none.
            text = tx.read_text(rel)
            tx.write_text(rel, edit_frontmatter(text, {"conflict": None}))
    return tx.sha
