"""The text a command line names: a file, or stdin, read within bounds.

What arrives this way is untrusted (an agent's hook hands over a `transcript_path`, a person pipes
a command's output): a pipe, a device or a file that never ends must neither hang the command nor
fill the memory. So a named file is opened without waiting (a FIFO with no writer would block the
open) and read only if it is a regular file, or a pipe a person named (`tmem add --file <(cmd)`,
read to its end as stdin is; never a transcript, which an agent names), and no source is read past
`MAX_INPUT_MB`.
"""

from __future__ import annotations

__all__ = ["MAX_INPUT_MB", "read_input"]

import os
import stat
import sys
from typing import BinaryIO

from tiered_memory.errors import BadInput

# Far above what any one note may hold (index.max_file_mb, checked by the operation), and above a
# long agent session's transcript, whose tool output is mostly cut when it is stored.
MAX_INPUT_MB = 128


def read_input(source: str | None, *, transcript: bool = False) -> tuple[str, str]:
    """(text, name) of a file or of stdin ('-', or None when stdin is no terminal); a binary, non-
    UTF-8, oversized or irregular source is refused in one line (BadInput). `transcript`: an
    agent's log, which a writer killed mid-line can leave with half a character at its end."""
    if source in (None, "-"):
        if source is None and sys.stdin.isatty():
            raise BadInput("nothing to read: give the text or a FILE, or pipe it on stdin")
        name = "stdin"
        data = _bounded(sys.stdin.buffer, name)
    else:
        name = os.path.basename(source) or source
        data = _read_file(source, pipe=not transcript)
    if b"\x00" in data[:8192]:
        raise BadInput(f"{name} is a binary file, not text")
    return _decoded(data, name, transcript), name


def _read_file(source: str, *, pipe: bool) -> bytes:
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
            return _bounded(handle, source)
        if not stat.S_ISREG(info.st_mode):
            raise BadInput(f"{source}: not a regular file (a folder, pipe or device); nothing read")
        if info.st_size > MAX_INPUT_MB * 1024 * 1024:
            raise BadInput(f"{source} is larger than {MAX_INPUT_MB} MB; nothing read")
        return _bounded(handle, source)


def _bounded(handle: BinaryIO, name: str) -> bytes:
    """At most MAX_INPUT_MB of `handle`: a source that grows while it is read (a transcript being
    written) is read as far as that, and one past it is refused rather than read to its end."""
    most = MAX_INPUT_MB * 1024 * 1024
    data = handle.read(most + 1)
    if len(data) > most:
        raise BadInput(f"{name} is larger than {MAX_INPUT_MB} MB; nothing read")
    return data


def _decoded(data: bytes, name: str, transcript: bool) -> str:
    """The UTF-8 text of `data`. In a transcript, a character cut off at the very end of a last
    line that has no end (read while, or after, its writer was killed mid-write) is left out: the
    transcript's parser then deals with that incomplete line as with any other, and says so."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        cut = exc.end == len(data) and exc.reason == "unexpected end of data"
        if transcript and cut and b"\n" in data[: exc.start]:
            return data[: exc.start].decode("utf-8")
        raise BadInput(f"{name} is not UTF-8 text") from None
