"""The freshness scan's look at the disk, started in a forked child while this process loads the
rest of the application.

A command that runs in this process spends a while importing Whoosh and the index modules before
its first freshness scan, and the scan then stats every note (as long again in a large vault) on
the same core. Forked first, the walk runs on another core meanwhile. On a machine with no core to
spare the two share the CPU as they would one after the other, plus the fork (cheap).

The child sends the digest of what it saw (index.scan_mark) first, then the stats themselves
(marshal: C-fast and exact for dicts of str -> (float, int)). When the digest matches the last
scan's mark, the usual case before a search, the parent needs nothing more and never loads the
stats.

A large vault (`SPLIT_ROWS` notes or more at the last scan) is looked at by one child per part
(storage.walk), each stat'ing its own files, on two cores at once. The freshness scan without the
write lock forks them for its own look too when it has no look under way (and may fork), since at
100,000 notes the walk is most of a scan. A split look only decides whether there is work: a file
renamed between the two listings may be seen under both names or neither, so the scan under the
lock, whose findings are applied, walks in one process.

A child starts with Ctrl-C and SIGTERM at their default action (blocked across the fork, so no
KeyboardInterrupt ever unwinds the parent's code in the child) and closes every descriptor it
inherited but its pipe: an orphaned child holds no index lock.

What the child saw is the disk as of the command's start rather than a moment later: a search sees
the files as they were when it was asked for. Only the first scan without the write lock takes it;
one under the lock looks again.

Only where a fork is safe: POSIX except macOS (whose system libraries do not survive a fork
without exec), from a process with no other thread. Elsewhere `start` and `start_parts` return
None and the scan looks as before. Anything amiss in the child (an error, a signal, a short read)
is a None, never an error: the caller looks itself.
"""

from __future__ import annotations

__all__ = ["Ahead", "SPLIT_ROWS", "begin", "can_fork", "start", "start_parts"]

import marshal
import os
import signal
import sys
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, cast

from tiered_memory.index import scan_mark
from tiered_memory.index.scan_mark import DIGEST_CHARS, Seen
from tiered_memory.storage.walk import PARTS

if TYPE_CHECKING:
    from tiered_memory.model.folders import FolderRules


_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
SPLIT_ROWS = 20_000  # notes at the last scan from which the look is split between PARTS children


class Ahead:
    """A look at the disk running in child processes (one, or one per part): its `digest`, then
    if need be what it `seen`; `cancel` when neither is wanted (any more)."""

    def __init__(self, children: list[_Child], rules_text: str | None = None) -> None:
        self._children = children
        self._rules_text = rules_text  # set: each child looks at one part, and the parts are joined
        self._digest: str | None = None

    def digest(self) -> str | None:
        """The digest of what the children saw, as soon as they send it; None when one failed."""
        if self._digest is None and self._children:
            heads = [child.head() for child in self._children]
            if None in heads:
                self.cancel()
            elif self._rules_text is None:
                self._digest = heads[0]
            else:
                self._digest = scan_mark.joined_digest(cast("list[str]", heads), self._rules_text)
        return self._digest

    def seen(self) -> Seen | None:
        """Everything the children saw, waiting for them to finish; None when one failed, or when
        the look was cancelled."""
        digest = self.digest()
        if digest is None:
            return None
        parts = [child.body() for child in self._children]
        self.cancel()
        if None in parts or not parts:
            return None
        if self._rules_text is None:
            return parts[0]
        return scan_mark.join(cast("list[Seen]", parts), self._rules_text)

    def cancel(self) -> None:
        """Stop the children still running, and let them go."""
        children, self._children = self._children, []
        for child in children:  # every child told first: an interrupt while reaping leaves none running
            child.terminate()
        for child in children:
            child.reap()


