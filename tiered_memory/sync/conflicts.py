"""Notes a merge kept both versions of (`conflict: true`): finding them in the vault."""

from __future__ import annotations

from tiered_memory.errors import TmemError
from tiered_memory.model import layout
from tiered_memory.model import note as notes
from tiered_memory.storage.vault import Vault


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
