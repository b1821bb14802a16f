"""Search access statistics in a side file, so a search never rewrites a note or makes a commit.

Each search appends one JSON line per hit to `.tmem-access.jsonl` at the vault root (gitignored,
outside the derived `.tmem/` folder so deleting the indexes loses no statistics). `tmem maintain`
folds the counts into tmem's own notes' frontmatter (access_count, last_accessed), and into the
tracked side file `.tmem-stats.json` for hand-written notes (see model.note_stats).

A run first moves the log aside (`take`: renamed into `.tmem/`, so a search meanwhile starts a new
one and none of its recalls is lost), folds what it moved, names it in its commit's message (a
`Recalls-Folded:` line) and only then deletes it (`done`). A run killed after its commit leaves
the moved log behind, and the next run, finding it named in a commit, deletes it unfolded instead
of counting its recalls twice; one killed before its commit leaves it to be folded by the next.
"""

from __future__ import annotations

__all__ = [
    "FOLDED_TRAILER",
    "RECALLS_CACHE",
    "Recalls",
    "clear",
    "counts",
    "done",
    "load",
    "load_files",
    "moved_aside",
    "record",
    "stats",
    "take",
]

import errno
import json
import os
import secrets
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from tiered_memory.model import note_stats
from tiered_memory.model.layout import ACCESS_LOG, STATS_FILE
from tiered_memory.storage import side_file

RECALLS_CACHE = "recalls.json"  # under .tmem/: the log's counts so far (`Recalls`), derived
_FOLDING = "recalls.folding."  # under .tmem/: a log a maintenance run moved aside to fold
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
FOLDED_TRAILER = "Recalls-Folded"  # the commit message line naming the moved logs it folded


def record(root: Path, ids: Iterable[str], when: datetime) -> None:
    lines = "".join(json.dumps({"id": i, "at": when.isoformat()}) + "\n" for i in ids)
    if not lines:
        return
    # O_APPEND writes of one small buffer do not interleave between processes. Never through a
    # link (a cloned repository can carry one to ~/.bashrc): such a recall goes uncounted.
    try:
        fd = os.open(root / ACCESS_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NOFOLLOW, 0o600)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        return
    try:
        os.write(fd, lines.encode("utf-8"))
    finally:
        os.close(fd)


def load(root: Path, rename: Callable[[str, str], str] | None = None) -> dict[str, tuple[int, str]]:
    """id -> (accesses not yet folded into the note, last access time as ISO text). `rename`:
    (id, time) of an entry -> the id it counts for (a note whose id changed since, model.note_ids)."""
    data = _read(root / ACCESS_LOG)
    if data is None:
        return {}
    counts: Counter[str] = Counter()
    last: dict[str, str] = {}
    _tally(data, counts, last, rename)
    return {k: (v, last[k]) for k, v in counts.items()}


def take(root: Path, state_dir: Path) -> list[Path]:
    """Move the log aside for a maintenance run to fold: every moved log waiting, oldest first
    (one a killed run left behind included)."""
    log = root / ACCESS_LOG
    if log.exists():
        state_dir.mkdir(exist_ok=True)
        aside = state_dir / f"{_FOLDING}{time.time_ns()}-{secrets.token_hex(4)}.jsonl"
        try:
            os.replace(log, aside)
        except FileNotFoundError:  # another process's run took it first
            pass
    return moved_aside(state_dir)


def moved_aside(state_dir: Path) -> list[Path]:
    """The logs maintenance runs moved aside and have not yet deleted, oldest first."""
    return sorted(state_dir.glob(f"{_FOLDING}*.jsonl"))


def load_files(
    paths: Iterable[Path], rename: Callable[[str, str], str] | None = None
) -> dict[str, tuple[int, str]]:
    """`load` over moved-aside logs (and the live one, when given among them)."""
    counts: Counter[str] = Counter()
    last: dict[str, str] = {}
    for path in paths:
        data = _read(path)
        if data is not None:
            _tally(data, counts, last, rename)
    return {k: (v, last[k]) for k, v in counts.items()}


