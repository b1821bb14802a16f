"""When each note's current content was first committed, cached in the catalog (see model.dates).

The catalog's `blob_times` table maps git blob ids to the author time of the first commit that
held them, and remembers up to which commit it has read; `sync()` reads only newer commits.
"""

from __future__ import annotations

__all__ = ["ContentTimes"]

from collections.abc import Iterable
from pathlib import Path

from tiered_memory.index.catalog import Catalog
from tiered_memory.storage import blobtimes

_HEAD_KEY = "blob_times_head"


class ContentTimes:
    def __init__(self, catalog: Catalog, root: Path) -> None:
        self.catalog = catalog
        self.root = root
        self._synced: str | None = None

    def sync(self) -> None:
        """Read the commits added since the last sync (all of history the first time)."""
        current = blobtimes.head(self.root)
        if current is None or current == self._synced:
            return
        known = self.catalog.get_meta(_HEAD_KEY)
        if current != known:
            found = blobtimes.first_seen(self.root, current, known) if known else None
            if found is None:  # first read, or the old head is gone (history rewritten, gc)
                found = blobtimes.first_seen(self.root, current)
            if found is None:
                return
            self.catalog.db.executemany(
                "INSERT INTO blob_times VALUES (?, ?)"
                " ON CONFLICT(blob) DO UPDATE SET time=min(time, excluded.time)",
                found.items(),
            )
            self.catalog.set_meta(_HEAD_KEY, current)  # commits both
        self._synced = current

    def first_commit(self, blob_ids: Iterable[str]) -> dict[str, float]:
        """blob id -> first commit time, for the ids the history holds."""
        wanted = list(dict.fromkeys(blob_ids))
        out: dict[str, float] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ", ".join("?" for _ in part)
            out.update(
                self.catalog.db.execute(f"SELECT blob, time FROM blob_times WHERE blob IN ({marks})", part)
            )
        return out
