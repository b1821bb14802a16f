"""The text a command line names: a file, or stdin, read within bounds.

What arrives this way is untrusted (an agent's hook hands over a `transcript_path`, a person pipes
a command's output): a pipe, a device or a file that never ends must neither hang the command nor
fill the memory. So a named file is opened without waiting (a FIFO with no writer would block the
open) and read only if it is a regular file, or a pipe a person named (`tmem add --file <(cmd)`,
read to its end as stdin is; never a transcript, which an agent names), and no source is read past
`MAX_INPUT_MB`.

A text for one note (`read_input`) is held to what a note may hold, `index.max_file_mb`: a file
larger than that is refused by its size before a byte is read, and a pipe or stdin is read a chunk
at a time and refused as soon as it is past it, so memory never holds more than the limit and one
chunk (a 200 MB pipe held 150 MB before it was refused). The setting is asked for (`Allowed`, which
loads the vault's settings) only once an input is past the setting's default: a short text costs
no settings load, and one shorter than a lowered setting is refused by the operation instead.

A transcript in JSON Lines (an agent's session log) is read a line at a time instead, each line no
longer than `MAX_RECORD_MB` and cut at once to what the session keeps of it
(`model.transcripts.slim_line`): a long session's log passes 128 MB with tool output the session
never stores, and its size is no reason to refuse it. A line past the bound is left out (the
parser says so), not the whole transcript; what is kept is held to `MAX_INPUT_MB`. Those lines are
never gathered: the operation is handed the open file's lines (`open_transcript`) and parses each
as it comes, so memory holds one record and the messages made so far, and a session refused for
its size (`app.input_size.Meter`) leaves the rest of the file unread.
"""

from __future__ import annotations

__all__ = [
    "MAX_INPUT_MB",
    "MAX_RECORD_MB",
    "MAX_WHOLE_MB",
    "Allowed",
    "TranscriptInput",
    "open_transcript",
    "read_input",
]

import contextlib
import io
import itertools
import json
import os
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from tiered_memory.cli import opencode_storage
from tiered_memory.errors import BadInput
from tiered_memory.model import transcripts

# Far above what any one note may hold (index.max_file_mb, checked by the operation), and above a
# long agent session's transcript, whose tool output is mostly cut when it is stored.
MAX_INPUT_MB = 128
# A transcript that is not JSON Lines (a Markdown chat log, a JSON array or pretty-printed object)
# is read whole, text and bytes side by side: up to this much whatever the settings say (far above
# what a session note may hold with index.max_file_mb's default of 2 MB), and up to the setting
# when it is raised past this, never past MAX_INPUT_MB (a session that large is a note that large).
MAX_WHOLE_MB = 32
# index.max_file_mb's default: an input up to this size is read without loading the settings.
SETTING_DEFAULT_MB = 2
_CHUNK = 1024 * 1024  # bytes read at a time from a pipe or a file
_MB = 1024 * 1024

# The vault's index.max_file_mb, asked for only when an input is past what needs no settings.
Allowed = Callable[[], float]
# One record of a transcript read a line at a time: far above a message with a pasted image.
MAX_RECORD_MB = transcripts.RECORD_MB
_PEEK = 64 * 1024  # bytes looked at to tell JSON Lines from the other formats
_HELD = 512 * 1024  # characters of a transcript's kept lines handed over as one text


def read_input(source: str | None, allowed: Allowed | None = None) -> tuple[str, str]:
    """(text, name) of a file or of stdin ('-', or None when stdin is no terminal); a binary, non-
    UTF-8, oversized or irregular source is refused in one line (BadInput). `allowed`: the vault's
    index.max_file_mb, the most one input may hold (without it, MAX_INPUT_MB). An agent's
    transcript is read by `open_transcript`."""
    limit = _Limit(allowed, SETTING_DEFAULT_MB if allowed else MAX_INPUT_MB, _too_large_note)
    if source in (None, "-"):
        if source is None and sys.stdin.isatty():
            raise BadInput("nothing to read: give the text or a FILE, or pipe it on stdin")
        name = "stdin"
        data = _chunked(sys.stdin.buffer, name, limit)
    else:
        name = os.path.basename(source) or source
        with _open_regular(source, pipe=True) as handle:
            limit.check(_file_size(handle), source)  # by its size first: nothing read
            data = _chunked(handle, source, limit)
    _refuse_binary(data, name)
    text = _decoded(data, name, False)
    del data
    return text, name


@dataclass
class TranscriptInput:
    """An agent's transcript as a door hands it over: its whole `text`, or else its JSON Lines a
    line at a time (`lines`, each slimmed as it is read, read only as the parser asks for them)."""

    name: str
    text: str = ""
    lines: Iterator[str] | None = None
    format: str | None = None  # the format it is in, when where it came from says so


