"""Every lock tmem takes on a vault, in one place, with the order they nest in.

All of them are `flock`s on files under `.tmem/locks/`: the kernel drops a flock when its process
dies (kill -9 included), so a crash never leaves a lock behind. A flock belongs to an open file, so
two threads of one process exclude each other as two processes do.

Lock order (a holder of one may take those after it, never those before it):

    maintain → sync → write → index → schedule

- `maintain` one maintenance run at a time (a second one is refused, not queued).
- `sync`     one `tmem sync` at a time (its network steps run without the write lock).
- `write`    every change to the vault's files and git: write + commit + reindex of one unit of work.
- `index`    the side indexes under `.tmem/` (catalog, full text, vectors).
- `schedule` the record of the last daily maintenance, which the daemon and the installed timer
             share (`daemon.daily`): a read and a write under it, nothing taken inside it.

The daemon's pid file lock (`daemon.pid`) is separate: held for the daemon's whole life, only ever
tried, never waited for.
"""

from __future__ import annotations

__all__ = [
    "DAEMON_PID",
    "DEFAULT_WAIT",
    "LOCK_DIR",
    "ORDER",
    "daemon_holder",
    "hold",
    "holds",
    "is_locked",
    "lock_path",
    "read_holder",
]

import contextlib
import errno
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from tiered_memory.errors import LockTimeout

ORDER = ("maintain", "sync", "write", "index", "schedule")
LOCK_DIR = "locks"
DAEMON_PID = "daemon.pid"
# How long a writer waits for one other holder by default: longer than any single unit of work
# takes on a large vault (a maintenance commit of thousands of moves), short enough that a stuck
# process is reported instead of hanging an agent forever. The wait restarts whenever the lock
# passes to another process: a hundred writers queued behind each other are making progress, and
# the last of them must not give up only because ninety-nine went first.
DEFAULT_WAIT = 120.0
_POLL = 0.02
_HOLDER_CHECK = 0.25  # how often a waiter reads who holds the lock (a file read, so not every poll)

_held = threading.local()


def lock_path(state_dir: Path, name: str) -> Path:
    if name not in ORDER:
        raise ValueError(f"unknown lock '{name}' (known: {', '.join(ORDER)})")
    folder = state_dir / LOCK_DIR
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{name}.lock"


def _held_names() -> dict[tuple[str, str], int]:
    names: dict[tuple[str, str], int] | None = getattr(_held, "names", None)
    if names is None:
        names = {}
        _held.names = names
    return names


def holds(state_dir: Path, name: str) -> bool:
    """Whether this thread holds `name` on this vault already."""
    return _held_names().get((str(state_dir), name), 0) > 0


@contextlib.contextmanager
def hold(
    state_dir: Path,
    name: str,
    *,
    wait: float | None = DEFAULT_WAIT,
    what: str = "",
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[None]:
    """Hold the named lock. Re-entrant within a thread; `wait=0` tries once; `wait=None` waits forever.

    `wait` bounds how long one holder may keep a waiter out: it restarts when the lock changes
    hands. Raises LockTimeout (one clear line naming the lock and its holder) when it runs out.
    """
    key = (str(state_dir), name)
    held = _held_names()
    if held.get(key, 0) > 0:
        held[key] += 1
        try:
            yield
        finally:
            held[key] -= 1
        return
    _check_order(state_dir, name)
    path = lock_path(state_dir, name)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _acquire(fd, path, name, wait, what, sleep)
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        held[key] = 1
        try:
            yield
        finally:
            held[key] = 0
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _check_order(state_dir: Path, name: str) -> None:
    rank = ORDER.index(name)
    later = [other for other in ORDER[rank + 1 :] if holds(state_dir, other)]
    if later:
        # Taking an earlier lock while holding a later one is how two processes deadlock.
        raise RuntimeError(f"lock order: '{name}' taken while holding '{later[0]}' ({' → '.join(ORDER)})")


def _acquire(
    fd: int, path: Path, name: str, wait: float | None, what: str, sleep: Callable[[float], None]
) -> None:
    deadline = None if wait is None else time.monotonic() + wait
    holder = read_holder(path)
    next_check = time.monotonic() + _HOLDER_CHECK
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
        now = time.monotonic()
        if deadline is not None and wait and now >= next_check:
            next_check = now + _HOLDER_CHECK
            current = read_holder(path)
            if current is not None and current != holder:
                # Another process has it now: the one before it finished, so the queue moves.
                holder, deadline = current, now + wait
        if deadline is not None and now >= deadline:
            holder = read_holder(path)
            who = f" (held by pid {holder})" if holder else ""
            doing = what or _DESCRIPTIONS[name]
            if wait == 0:
                raise LockTimeout(f"{doing} is already running on this vault{who}")
            raise LockTimeout(f"gave up after {wait:.0f} s waiting for {doing}{who}; try again")
        sleep(_POLL)


_DESCRIPTIONS = {
    "maintain": "maintenance",
    "sync": "a sync",
    "write": "another tmem command writing to this vault",
    "index": "another process updating the indexes",
    "schedule": "another process claiming the daily maintenance",
}


def read_holder(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def is_locked(state_dir: Path, name: str) -> bool:
    """Whether some process (this one included) holds the named lock right now."""
    if holds(state_dir, name):
        return True
    path = state_dir / LOCK_DIR / f"{name}.lock"
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def daemon_holder(state_dir: Path) -> int | None:
    """The pid of the daemon holding this vault's pid-file lock, or None when no daemon holds it.

    The kernel drops a flock when its process dies, even by kill -9, so this never mistakes a
    crashed daemon's leftover pid file for a live one. Returns 0 when the holder's pid is unreadable.
    """
    path = state_dir / DAEMON_PID
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
            return read_holder(path) or 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
