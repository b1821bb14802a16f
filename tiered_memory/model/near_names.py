"""Which notes an unknown note reference comes close to. Pure: no I/O.

A person types what they remember of a note: the last part of its id (`pasta` for a note of an
adopted folder, whose id is `recipes-pasta`), its file's name, or its title. When no note has that
id, the one line that says so names the notes that come close, so the next command can be right.
"""

from __future__ import annotations

__all__ = ["MAX_NEAR", "near"]

import unicodedata
from collections.abc import Iterable

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
        elif _stem(path).casefold() == wanted or (_may_slug_to(title, words) and slugify(title) == words):
            rank = 1
        elif folded.endswith(f"-{wanted}") or (words and folded.endswith(f"-{words}")):
            rank = 2
        else:
            continue
        ranked[note_id] = min(rank, ranked.get(note_id, rank))
    return sorted(ranked, key=lambda i: (ranked[i], i))[:limit]


def _may_slug_to(title: str, words: str) -> bool:
    """A cheap look before slugging `title`: slugging the title of every note of a large vault
    would make a failed lookup slow. A title of the same words is about as long, and an ASCII one
    holds the first word as it is."""
    if not words or not len(words) // 2 <= len(title) <= 4 * len(words) + 8:
        return False
    return not title.isascii() or words.split("-", 1)[0] in title.casefold()


def _stem(path: str) -> str:
    name = path.rpartition("/")[2]
    return name.rpartition(".")[0] or name
