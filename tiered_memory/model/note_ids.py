"""Distinct ids for notes whose default ids collide. Pure: no I/O.

A note without an `id:` key goes by `note.default_id(path)`: its path below the tier folder,
slugged. Slugging drops symbols, so `C.md`, `C++.md` and `C#.md` all go by `c`. Such a group is
settled here, from the group alone, so every clone of the vault settles it the same way:

- a note whose `c` is its own (an `id: c` key, or an id a move kept) keeps it, and so does, when
  none is, the member whose name spells the id best (`c.md`, then `C.md`, then `C++.md`; at equal
  spelling, the first path in code-point order);
- each other member goes by the id with a suffix made from its own path below the tier folder
  (`c-3f9a1c`): it does not depend on which other notes exist, and stays through a tier move.

A note alone with its default id keeps it: a vault without collisions sees no id change.
"""

from __future__ import annotations

__all__ = ["Claim", "IdMove", "carried", "renamer", "settle", "suffixed"]

import hashlib
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import TypeVar

from tiered_memory.model.dates import to_datetime
from tiered_memory.model.layout import MEMORY_DIR
from tiered_memory.model.note import default_id

V = TypeVar("V")

_HEX = 6  # 16.7 million suffixes per id: two members of one group share one only by design error


@dataclass(frozen=True)
class Claim:
    """One note's hold on an id: `own` when the id is the note's own (its `id:` key, an id kept
    through a move), not one derived from its path."""

    path: str
    id: str
    own: bool = False


@dataclass(frozen=True)
class IdMove:
    """The note at `path` went by `old` and goes by `new` since `at` (epoch seconds): what was
    kept under `old` for it (stats, recalls) is to be kept under `new`."""

    old: str
    new: str
    path: str
    at: float

    @property
    def back(self) -> bool:
        """Whether the note takes its default id back: the note it gave way to is gone, so what
        is kept under that id was the gone note's and gives way."""
        return self.new == default_id(self.path)


def carried(kept: Mapping[str, V], moves: Iterable[IdMove]) -> dict[str, V]:
    """`kept` (by note id) with each move's entry carried from its old id to its new one, in
    order. Idempotent: a move whose old entry is gone (carried already, on this machine or on one
    whose commit arrived) changes nothing, and one whose new id has an entry of its own already
    (carried before, then recalled) leaves both, unless the note takes its default id `back`."""
    out = dict(kept)
    for move in moves:
        if move.old in out and (move.new not in out or move.back):
            out[move.new] = out.pop(move.old)
    return out


def renamer(moves: Iterable[IdMove]) -> Callable[[str, str], str]:
    """(id, ISO time) of a recall log entry -> the id of the note it recalled: an entry made under
    a move's old id before the move was a recall of the note that moved."""
    by_old: dict[str, list[IdMove]] = {}
    for move in moves:
        by_old.setdefault(move.old, []).append(move)

    def rename(note_id: str, at: str) -> str:
        for move in by_old.get(note_id, ()):
            when = to_datetime(at)
            if when is not None and when < datetime.fromtimestamp(move.at, UTC):
                return move.new
        return note_id

    return rename


def _tail(path: str) -> str:
    """The path below the tier folder, without its suffix, composed: what the suffix is made of."""
    parts = PurePosixPath(path).with_suffix("").parts
    tail = parts[2:] if len(parts) > 2 and parts[0] == MEMORY_DIR else parts
    return unicodedata.normalize("NFC", "/".join(tail))


def suffixed(path: str, base: str, length: int = _HEX) -> str:
    """The id a note at `path` goes by when another note holds its default id `base`."""
    digest = hashlib.blake2b(_tail(path).encode("utf-8", errors="surrogateescape"), digest_size=16)
    return f"{base}-{digest.hexdigest()[:length]}"


def _spelling(path: str, base: str) -> tuple[int, str]:
    """How closely `path`'s name spells `base` (lower is closer), then the path: the id itself
    (`c.md`), the id but for case (`C.md`), the id but for case and separators (`My note.md` for
    `my-note`), anything else (symbols dropped, accents folded: `C++.md`)."""
    tail = _tail(path)
    joined = tail.replace("/", "-")
    if joined == base:
        rank = 0
    elif joined.casefold() == base:
        rank = 1
    elif "-".join(joined.casefold().replace("_", " ").replace("-", " ").split()) == base:
        rank = 2
    else:
        rank = 3
    return rank, path


def settle(claims: Iterable[Claim]) -> dict[str, str]:
    """path -> the id it goes by instead of its claim's, for the members of groups that share an
    id (see the module docstring). Paths absent from the answer keep their claim's id."""
    groups: dict[str, list[Claim]] = {}
    for claim in claims:
        groups.setdefault(claim.id, []).append(claim)
    taken = set(groups)
    out: dict[str, str] = {}
    for base, members in groups.items():
        derived = [c for c in members if not c.own]
        if len(members) < 2 or not derived:
            continue
        keeper = None if any(c.own for c in members) else min(derived, key=lambda c: _spelling(c.path, base))
        for claim in derived:
            if claim is keeper:
                continue
            new = suffixed(claim.path, base)
            if new in taken:  # a note named like a suffixed id already: a longer suffix
                new = suffixed(claim.path, base, 32)
            taken.add(new)
            out[claim.path] = new
    return out