@contextlib.contextmanager
def open_transcript(
    source: str | None,
    fmt: str | None = None,
    allowed: Allowed | None = None,
    left_out: opencode_storage.LeftOut | None = None,
) -> Iterator[TranscriptInput]:
    """An agent's transcript, a file or stdin as `read_input` reads them, open for as long as the
    operation reads it. JSON Lines are read a record at a time and never held whole: nothing is
    refused for its size alone, and a parser that stops (a session past what a note may hold)
    leaves the rest unread. `fmt`: the format the person forced, if any. `allowed`: the vault's
    index.max_file_mb, which lets a transcript read whole be larger than MAX_WHOLE_MB. An opencode
    session's folder or id is read from opencode's storage (`opencode_storage`), `left_out` told
    what of it was not read."""
    if source in (None, "-"):
        if source is None and sys.stdin.isatty():
            raise BadInput("nothing to read: give the text or a FILE, or pipe it on stdin")
        yield _transcript(sys.stdin.buffer, "stdin", fmt, allowed)
        return
    name = os.path.basename(source.rstrip("/" + os.sep)) or source
    if opencode_storage.is_session(source):
        if transcripts.normalize_format(fmt) not in (None, "opencode"):
            raise BadInput(f"{source}: a folder or a session id is read as an opencode session only")
        lines = opencode_storage.session_lines(
            source, os.environ, left_out or _unsaid, MAX_RECORD_MB * 1024 * 1024, MAX_INPUT_MB * 1024 * 1024
        )
        handed = _handed_over(name, lines)
        handed.format = "opencode"
        yield handed
        return
    with _open_regular(source, pipe=False) as handle:
        yield _transcript(handle, name, fmt, allowed)


def _unsaid(_name: str, _why: str) -> None:
    pass


def _transcript(handle: BinaryIO, name: str, fmt: str | None, allowed: Allowed | None) -> TranscriptInput:
    start = handle.read(_PEEK)
    _refuse_binary(start, name)
    if not _json_lines(start) or transcripts.normalize_format(fmt) == "markdown":
        # Held whole, and decoded beside its bytes: a smaller bound than a stream's, unless the
        # person raised what a note may hold past it.
        limit = _Limit(allowed, MAX_WHOLE_MB, _too_large_whole)
        limit.check(_file_size(handle), name)
        data = _chunked(handle, name, limit, start)
        text = _decoded(data, name, True)
        del data
        return TranscriptInput(name, text=text)
    return _handed_over(name, _kept(start, handle, name, fmt))


def _handed_over(name: str, lines: Iterator[str]) -> TranscriptInput:
    """A short transcript is handed over as text, which the daemon's socket can carry; a longer
    one as the lines still to read, and its operation runs in this process."""
    held: list[str] = []
    size = 0
    for line in lines:
        held.append(line)
        size += len(line)
        if size > _HELD:
            return TranscriptInput(name, lines=itertools.chain(held, lines))
    return TranscriptInput(name, text="".join(held))


# Text in another encoding than UTF-8 says so at its start (UTF-32's marks first: UTF-16's begin them).
_WIDE_TEXT = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def _refuse_binary(start: bytes | bytearray, name: str) -> None:
    """BadInput when the first bytes of a source are no UTF-8 text: UTF-16 or UTF-32 (named, with
    the way to convert it), or anything with a NUL byte near its start."""
    for mark, encoding in _WIDE_TEXT:
        if start.startswith(mark):
            raise BadInput(f"{name} is {encoding} text, not UTF-8 (iconv -f {encoding} -t UTF-8 converts it)")
    if b"\x00" in start[:8192]:
        raise BadInput(f"{name} is a binary file, not text")


def _file_size(handle: BinaryIO) -> int:
    """The size of the regular file `handle` reads (0 for a pipe, or a stream with no file)."""
    try:
        info = os.fstat(handle.fileno())
    except (OSError, ValueError):
        return 0
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


def _json_lines(start: bytes) -> bool:
    """Whether a transcript beginning with `start` reads as JSON Lines: a JSON object on its first
    line (or a first line longer than was looked at). A pretty-printed object, an array or a
    Markdown log is read whole, within MAX_WHOLE_MB."""
    body = start.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not body.startswith(b"{"):
        return False
    end = body.find(b"\n")
    if end < 0:
        return True
    try:
        json.loads(body[:end])
    except (ValueError, RecursionError):
        return False
    return True


def _kept(start: bytes, handle: BinaryIO, name: str, fmt: str | None) -> Iterator[str]:
    """The lines of a JSON Lines transcript as the session keeps them, one at a time."""
    most = MAX_INPUT_MB * 1024 * 1024
    total = 0
    for line in _lines(start, handle):
        if isinstance(line, int):
            kept = transcripts.left_out_line(line, MAX_RECORD_MB)
        else:
            text = _decoded(line, name, transcript=True, last=total > 0 and not line.endswith(b"\n"))
            kept = transcripts.slim_line(text, fmt)
        total += len(kept)
        if total > most:
            raise BadInput(
                f"{name}: what a session keeps of it is larger than {MAX_INPUT_MB} MB; nothing stored"
            )
        yield kept


