"""Which vault paths only this machine may write: tmem's private state and git's own folder.

`.tmem/` (indexes, catalog, journal, locks, the checked config, the daemon's socket and pid),
the access log and the local backups are made and read by this machine's tmem alone; `.git`
belongs to git. What arrives through git is data: a pulled commit that would add, change or
remove one of these paths is refused (`sync.incoming`), and sync never commits them either.
`.tmem-stats.json` and `.tmem-crypto.json` are shared on purpose: they are not private.

Names are compared as a case-insensitive file system would see them (macOS folds case and drops
some invisible characters, Windows drops trailing dots and spaces), so `.TMEM/` counts too.
"""

from __future__ import annotations

__all__ = ["BACKUPS_DIR", "GIT_DIR", "PRIVATE_ROOTS", "fold", "link_escapes", "private_reason", "unsafe_path"]

import posixpath

from tiered_memory.model.layout import ACCESS_LOG, STATE_DIR

BACKUPS_DIR = ".tmem-backups"  # backup.directory's default: local bundles (gitignored)
# Top-level names private to this machine, and why (the words a refusal shows).
PRIVATE_ROOTS = {
    STATE_DIR: "tmem's private state",
    ACCESS_LOG: "this machine's recall log",
    BACKUPS_DIR: "this machine's backups",
}
GIT_DIR = ".git"
# Code points HFS+ ignores in names (git's own list for `.git`): `.t\u200cmem` is `.tmem` there.
_IGNORED = dict.fromkeys(
    [0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF]
)


def fold(name: str) -> str:
    """A path component as a case-insensitive file system compares it."""
    return name.translate(_IGNORED).rstrip(" .").casefold() or name


_FOLDED_ROOTS = {fold(name): why for name, why in PRIVATE_ROOTS.items()}


def private_reason(path: str) -> str | None:
    """Why a vault-relative POSIX path is only this machine's to write, else None."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts:
        return None
    if any(fold(part) == GIT_DIR for part in parts):
        return "git's own folder"
    return _FOLDED_ROOTS.get(fold(parts[0]))


def link_escapes(path: str, target: str) -> str | None:
    """Why a symbolic link at `path` (vault-relative) pointing at `target` leaves the vault or
    points into private state, else None."""
    if not target or target.startswith("/") or "\0" in target:
        return "a symbolic link that points outside the vault"
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if joined == ".." or joined.startswith("../"):
        return "a symbolic link that points outside the vault"
    if joined == ".":
        return "a symbolic link to the vault's root, which holds private state"
    private = private_reason(joined)
    if private is not None:
        return f"a symbolic link into {private}"
    return None


def unsafe_path(path: str) -> str | None:
    """Why `path` is not a plain vault-relative path tmem may write, else None (absolute, `..`,
    empty parts, NUL, or private)."""
    if not path or "\0" in path or path.startswith("/"):
        return "not a path inside the vault"
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "not a path inside the vault"
    return private_reason(path)
