"""A tmem export (`tmem export`, JSON or JSON Lines) back into a vault: notes at their paths with
their frontmatter and bodies, sessions with their messages.

A note's path is vault-relative, as the export wrote it: a person's folder note (`Proyectos/x.md`
of an adopted vault) comes back in that folder, tmem's own notes in their tier (`memory/...`). A
path that starts at a tier folder (`long-term/x.md`, as a hand-made export may write it) is taken
inside `memory/`. An entry's `head` (the file's text before its body) makes `head + body` the
note's bytes as the vault held them; an entry without one (an older export) is rendered from its
frontmatter values.

An export is untrusted: the path of each entry is where its bytes would land, so a note's path must
name a note file (Markdown, or tmem's JSON state at its known places) and nothing else: no hidden
component (`.git`, `.github`, `.tmem*`), no `..`, nothing absolute, no other extension, no control
character, no name longer than a file system takes, no path longer than macOS takes.
`path_problem` says what is wrong with one; the import refuses the whole file if any entry has one.
"""

from __future__ import annotations

__all__ = [
    "ExportItems",
    "is_export",
    "note_of",
    "path_problem",
    "read",
    "templates_of",
    "text_of",
    "vault_path",
]

import json
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from tiered_memory.app.export_file import FORMAT_NAME, ExportFile
from tiered_memory.app.importers.items import Item, SessionItem, read_head
from tiered_memory.model import dates, layout
from tiered_memory.model import note as notes
from tiered_memory.model import session_format as sn
from tiered_memory.model.folders import template_folder
from tiered_memory.model.transcripts import Message

_DATES = ("created", "updated", "started", "ended")
_MARKDOWN = (".md", ".markdown")
# tmem's JSON state files: the two stacks and a project's tasks (live or archived).
_STATE_FILES = frozenset({layout.CONTEXT_STACK, layout.ACTIVE_CONTEXTS})
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# File systems take names of up to 255 bytes; this leaves room for the `-2` of a clash and for
# the temporary name an atomic write may give the file beside it (`.<name>.<random>.tmp`).
_NAME_BYTES = 230
# The whole path, a vault-relative one: macOS takes 1,024 bytes for a path (the vault's own folder
# included), Linux 4,096. Each folder opened in turn, a longer one would be written, and then be
# a file no command (nor git) could open by its path.
_PATH_BYTES = 1024
_TASKS = re.compile(
    rf"(?:{re.escape(layout.PROJECTS)}|{re.escape(layout.ARCHIVE_PROJECTS)})/[^/]+/tasks\.json"
)


# How a tmem export names itself in its first object: the JSON document's first key, the JSON
# Lines header's second (after `"kind": "header"`).
_MARKER = re.compile(r'^\s*\{[^{}]{0,200}?"format"\s*:\s*"' + re.escape(FORMAT_NAME) + '"')


def is_export(path: Path) -> bool:
    """Whether the file opens as a tmem export does (a look at its first bytes, not a parse)."""
    try:
        head = read_head(path, 4096)
    except OSError:
        return False
    return bool(_MARKER.match(head.lstrip("\ufeff")))


def path_problem(path: str) -> str | None:
    """Why an export entry's path is not one import may write (None when it is): a vault-relative
    path of a Markdown note, or of tmem's JSON state at its known place, with no hidden component."""
    if not path:
        return "no path"
    if "\x00" in path or "\\" in path:
        return "a NUL byte or a backslash in the path"
    if _CONTROL.search(path):
        return "a control character in the path"
    pure = PurePosixPath(path)
    if pure.is_absolute():
        return "an absolute path"
    if any(part in ("", ".", "..") for part in path.split("/")):
        return "a '.', '..' or empty component"
    if any(part.startswith(".") for part in pure.parts):
        return "a hidden component"
    if any(len(part.encode("utf-8")) > _NAME_BYTES for part in pure.parts):
        return "a name longer than a file system takes"
    if len(path.encode("utf-8")) > _PATH_BYTES:
        return f"a path longer than {_PATH_BYTES} bytes"
    if path.endswith(".json"):
        if vault_path(path) in _STATE_FILES or _TASKS.fullmatch(vault_path(path)):
            return None
        return "a JSON file that is not tmem's state"
    if not path.endswith(_MARKDOWN) or path.endswith(".excalidraw.md"):
        return "not a Markdown note"
    return None


