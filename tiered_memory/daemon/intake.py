"""File events from the watcher, applied to the daemon's indexes; what they changed is queued
for the auto-commit.

A batch of debounced events names notes, folders (created, moved or deleted as a whole: their notes
are found in the catalog and on disk) and attachments. Notes are reindexed under the daemon's lock
(listed as unsaved vectors first, see `embedding`), and every path is handed to the auto-committer
with its title (a deleted note's last one). Attachments are committed with the notes up to
`git.attachment_max_mb`. At start, whatever changed since the last commit is queued the same way.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from tiered_memory.app.memory import Memory
from tiered_memory.daemon.embedding import Embedding
from tiered_memory.daemon.health import iso, release_free_memory
from tiered_memory.daemon.jobs import AutoCommitter
from tiered_memory.daemon.watcher import RawEvent, is_ignored, paths_to_reindex
from tiered_memory.errors import GitError
from tiered_memory.model.folders import is_attachment
from tiered_memory.model.note import is_note_path
from tiered_memory.storage.vault import Vault
from tiered_memory.storage.walk import is_temp_name

log = logging.getLogger("tiered_memory.daemon")


class Host(Protocol):
    """What the intake needs of the daemon that owns it."""

    @property
    def lock(self) -> AbstractContextManager[Any]: ...

    @property
    def memory(self) -> Memory | None: ...

    def indexing(self) -> AbstractContextManager[Memory]: ...

    def record_error(self, what: str) -> None: ...

    def rescan_in(self, seconds: float) -> None: ...

    def settings_changed(self) -> None: ...


class Intake:
    """Applies the watcher's batches to the indexes and queues the changed paths for a commit."""

    def __init__(
        self,
        host: Host,
        vault: Vault,
        *,
        committer: AutoCommitter,
        embedding: Embedding,
        stats: dict[str, Any],
        clock: Callable[[], float],
        wall: Callable[[], float],
    ) -> None:
        self._host = host
        self._vault = vault
        self._root = vault.root
        self._committer = committer
        self._embedding = embedding
        self._stats = stats  # the daemon's: batches, notes, last_event
        self._clock = clock
        self._wall = wall

    def apply_events(self, batch: list[RawEvent]) -> None:
        changes = paths_to_reindex(batch, str(self._root))
        if not changes:
            return
        if changes.settings:  # which files are notes may have changed: a rescan under the new rules
            self._host.settings_changed()
        if changes.attachments:
            self.note_attachments(changes.attachments)
        try:
            with self._host.lock:
                paths = changes.notes | self._expand(changes.folders)
                if paths:
                    self.apply_paths(sorted(paths), len(batch))
        except Exception:
            self._host.record_error(f"indexing a batch of {len(batch)} events failed; a rescan follows")
            self._host.rescan_in(5.0)

    def _expand(self, folders: set[str]) -> set[str]:
        """Notes under folders created, moved or deleted as a whole: the catalog's and the disk's."""
        if not folders:
            return set()
        memory = self._host.memory
        assert memory is not None
        known = list(memory.indexer.catalog.stats())
        out: set[str] = set()
        for folder in folders:
            prefix = folder + "/"
            out.update(p for p in known if p.startswith(prefix))
            for dirpath, dirnames, filenames in os.walk(self._root / folder):
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                base = Path(dirpath).relative_to(self._root).as_posix()
                out.update(
                    r for r in (f"{base}/{n}" for n in filenames) if is_note_path(r) and not is_ignored(r)
                )
        return out

    def apply_paths(self, paths: list[str], events: int) -> None:
        start = self._clock()
        with self._host.indexing() as memory:
            catalog = memory.indexer.catalog
            gone = {p: catalog.get(p) for p in paths if not (self._root / p).exists()}
            self._embedding.unsaved.add(paths)
            report = memory.indexer.update_paths(paths, vectors=True, save_vectors=False)
            titles = {p: r.title for p, r in catalog.rows(paths).items()}
            self._stats["notes"] = memory.note_count()
        for warning in report.warnings:
            log.warning(warning)
        if report.touched or report.embedded:
            self._embedding.changed()
        if len(paths) >= 50:
            release_free_memory()
        elapsed = (self._clock() - start) * 1000
        self._stats["batches"] += 1
        self._stats["last_event"] = {
            "at": iso(self._wall()),
            "paths": len(paths),
            "events": events,
            "ms": round(elapsed),
        }
        for path, row in gone.items():
            titles.setdefault(path, row.title if row else "")
        self._committer.note({p: titles.get(p, "") for p in paths})
        log.info(
            "batch %d: %d path(s) from %d event(s): %d added, %d changed, %d deleted, %d embedded in %.0f ms",
            self._stats["batches"],
            len(paths),
            events,
            report.added,
            report.changed,
            report.deleted,
            report.embedded,
            elapsed,
        )

    def note_attachments(self, paths: Iterable[str]) -> None:
        """Attachments are committed with the notes; one larger than git.attachment_max_mb is
        reported and left out (git is a poor home for big binaries)."""
        limit = self._vault.config.git.attachment_max_mb * 1024 * 1024
        wanted: dict[str, str] = {}
        for rel in paths:
            try:
                size = os.lstat(self._root / rel).st_size
            except OSError:
                wanted[rel] = ""  # deleted: the deletion is committed
                continue
            if size > limit:
                log.warning("%s is %.0f MB, over git.attachment_max_mb: not committed", rel, size / 2**20)
                continue
            wanted[rel] = ""
        if wanted:
            self._committer.note(wanted)

    def adopt_uncommitted(self) -> None:
        """Every note changed since the last commit is committed on the usual schedule, including
        edits a previous daemon indexed but was killed before committing."""
        try:
            pending = self._vault.git.uncommitted(".")
        except GitError as exc:
            log.warning("cannot list uncommitted notes: %s", exc)
            return
        titles = {
            rel: rel for rel in pending if is_note_path(rel) and not is_temp_name(rel.rsplit("/", 1)[-1])
        }
        self.note_attachments(p for p in pending if is_attachment(p))
        if titles:
            log.info("%d note(s) changed since the last commit; they will be auto-committed", len(titles))
            self._committer.note(titles)


__all__ = ["Host", "Intake"]
