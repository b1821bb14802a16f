"""What each importer reads a tool's export into, and the helpers the readers share."""

from __future__ import annotations

__all__ = [
    "MAX_MEMBER_MB",
    "Item",
    "Reader",
    "SessionItem",
    "conversations_file",
    "load_json",
    "read_head",
    "read_text",
    "text_of",
]

import hashlib
import json
import os
import stat
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tiered_memory.app.filing import NewNote
from tiered_memory.errors import BadInput
from tiered_memory.model import note as notes
from tiered_memory.model.transcripts import Message


@dataclass
class SessionItem:
    title: str
    messages: list[Message]
    started: datetime | None = None
    ended: datetime | None = None
    meta: dict[str, Any] = field(default_factory=dict)  # extra frontmatter (origin, source tool)
    id: str | None = None  # kept from a tmem export; else derived from the source id
    path: str | None = None
    extract: bool = True  # False when its memories come along as notes (a tmem export)
    summary: str | None = None  # as written (a tmem export); else computed


@dataclass
class Item:
    """One thing to import: exactly one of `memory`, `note`, `session`."""

    source: str  # the id the source tool gave it (unique within that tool's export)
    content: str  # what decides "changed since the last import"
    title: str = ""
    memory: NewNote | None = None
    note: notes.Note | None = None
    session: SessionItem | None = None
    text: str | None = None  # a note's file as the source held it, byte for byte (else rendered)

    @property
    def digest(self) -> str:
        return hashlib.blake2b(self.content.encode("utf-8"), digest_size=12).hexdigest()


# What a reader gives: its items, which an import goes through twice (checks, then filing), so a
# list, or an object that reads its file again on each pass (`tmem.ExportItems`).
Reader = Callable[[Path], Iterable[Item]]

# The most an archive's member may inflate to: it is read whole into memory and parsed there. A
# year of daily chats is tens of megabytes; past this it is a bomb rather than a history.
MAX_MEMBER_MB = 512


# ---- helpers the readers share --------------------------------------------------------------------


def read_text(file: Path, encoding: str = "utf-8") -> str:
    """The text of a regular file; OSError for anything else (a pipe or a device would block or
    never end), UnicodeDecodeError for bytes that are not text. A link is followed: the readers
    that list a folder leave its links out themselves."""
    fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{file}: not a regular file (a pipe, socket or device)")
        return handle.read().decode(encoding)


def read_head(file: Path, size: int) -> str:
    """The first `size` bytes of a regular file, as text (a character cut at the end, or bytes
    that are not UTF-8, replaced); OSError for anything else, as `read_text`."""
    fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{file}: not a regular file (a pipe, socket or device)")
        return handle.read(size).decode("utf-8", "replace")


def load_json(path: Path) -> Any:
    """A JSON file, or the named JSON inside a .zip export."""
    try:
        text = read_text(path, "utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read it ({exc.__class__.__name__})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:  # where it breaks, so the person can look there
        raise BadInput(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # RecursionError: nested thousands deep
        raise BadInput(f"{path}: not JSON ({exc.__class__.__name__})") from None


def conversations_file(path: Path) -> Any:
    """`conversations.json` of a Claude.ai or ChatGPT export: the file, its folder, or the .zip."""
    if path.is_dir():
        path = path / "conversations.json"
        if not path.is_file():
            raise BadInput(f"{path}: no conversations.json in that folder")
    if path.suffix == ".zip":
        try:
            with zipfile.ZipFile(path) as archive:
                member = next(
                    (i for i in archive.infolist() if i.filename.endswith("conversations.json")), None
                )
                if member is None:
                    raise BadInput(f"{path}: no conversations.json in the archive")
                _check_member(path, member)
                data = archive.read(member)
        except (zipfile.BadZipFile, ValueError, RecursionError, OSError, EOFError) as exc:
            raise BadInput(f"{path}: not a readable export ({exc.__class__.__name__})") from None
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise BadInput(f"{path}: {member.filename} in the archive is not UTF-8 text") from None
        try:
            return json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise BadInput(
                f"{path}: {member.filename} in the archive is not JSON ({exc.__class__.__name__})"
            ) from None
    return load_json(path)


def _check_member(path: Path, member: zipfile.ZipInfo) -> None:
    """An archive is untrusted: the member read must be a plain file under a plain name, and no
    larger than MAX_MEMBER_MB once inflated. Nothing is extracted to disk, but a name with `..`
    or a leading `/`, or a link, says the archive was made to trick an extractor, and a member
    that inflates past the limit (a few kilobytes can declare gigabytes) would be read whole
    into memory before a byte of it is parsed."""
    name = member.filename
    if name.startswith("/") or "\\" in name or ".." in name.split("/"):
        raise BadInput(f"{path}: the archive names {name!r}, a path outside it; not read")
    if stat.S_ISLNK(member.external_attr >> 16):
        raise BadInput(f"{path}: {name} in the archive is a symbolic link, not a file; not read")
    if member.file_size > MAX_MEMBER_MB * 1024 * 1024:
        raise BadInput(
            f"{path}: {name} in the archive inflates to {member.file_size / 1048576:.0f} MB, past the "
            f"{MAX_MEMBER_MB} MB one member may; not read"
        )


def text_of(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
