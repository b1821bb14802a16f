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
    "OwnWrites",
    "RawEvent",
    "SETTINGS_FILES",
    "Watcher",
    "is_ignored",
    "log",
    "paths_to_reindex",
    "vault_relative",
]

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISDIR

from tiered_memory.model.folders import is_attachment
from tiered_memory.model.layout import CONFIG_NAME
from tiered_memory.model.note import is_note_path
from tiered_memory.storage import editor_templates, transaction
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


class OwnWrites:
    """What the daemon's own units of work just made paths hold, told before each write
    (`Vault.will_write`): the digest of the bytes, or ABSENT for a path moved away or removed.

    The watcher drops an event whose paths all still hold what was told (read again when the event
    comes, so a person's save after tmem's write, even a moment after, is never dropped): the unit
    of work that wrote them has committed and reindexed them itself. Kept `keep` seconds, long
    enough for an event queued behind a burst. Thread-safe: told on the writer's thread, asked on
    watchdog's."""

    def __init__(
        self,
        keep: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        digest_of: Callable[[Path], str] = transaction.file_digest,
    ) -> None:
        self.keep = keep
        self._clock = clock
        self._digest_of = digest_of
        self._told: dict[str, tuple[str, float]] = {}  # rel -> (digest or ABSENT, when told)
        self._lock = threading.Lock()

    def told(self, rel: str, digest: str) -> None:
        now = self._clock()
        with self._lock:
            self._told.pop(rel, None)  # to the end: the dict stays in the order told, oldest first
            self._told[rel] = (digest, now)
            for old, (_digest, at) in list(self._told.items()):
                if now - at <= self.keep:
                    break
                del self._told[old]

    def holds(self, rel: str, path: Path) -> bool:
        """Whether `rel` (at `path`) holds now what the daemon told it would."""
        with self._lock:
            entry = self._told.get(rel)
        if entry is None or self._clock() - entry[1] > self.keep:
            return False
        return self._digest_of(path) == entry[0]


class _Recorder:
    """The watchdog handler: turns each event into a RawEvent for the sink, leaving out hidden
    paths and the daemon's own writes (`OwnWrites`); tells `on_top` of folders made, moved or
    removed at the top of the watched folder."""

    def __init__(
        self,
        sink: Callable[[RawEvent], None],
        root: str = "",
        own: OwnWrites | None = None,
        on_top: Callable[[str, bool], None] | None = None,
    ) -> None:
        self._sink = sink
        self._root = root
        self._own = own
        self._on_top = on_top
        self.dropped = 0  # events left out as the daemon's own writes

    def dispatch(self, event: object) -> None:
        src = os.fsdecode(getattr(event, "src_path", "") or "")
        dest = os.fsdecode(getattr(event, "dest_path", "") or "")
        is_directory = bool(getattr(event, "is_directory", False))
        kind = str(getattr(event, "event_type", ""))
        if is_directory and self._on_top is not None and kind != "modified":
            for path in (src, dest):
                rel = vault_relative(path, self._root) if path else None
                if rel and "/" not in rel:
                    self._on_top(rel, True)
        if self._root and _hidden(src, self._root) and (not dest or _hidden(dest, self._root)):
            return  # .obsidian and other hidden folders hold no notes (but a setting or two)
        if not is_directory and self._own is not None and self._own_write(src, dest):
            self.dropped += 1
            return
        self._sink(RawEvent(kind, src, dest, is_directory))

    def _own_write(self, src: str, dest: str) -> bool:
        assert self._own is not None
        for path in (src, dest):
            if not path:
                continue
            rel = vault_relative(path, self._root)
            if rel is None or not self._own.holds(rel, Path(path)):
                return False
        return True


def _hidden(path: str, root: str) -> bool:
    rel = vault_relative(path, root)
    return rel is not None and (rel.startswith(".") or "/." in rel) and rel not in SETTINGS_FILES


