"""File events to index updates: watchdog (inotify) collects them, a pure function decides, a debouncer batches.

The handler on watchdog's thread only records events. Which vault paths a batch concerns is a pure
function of the batch (`paths_to_reindex`), so every editor's save dance (vim's backup rename,
JetBrains' `___jb_tmp___`, write-a-temp-then-rename) is tested without a file system. The
`Debouncer` turns a burst (a `git pull`, an unzip) into one batch and still flushes a stream that
never pauses, after `max_wait`.
"""

from __future__ import annotations

__all__ = [
    "CHANGE_KINDS",
    "Changes",
    "Debouncer",
    "IGNORED_DIRS",
    "OverflowFlag",
    "RawEvent",
    "SETTINGS_FILES",
    "Watcher",
    "is_ignored",
    "log",
    "paths_to_reindex",
    "vault_relative",
]

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tiered_memory.model.folders import is_attachment
from tiered_memory.model.layout import CONFIG_NAME
from tiered_memory.model.note import is_note_path
from tiered_memory.storage import editor_templates
from tiered_memory.storage.walk import is_temp_name

log = logging.getLogger("tiered_memory.daemon")

IGNORED_DIRS = frozenset({".git", ".tmem"})
# The files whose change changes which files are notes: tmem.yaml (`folders:`) and the editor's
# templates settings (`storage.editor_templates`), the two of them in a hidden folder.
SETTINGS_FILES = frozenset({CONFIG_NAME, *(rel for rel, _key in editor_templates.SETTINGS)})
# Event kinds that can change what a note says. Opens and read-only closes are left out: the
# daemon's own reads would otherwise feed it events forever.
CHANGE_KINDS = frozenset({"created", "modified", "moved", "deleted", "closed"})


@dataclass(frozen=True)
class RawEvent:
    """One watchdog event as recorded: kind, absolute source path, destination of a move."""

    kind: str
    src: str
    dest: str = ""
    is_directory: bool = False


@dataclass
class Changes:
    """What a batch of events means for the index."""

    notes: set[str] = field(default_factory=set)  # vault-relative note paths: reindex (or drop if gone)
    folders: set[str] = field(default_factory=set)  # folders created, moved or deleted: rescan them
    attachments: set[str] = field(default_factory=set)  # images, PDFs...: committed, not indexed
    settings: bool = False  # tmem.yaml or the editor's templates settings: the rules of what is a note

    def __bool__(self) -> bool:
        return bool(self.notes or self.folders or self.attachments or self.settings)


def vault_relative(path: str, root: str) -> str | None:
    """`path` relative to the vault root, POSIX style; None when it is outside the vault."""
    prefix = root.rstrip(os.sep) + os.sep
    if not path.startswith(prefix):
        return None
    rel = path[len(prefix) :]
    return rel.replace(os.sep, "/") if os.sep != "/" else rel


def is_ignored(rel: str) -> bool:
    """Git's and tmem's own folders, hidden folders and files, and editors' temp files."""
    parts = rel.split("/")
    if any(part in IGNORED_DIRS or part.startswith(".") for part in parts):
        return True
    return is_temp_name(parts[-1]) or parts[-1] == "4913"  # vim probes a folder with a file named 4913


def paths_to_reindex(events: Iterable[RawEvent], root: str) -> Changes:
    """The note paths and folders a batch of raw events concerns. Pure: looks at names only.

    A move counts for both ends: an editor's temp file renamed onto `note.md` yields `note.md`,
    and `note.md` renamed away (vim's backup) yields `note.md` too, so whatever is on disk when the
    batch is applied wins. A note that is gone by then is dropped from the index.
    """
    changes = Changes()
    for event in events:
        if event.kind not in CHANGE_KINDS:
            continue
        for path in (event.src, event.dest):
            rel = vault_relative(path, root) if path else None
            if rel in SETTINGS_FILES:
                changes.settings = True
                continue
            if rel is None or is_ignored(rel):
                continue
            if event.is_directory:
                # Contents of a folder moved or deleted as a whole are not reported one by one.
                if event.kind != "modified":
                    changes.folders.add(rel)
            elif is_note_path(rel):
                changes.notes.add(rel)
            elif is_attachment(rel):
                changes.attachments.add(rel)
    return changes


