"""Notes a merge kept both versions of (`conflict: true`): finding them in the vault.

An encrypted note is conflicted when its sealed frontmatter says so (readable only with the key),
or when a record of the other machine's version waits beside it (`<note>.tmem-conflict`: the
merge had no key), which is seen without the key.
"""

from __future__ import annotations

import os

from tiered_memory.errors import TmemError
from tiered_memory.model import layout, sealed_merge
from tiered_memory.model import note as notes
from tiered_memory.storage import crypto
from tiered_memory.storage.vault import Vault


def is_conflicted(vault: Vault, rel: str) -> bool:
    if rel.endswith(".json"):
        return False
    if waiting(vault, rel):
        return True
    try:
        return vault.read_note(rel).meta.get("conflict") is True
    except TmemError:
        return False


def waiting(vault: Vault, rel: str) -> bool:
    """Whether another machine's version of this encrypted note waits beside it to be merged."""
    return os.path.isfile(vault.abspath(sealed_merge.conflict_path(rel)))


def find_conflicts(vault: Vault) -> list[str]:
    """Notes whose frontmatter says `conflict: true` (git grep finds candidates, parsing confirms),
    encrypted ones while the key is at hand, and encrypted notes with another version waiting."""
    patterns = ["^conflict:[[:space:]]*true", f'"{sealed_merge.RECORD_MARK}": 1']
    if _unlocked(vault):  # locked, encrypted notes' frontmatter cannot be read anyway
        patterns.append("^tmem-encrypted: 1$")
    found: set[str] = set()
    for path in _grep(vault, patterns):
        note = sealed_merge.note_of(path)
        if notes.is_note_path(note) and (note == path or os.path.isfile(vault.abspath(note))):
            found.add(note)
    return [p for p in sorted(found) if is_conflicted(vault, p)]


def _unlocked(vault: Vault) -> bool:
    if not (vault.root / crypto.SETTINGS).is_file():
        return False
    try:
        return crypto.key_for(vault.root) is not None
    except TmemError:  # a wrong passphrase in the environment: as locked
        return False


def _grep(vault: Vault, patterns: list[str]) -> list[str]:
    """Files under memory/ with a line matching any of `patterns` (extended regular expressions)."""
    either = [arg for pattern in patterns for arg in ("-e", pattern)]
    proc = vault.git.run(
        "grep", "-l", "-z", "-I", "--untracked", "-E", *either, "--", layout.MEMORY_DIR, check=False
    )
    return [p for p in proc.stdout.split("\0") if p]
