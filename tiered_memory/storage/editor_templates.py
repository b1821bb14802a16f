"""The folders an editor keeps its note templates in, read from the vault's editor settings:
Obsidian's core Templates plugin (`.obsidian/templates.json`, `folder`) and the Templater plugin
(`.obsidian/plugins/templater-obsidian/data.json`, `templates_folder`), at the vault's root or in
a top folder that is an Obsidian vault itself (a Quartz site's `content/`). Notes there are templates
full of placeholders (`{{date}}`, `<% tp.file.title %>`, a `#monthly-log` tag waiting to be
copied), which the index leaves out (`index.indexer`: "a template of the editor").

The settings come through git from other machines, so they may only narrow what this machine
indexes: a folder is taken only when `model.folders.template_folder` accepts its name and it is a
real folder of the vault, opened from the root without following a symbolic link. A settings
file that is a link, not a regular file, larger than `MAX_BYTES` or not a JSON object is ignored,
never an error.
"""

from __future__ import annotations

__all__ = ["MAX_BYTES", "SETTINGS", "folders", "within"]

import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from tiered_memory.errors import TmemError
from tiered_memory.model import layout
from tiered_memory.model.folders import template_folder
from tiered_memory.storage import safe_path

# (settings file, the key that names the templates folder)
SETTINGS = (
    (".obsidian/templates.json", "folder"),
    (".obsidian/plugins/templater-obsidian/data.json", "templates_folder"),
)
MAX_BYTES = 1 << 20  # a settings file of a few hundred bytes; anything this large is not one

_READ = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
)


def folders(root: Path, *, existing: bool = True) -> tuple[str, ...]:
    """The template folders the vault's editor settings name, in `SETTINGS` order, each once;
    with `existing` (what the index goes by), only those that are real folders of the vault."""
    found: list[str] = []
    for base in _editor_roots(root):
        for rel, key in SETTINGS:
            data = _read(root, base + rel)
            if data is None:
                continue
            try:
                settings = json.loads(data)
            except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
                continue
            folder = template_folder(settings.get(key)) if isinstance(settings, dict) else None
            if folder is None:
                continue
            folder = base + folder
            if folder not in found and (not existing or _real_folder(root, folder)):
                found.append(folder)
    return tuple(found)


def _editor_roots(root: Path) -> list[str]:
    """Where editor settings sit: the vault's root, and each top folder that is an Obsidian vault
    of its own (`content/.obsidian/` of a Quartz site adopted whole), as `content/`: the folders
    its settings name are inside it."""
    bases = [""]
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError:
        return bases
    for entry in entries:
        if entry.name.startswith(".") or entry.name == layout.MEMORY_DIR:
            continue
        try:
            if entry.is_dir(follow_symlinks=False) and stat.S_ISDIR(
                os.lstat(os.path.join(entry.path, ".obsidian")).st_mode
            ):
                bases.append(entry.name + "/")
        except OSError:
            continue
    return bases


def within(rel: str, folders: Iterable[str]) -> bool:
    """Whether the vault-relative path `rel` lies in one of these folders."""
    return any(rel.startswith(folder + "/") for folder in folders)


def _read(root: Path, rel: str) -> bytes | None:
    try:
        with safe_path.folder_of(root, rel, create=False) as (folder, name):
            fd = os.open(name, _READ, dir_fd=folder)
            with os.fdopen(fd, "rb") as handle:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
                    return None
                return handle.read(MAX_BYTES + 1)
    except (OSError, TmemError):
        return None


def _real_folder(root: Path, folder: str) -> bool:
    """Whether `folder` is a folder of the vault with no symbolic link on its way."""
    try:
        os.close(safe_path.open_folder(root, safe_path.parts_of(folder), create=False))
    except (OSError, TmemError):
        return False
    return True
