"""Notes a merge kept both versions of (`conflict: true`): find them, and clear the mark once resolved."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tiered_memory.errors import BadInput, TmemError
from tiered_memory.model import layout
from tiered_memory.model import note as notes
from tiered_memory.model.frontmatter import edit_frontmatter
from tiered_memory.storage.vault import Vault

if TYPE_CHECKING:
    from tiered_memory.app.memory import Memory


def is_conflicted(vault: Vault, rel: str) -> bool:
    if rel.endswith(".json"):
        return False
    try:
        return vault.read_note(rel).meta.get("conflict") is True
    except TmemError:
        return False


def find_conflicts(vault: Vault) -> list[str]:
    """Notes whose frontmatter says `conflict: true` (git grep finds candidates, parsing confirms)."""
    proc = vault.git.run(
        "grep",
        "-l",
        "-z",
        "-I",
        "--untracked",
        "-E",
        "-e",
        "^conflict:[[:space:]]*true",
        "--",
        layout.MEMORY_DIR,
        check=False,
    )
    found = [p for p in proc.stdout.split("\0") if p and notes.is_note_path(p)]
    return [p for p in found if is_conflicted(vault, p)]


def resolve_conflict(memory: Memory, rel: str, *, force: bool = False) -> str | None:
    """Clear a note's `conflict: true` after a person merged the two versions; commit. Returns the sha."""
    from tiered_memory.model.merge3 import OURS_MARKER, THEIRS_MARKER

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
            text = vault.read_text(rel)
            tx.write_text(rel, edit_frontmatter(text, {"conflict": None}))
    return tx.sha
