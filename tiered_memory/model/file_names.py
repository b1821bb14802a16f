"""File names every clone of a vault can check out: on Linux, macOS and Windows. Pure: no I/O.

A vault travels through git, and git on Windows cannot create a file named after a device (`con`,
`aux`, `nul`, `com1`..., in any case and with any extension), with a character Windows refuses
(`<>:"/\\|?*`, controls) or ending in a dot or a space: the checkout of the whole vault fails.
macOS and Windows see names differing only in case (or in Unicode normalisation on macOS) as one
name, so two such files in one folder overwrite each other there. Every name tmem makes goes
through `portable`; `problem` says why an existing name will not check out (`tmem doctor`).
"""

from __future__ import annotations

__all__ = [
    "COUNTER_ROOM",
    "MAX_NAME_BYTES",
    "RESERVED",
    "RESERVED_SUFFIX",
    "fold",
    "is_reserved",
    "portable",
    "problem",
    "unportable",
]

import re
import unicodedata
from collections.abc import Iterable

# Windows' device names: reserved as a file's name up to its first dot, in any case. The
# superscript digits count as digits there too; CONIN$ and CONOUT$ are consoles.
RESERVED = frozenset(
    {"con", "prn", "aux", "nul", "conin$", "conout$"}
    | {f"{device}{digit}" for device in ("com", "lpt") for digit in "0123456789\u00b9\u00b2\u00b3"}
)
# A name's bytes in UTF-8 that every system takes: ext4 and APFS count 255 bytes, NTFS 255 UTF-16
# units (never more than the UTF-8 bytes).
MAX_NAME_BYTES = 255
COUNTER_ROOM = 10  # what `portable` leaves of those for a counter a creator adds on a clash (`-2`)
_FORBIDDEN = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
RESERVED_SUFFIX = "-note"


def is_reserved(name: str) -> bool:
    """Whether Windows takes `name` for a device: its part before the first dot, spaces at its
    end left out, is one of `RESERVED` whatever its case (`CON`, `con.md`, `Aux.tar.gz`, `nul .md`)."""
    return name.split(".", 1)[0].rstrip(" ").casefold() in RESERVED


def problem(name: str) -> str | None:
    """Why Windows or macOS cannot check out a file or folder called `name`, or None when all can."""
    if name in ("", ".", ".."):
        return "not a name"
    if is_reserved(name):
        return f"'{name.split('.', 1)[0].rstrip(' ')}' is a device name on Windows"
    found = _FORBIDDEN.search(name)
    if found:
        char = found.group()
        shown = repr(char)[1:-1] if char.isprintable() else f"\\x{ord(char):02x}"
        return f"'{shown}' is a character Windows refuses in a name"
    if name[-1] in ". ":
        return "it ends in a dot or a space, which Windows drops"
    if len(name.encode("utf-8", errors="surrogateescape")) > MAX_NAME_BYTES:
        return f"it is longer than {MAX_NAME_BYTES} bytes"
    return None


def portable(name: str) -> str:
    """`name` (a file's, with its suffix, or a folder's) as a name every system can check out:
    characters Windows refuses become spaces, spaces at either end and dots at its end go, a device name
    gets `-note` after its stem (`con.md` -> `con-note.md`, `Aux` -> `Aux-note`), and a name too
    long is cut, its suffix kept and room left for a counter. A name that is fine is returned as it is."""
    if problem(name) is None:
        return name
    clean = re.sub(" {2,}", " ", _FORBIDDEN.sub(" ", name)).lstrip(" ").rstrip(" .") or "note"
    if is_reserved(clean):  # `con.x.md`: the part before the first dot is what Windows reads
        head = clean.split(".", 1)[0]
        clean = f"{head.rstrip(' ')}{RESERVED_SUFFIX}{clean[len(head) :]}"
    stem, dot, suffix = clean.rpartition(".")
    if not dot:
        stem, suffix = clean, ""
    else:
        suffix = f".{suffix}"
    room = MAX_NAME_BYTES - COUNTER_ROOM - len(suffix.encode("utf-8", errors="surrogateescape"))
    while stem and len(stem.encode("utf-8", errors="surrogateescape")) > room:
        stem = stem[:-1]
    return (stem.rstrip(" .") or "note") + suffix


def fold(name: str) -> str:
    """The key under which macOS and Windows see `name`: two names with the same key are one
    file there (case, and on macOS Unicode normalisation, make no difference)."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


def unportable(paths: Iterable[str]) -> list[tuple[str, str]]:
    """Of a vault's files (`/`-separated paths, as git lists them), each file or folder Windows or
    macOS cannot check out, once (a folder's files are not named again), with why: a name
    `problem` finds, or names of one folder differing only in case (there, one file hides the
    other). Sorted by path."""
    found: dict[str, str] = {}
    spellings: dict[str, set[str]] = {}
    for path in paths:
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            here = "/".join(parts[:depth])
            spellings.setdefault(fold(here), set()).add(here)
            why = problem(parts[depth - 1])
            if why is not None:
                found.setdefault(here, why)
                break
    for same in spellings.values():
        if len(same) > 1:
            first, *others = sorted(same)
            for other in others:
                found.setdefault(other, f"differs only in case from {first}")
    return sorted((path, why) for path, why in found.items() if not _under(path, found))


def _under(path: str, found: dict[str, str]) -> bool:
    parts = path.split("/")
    return any("/".join(parts[:depth]) in found for depth in range(1, len(parts)))
