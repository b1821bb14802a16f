"""The vault's stat walk: every note's and attachment's mtime and size, for the freshness scan
that runs before every search (index.indexer).

Its own module, light to import (the folder rules and the vault's layout, nothing else): a
command forks it (index.scan_ahead) before it loads the rest of the application.
"""

from __future__ import annotations

import os
from pathlib import Path

from tiered_memory.model import layout
from tiered_memory.model.folders import ATTACHMENT_SUFFIXES, FolderRules

Stats = dict[str, tuple[float, int]]  # vault-relative POSIX path -> (mtime, size)

# Editors' temp and swap files: never notes, never committed by tmem.
_TEMP_MARKERS = (".swp", ".swo", ".swx", "~", ".tmp", "___jb_tmp___", "___jb_old___", ".crswap")


def is_temp_name(name: str) -> bool:
    return name.startswith((".#", "#", ".~")) or name.endswith(_TEMP_MARKERS) or ".tmp." in name


def stat_walk(root: Path, rules: FolderRules) -> tuple[Stats, Stats]:
    """(notes, attachments): path -> (mtime, size) of every note and every attachment
    (model.folders) under `root` (resolved) that the folder rules keep, hidden folders, links and
    editors' temp files skipped, in no particular order. It makes no objects and sorts nothing: at
    10,000 notes the per-file cost has to stay at one stat call."""
    notes: Stats = {}
    attachments: Stats = {}
    skip = len(str(root)) + 1
    suffixes = layout.NOTE_SUFFIXES
    stack = [str(root)]
    while stack:
        try:
            entries = os.scandir(stack.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                name = entry.name
                if name[0] == ".":
                    continue
                try:
                    if entry.is_symlink():
                        continue  # never read through a link: it may point outside the vault
                    if entry.is_dir(follow_symlinks=False):
                        if not rules.excludes_folder(entry.path[skip:]):
                            stack.append(entry.path)
                    # is_temp_name for a visible name with a note suffix, which no temp marker
                    # ends with: the two checks left, inline (ten thousand names a search).
                    elif name.endswith(suffixes) and name[0] != "#" and ".tmp." not in name:
                        stat = entry.stat()
                        notes[entry.path[skip:]] = (stat.st_mtime, stat.st_size)
                    elif name.lower().endswith(ATTACHMENT_SUFFIXES) and not is_temp_name(name):
                        stat = entry.stat()
                        attachments[entry.path[skip:]] = (stat.st_mtime, stat.st_size)
                except OSError:
                    continue
    if os.sep != "/":
        notes = {rel.replace(os.sep, "/"): value for rel, value in notes.items()}
        attachments = {rel.replace(os.sep, "/"): value for rel, value in attachments.items()}
    return notes, attachments
