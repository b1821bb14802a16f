"""The vault's stat walk: every note's and attachment's mtime and size, for the freshness scan
that runs before every search (index.indexer).

Its own module, light to import (the folder rules and the vault's layout, nothing else): a
command forks it (index.scan_ahead) before it loads the rest of the application.

The files fall in `PARTS` parts by their name alone (`part_of`), so that two processes can each
stat one part of a large vault at once: both list every folder, and each stats only its own
files. A part taken from the name, not from a file's place in a listing, keeps the split exact
while files come and go between the two listings.
"""

from __future__ import annotations

import os
from pathlib import Path

from tiered_memory.model import layout
from tiered_memory.model.folders import ATTACHMENT_SUFFIXES, FolderRules

Stats = dict[str, tuple[float, int]]  # vault-relative POSIX path -> (mtime, size)

PARTS = 2

# Editors' temp and swap files: never notes, never committed by tmem.
_TEMP_MARKERS = (".swp", ".swo", ".swx", "~", ".tmp", "___jb_tmp___", "___jb_old___", ".crswap")

# Folders are listed through a descriptor where the system allows it: each stat then looks up one
# name in an open folder instead of resolving the whole path again (~10 % of a walk on Linux).
_BY_DESCRIPTOR = os.scandir in os.supports_fd and hasattr(os, "O_DIRECTORY")
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)


def is_temp_name(name: str) -> bool:
    return name.startswith((".#", "#", ".~")) or name.endswith(_TEMP_MARKERS) or ".tmp." in name


def part_of(name: str) -> int:
    """The part of the file called `name` (at least 4 characters: a visible name with a suffix)."""
    return (len(name) + ord(name[-4])) % PARTS


def stat_walk(root: Path, rules: FolderRules, part: int | None = None) -> tuple[list[Stats], list[Stats]]:
    """(notes, attachments), each a list of `PARTS` dicts path -> (mtime, size), one per part:
    every note and attachment (model.folders) under `root` (resolved) that the folder rules keep,
    hidden folders, links and editors' temp files skipped, in the order the listings give. With
    `part`, only that part's files are stat'ed; the other dicts stay empty.

    It makes no objects and sorts nothing: at 10,000 notes the per-file cost has to stay at one
    stat call."""
    notes: list[Stats] = [{} for _ in range(PARTS)]
    attachments: list[Stats] = [{} for _ in range(PARTS)]
    suffixes = layout.NOTE_SUFFIXES
    top = str(root)
    root_fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY) if _BY_DESCRIPTOR else -1
    try:
        stack = [""]  # vault-relative folders still to list, each with a trailing "/"
        while stack:
            prefix = stack.pop()
            try:
                listing, fd = _open(top, root_fd, prefix)
            except OSError:
                continue
            try:
                with listing as entries:
                    for entry in entries:
                        name = entry.name
                        if name[0] == ".":
                            continue
                        try:
                            if entry.is_symlink():
                                continue  # never read through a link: it may point outside the vault
                            if entry.is_dir(follow_symlinks=False):
                                if not rules.excludes_folder(prefix + name):
                                    stack.append(f"{prefix}{name}/")
                            # is_temp_name for a visible name with a note suffix, which no temp
                            # marker ends with: the two checks left, inline.
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
            finally:
                if fd >= 0:
                    os.close(fd)
    finally:
        if root_fd >= 0:
            os.close(root_fd)
    return notes, attachments


def _open(top: str, root_fd: int, prefix: str) -> tuple[os._ScandirIterator[str], int]:
    """The listing of the folder `prefix` (vault-relative, "" for the root), and the descriptor
    to close after it (-1: none)."""
    if root_fd < 0:
        return os.scandir(os.path.join(top, prefix) if prefix else top), -1
    # No links followed on the way: the walk never queues one, and one put there since is refused.
    fd = os.open(prefix[:-1] or ".", os.O_RDONLY | os.O_DIRECTORY | _NO_FOLLOW, dir_fd=root_fd)
    try:
        return os.scandir(fd), fd
    except OSError:
        os.close(fd)
        raise
