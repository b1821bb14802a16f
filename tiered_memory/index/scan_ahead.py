"""The freshness scan's look at the disk, started in a forked child while this process loads the
rest of the application.

A command that runs in this process spends ~0.1 s importing Whoosh and the index modules before
its first freshness scan, and the scan then stats every note (~0.06-0.1 s at 10,000 notes) on the
same core. Forked first, the walk runs on another core meanwhile. On a machine with no core to
spare the two share the CPU as they would one after the other, plus the fork (~1 ms).

The child sends the digest of what it saw (index.scan_mark) first, then the stats themselves
(marshal: C-fast and exact for dicts of str -> (float, int)). When the digest matches the last
scan's mark, the usual case before a search, the parent needs nothing more and never loads the
stats.

What the child saw is the disk as of the command's start rather than ~0.1 s later: a search sees
the files as they were when it was asked for. Only the first scan without the write lock takes it;
one under the lock looks again.

Only where a fork is safe: POSIX except macOS (whose system libraries do not survive a fork
without exec), from a process with no other thread. Elsewhere `start` returns None and the scan
looks as before. Anything amiss in the child (an error, a signal, a short read) is a None, never
an error: the caller looks itself.
"""

from __future__ import annotations

import marshal
import os
import sys
import threading
from collections.abc import Callable

from tiered_memory.index.scan_mark import DIGEST_CHARS, Seen


class Ahead:
    """A look at the disk running in a child process: its `digest`, then if need be what it
    `seen`; `cancel` when neither is wanted (any more)."""

    def __init__(self, pid: int, fd: int) -> None:
        self._pid: int | None = pid
        self._pipe = os.fdopen(fd, "rb")
        self._digest: str | None = None

    def digest(self) -> str | None:
        """The digest of what the child saw, as soon as it is sent; None when it failed."""
        if self._digest is None and self._pid is not None:
            try:
                head = self._pipe.read(DIGEST_CHARS)
                self._digest = head.decode("ascii") if len(head) == DIGEST_CHARS else None
            except (OSError, ValueError):
                self._digest = None
            if self._digest is None:
                self.cancel()
        return self._digest

    def seen(self) -> Seen | None:
        """Everything the child saw, waiting for it to finish; None when it failed, or when it
        was cancelled."""
        digest = self.digest()
        if digest is None or self._pid is None:
            return None
        try:
            data = self._pipe.read()
            ok = _reap(self._pid) == 0
            self._pid = None
            found = marshal.loads(data) if ok else None
        except (OSError, EOFError, ValueError, TypeError):
            found = None
        self.cancel()
        if not (isinstance(found, tuple) and len(found) == 2 and all(isinstance(d, dict) for d in found)):
            return None
        return Seen(found[0], found[1], digest)

    def cancel(self) -> None:
        """Stop the child if it still runs, and let it go."""
        self._pipe.close()  # a child still writing gets EPIPE and exits
        pid, self._pid = self._pid, None
        if pid is None:
            return
        import signal  # only when a look is stopped

        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
        _reap(pid)


def can_fork() -> bool:
    """Whether this process may fork without exec: a POSIX system other than macOS, and no thread
    besides this one (native ones included, such as a math library's pool, where the system
    shows them)."""
    if not hasattr(os, "fork") or sys.platform == "darwin" or threading.active_count() != 1:
        return False
    return _native_threads() in (None, 1)


def start(look: Callable[[], Seen]) -> Ahead | None:
    """Run `look` in a forked child; None when this process cannot fork safely (see above)."""
    if not can_fork():
        return None
    try:
        read_fd, write_fd = os.pipe()
    except OSError:  # out of file descriptors, say: the scan walks here
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return None
    if pid == 0:  # the child: look, send, and leave without running any of the parent's cleanup
        code = 1
        try:
            os.close(read_fd)
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
    os.close(write_fd)
    return Ahead(pid, read_fd)


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