class Watcher:
    """The watchdog Observer over a folder (the vault), which the daemon can restart.

    Every folder at its top is watched recursively but `.git/` and `.tmem/`: the daemon's own
    commits, index files, journal and log would otherwise bring a hundred events to each write
    it makes, all of them dropped (one inotify watch over the whole vault cannot leave folders
    out). The top itself is watched alone, which tells of folders made, moved or removed there:
    their watches follow at once.

    `problem()` says why the watcher no longer does its job: a thread died, or a watched folder
    was replaced (moved away and recreated), which leaves inotify watching the old one.
    """

    def __init__(self, folder: Path, sink: Callable[[RawEvent], None], own: OwnWrites | None = None) -> None:
        self.folder = folder
        self._sink = sink
        self._own = own
        self._observer: object | None = None
        self._recorder: _Recorder | None = None
        # Each watched folder (`""`: the top, alone) -> its watch and (device, inode) when watched.
        self._watches: dict[str, tuple[object, tuple[int, int]]] = {}
        self._lock = threading.RLock()
        self._dropped_before = 0  # events dropped by the recorders of earlier starts

    @property
    def dropped(self) -> int:
        """Events left out as the daemon's own writes since the daemon started."""
        recorder = self._recorder
        return self._dropped_before + (recorder.dropped if recorder is not None else 0)

    def start(self) -> None:
        from watchdog.observers import Observer

        stat = os.stat(self.folder)
        observer = Observer()
        recorder = _Recorder(self._sink, str(self.folder), self._own, self._follow)
        with self._lock:
            self._recorder = recorder
        top = self._schedule(observer, self.folder, recursive=False)
        with self._lock:
            self._watches = {"": (top, _identity(stat))}
            self._observer = observer
        observer.start()
        # Listed once the top is watched: a folder made meanwhile is reported, or listed, or both.
        for name in sorted(os.listdir(self.folder)):
            self._follow(name)

    def _schedule(self, observer: object, path: Path, *, recursive: bool) -> object:
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
        return observer.schedule(  # type: ignore[attr-defined]
            self._recorder,  # duck-typed: dispatch() is all it calls
            str(path),
            recursive=recursive,
            event_filter=kinds,
        )

    def _follow(self, name: str, again: bool = False) -> None:
        """A folder at the top was made, moved or removed (`again`: its watch is made anew even
        where the folder there now has the inode of the one watched, which a folder removed and
        made again may have) or is found at the start: watch it as it is now. Runs on watchdog's
        thread (whose lock lets a handler change the watches) or at the start; `self._lock`
        guards the table alone, never held around a call to the observer, which takes its own."""
        if name in IGNORED_DIRS:
            return
        path = self.folder / name
        try:
            stat = os.lstat(path)
        except OSError:
            stat = None
        now = _identity(stat) if stat is not None and S_ISDIR(stat.st_mode) else None
        with self._lock:
            observer = self._observer
            held = self._watches.get(name)
            if observer is None or (held is not None and held[1] == now and not again):
                return
            if held is not None:
                del self._watches[name]
        if held is not None:
            with contextlib.suppress(Exception):  # its emitter may have stopped on its own
                observer.unschedule(held[0])  # type: ignore[attr-defined]
        if now is None:
            return
        try:
            watch = self._schedule(observer, path, recursive=True)
        except OSError as exc:  # gone again already, or out of inotify watches
            log.warning("cannot watch %s/: %s", name, exc)
            return
        with self._lock:
            self._watches[name] = (watch, now)
            recorder = self._recorder
        if again and recorder is not None:
            _report_contents(recorder, path)

    def problem(self) -> str | None:
        observer = self._observer
        if observer is None:
            return "not started"
        if not observer.is_alive():  # type: ignore[attr-defined]
            return "the observer thread stopped"
        emitters = list(observer.emitters)  # type: ignore[attr-defined]
        if not emitters or not all(e.is_alive() for e in emitters):
            return "the inotify reader thread stopped"
        with self._lock:
            watched = dict(self._watches)
        for name, (_watch, identity) in watched.items():
            shown = f"{name}/" if name else f"{self.folder.name}/"
            try:
                stat = os.stat(self.folder / name)
            except OSError:
                return f"{shown} is gone"
            if _identity(stat) != identity:
                return f"{shown} was replaced by another folder"
        return None

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            observer, self._observer = self._observer, None
            self._watches = {}
            if self._recorder is not None:
                self._dropped_before += self._recorder.dropped
                self._recorder = None
        if observer is None:
            return
        try:
            observer.stop()  # type: ignore[attr-defined]
            observer.join(timeout)  # type: ignore[attr-defined]
        except Exception as exc:  # a broken observer must not keep the daemon from restarting it
            log.warning("stopping the watcher: %s", exc)


def _report_contents(recorder: _Recorder, folder: Path) -> None:
    """What a folder made (or moved in) at the top held before its watch began, as created
    events, as watchdog reports it for a folder made under a watched one: the settings file an
    editor writes in its new hidden folder (a folder that holds notes is walked anyway)."""
    from watchdog.events import FileCreatedEvent

    for dirpath, _dirnames, filenames in os.walk(folder):
        for name in filenames:
            recorder.dispatch(FileCreatedEvent(os.path.join(dirpath, name)))


def _identity(stat: os.stat_result) -> tuple[int, int]:
    return (stat.st_dev, stat.st_ino)


class OverflowFlag(logging.Handler):
    """Set when watchdog logs that the kernel's inotify queue overflowed: events were lost."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self.event.set()
