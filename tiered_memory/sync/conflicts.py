"""Notes a merge kept both versions of (`conflict: true`): finding them in the vault.

An encrypted note is conflicted when its sealed frontmatter says so (readable only with the key),
or when a record of the other machine's version waits beside it (`<note>.tmem-conflict`: the
merge had no key), which is seen without the key.
"""

from __future__ import annotations

__all__ = ["find_conflicts", "is_conflicted", "line_merged_sides", "waiting"]

import os

from tiered_memory.errors import GitError, TmemError
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
        if sealed_merge.line_merged(vault.read_bytes(rel)):
            return True
    except (OSError, TmemError):
        return False
    try:
        return vault.read_note(rel).meta.get("conflict") is True
    except TmemError:
        return False


def waiting(vault: Vault, rel: str) -> bool:
    """Whether another machine's version of this encrypted note waits beside it to be merged."""
    return os.path.isfile(vault.abspath(sealed_merge.conflict_path(rel)))


def line_merged_sides(vault: Vault, rel: str) -> tuple[bytes | None, bytes, bytes] | None:
    """(base, ours, theirs) of an envelope an older tmem merged by lines: the note's versions in
    the parents of the merge commit that made it (and their merge base); None when the note is
    not such an envelope or that commit is not found."""
    data = vault.read_bytes(rel)
    if not sealed_merge.line_merged(data):
        return None
    git = vault.git
    for line in git.out("log", "--merges", "--format=%H %P", "-n", "50", "--", rel).splitlines():
        commit, *parents = line.split()
        if len(parents) != 2:
            continue
        try:
            if git.blob(f"{commit}:{rel}") != data:
                continue
            ours, theirs = (git.blob(f"{parent}:{rel}") for parent in parents)
        except GitError:
            continue
        if sealed_merge.line_merged(ours) or sealed_merge.line_merged(theirs):
            continue
        base_commit = git.run("merge-base", *parents, check=False).stdout.strip()
        try:
            base = git.blob(f"{base_commit}:{rel}") if base_commit else None
        except GitError:
            base = None
        return base, ours, theirs
    return None


def find_conflicts(vault: Vault) -> list[str]:
    """Notes whose frontmatter says `conflict: true` (git grep finds candidates, parsing confirms),
    encrypted ones while the key is at hand, encrypted notes with another version waiting, and
    envelopes an older tmem merged by lines."""
    patterns = ["^conflict:[[:space:]]*true", f'"{sealed_merge.RECORD_MARK}": 1', "^<<<<<<< "]
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
