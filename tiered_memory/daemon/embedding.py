"""The daemon's vectors behind its keyword index: the notes still to embed, embedded a slice at a
time between requests, and the vector index saved on a schedule.

A new vault is searchable by keyword as soon as its catalog and full text are written; its vectors
follow from the daemon's loop, a slice (`EMBED_SLICE` seconds) per lock hold. A request waiting for
the lock ends the slice after the batch under way, and the lock is let go while the model computes,
so queries and edits are answered meanwhile. Vector changes are written to disk at most every
`Timings.vector_save` seconds; the notes embedded since the last save are listed first in
`.tmem/vectors.unsaved`, so a crash in between costs their re-embedding, never their vectors.

The daemon owns one `Embedding` and is its `Host`: the lock that serialises the indexes, the warm
memory, and the phase shown to `tmem daemon status`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import Protocol

from tiered_memory.app.memory import Memory
from tiered_memory.daemon.health import UnsavedVectors
from tiered_memory.index.vectors import meta_stamp

log = logging.getLogger("tiered_memory.daemon")

# Seconds of embedding per lock hold while a new vault's vectors are built. A query arriving
# meanwhile does not wait for the slice's end: the slice gives way after its current short batch
# (indexer.YIELDING_BATCH_SECONDS), which is what a query waits at most.
EMBED_SLICE = 1.0


class MemoryReplaced(Exception):
    """The indexes were reloaded while an embedding slice had let go of the lock."""


class Lock(Protocol):
    """The daemon's re-entrant lock over its indexes."""

    def acquire(self, blocking: bool = ..., timeout: float = ...) -> bool: ...

    def release(self) -> None: ...

    def __enter__(self) -> bool: ...

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None: ...


class Host(Protocol):
    """What the embedding needs of the daemon that owns it."""

    @property
    def lock(self) -> Lock: ...

    @property
    def memory(self) -> Memory | None: ...

    def indexing(self) -> AbstractContextManager[Memory]: ...

    def set_phase(self, phase: str) -> None: ...

    def report_progress(self, phase: str, done: int, total: int) -> None: ...


