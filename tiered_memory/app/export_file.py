"""A tmem export read a piece at a time: its entries one by one, never the whole file at once.

`tmem import` of a 92 MB export held 762 MB (the text, every entry parsed, every item made of
them); read this way, memory holds the entry being read and a buffer of the file around it. Both
formats `app.export` writes are read (docs/export.md): JSON Lines (a header object, then one
entry after another) and the JSON document (`{"format": ..., "notes": [...], "sessions":
[...]}`), whose two lists are walked entry by entry whatever their place among the header's
keys. The file is untrusted: what is not such an export is BadInput in one line, as
`export.parse_export` says it, and an entry is never read past a value it cannot end.
"""

from __future__ import annotations

__all__ = ["FORMAT_NAME", "ExportFile"]

import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from tiered_memory.errors import BadInput

FORMAT_NAME = "tmem-export"

_SPACE = re.compile(r"[ \t\n\r]*")
_CHUNK = 1 << 20  # characters read at a time; a value longer than the buffer doubles it
_DECODER = json.JSONDecoder()
_KINDS = {"notes": "note", "sessions": "session"}
_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class _Scanner:
    """JSON values read one after another from a text stream, through a buffer that holds the
    value being read (and what follows it in the last chunk read)."""

    def __init__(self, handle: IO[str]) -> None:
        self.handle = handle
        self.buffer = ""
        self.at = 0
        self.ended = False

    def _more(self) -> bool:
        if self.ended:
            return False
        rest = self.buffer[self.at :]
        chunk = self.handle.read(max(_CHUNK, len(rest)))
        self.buffer, self.at = rest + chunk, 0
        self.ended = not chunk
        return bool(chunk)

    def peek(self) -> str:
        """The next character that is not white space ("" at the end), not taken."""
        while True:
            self.at = _SPACE.match(self.buffer, self.at).end()  # type: ignore[union-attr]  # always matches
            if self.at < len(self.buffer):
                return self.buffer[self.at]
            if not self._more():
                return ""

    def take(self, allowed: str) -> str:
        found = self.peek()
        if not found or found not in allowed:
            raise ValueError(f"expected one of {allowed!r}")
        self.at += 1
        return found

    def value(self) -> Any:
        """The next JSON value. A value that reaches the end of the buffer may go on in the
        file (a number cut in two, an entry longer than a chunk): it is read again with more."""
        self.peek()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buffer, self.at)
            except json.JSONDecodeError:
                if self.ended:
                    raise
            else:
                if end < len(self.buffer) or self.ended:
                    self.at = end
                    return value
            self._more()


class ExportFile:
    """A tmem export on disk, read entry by entry. `entries()` reads the file afresh on each call;
    `header` is the file's header once a pass has read it (a JSON document may name a header key
    after its lists: it is whole at the end of the pass). `count`: the entries the last pass read;
    `known`: their kinds and ids, after `keys()`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header: dict[str, Any] = {}
        self.count = 0
        self.known: set[tuple[Any, Any]] = set()

    def entries(self) -> Iterator[dict[str, Any]]:
        try:
            fd = os.open(self.path, _FLAGS)
        except OSError as exc:
            raise BadInput(f"{self.path}: cannot read it ({exc.__class__.__name__})") from None
        with os.fdopen(fd, "r", encoding="utf-8", newline="") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise BadInput(f"{self.path}: cannot read it (not a regular file)")
            self.count = 0
            try:
                for entry in self._read(_Scanner(handle)):
                    self.count += 1
                    yield entry
            except (OSError, UnicodeDecodeError) as exc:
                raise BadInput(f"{self.path}: cannot read it ({exc.__class__.__name__})") from None
            except (ValueError, AttributeError, TypeError, RecursionError) as exc:
                raise BadInput(f"{self.path}: not a tmem export ({exc.__class__.__name__})") from None

    def keys(self) -> set[tuple[Any, Any]]:
        """The (kind, id) of every entry, kept in `known`: one pass, which checks that the whole
        file is an export."""
        self.known = {(entry.get("kind"), entry.get("id")) for entry in self.entries()}
        return self.known

    def _read(self, scan: _Scanner) -> Iterator[dict[str, Any]]:
        if scan.peek() == "\ufeff":
            scan.at += 1
        if scan.peek() == "":
            self.header = {}  # an empty file: an export of nothing yet, as `read_export` has it
            return
        scan.take("{")
        first: dict[str, Any] = {}
        lists = False
        if scan.peek() == "}":
            scan.at += 1
        else:
            while True:
                key = scan.value()
                if not isinstance(key, str):
                    raise ValueError("a key that is not a string")
                scan.take(":")
                if key in _KINDS and scan.peek() == "[":
                    lists = True
                    yield from self._list(scan, _KINDS[key])
                else:
                    first[key] = scan.value()
                if scan.take(",}") == "}":
                    break
        if lists:  # one JSON document: nothing may follow it
            if scan.peek() != "":
                raise ValueError("text after the document")
            self.header = {"kind": "header", **first}
        else:  # JSON Lines: the object read was the header, the entries follow it
            self.header = first
            if first.get("format") == FORMAT_NAME:
                while scan.peek() != "":
                    entry = scan.value()
                    if isinstance(entry, dict) and entry.get("kind") in ("note", "session"):
                        yield entry
        if self.header.get("format") != FORMAT_NAME:
            raise BadInput(f"{self.path}: not a tmem export (no '{FORMAT_NAME}' header)")

    @staticmethod
    def _list(scan: _Scanner, kind: str) -> Iterator[dict[str, Any]]:
        scan.take("[")
        if scan.peek() == "]":
            scan.at += 1
            return
        while True:
            yield {"kind": kind, **scan.value()} | {"kind": kind}
            if scan.take(",]") == "]":
                return
