"""Which notes an unknown note reference comes close to. Pure: no I/O.

A person types what they remember of a note: the last part of its id (`pasta` for a note of an
adopted folder, whose id is `recipes-pasta`), its file's name, or its title. When no note has that
id, the one line that says so names the notes that come close, so the next command can be right.
"""

from __future__ import annotations

__all__ = ["MAX_NEAR", "near"]

import unicodedata
from collections.abc import Iterable
from pathlib import PurePosixPath

from tiered_memory.model.note import slugify

MAX_NEAR = 3  # more names than this read as a listing, not a hint


def near(ref: str, notes: Iterable[tuple[str, str, str]], limit: int = MAX_NEAR) -> list[str]:
    """The ids of at most `limit` notes, of (id, path, title), that `ref` comes close to: the same
    id but for case, an id ending in `-ref`, a file named `ref` (with any suffix), or a title of
    the same words. Closest first (a name or title before an id's tail), then by id."""
    wanted = unicodedata.normalize("NFC", ref.strip()).casefold()
    words = slugify(wanted)
    if not wanted:
        return []
    ranked: dict[str, int] = {}
    for note_id, path, title in notes:
        folded = note_id.casefold()
        if folded == wanted:
            rank = 0
        elif PurePosixPath(path).stem.casefold() == wanted or (words and slugify(title) == words):
            rank = 1
        elif folded.endswith(f"-{wanted}") or (words and folded.endswith(f"-{words}")):
            rank = 2
        else:
            continue
        ranked[note_id] = min(rank, ranked.get(note_id, rank))
    return sorted(ranked, key=lambda i: (ranked[i], i))[:limit]