class Embedding:
    """The notes without a vector yet, the vectors not saved yet, and the requests waiting for the
    daemon's lock (an embedding slice lets them in first)."""

    def __init__(
        self, host: Host, state_dir: Path, *, save_every: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._host = host
        self._state_dir = state_dir
        self._save_every = save_every
        self._clock = clock
        self.unsaved = UnsavedVectors(state_dir)
        self.pending = 0  # notes without a current vector, embedded a slice at a time; -1: not counted yet
        self.deep_waiting = False  # long notes' deeper passages, embedded once no note waits
        self.drafts = 0  # notes whose vectors are int8 drafts, refined to float32 once nothing else waits
        self.dirty_since: float | None = None  # vectors changed in memory, not saved yet
        self._stamp_seen: tuple[int, int, int] | None = None
        # Requests waiting for the lock: an embedding slice lets them in before it takes the lock
        # again (a lock is not fair, and a backlog's slices follow one another at once).
        self._waiting = 0
        self._waiting_lock = threading.Lock()

    # ---- requests queued for the lock -----------------------------------------------------------
    @contextlib.contextmanager
    def queued(self, counted: bool = True) -> Iterator[None]:
        """Counts a request while it waits for the daemon's lock (`counted`: it is one)."""
        if not counted:
            yield
            return
        with self._waiting_lock:
            self._waiting += 1
        try:
            yield
        finally:
            with self._waiting_lock:
                self._waiting -= 1

    def _request_waiting(self) -> bool:
        return self._waiting > 0

    # ---- the backlog ---------------------------------------------------------------------------------
    def embed_slice(self) -> None:
        """Embed notes still without a vector for about EMBED_SLICE seconds, under the lock and
        then letting go, so queries and edits are answered while a large vault is embedded. A
        request waiting for the lock ends the slice after the batch under way."""
        if not self._state_dir.is_dir():
            return  # the vault (or its .tmem) is gone: writing vectors would make it up again
        if self._waiting:
            time.sleep(0.005)  # a request waits for the lock: it goes first, this slice comes next
            return
        self._host.set_phase("embedding")
        try:
            with self._host.indexing() as memory:
                report = memory.indexer.ensure_vectors(
                    progress=self._host.report_progress,
                    budget=EMBED_SLICE,
                    yield_to=self._request_waiting,
                    unsaved=self.unsaved.add,
                    unlocked=self._lock_let_go,
                    deep=True,  # once no note waits, long notes' deeper passages, slice by slice
                    refine=True,  # and then the drafts of a backlog, in float32
                )
        except MemoryReplaced:
            return  # a full reindex or a reload meanwhile: the next slice goes on with the new one
        done = report.vectors != "ok" or report.pending_vectors <= 0
        self.pending = 0 if done else report.pending_vectors
        self.deep_waiting = report.vectors == "ok" and report.deep_pending > 0
        self.drafts = report.drafts if report.vectors == "ok" else 0
        if report.embedded or report.deepened or report.refined:
            log.info("embedded %d note(s), %d to go", report.embedded, self.pending)
            # Saved on the loop's schedule (Timings.vector_save), not at each slice's end: a query
            # that stopped the slice would wait for the save.
            self.changed()
        if done and (report.embedded or not (self.deep_waiting or self.drafts)):  # the rest: on the schedule
            self.changed()
            self.save()  # and forgets the list of unsaved notes, which may be a crashed daemon's

    @contextlib.contextmanager
    def _lock_let_go(self) -> Iterator[None]:
        """The lock released while the model embeds a batch (it touches no index), so a query
        waits for none of it; a memory replaced meanwhile (a full reindex) ends the slice."""
        memory = self._host.memory
        self._host.lock.release()
        try:
            yield
        finally:
            self._host.lock.acquire()
        if self._host.memory is not memory:
            raise MemoryReplaced

    def finish(self) -> None:
        """Embed every note still without a vector now (a flush asked for the indexes complete)."""
        while self.pending:
            self.embed_slice()
        self._host.set_phase("idle")

    def busy(self) -> bool:
        """Notes wait for a vector, long notes for their deeper passages, or drafts for their
        refinement: the loop goes on slicing."""
        return bool(self.pending) or self.deep_waiting or self.drafts > 0

    def pending_vectors(self) -> int:
        """Notes without a vector yet (hybrid queries rank them by keyword alone meanwhile)."""
        return max(0, self.pending)

    # ---- saving ----------------------------------------------------------------------------------
    def changed(self) -> None:
        """Vectors changed in memory: saved within `save_every` seconds."""
        self.dirty_since = self.dirty_since or self._clock()

    def save_at(self) -> float | None:
        """When the vectors are next due to be saved; None when nothing waits for a save."""
        return None if self.dirty_since is None else self.dirty_since + self._save_every

    def save(self) -> None:
        if self.dirty_since is None or self._host.memory is None:
            return
        # Through `indexing`: a vector index another process saved since the daemon read its own
        # is adopted first (the notes embedded here and not saved are embedded again into it),
        # never overwritten with the daemon's older one.
        with self._host.indexing() as memory:
            if self.dirty_since is None:
                return
            vectors = memory.indexer.vectors()
            if vectors is not None:
                vectors.save()
            self.unsaved.clear()
            self.dirty_since = None
            self._seen(memory)

    def refreshed(self) -> None:
        """A refresh with vectors saved them itself (the use it ran in took the stamp)."""
        self.unsaved.clear()

    # ---- another process's vectors, and reloads --------------------------------------------------
    def rewritten_elsewhere(self) -> bool:
        """The vector index on disk is not the one this daemon holds (another process wrote it)."""
        return self._stamp_seen is not None and meta_stamp(self._state_dir / "vectors") != self._stamp_seen

    def used(self, memory: Memory) -> None:
        """After each use of the indexes under the lock: which save of the vector index this
        daemon holds, and the notes an update left for the background counted as a backlog."""
        self._seen(memory)
        if memory.indexer.vectors_deferred:  # an update left notes for the background
            memory.indexer.vectors_deferred = False
            self.pending = self.pending or -1

    def recover(self, memory: Memory) -> None:
        """At start: notes the last daemon embedded but was killed before saving are embedded again."""
        unsaved = self.unsaved.paths()
        if unsaved:
            log.warning(
                "re-embedding %d note(s) whose vectors were not saved before the last stop", len(unsaved)
            )
            memory.indexer.catalog.set_vec_hash([(p, "") for p in unsaved])

    def reloaded(self, memory: Memory) -> None:
        """The indexes were loaded again from disk: what was embedded here but never saved is not
        in them, so it is embedded again now."""
        self.dirty_since = None
        unsaved = self.unsaved.paths()
        if unsaved:
            memory.indexer.catalog.set_vec_hash([(p, "") for p in unsaved])
            memory.indexer.ensure_vectors()
            self.unsaved.clear()

    def _seen(self, memory: Memory) -> None:
        """The stamp of the save the daemon's vector index was read from or last wrote, as the
        index itself recorded it then, never the file as it is now: a save by another process
        that lands during a use (after the daemon read its index, before this) must still show
        as one, or the daemon serves its older vectors until it restarts."""
        held = memory.indexer.held_vectors()
        self._stamp_seen = held.disk_stamp if held is not None else None  # none held: none stale


__all__ = ["EMBED_SLICE", "Embedding", "Host", "MemoryReplaced"]