def _open(path: Path) -> BinaryIO | None:
    """A log opened for reading when it is a regular file where it is named (a link, a pipe or a
    device is no log: it could lead out of the vault, wait for ever or never end), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    handle = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        handle.close()
        return None
    return handle


def _read(path: Path) -> bytes | None:
    handle = _open(path)
    if handle is None:
        return None
    with handle:
        return handle.read()


def done(paths: Iterable[Path]) -> None:
    """Delete moved-aside logs: folded into a commit, or named by one already."""
    for path in paths:
        path.unlink(missing_ok=True)


def _tally(
    data: bytes,
    counts: Counter[str],
    last: dict[str, str] | None = None,
    rename: Callable[[str, str], str] | None = None,
) -> None:
    """Add the log lines in `data` to `counts` and, when given, `last`. The log grows by one line per hit of
    every search until maintenance empties it, so it is parsed as one JSON array (one C call);
    only when that fails (a torn line after a crash, text that is not UTF-8, a line nested
    deeper than json decodes) line by line, skipping what does not parse."""
    lines = data.splitlines()
    try:
        items = json.loads(b"[" + b",".join(line for line in lines if line.strip()) + b"]")
        pairs = [(str(item["id"]), str(item["at"])) for item in items]
    except (ValueError, KeyError, TypeError, RecursionError):
        pairs = []
        for line in lines:
            try:
                item = json.loads(line)
                pairs.append((str(item["id"]), str(item["at"])))
            except (ValueError, KeyError, TypeError, RecursionError):
                continue
    if rename is not None:
        pairs = [(rename(note_id, at), at) for note_id, at in pairs]
    if last is None:
        counts.update(note_id for note_id, _ in pairs)
        return
    for note_id, at in pairs:
        counts[note_id] += 1
        if at > last.get(note_id, ""):
            last[note_id] = at


class Recalls:
    """The access log's counts for a process that searches again and again (the daemon): each
    look reads only the lines appended since the previous one. The log is only ever appended to
    (O_APPEND) or removed by maintenance, so a new file, or a shorter one, is read from the start.
    A new file is told by its inode and, since a removed file's inode can be given to the next one,
    by its first line (each line holds a time).

    With a `cache` file (derived, under `.tmem/`), a new process starts from the counts an earlier
    one kept there instead of from the log's first line: the log grows by a line per hit of every
    search until the daily maintenance, and re-reading all of it made each search slower than the
    one before. The cache is rewritten when a look has read more than `CACHE_AFTER` new bytes."""

    CACHE_AFTER = 32 * 1024

    def __init__(self, root: Path, cache: Path | None = None) -> None:
        self.path = root / ACCESS_LOG
        self.cache = cache
        self._lock = threading.Lock()
        self._file: tuple[int, int] | None = None  # (device, inode) of the log read so far
        self._head = b""  # its first line
        self._offset = 0
        self._cached_at = 0  # the offset the cache file holds the counts up to
        self._counts: Counter[str] = Counter()
        self._stats: tuple[tuple[int, int, int], note_stats.Stats] | None = None
        if cache is not None:
            self._load_cache(cache)

    def counts(self) -> dict[str, int]:
        with self._lock:
            self._catch_up()
            if self.cache is not None and self._offset - self._cached_at > self.CACHE_AFTER:
                self._save_cache(self.cache)
            return dict(self._counts)

    def stats(self) -> note_stats.Stats:
        """`stats(root)`, read again only when the file changed (maintenance replaces it whole)."""
        path = self.path.parent / STATS_FILE
        try:
            st = path.stat()
        except OSError:
            return {}
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        with self._lock:
            if self._stats is None or self._stats[0] != key:
                self._stats = (key, stats(self.path.parent))
            return self._stats[1]

    def _catch_up(self) -> None:
        handle = _open(self.path)
        if handle is None:
            self._reset(None)
            return
        with handle:
            st = os.fstat(handle.fileno())
            same = (st.st_dev, st.st_ino) == self._file and st.st_size >= self._offset
            if same and self._head and handle.read(len(self._head)) != self._head:
                same = False
            if not same:
                self._reset((st.st_dev, st.st_ino))
            start = self._offset
            handle.seek(start)
            data = handle.read()
        if start == 0:
            self._head = data[: data.find(b"\n") + 1]
        # Whole lines only: one being appended right now is read, complete, next time.
        end = data.rfind(b"\n") + 1
        _tally(data[:end], self._counts)
        self._offset += end

    def _reset(self, file: tuple[int, int] | None) -> None:
        self._file, self._offset, self._head, self._cached_at = file, 0, b"", 0
        self._counts.clear()

    def _load_cache(self, cache: Path) -> None:
        # Taken only as a whole and only for the log it was made from: `_catch_up` checks the
        # inode, the first line and the length as for counts it made itself.
        try:
            data = json.loads(cache.read_bytes())
            file = (int(data["device"]), int(data["inode"]))
            head = str(data["head"]).encode("utf-8")
            offset = int(data["offset"])
            counts = Counter({str(k): int(v) for k, v in data["counts"].items()})
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return
        self._file, self._head, self._offset, self._cached_at = file, head, offset, offset
        self._counts = counts

    def _save_cache(self, cache: Path) -> None:
        if self._file is None:
            return
        data = {
            "device": self._file[0],
            "inode": self._file[1],
            "head": self._head.decode("utf-8", "replace"),
            "offset": self._offset,
            "counts": self._counts,
        }
        # Not written (a read-only .tmem/): the next process reads the log from its start.
        if side_file.replace(cache, json.dumps(data)):
            self._cached_at = self._offset


def counts(root: Path) -> dict[str, int]:
    return {k: v for k, (v, _) in load(root).items()}


def clear(root: Path) -> None:
    try:
        (root / ACCESS_LOG).unlink()
    except FileNotFoundError:
        pass


def stats(root: Path) -> note_stats.Stats:
    """The side bookkeeping of hand-written notes (id -> access_count, confidence, ...)."""
    try:
        return note_stats.loads((root / STATS_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return {}