class _Child:
    """One forked look: the digest it sends first, then its stats."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid: int | None = pid
        self._pipe = os.fdopen(fd, "rb")
        self._head: str | None = None

    def head(self) -> str | None:
        if self._head is None and self.pid is not None:
            try:
                head = self._pipe.read(DIGEST_CHARS)
                self._head = head.decode("ascii") if len(head) == DIGEST_CHARS else None
            except (OSError, ValueError):
                self._head = None
        return self._head

    def body(self) -> Seen | None:
        head = self.head()
        if head is None or self.pid is None:
            return None
        try:
            data = self._pipe.read()
            ok = _reap(self.pid) == 0
            self.pid = None
            found = marshal.loads(data) if ok else None
        except (OSError, EOFError, ValueError, TypeError):
            found = None
        if not (isinstance(found, tuple) and len(found) == 2 and all(isinstance(d, dict) for d in found)):
            return None
        return Seen(found[0], found[1], head)

    def terminate(self) -> None:
        """Stop the child if it still runs (without waiting for it: `reap`)."""
        self._pipe.close()  # a child still writing gets EPIPE and exits
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except OSError:
                pass

    def reap(self) -> None:
        pid, self.pid = self.pid, None
        if pid is not None:
            _reap(pid)


def can_fork() -> bool:
    """Whether this process may fork without exec: a POSIX system other than macOS, and no thread
    besides this one (native ones included, such as a math library's pool, where the system
    shows them)."""
    if not hasattr(os, "fork") or sys.platform == "darwin" or threading.active_count() != 1:
        return False
    return _native_threads() in (None, 1)


def begin(root: Path, rules: FolderRules, rules_text: str, rows: int) -> Ahead | None:
    """The freshness scan's look at the vault at `root` (resolved), in a child, or in one child
    per part when the last scan counted `SPLIT_ROWS` notes or more (`rows`) and there are two
    cores, which shortens a look at a large vault. None where this
    process cannot fork safely."""
    if rows >= SPLIT_ROWS and (parts := start_parts(root, rules, rules_text)) is not None:
        return parts
    return start(lambda: scan_mark.look(root, rules, rules_text))


def start(look: Callable[[], Seen]) -> Ahead | None:
    """Run `look` in a forked child; None when this process cannot fork safely (see above)."""
    if not can_fork():
        return None
    child = _fork(look)
    return Ahead([child]) if child is not None else None


def start_parts(root: Path, rules: FolderRules, rules_text: str) -> Ahead | None:
    """One child per part of the look (storage.walk); None when this process cannot fork safely,
    or has a single core to run them on (each child lists every folder: one child is faster)."""
    if _cores() < 2 or not can_fork():
        return None
    children: list[_Child] = []
    for part in range(PARTS):
        child = _fork(partial(scan_mark.look, root, rules, rules_text, part))
        if child is None:
            Ahead(children).cancel()
            return None
        children.append(child)
    return Ahead(children, rules_text)


def _fork(look: Callable[[], Seen]) -> _Child | None:
    try:
        read_fd, write_fd = os.pipe()
    except OSError:  # out of file descriptors, say: the scan walks here
        return None
    # No Ctrl-C between the fork and the child's own handlers: a KeyboardInterrupt raised in the
    # child there would unwind through the parent's code (its `finally`s, the index lock's release).
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:  # the child: look, send, and leave without running any of the parent's cleanup
        code = 1
        try:
            for number in _STOP_SIGNALS:  # an interrupt or a stop ends the child, nothing more
                signal.signal(number, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            _close_inherited(keep=write_fd)
            seen = look()
            with os.fdopen(write_fd, "wb") as pipe:
                pipe.write(seen.digest.encode("ascii")[:DIGEST_CHARS].ljust(DIGEST_CHARS, b"?"))
                pipe.flush()  # the digest first: the parent may need nothing more
                pipe.write(marshal.dumps((seen.notes, seen.attachments)))
            code = 0
        except BaseException:  # noqa: BLE001, S110 - a failed child is a None in the parent
            pass
        finally:
            os._exit(code)
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    os.close(write_fd)
    return _Child(pid, read_fd)


def _close_inherited(keep: int) -> None:
    """Close what the child inherited beyond its pipe and the standard streams: a sibling's pipe
    (which would keep that sibling from seeing its reader go), the parent's index lock and
    databases (which an orphaned child would hold after the parent died)."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except (OSError, ValueError):
        return
    for fd in fds:
        if fd > 2 and fd != keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _native_threads() -> int | None:
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def _reap(pid: int) -> int | None:
    """The child's exit code, once it has ended (None: already reaped by someone else)."""
    try:
        _pid, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None
    return os.waitstatus_to_exitcode(status)
