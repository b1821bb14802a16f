"""Attachments (images, PDFs, recordings) found by their file names.

An attachment is never read: the catalog's `attachments` table keeps its path, size and mtime
(what a scan compares), and the full-text index holds one document per attachment whose title is
the file name and whose body the folders it sits in, so `tmem search survey map` finds
`Projects/survey-map.png`. Search results show it as a hit of category `attachment`, built here
from the table (it has no row among the notes: listing, maintenance, context and recalls never
see it).
"""

from __future__ import annotations

__all__ = ["Attachments", "CATEGORY", "Stat", "doc", "file_words", "row"]

from collections.abc import Iterable
from pathlib import PurePosixPath

from tiered_memory.index.catalog import Catalog, NoteRow
from tiered_memory.index.fts import FtsDoc
from tiered_memory.model.note import ATTACHMENT as CATEGORY

Stat = tuple[float, int]  # (mtime, size)


class Attachments:
    def __init__(self, catalog: Catalog) -> None:
        self.db = catalog.db

    def stats(self) -> dict[str, Stat]:
        return {p: (m, s) for p, m, s in self.db.execute("SELECT path, mtime, size FROM attachments")}

    def changes(self, on_disk: dict[str, Stat]) -> tuple[dict[str, Stat], list[str]]:
        """(new or changed attachments, removed paths) between the files on disk and the table."""
        known = self.stats()
        changed = {p: st for p, st in on_disk.items() if known.get(p) != st}
        return changed, [p for p in known if p not in on_disk]

    def store(self, items: dict[str, tuple[float, int, str]]) -> None:
        """path -> (mtime, size, tier)."""
        self.db.executemany(
            "INSERT OR REPLACE INTO attachments VALUES (?, ?, ?, ?)",
            [(p, m, s, t) for p, (m, s, t) in items.items()],
        )
        self.db.commit()

    def forget(self, paths: Iterable[str]) -> None:
        self.db.executemany("DELETE FROM attachments WHERE path=?", [(p,) for p in paths])
        self.db.commit()

    def rows(self, paths: Iterable[str]) -> dict[str, NoteRow]:
        """Search rows of the attachments among these paths."""
        wanted = list(dict.fromkeys(paths))
        out: dict[str, NoteRow] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ", ".join("?" for _ in part)
            query = f"SELECT path, mtime, size, tier FROM attachments WHERE path IN ({marks})"
            for path, mtime, size, tier in self.db.execute(query, part):
                out[path] = row(path, mtime, size, tier)
        return out


def row(path: str, mtime: float, size: int, tier: str) -> NoteRow:
    name = PurePosixPath(path).name
    kind = PurePosixPath(path).suffix.lstrip(".").upper() or "file"
    return NoteRow(
        path=path,
        id=path,
        title=name,
        tier=tier,
        category=CATEGORY,
        created=mtime,
        updated=mtime,
        snippet=f"{kind} attachment, {_size(size)}",
        mtime=mtime,
        size=size,
    )


def doc(path: str, mtime: float, tier: str) -> FtsDoc:
    """The full-text document: the file name as its title, its folders as its body."""
    parts = PurePosixPath(path)
    return FtsDoc(
        path=path,
        id=path,
        title=f"{parts.stem} {parts.name}",
        body=" ".join(parts.parent.parts),
        tags=[],
        entities=[],
        project="",
        tier=tier,
        category=CATEGORY,
        status="active",
        updated=mtime,
    )


def file_words(path: str) -> str:
    """The words that name an attachment (its file name without the suffix)."""
    return PurePosixPath(path).stem


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"