class Debouncer:
    """Collects events until `quiet` seconds pass without one, or `max_wait` after the first.

    Thread-safe; `clock` is injected so the timing rules are tested without sleeping.
    """

    def __init__(self, quiet: float, max_wait: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.quiet = max(0.0, quiet)
        self.max_wait = max(max_wait, self.quiet)
        self._clock = clock
        self._events: dict[RawEvent, None] = {}  # an ordered set: a repeated event is kept once
        self._first = 0.0
        self._last = 0.0
        self._cond = threading.Condition()
        self._closed = False
        self.received = 0  # events added since start, for status

    def retime(self, quiet: float, max_wait: float) -> None:
        """New timings (tmem.yaml changed): the pending batch is due by them at once."""
        with self._cond:
            self.quiet = max(0.0, quiet)
            self.max_wait = max(max_wait, self.quiet)
            self._cond.notify_all()  # a wait computed from the old timings looks again

    def add(self, event: RawEvent) -> None:
        with self._cond:
            now = self._clock()
            self.received += 1
            if not self._events:
                self._first = now
                self._cond.notify_all()  # later events only move the deadline: no need to wake anyone
            self._last = now
            self._events[event] = None

    def __len__(self) -> int:
        with self._cond:
            return len(self._events)

    def due_at(self) -> float | None:
        """Clock time at which the pending batch is due, None when nothing is pending."""
        with self._cond:
            return self._due_locked()

    def _due_locked(self) -> float | None:
        if not self._events:
            return None
        return min(self._last + self.quiet, self._first + self.max_wait)

    def take(self, now: float | None = None, *, force: bool = False) -> list[RawEvent]:
        """The pending batch when it is due at `now` (or at once with `force`), else []."""
        with self._cond:
            due = self._due_locked()
            if due is None:
                return []
            if not force and (self._clock() if now is None else now) < due:
                return []
            batch = list(self._events)
            self._events.clear()
            return batch

    def wait(self, timeout: float) -> None:
        """Sleep until a batch may be due, a first event arrives, `close()`, or `timeout` seconds."""
        with self._cond:
            if self._closed:
                return
            due = self._due_locked()
            if due is not None:
                timeout = min(timeout, max(0.0, due - self._clock()))
            if timeout > 0:
                self._cond.wait(timeout)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class _Recorder:
    """The watchdog handler: turns each event into a RawEvent for the sink, nothing more."""

    def __init__(self, sink: Callable[[RawEvent], None], root: str = "") -> None:
        self._sink = sink
        self._root = root

    def dispatch(self, event: object) -> None:
        src = os.fsdecode(getattr(event, "src_path", "") or "")
        dest = os.fsdecode(getattr(event, "dest_path", "") or "")
        if self._root and _hidden(src, self._root) and (not dest or _hidden(dest, self._root)):
            return  # .git, .tmem, .obsidian: busy folders that hold no notes (but a setting or two)
        kind = str(getattr(event, "event_type", ""))
        self._sink(RawEvent(kind, src, dest, bool(getattr(event, "is_directory", False))))


def _hidden(path: str, root: str) -> bool:
    rel = vault_relative(path, root)
    return rel is not None and (rel.startswith(".") or "/." in rel) and rel not in SETTINGS_FILES


class Watcher:
    """One watchdog Observer over a folder (the vault's memory/), which the daemon can restart.

    `problem()` says why the watcher no longer does its job: a thread died, or the folder was
    replaced (moved away and recreated), which leaves inotify watching the old one.
    """

    def __init__(self, folder: Path, sink: Callable[[RawEvent], None]) -> None:
        self.folder = folder
        self._sink = sink
        self._observer: object | None = None
        self._identity: tuple[int, int] | None = None

    def start(self) -> None:
        from watchdog.events import (
            DirCreatedEvent,
            DirDeletedEvent,
            DirMovedEvent,
            FileClosedEvent,
            FileCreatedEvent,
            FileDeletedEvent,
            FileModifiedEvent,
            FileMovedEvent,
        )
        from watchdog.observers import Observer

        stat = os.stat(self.folder)
        observer = Observer()
        kinds = [
            FileCreatedEvent,
            FileModifiedEvent,
            FileMovedEvent,
            FileDeletedEvent,
            FileClosedEvent,
            DirCreatedEvent,
            DirMovedEvent,
            DirDeletedEvent,
        ]
        observer.schedule(
            _Recorder(self._sink, str(self.folder)),  # type: ignore[arg-type]  # duck-typed: dispatch() is all it calls
            str(self.folder),
            recursive=True,
            event_filter=kinds,  # type: ignore[arg-type]
        )
        observer.start()
        self._observer = observer
        self._identity = (stat.st_dev, stat.st_ino)

    def problem(self) -> str | None:
        observer = self._observer
        if observer is None:
            return "not started"
        if not observer.is_alive():  # type: ignore[attr-defined]
            return "the observer thread stopped"
        emitters = list(observer.emitters)  # type: ignore[attr-defined]
        if not emitters or not all(e.is_alive() for e in emitters):
            return "the inotify reader thread stopped"
        try:
            stat = os.stat(self.folder)
        except OSError:
            return f"{self.folder.name}/ is gone"
        if (stat.st_dev, stat.st_ino) != self._identity:
            return f"{self.folder.name}/ was replaced by another folder"
        return None

    def stop(self, timeout: float = 5.0) -> None:
        observer, self._observer = self._observer, None
        if observer is None:
            return
        try:
            observer.stop()  # type: ignore[attr-defined]
            observer.join(timeout)  # type: ignore[attr-defined]
        except Exception as exc:  # a broken observer must not keep the daemon from restarting it
            log.warning("stopping the watcher: %s", exc)


class OverflowFlag(logging.Handler):
    """Set when watchdog logs that the kernel's inotify queue overflowed: events were lost."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self.event.set()
