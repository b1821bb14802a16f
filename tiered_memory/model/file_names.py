"""File names every clone of a vault can check out: on Linux, macOS and Windows. Pure: no I/O.

A vault travels through git, and git on Windows cannot create a file named after a device (`con`,
`aux`, `nul`, `com1`..., in any case and with any extension), with a character Windows refuses
(`<>:"/\\|?*`, controls) or ending in a dot or a space: the checkout of the whole vault fails.
macOS and Windows see names differing only in case (or in Unicode normalisation on macOS) as one
name, so two such files in one folder overwrite each other there. Every name tmem makes goes
through `portable`. A name a person chose (an import, a restore) goes through `kept` and
`fit_path` instead: changed only where a clone could not hold it. `problem` says why an existing
name will not check out (`tmem doctor`).
"""

from __future__ import annotations

__all__ = [
    "COUNTER_ROOM",
    "MAX_NAME_BYTES",
    "MAX_PATH",
    "RESERVED",
    "RESERVED_SUFFIX",
    "fit_path",
    "fold",
    "is_reserved",
    "kept",
    "path_problem",
    "portable",
    "problem",
    "unportable",
    "why_renamed",
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
# Windows' MAX_PATH, in UTF-16 units: git for Windows cannot check out a longer path (without
# `core.longpaths`), and the vault's own folder comes on top of the path inside it.
MAX_PATH = 260
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
    return _cut(_undevice(clean), MAX_NAME_BYTES - COUNTER_ROOM)


def kept(name: str) -> str:
    """A name a person chose (a file's, with its suffix, or a folder's) as close to itself as every
    clone can hold: a device name gets `-note` after its stem (`CON.md` -> `CON-note.md`), dots and
    spaces at its end go, a name too long is cut, its suffix kept. Unlike `portable`, characters
    Windows refuses are left as the person wrote them (their note "What?.md" stays that)."""
    if name in ("", ".", ".."):
        return name
    clean = _undevice(name.rstrip(" .") or "note")
    if len(clean.encode("utf-8", errors="surrogateescape")) > MAX_NAME_BYTES:
        clean = _cut(clean, MAX_NAME_BYTES - COUNTER_ROOM)
    return clean


def _undevice(name: str) -> str:
    """A device name with `-note` after the part Windows reads (`con.x.md` -> `con-note.x.md`)."""
    if not is_reserved(name):
        return name
    head = name.split(".", 1)[0]
    return f"{head.rstrip(' ')}{RESERVED_SUFFIX}{name[len(head) :]}"


def _cut(name: str, room: int) -> str:
    """`name` with its stem cut until the whole has at most `room` bytes, its suffix kept."""
    stem, dot, suffix = name.rpartition(".")
    if not dot:
        stem, suffix = name, ""
    else:
        suffix = f".{suffix}"
    room -= len(suffix.encode("utf-8", errors="surrogateescape"))
    while stem and len(stem.encode("utf-8", errors="surrogateescape")) > room:
        stem = stem[:-1]
    return (stem.rstrip(" .") or "note") + suffix


def _units(text: str) -> int:
    """`text`'s length in UTF-16 units, as Windows counts a path."""
    return len(text.encode("utf-16-le", errors="surrogatepass")) // 2


def fit_path(rel: str) -> str:
    """`rel` (`/`-separated) short enough for Windows: a path over `MAX_PATH` units, less room for
    a counter, gets its file's stem cut (its suffix and folders kept). Folders alone too long are
    left as they are: they are the person's, and `path_problem` names them."""
    if _units(rel) <= MAX_PATH - COUNTER_ROOM:
        return rel
    folder, slash, name = rel.rpartition("/")
    stem, dot, suffix = name.rpartition(".")
    if not dot or not stem:
        stem, suffix = name, ""
    else:
        suffix = f".{suffix}"
    room = MAX_PATH - COUNTER_ROOM - _units(folder + slash + suffix)
    if room < 1:
        return rel
    while stem and _units(stem) > room:
        stem = stem[:-1]
    return f"{folder}{slash}{stem.rstrip(' .') or 'note'}{suffix}"


def path_problem(rel: str) -> str | None:
    """Why some clone cannot hold the file at `rel` by that path (one of its names, or its
    length), or None."""
    for part in rel.split("/"):
        why = problem(part)
        if why is not None:
            return why
    if _units(rel) > MAX_PATH:
        return f"its path is longer than {MAX_PATH} characters"
    return None


def why_renamed(rel: str, *, taken: bool) -> str:
    """Why a file brought back under its own name `rel` got another one, as `rel: why`: `taken`, a
    file was at `rel` already; else what `path_problem` finds, or a name beside it spelled the same
    but for case or Unicode form (one name on macOS and Windows)."""
    if taken:
        return f"{rel}: the vault has another note there"
    found = path_problem(rel)
    if found is not None:
        return f"{rel}: {found}, so not every clone could hold it"
    return f"{rel}: a name beside it differs only in case or Unicode form (one name on macOS and Windows)"


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
        else:
            if _units(path) > MAX_PATH:
                found.setdefault(path, f"its path is longer than {MAX_PATH} characters")
    for same in spellings.values():
        if len(same) > 1:
            first, *others = sorted(same)
            for other in others:
                found.setdefault(other, f"differs only in case from {first}")
    return sorted((path, why) for path, why in found.items() if not _under(path, found))


def _under(path: str, found: dict[str, str]) -> bool:
    parts = path.split("/")
    return any("/".join(parts[:depth]) in found for depth in range(1, len(parts)))
