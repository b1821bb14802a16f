"""The catalog's ids for notes whose default ids collide (the rule is model.note_ids).

After each batch of changed files the indexer hands over the paths it touched; the groups of notes
they claim an id in are settled again, and a note's catalog row takes the id it goes by. The
`settled_ids` table says which notes go by an id other than their default one (the vault asks it
for `Note.given_id`), and a change of a note's id that its side-file state should follow (a newcomer
took the id it had alone, or the note it gave way to is gone) is queued in `id_moves` for
`tmem maintain`, which carries the recall counts and stats over in a commit.
"""

from __future__ import annotations

__all__ = ["SettledIds"]

from collections.abc import Callable, Iterable

from tiered_memory.index.catalog import Catalog
from tiered_memory.model import note as notes
from tiered_memory.model.note_ids import Claim, IdMove, settle
from tiered_memory.storage import walk


class SettledIds:
    def __init__(self, catalog: Catalog) -> None:
        self.db = catalog.db

    def id_of(self, path: str) -> str | None:
        """The id a note without an `id:` key at `path` goes by, when it is not its default one."""
        if not walk.is_utf8(path):  # a name whose bytes are not UTF-8 is in no index (indexer._named)
            return None
        found = self.db.execute("SELECT id FROM settled_ids WHERE path=?", (path,)).fetchone()
        return str(found[0]) if found else None

    def moves(self) -> list[IdMove]:
        """Id changes whose side-file state is still to carry over, oldest first."""
        return [
            IdMove(*row) for row in self.db.execute("SELECT old, new, path, at FROM id_moves ORDER BY at")
        ]

    def done(self, moves: Iterable[IdMove]) -> None:
        """These moves are carried over (committed): they leave the queue."""
        self.db.executemany(
            "DELETE FROM id_moves WHERE old=? AND new=? AND path=?", [(m.old, m.new, m.path) for m in moves]
        )
        self.db.commit()

    def settle(
        self, touched: Iterable[str], new: set[str], own_id: Callable[[str], bool], now: float
    ) -> None:
        """Settle the groups the `touched` paths (changed, added or deleted) claim an id in. `new`:
        the paths that had no row before this batch; `own_id(path)`: whether the note at `path`
        has an `id:` key (asked only of members of a group sharing its default id)."""
        touched = list(dict.fromkeys(touched))
        bases = {notes.default_id(p) for p in touched}
        rows = self._ids(touched)
        bases.update(rows.values())
        for path in touched:
            if path not in rows:
                self.db.execute("DELETE FROM settled_ids WHERE path=?", (path,))
        for base in sorted(self._contested(sorted(bases))):
            self._settle_group(base, new, own_id, now)
        self.db.commit()

    def _contested(self, bases: list[str]) -> set[str]:
        """Of these ids, those more than one note holds, or some note goes by a suffix of: only
        those have anything to settle (a rebuild touches every note, and nearly all are alone)."""
        out: set[str] = set()
        for start in range(0, len(bases), 500):
            part = bases[start : start + 500]
            marks = ", ".join("?" for _ in part)
            out.update(
                i
                for (i,) in self.db.execute(
                    f"SELECT id FROM notes WHERE skipped='' AND id IN ({marks}) GROUP BY id HAVING COUNT(*) > 1",
                    part,
                )
            )
            out.update(
                b
                for (b,) in self.db.execute(
                    f"SELECT DISTINCT base FROM settled_ids WHERE base IN ({marks})", part
                )
            )
        return out

    def _ids(self, paths: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for start in range(0, len(paths), 500):
            part = paths[start : start + 500]
            marks = ", ".join("?" for _ in part)
            out.update(
                self.db.execute(f"SELECT path, id FROM notes WHERE skipped='' AND path IN ({marks})", part)
            )
        return out

    def _settle_group(self, base: str, new: set[str], own_id: Callable[[str], bool], now: float) -> None:
        holding = [p for (p,) in self.db.execute("SELECT path FROM notes WHERE id=? AND skipped=''", (base,))]
        before = dict(self.db.execute("SELECT path, id FROM settled_ids WHERE base=?", (base,)).fetchall())
        live = {p for p in before if self.db.execute("SELECT 1 FROM notes WHERE path=?", (p,)).fetchone()}
        members = list(dict.fromkeys([*holding, *sorted(live)]))
        if not members:
            return
        # Held as its own: an id a move kept, an id settled in another group, an `id:` key.
        elsewhere = {p for (p,) in self._where("SELECT path FROM ids", members)}
        elsewhere |= {p for p, b in self._where("SELECT path, base FROM settled_ids", members) if b != base}
        claims = [
            Claim(
                p,
                base,
                own=p not in live
                and (notes.default_id(p) != base or p in elsewhere or (len(members) > 1 and own_id(p))),
            )
            for p in members
        ]
        settled = settle(claims)
        keeper = next((c.path for c in claims if c.path not in settled), None)
        for claim in claims:
            if claim.own:
                continue
            was = before.get(claim.path, base)
            goes_by = settled.get(claim.path, base)
            if goes_by == base:
                self.db.execute("DELETE FROM settled_ids WHERE path=?", (claim.path,))
            else:
                self.db.execute(
                    "INSERT OR REPLACE INTO settled_ids VALUES (?, ?, ?)", (claim.path, base, goes_by)
                )
            self.db.execute("UPDATE notes SET id=? WHERE path=?", (goes_by, claim.path))
            if was == goes_by or claim.path in new:
                continue
            # Its state follows it when what held its old id is new here (a newcomer took it), or
            # when nothing holds the id it now goes by but it (the note it gave way to is gone).
            if (was == base and keeper in new) or (goes_by == base and was != base):
                self.db.execute("INSERT INTO id_moves VALUES (?, ?, ?, ?)", (was, goes_by, claim.path, now))

    def ids_of(self, paths: Iterable[str]) -> dict[str, str]:
        """path -> settled id, of those of these paths that go by one."""
        wanted = list(dict.fromkeys(paths))
        out: dict[str, str] = {}
        for start in range(0, len(wanted), 500):
            out.update(
                (p, i)
                for p, i in self._where("SELECT path, id FROM settled_ids", wanted[start : start + 500])
            )
        return out

    def _where(self, select: str, paths: list[str]) -> list[tuple[str, ...]]:
        marks = ", ".join("?" for _ in paths)
        return list(self.db.execute(f"{select} WHERE path IN ({marks})", paths))
