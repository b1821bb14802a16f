"""An opencode session read from opencode's own storage, handed to `tmem ingest` as JSON Lines.

opencode keeps its sessions in its data folder (`$XDG_DATA_HOME/opencode`, else
`~/.local/share/opencode`). Up to version 1.1 each is JSON files under `storage/`:

    storage/session/<project id>/<session id>.json   the session: id, title, directory, time
    storage/message/<session id>/<message id>.json   a message: role, time, model, path.cwd
    storage/part/<message id>/<part id>.json         what it holds: text, tool, reasoning, file...

Later versions keep the same JSON in the SQLite database `opencode.db` beside it (tables
`session`, `message` and `part`, the JSON in their `data` column), and `opencode export <id>`
prints one session from either as one JSON object, which `tmem ingest` reads as a file.

A person names a session by its folder of messages (`storage/message/ses_…`) or by its id
(`ses_…`, looked up in the JSON storage, then in the database). Only that session's files are
read: each folder below the storage folder and each file is opened relative to the one above it
and never through a symbolic link (a link placed inside the storage leads nowhere, and says so),
no file past `MAX_RECORD_MB`, no part kept whole that the session would cut (each is slimmed as
it is read, `model.transcripts.slim_opencode_part`), and no more than `MAX_INPUT_MB` handed over.
A file that is not UTF-8 JSON (one opencode was still writing) is left out with a warning. The
database is opened read-only and never written.
"""

from __future__ import annotations

__all__ = ["SESSION_ID", "LeftOut", "data_folder", "is_session", "session_lines"]

import contextlib
import json
import os
import re
import sqlite3
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tiered_memory.errors import BadInput
from tiered_memory.model import transcripts

# opencode's ids: a prefix, then 26 characters of hex time and base62 randomness.
SESSION_ID = re.compile(r"ses_[0-9A-Za-z]{8,64}")
_ID = re.compile(r"[a-z]{3}_[0-9A-Za-z]{8,64}")
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)

# Told of each file or folder left out: (its name, why: one of present.sessions.LEFT_OUT).
LeftOut = Callable[[str, str], None]


def data_folder(env: Mapping[str, str]) -> Path:
    """opencode's data folder, as opencode finds it (xdg-basedir)."""
    base = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME") or Path.home()) / ".local" / "share")
    return Path(base) / "opencode"


def is_session(source: str) -> bool:
    """Whether `source` names an opencode session rather than a file: a folder, or an id where
    there is no file of that name."""
    if os.path.isdir(source):
        return True
    return SESSION_ID.fullmatch(source) is not None and not os.path.lexists(source)


def session_lines(
    source: str, env: Mapping[str, str], left_out: LeftOut, most_record: int, most: int
) -> Iterator[str]:
    """The session `source` names as JSON Lines (`{"info": session}`, then `{"info": message,
    "parts": [...]}` a message, oldest first); BadInput when it names none. At most `most_record`
    bytes a file, `most` characters in all."""
    folder = Path(os.path.abspath(source))  # its parents as named: a link on the way is not resolved
    if not folder.is_dir() and SESSION_ID.fullmatch(source) is None:
        raise BadInput(f"{source}: not an opencode session id (ses_…)")
    if folder.is_dir():
        if folder.parent.name != "message" or SESSION_ID.fullmatch(folder.name) is None:
            raise BadInput(
                f"{source}: not an opencode session's folder (storage/message/ses_…); "
                "give its id or `opencode export <id>` output"
            )
        storage, session = folder.parent.parent, folder.name
    else:
        storage, session = data_folder(env) / "storage", source
        if not (storage / "message" / session).is_dir():
            database = data_folder(env) / "opencode.db"
            if not database.is_file():
                raise BadInput(f"{source}: no opencode session with that id in {data_folder(env)}")
            return _bounded(_database_lines(database, session, source, left_out, most_record), most, source)
    return _bounded(_storage_lines(storage, session, left_out, most_record), most, source)


def _bounded(lines: Iterator[str], most: int, name: str) -> Iterator[str]:
    total = 0
    for line in lines:
        total += len(line)
        if total > most:
            raise BadInput(
                f"{name}: what a session keeps of it is larger than {most // 1048576} MB; nothing stored"
            )
        yield line


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


# ---- JSON storage ---------------------------------------------------------------------------------


