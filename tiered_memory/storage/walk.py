"""The vault's stat walk: every note's and attachment's mtime and size, for the freshness scan
that runs before every search (index.indexer).

Its own module, light to import (the folder rules and the vault's layout, nothing else): a
command forks it (index.scan_ahead) before it loads the rest of the application.

The files fall in `PARTS` parts by their name alone (`part_of`), so that two processes can each
stat one part of a large vault at once: both list every folder, and each stats only its own
files. A part taken from the name, not from a file's place in a listing, never counts a name
twice or misses one that stays put while files come and go between the two listings; a file
renamed in between may be seen under both names or neither, so a split look only tells whether
anything changed (index.indexer).
"""

from __future__ import annotations

__all__ = ["PARTS", "Stats", "is_temp_name", "is_utf8", "part_of", "shown_name", "stat_walk"]

import os
from pathlib import Path

from tiered_memory.model import layout
from tiered_memory.model.folders import ATTACHMENT_SUFFIXES, FolderRules

Stats = dict[str, tuple[float, int]]  # vault-relative POSIX path -> (mtime, size)

PARTS = 2

# Editors' temp and swap files: never notes, never committed by tmem.
_GIT_MERGE_TEMP = ".merge_file_"
_TEMP_MARKERS = (".swp", ".swo", ".swx", "~", ".tmp", "___jb_tmp___", "___jb_old___", ".crswap")

# Folders are listed through a descriptor where the system allows it: each stat then looks up one
# name in an open folder instead of resolving the whole path again (~10 % of a walk on Linux).
_BY_DESCRIPTOR = os.scandir in os.supports_fd and os.open in os.supports_dir_fd and hasattr(os, "O_DIRECTORY")
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


def is_temp_name(name: str) -> bool:
    """Editors' swap and backup files, atomic writes' temp files, and git's: the versions git
    hands a merge driver (`.merge_file_XXXXXX`, at the top of the work tree) while it merges,
    which a git merge left running by a killed sync (no lock held any more) shows to the next
    commit of pending edits, and which stay there when that git dies too."""
    return (
        name.startswith((".#", "#", ".~", _GIT_MERGE_TEMP)) or name.endswith(_TEMP_MARKERS) or ".tmp." in name
    )


def is_utf8(rel: str) -> bool:
    """Whether a name read from the disk is UTF-8: bytes that are not come as surrogate escapes
    (os.fsdecode), which SQLite, Whoosh and JSON cannot store."""
    if rel.isascii():
        return True
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_name(rel: str) -> str:
    """A name that may hold bytes that are not UTF-8, printable: those bytes as `\\xe9`."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def part_of(name: str) -> int:
    """The part of the file called `name` (at least 4 characters: a visible name with a suffix)."""
    return (len(name) + ord(name[-4])) % PARTS


def stat_walk(root: Path, rules: FolderRules, part: int | None = None) -> tuple[list[Stats], list[Stats]]:
    """(notes, attachments), each a list of `PARTS` dicts path -> (mtime, size), one per part:
    every note and attachment (model.folders) under `root` (resolved) that the folder rules keep,
    hidden folders, links, editors' temp files and anything but regular files (a pipe named
    `x.md`) skipped, in the order the listings give. With
    `part`, only that part's files are stat'ed; the other dicts stay empty. A root that cannot be
    listed raises OSError (an empty vault would tell the scan every note was deleted); a folder
    below it that cannot be listed is skipped.

    It makes no objects and sorts nothing: at 10,000 notes the per-file cost has to stay at one
    stat call."""
    notes: list[Stats] = [{} for _ in range(PARTS)]
    attachments: list[Stats] = [{} for _ in range(PARTS)]
    found = _Found(rules, part, notes, attachments)
    if _BY_DESCRIPTOR:
        _walk_by_descriptor(str(root), found)
    else:
        _walk_by_path(str(root), found)
    return notes, attachments


class _Found:
    """What one listing adds: its files' stats, and the folders to list next."""

    __slots__ = ("attachments", "notes", "part", "rules")

    def __init__(self, rules: FolderRules, part: int | None, notes: list[Stats], attachments: list[Stats]):
        self.rules, self.part, self.notes, self.attachments = rules, part, notes, attachments

    def listing(self, entries: os._ScandirIterator[str], prefix: str) -> list[str]:
        """Stat the files of one folder (`prefix`: vault-relative, "" or ending in "/"); the names
        of its folders to walk."""
        folders = []
        notes, attachments, part, rules = self.notes, self.attachments, self.part, self.rules
        suffixes = layout.NOTE_SUFFIXES
        with entries:
            for entry in entries:
                name = entry.name
                if name[0] == ".":
                    continue
                try:
                    if entry.is_symlink():
                        continue  # never read through a link: it may point outside the vault
                    if entry.is_dir(follow_symlinks=False):
                        if not rules.excludes_folder(prefix + name):
                            folders.append(name)
                    elif not entry.is_file(follow_symlinks=False):
                        continue  # a pipe, socket or device: opening it could block for ever
                    # is_temp_name for a visible name with a note suffix, which no temp marker
                    # ends with: the two checks left, inline.
                    elif name.endswith(suffixes) and name[0] != "#" and ".tmp." not in name:
                        k = (len(name) + ord(name[-4])) % PARTS  # part_of, inline
                        if part is None or k == part:
                            stat = entry.stat()
                            notes[k][prefix + name] = (stat.st_mtime, stat.st_size)
                    elif name.lower().endswith(ATTACHMENT_SUFFIXES) and not is_temp_name(name):
                        k = part_of(name)
                        if part is None or k == part:
                            stat = entry.stat()
                            attachments[k][prefix + name] = (stat.st_mtime, stat.st_size)
                except OSError:
                    continue
        return folders


def _walk_by_descriptor(top: str, found: _Found) -> None:
    """Each folder is opened by its name in its parent's open descriptor, never by a path: a
    folder swapped for a link while the walk runs is refused (O_NOFOLLOW), at any depth. Open
    descriptors: one per level of the folder being listed."""
    root_fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        folders = found.listing(os.scandir(root_fd), "")
    except BaseException:
        os.close(root_fd)
        raise
    # (descriptor, vault-relative prefix, subfolder names still to walk), one per level
    stack: list[tuple[int, str, list[str]]] = [(root_fd, "", folders)]
    try:
        while stack:
            fd, prefix, folders = stack[-1]
            if not folders:
                stack.pop()
                os.close(fd)
                continue
            name = folders.pop()
            try:
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _NO_FOLLOW, dir_fd=fd)
            except OSError:
                continue
            try:
                below = found.listing(os.scandir(sub), f"{prefix}{name}/")
            except BaseException as exc:
                os.close(sub)
                if isinstance(exc, OSError):
                    continue
                raise
            stack.append((sub, f"{prefix}{name}/", below))
    finally:
        for fd, _prefix, _folders in stack:
            os.close(fd)


def _walk_by_path(top: str, found: _Found) -> None:
    """Where folders cannot be listed through descriptors (Windows): by path."""
    stack = [""]
    while stack:
        prefix = stack.pop()
        try:
            entries = os.scandir(os.path.join(top, prefix) if prefix else top)
        except OSError:
            if not prefix:
                raise
            continue
        stack.extend(f"{prefix}{name}/" for name in found.listing(entries, prefix))