def vault_path(path: str) -> str:
    """The vault-relative path an export's (checked) path names: as written, except one that starts
    at a tier folder (`long-term/x.md`), which is inside `memory/`."""
    first = path.split("/", 1)[0]
    if first in layout.DIR_TIERS and not path.startswith(layout.MEMORY_DIR + "/"):
        return f"{layout.MEMORY_DIR}/{path}"
    return path


def _meta(frontmatter: dict[str, Any]) -> dict[str, Any]:
    meta = dict(frontmatter)
    for key in _DATES:
        if isinstance(meta.get(key), str):
            meta[key] = dates.to_datetime(meta[key]) or meta[key]
    return meta


def text_of(entry: dict[str, Any]) -> str | None:
    """The file an export's note entry carries byte for byte: `head + body`, when its `head` is
    a frontmatter block closing where the body starts (or empty: the file is its body). None when
    the entry has no such head (an older export, a JSON state file): it is rendered instead."""
    head, body, where = entry.get("head"), entry.get("body"), entry.get("path")
    if not isinstance(head, str) or not isinstance(body, str) or not isinstance(where, str):
        return None
    if where.endswith(".json"):
        return None
    text = head + body
    if head and notes.parse(text, where).body != body:
        return None  # not a frontmatter block of its own: the values are rendered instead
    return text


def note_of(entry: dict[str, Any]) -> notes.Note:
    """The note an export's note entry holds. An export turns values into JSON (a date into
    text), so a note compares with an entry through this: `note_of(note_entry(current))`."""
    given_path = entry.get("path")
    text = text_of(entry)
    if text is not None and isinstance(given_path, str):
        return notes.parse(text, given_path)
    given = entry.get("frontmatter")
    meta = _meta(given if isinstance(given, dict) else {})
    where = given_path if isinstance(given_path, str) else ""
    body = str(entry.get("body") or "")
    if where.endswith(".json"):  # tmem's JSON state: the file is its body, no frontmatter
        return notes.Note(where, {}, body, is_json=True)
    return notes.Note(where, meta, body, has_frontmatter=bool(meta))


class ExportItems:
    """The items of a tmem export, made one entry at a time as the file is read: each pass over
    them (`iter`) reads the file again, so an import checks every item, then files each, holding
    one at a time. `header`: the export's, once a pass is over."""

    def __init__(self, path: Path) -> None:
        self.file = ExportFile(path)

    @property
    def header(self) -> dict[str, Any]:
        return self.file.header

    def __iter__(self) -> Iterator[Item]:
        for entry in self.file.entries():
            yield item_of(entry)


def read(path: Path) -> ExportItems:
    return ExportItems(path)


def item_of(entry: dict[str, Any]) -> Item:
    """The item an export's entry holds: a note kept whole, or a session."""
    content = json.dumps(entry, sort_keys=True, ensure_ascii=False)
    given = entry.get("frontmatter")
    meta = _meta(given if isinstance(given, dict) else {})
    if entry.get("kind") == "note":
        note = note_of(entry)
        source = f"note:{entry.get('id') or note.path}"
        return Item(source, content, note.title, note=note, text=text_of(entry))
    messages = [
        Message(
            str(m.get("role") or "user"),
            str(m.get("content") or ""),
            dates.to_datetime(m.get("timestamp")),
        )
        for m in entry.get("messages") or []
    ]
    session = SessionItem(
        title=str(entry.get("title") or ""),
        messages=messages,
        started=dates.to_datetime(meta.get("started")) or dates.to_datetime(entry.get("started")),
        ended=dates.to_datetime(meta.get("ended")) or dates.to_datetime(entry.get("ended")),
        meta=meta,
        id=str(entry.get("id") or "") or None,
        path=str(entry.get("path") or "") or None,
        extract=False,
        summary=str(entry.get("summary") or "") or None,
    )
    if session.path and not sn.is_session_path(session.path):
        session.path = None
    return Item(f"session:{entry.get('id') or content}", content, session.title, session=session)


def templates_of(header: dict[str, Any]) -> list[str]:
    """The editor's templates folders a whole-vault export names in its header (the folders whose
    notes it carries as templates), each as `template_folder` accepts one: the header is as
    untrusted as the rest. [] when it names none."""
    given = header.get("templates")
    if not isinstance(given, list):
        return []
    return list(dict.fromkeys(f for f in map(template_folder, given) if f is not None))