def _storage_lines(storage: Path, session: str, left_out: LeftOut, most: int) -> Iterator[str]:
    try:
        # The storage folder is where the person pointed (a link on the way there is theirs to make).
        root = os.open(storage, os.O_RDONLY | _DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise BadInput(f"{storage}: cannot read it ({exc.strerror or type(exc).__name__})") from None
    with contextlib.closing(_Fd(root)):
        info = _session_info(root, session, left_out, most)
        yield _line({"info": info if info is not None else {"id": session}})
        messages = _folder(root, ("message", session), _unsaid)
        if messages is None:
            raise BadInput(
                f"{storage}/message/{session}: not a folder (a symbolic link is not followed); nothing read"
            )
        with contextlib.closing(_Fd(messages)):
            # A message is the one its file names, of this session: the id and session written
            # inside it could name another session's message, whose parts it would bring in.
            found = [
                {**transcripts.slim_opencode_info(m), "id": n.removesuffix(".json"), "sessionID": session}
                for n, m in ((n, _json(messages, n, left_out, most)) for n in _names(messages))
                if isinstance(m, dict)
            ]
        found.sort(key=_message_order)
        for message in found:
            parts = _parts(root, str(message.get("id") or ""), left_out, most)
            yield _line({"info": message, "parts": parts})


def _session_info(root: int, session: str, left_out: LeftOut, most: int) -> dict[str, Any] | None:
    """The session's own file, in whichever project folder holds it."""
    sessions = _folder(root, ("session",), left_out)
    if sessions is None:
        return None
    with contextlib.closing(_Fd(sessions)):
        for project in _names(sessions, files=False):
            folder = _folder(sessions, (project,), left_out)
            if folder is None:
                continue
            with contextlib.closing(_Fd(folder)):
                if f"{session}.json" in _names(folder):
                    info = _json(folder, f"{session}.json", left_out, most)
                    if isinstance(info, dict):
                        return transcripts.slim_opencode_info(info)
    return None


def _parts(root: int, message: str, left_out: LeftOut, most: int) -> list[dict[str, Any]]:
    if _ID.fullmatch(message) is None:
        return []
    folder = _folder(root, ("part", message), left_out)
    if folder is None:
        return []
    with contextlib.closing(_Fd(folder)):
        # Each slimmed as soon as it is read: a message may hold many long tool outputs.
        return [
            transcripts.slim_opencode_part(p)
            for p in (_json(folder, n, left_out, most) for n in sorted(_names(folder, left_out=left_out)))
            if isinstance(p, dict)
        ]


def _message_order(message: dict[str, Any]) -> tuple[float, str]:
    times = message.get("time")
    created = times.get("created") if isinstance(times, dict) else None
    number = created if isinstance(created, (int, float)) and not isinstance(created, bool) else 0
    return float(number), str(message.get("id") or "")


def _unsaid(_name: str, _why: str) -> None:
    pass


class _Fd:
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def close(self) -> None:
        os.close(self.fd)


def _folder(parent: int, names: tuple[str, ...], left_out: LeftOut) -> int | None:
    """The folder at `names` below `parent`, opened without following a link (None if it is not
    there, or is no folder: a link is said so)."""
    fd = parent
    for name in names:
        try:
            inner = os.open(name, _FLAGS | _DIRECTORY, dir_fd=fd)
        except OSError:
            inner = -1
            with contextlib.suppress(OSError):
                if stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    left_out(name, "link")
        if fd != parent:
            os.close(fd)
        if inner < 0:
            return None
        fd = inner
    return fd


def _names(folder: int, *, files: bool = True, left_out: LeftOut | None = None) -> list[str]:
    """The names of the JSON files (else the folders) in `folder`, links left out (and said so)."""
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_symlink():
                if left_out is not None and entry.name.endswith(".json"):
                    left_out(entry.name, "link")
                continue
            if files and entry.name.endswith(".json") and entry.is_file(follow_symlinks=False):
                found.append(entry.name)
            elif not files and entry.is_dir(follow_symlinks=False):
                found.append(entry.name)
    return found


def _json(folder: int, name: str, left_out: LeftOut, most: int) -> Any:
    """The JSON in file `name` of `folder` (None, with a warning, when it cannot be read as such)."""
    try:
        fd = os.open(name, _FLAGS | _NONBLOCK, dir_fd=folder)
    except OSError:
        left_out(name, "unreadable")
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            left_out(name, "irregular")
            return None
        if info.st_size > most:
            left_out(name, "large")
            return None
        data = handle.read(most + 1)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        left_out(name, "not-json")
        return None


# ---- the database ---------------------------------------------------------------------------------


def _database_lines(database: Path, session: str, name: str, left_out: LeftOut, most: int) -> Iterator[str]:
    """The session in opencode's database, opened read-only; a row past `most` bytes is left out
    without being read, each part slimmed as it comes."""
    if os.path.islink(database):
        raise BadInput(f"{database} is a symbolic link; not followed")
    try:
        connection = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise BadInput(f"{database}: cannot open it ({exc})") from None
    small = "CASE WHEN length(CAST(data AS BLOB)) > ? THEN NULL ELSE data END"
    with contextlib.closing(connection):
        try:
            row = connection.execute(
                "SELECT id, title, directory, time_created FROM session WHERE id = ?", (session,)
            ).fetchone()
            if row is None:
                raise BadInput(f"{name}: no opencode session with that id in {database}")
            info = {"id": row[0], "title": row[1], "directory": row[2], "time": {"created": row[3]}}
            yield _line({"info": info})
            messages = connection.execute(
                f"SELECT id, {small} FROM message WHERE session_id = ? ORDER BY time_created, id",
                (most, session),
            ).fetchall()
            for message_id, data in messages:
                parts = []
                for part_id, part in connection.execute(
                    f"SELECT id, {small} FROM part WHERE message_id = ? ORDER BY id", (most, message_id)
                ):
                    if part is None:
                        left_out(part_id, "large")
                    parts.append(transcripts.slim_opencode_part(_decoded(part)))
                message = {
                    **transcripts.slim_opencode_info(_decoded(data)),
                    "id": message_id,
                    "sessionID": session,
                }
                yield _line({"info": message, "parts": parts})
        except sqlite3.Error as exc:
            raise BadInput(f"{database}: not an opencode database as expected ({exc})") from None


def _decoded(data: Any) -> dict[str, Any]:
    try:
        value = json.loads(data) if isinstance(data, (str, bytes)) else None
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}
