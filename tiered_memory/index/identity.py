"""Ids that survive moves and renames of notes whose frontmatter has no `id` (hand-written notes).

Such a note's id comes from its path, so a move would give it a new one. The catalog follows the
content instead: when a note vanishes from one path and a note with the same content hash appears
at another (a move, a rename, `git mv`, Obsidian's rename), the new path keeps the old id, and
every id it was known by (its old path's id, the new path's own id) stays an alias, so
`catalog.by_id(old_id)` still finds it. A vanished note waits `VANISHED_TTL` seconds for its new
path (a watcher may report the deletion and the creation in separate batches). Only unambiguous
matches count: one vanished note and one new note with that hash (empty templates share a hash).

Kept ids live in the catalog's `ids` table, which survives a rebuild of the keyword indexes but
not the loss of the catalog (a new clone). `pin()` seeds it from a tracked file for that case.
"""

from __future__ import annotations

__all__ = ["Identity", "Move", "VANISHED_TTL"]

import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tiered_memory.index.catalog import Catalog, NoteRow
from tiered_memory.model import note as notes

VANISHED_TTL = 24 * 3600.0


@dataclass(frozen=True)
class Move:
    old_path: str
    new_path: str
    id: str

    def to_dict(self) -> dict[str, str]:
        return {"old_path": self.old_path, "new_path": self.new_path, "id": self.id}


class Identity:
    def __init__(self, catalog: Catalog) -> None:
        self.db = catalog.db

    def pinned(self, paths: Iterable[str] | None = None) -> dict[str, str]:
        """path -> the id it keeps (of every such path, or of these)."""
        if paths is None:
            return dict(self.db.execute("SELECT path, id FROM ids"))
        wanted = list(dict.fromkeys(paths))
        out: dict[str, str] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ", ".join("?" for _ in part)
            out.update(self.db.execute(f"SELECT path, id FROM ids WHERE path IN ({marks})", part))
        return out

    def pin(self, ids: Mapping[str, str], aliases: Mapping[str, Iterable[str]] | None = None) -> None:
        """Give these paths these ids (and alias ids), e.g. from a tracked file after a fresh clone."""
        self.db.executemany("INSERT OR REPLACE INTO ids VALUES (?, ?)", list(ids.items()))
        for path, names in (aliases or {}).items():
            self._add_aliases(path, names)
        self.db.commit()

    def aliases(self, path: str) -> list[str]:
        """Other ids the note at `path` answers to."""
        return [
            a for (a,) in self.db.execute("SELECT alias FROM id_aliases WHERE path=? ORDER BY rowid", (path,))
        ]

    def forget(self, rows: Iterable[NoteRow], now: float | None = None) -> None:
        """Notes gone from their paths (call before deleting their rows): remembered for a while."""
        at = time.time() if now is None else now
        gone = [r for r in rows if r.hash and r.id and not r.skipped]
        self.db.executemany(
            "INSERT INTO vanished VALUES (?, ?, ?, ?)", [(r.hash, r.id, r.path, at) for r in gone]
        )
        self.db.executemany("DELETE FROM ids WHERE path=?", [(r.path,) for r in gone])
        self.db.execute("DELETE FROM vanished WHERE at < ?", (at - VANISHED_TTL,))
        self.db.commit()

    def adopt(self, rows: Iterable[NoteRow]) -> list[Move]:
        """New notes without a frontmatter id take the id of the vanished note they are a move of.
        Changes `row.id` in place; returns the moves found."""
        candidates = [r for r in rows if r.hash]
        if not candidates:
            return []
        per_hash = Counter(r.hash for r in candidates)
        moves: list[Move] = []
        for row in candidates:
            if per_hash[row.hash] != 1:
                continue
            found = self.db.execute("SELECT id, path FROM vanished WHERE hash=?", (row.hash,)).fetchall()
            if len(found) != 1:
                continue
            old_id, old_path = found[0]
            own_id = row.id
            row.id = old_id
            self.db.execute("DELETE FROM vanished WHERE hash=?", (row.hash,))
            self.db.execute("INSERT OR REPLACE INTO ids VALUES (?, ?)", (row.path, old_id))
            self.db.execute("UPDATE id_aliases SET path=? WHERE path=?", (row.path, old_path))
            self._add_aliases(row.path, [notes.default_id(old_path), own_id])
            self.db.execute("DELETE FROM id_aliases WHERE alias=?", (old_id,))
            moves.append(Move(old_path, row.path, old_id))
        self.db.commit()
        return moves

    def _add_aliases(self, path: str, names: Iterable[str]) -> None:
        known = set(self.aliases(path))
        for name in dict.fromkeys(names):
            if name and name not in known:
                self.db.execute("DELETE FROM id_aliases WHERE alias=?", (name,))
                self.db.execute("INSERT INTO id_aliases VALUES (?, ?)", (name, path))