def _lines(start: bytes, handle: BinaryIO) -> Iterator[bytes | int]:
    """The lines of `start` + the rest of `handle`, each with its end; a line longer than
    MAX_RECORD_MB is not held: its length in bytes comes instead."""
    most = MAX_RECORD_MB * 1024 * 1024
    rest = io.BufferedReader(_Joined(start, handle), buffer_size=1024 * 1024)
    while line := rest.readline(most + 1):
        if len(line) <= most or line.endswith(b"\n"):
            yield line
            continue
        size = len(line)
        while line and not line.endswith(b"\n"):
            line = rest.readline(1024 * 1024)
            size += len(line)
        yield size


class _Joined(io.RawIOBase):
    """`start`, then what `handle` still holds: the bytes looked at are read again as lines."""

    def __init__(self, start: bytes, handle: BinaryIO) -> None:
        self._start = memoryview(start)
        self._handle = handle

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._start:
            n = min(len(buffer), len(self._start))
            buffer[:n] = self._start[:n]
            self._start = self._start[n:]
            return n
        data = self._handle.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


@contextlib.contextmanager
def _open_regular(source: str, *, pipe: bool) -> Iterator[BinaryIO]:
    """`source` opened without waiting, if it is a regular file, or a pipe a person named when
    `pipe`; else BadInput."""
    try:
        fd = os.open(source, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise BadInput(f"{source}: no such file") from None
    except OSError as exc:
        raise BadInput(f"{source}: cannot read it ({exc.strerror or type(exc).__name__})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if pipe and stat.S_ISFIFO(info.st_mode):
            os.set_blocking(fd, True)  # its writer's output, to its end (none connected: nothing)
            yield handle
            return
        if not stat.S_ISREG(info.st_mode):
            raise BadInput(f"{source}: not a regular file (a folder, pipe or device); nothing read")
        yield handle


class _Limit:
    """The most bytes one input may hold: `free_mb` without asking, or the vault's
    index.max_file_mb when it is more (asked of `allowed` once, and only for an input past
    `free_mb`), never more than MAX_INPUT_MB."""

    def __init__(
        self, allowed: Allowed | None, free_mb: float, refusal: Callable[[str, _Limit], BadInput]
    ) -> None:
        self._allowed = allowed
        self.free_mb = free_mb
        self.setting_mb: float | None = None  # index.max_file_mb, once asked
        self.most_mb: float = min(free_mb, MAX_INPUT_MB)
        self._refusal = refusal

    def over(self, size: int) -> bool:
        if size <= self.most_mb * _MB:
            return False
        if self._allowed is not None and self.setting_mb is None:
            self.setting_mb = float(self._allowed())
            self.most_mb = min(float(MAX_INPUT_MB), max(self.free_mb, self.setting_mb))
        return size > self.most_mb * _MB

    def check(self, size: int, name: str) -> None:
        if self.over(size):
            raise self._refusal(name, self)


def _chunked(handle: BinaryIO, name: str, limit: _Limit, start: bytes = b"") -> bytearray:
    """`start` and the rest of `handle`, read a chunk at a time: a source that grows while it is
    read (a transcript being written) is read as far as that, and one past `limit` is refused as
    soon as it is past it, holding no more than the limit and one chunk."""
    data = bytearray(start)
    limit.check(len(data), name)
    while chunk := handle.read(_CHUNK):
        data += chunk
        limit.check(len(data), name)
    return data


def _too_large_note(name: str, limit: _Limit) -> BadInput:
    if limit.setting_mb is None or limit.most_mb < limit.setting_mb:
        return BadInput(f"{name} is larger than {limit.most_mb:g} MB; nothing read")
    return BadInput(
        f"{name} is larger than index.max_file_mb ({limit.setting_mb:g} MB), the most one note may hold; "
        "nothing read"
    )


def _too_large_whole(name: str, limit: _Limit) -> BadInput:
    what = (
        f"{name} is larger than {limit.most_mb:g} MB, the most a transcript read whole (Markdown, or a "
        "JSON array or object rather than JSON Lines) may hold"
    )
    if limit.most_mb >= MAX_INPUT_MB:
        return BadInput(f"{what} whatever index.max_file_mb says; nothing read")
    return BadInput(f"{what}; nothing read (raise index.max_file_mb, up to {MAX_INPUT_MB} MB, to read it)")


def _decoded(data: bytes | bytearray, name: str, transcript: bool, last: bool = False) -> str:
    """The UTF-8 text of `data`. In a transcript, a character cut off at the very end of a last
    line that has no end (read while, or after, its writer was killed mid-write) is left out: the
    transcript's parser then deals with that incomplete line as with any other, and says so.
    `last`: `data` is that last line alone, read apart from the lines before it."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        cut = exc.end == len(data) and exc.reason == "unexpected end of data"
        if transcript and cut and (last or b"\n" in data[: exc.start]):
            return data[: exc.start].decode("utf-8")
        raise BadInput(f"{name} is not UTF-8 text") from None
