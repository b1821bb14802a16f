"""Writing a large batch of full text in a second process while this one reads the notes.

A build is about half Whoosh's own writing (pooling postings, sorting and encoding them) and half
reading, parsing and analysing notes. With two cores or more, `open_sink` hands the Whoosh half
of a batch of `CHILD_MIN_DOCS` or more to a child process (`python -m tiered_memory.index.fts_writer`)
so the halves overlap; smaller batches, one core, or a child that will not start are written in
this process, as `FtsIndex.upsert` always did.

The child adds what it is sent (documents analysed on this side, `analysed_fields`) and commits
only when asked. When its input ends without that request (this process was killed) it cancels:
the index stays at its last commit, and the caller writes the catalog only after a commit, so the
catalog never names a note the full text lacks.
"""

from __future__ import annotations

__all__ = [
    "CHILD_MIN_DOCS",
    "Child",
    "InProcess",
    "Sink",
    "WithFallback",
    "WriterUnavailable",
    "log",
    "open_sink",
    "serve",
]

import logging
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol

from tiered_memory.errors import IndexUnusable
from tiered_memory.index.fts import FtsDoc, FtsIndex, analysed_fields

log = logging.getLogger(__name__)

CHILD_MIN_DOCS = 2000  # below this the child's start-up (its imports) outweighs the overlap
_SEND_EVERY = 250  # documents per message: small enough to keep both processes busy
_EXIT_WAIT = 30.0


class Sink(Protocol):
    """Where a batch goes. `commit` asks for everything sent so far to be committed; `committed`
    returns once the oldest commit asked for (and not yet waited for) is done."""

    def add(self, docs: list[FtsDoc]) -> None: ...
    def delete(self, paths: list[str]) -> None: ...
    def commit(self) -> None: ...
    def committed(self) -> None: ...
    def close(self) -> None: ...


class InProcess:
    """Collects a batch and writes it in one commit in this process."""

    def __init__(self, fts: FtsIndex, new: bool) -> None:
        self.fts, self.new = fts, new
        self.docs: list[FtsDoc] = []
        self.deleted: list[str] = []

    def add(self, docs: list[FtsDoc]) -> None:
        self.docs.extend(docs)

    def delete(self, paths: list[str]) -> None:
        self.deleted.extend(paths)

    def commit(self) -> None:
        if self.deleted:
            self.fts.delete(self.deleted)
        if self.docs:
            self.fts.upsert(self.docs, new=self.new)
        self.docs, self.deleted = [], []

    def committed(self) -> None:
        pass  # `commit` wrote it already

    def close(self) -> None:
        self.docs, self.deleted = [], []


class Child:
    """Streams analysed documents to a writer process. A commit is asked for and waited for
    apart, so this process goes on reading while the child writes its segment."""

    def __init__(self, fts: FtsIndex, new: bool) -> None:
        self.fts = fts
        package_root = str(Path(__file__).resolve().parents[2])  # the same tiered_memory as ours
        path = os.environ.get("PYTHONPATH")
        env = dict(os.environ, PYTHONPATH=package_root + (os.pathsep + path if path else ""))
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                __name__,
                str(fts.directory),
                "new" if new else "update",
                str(os.getpid()),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._stdin: IO[bytes] = self.proc.stdin  # type: ignore[assignment]
        self._stdout: IO[bytes] = self.proc.stdout  # type: ignore[assignment]
        self._asked = 0  # commits asked for and not yet waited for
        self._ready = False  # the child said it opened the index
        # Messages go through a queue and a thread of their own: a pipe holds ~64 KB, so writing
        # them here would stop this process's reading for the whole of each of the child's commits.
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._broken = False
        self._dropping = False
        self._sender = threading.Thread(target=self._send_all, name="tmem-fts-sender", daemon=True)
        self._sender.start()

    def add(self, docs: list[FtsDoc]) -> None:
        for start in range(0, len(docs), _SEND_EVERY):
            self._send(("add", [analysed_fields(d) for d in docs[start : start + _SEND_EVERY]]))

    def delete(self, paths: list[str]) -> None:
        if paths:
            self._send(("delete", paths))

    def commit(self) -> None:
        self._send(("commit", None))
        self._asked += 1

    def committed(self) -> None:
        if not self._asked:
            return
        self._asked -= 1
        try:
            kind, detail = pickle.load(self._stdout)
        except (EOFError, OSError, pickle.UnpicklingError):
            raise self._died() from None
        if kind != "ok":
            raise IndexUnusable(f"the full-text writer failed: {detail}")
        self.fts.reopen()

    def close(self) -> None:
        """Ends the child; what was sent after the last commit is dropped."""
        self._dropping = True
        self._outbox.put(None)
        self._sender.join()
        try:
            self._stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=_EXIT_WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._stdout.close()

    def _send(self, message: tuple[str, Any]) -> None:
        if not self._ready:
            self._await_ready()
        if self._broken:
            raise self._died()
        self._outbox.put(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    def _await_ready(self) -> None:
        # At the first message, by when this process has scanned and read its first notes, so the
        # child's start-up has mostly overlapped them.
        try:
            kind, _detail = pickle.load(self._stdout)
        except (EOFError, OSError, pickle.UnpicklingError, ValueError, TypeError):
            kind = None  # gone, or not a writer of ours answering
        if kind != "ready":
            raise WriterUnavailable(f"the full-text writer process did not start (exit {self.proc.poll()})")
        self._ready = True

    def _send_all(self) -> None:
        while (data := self._outbox.get()) is not None:
            if self._broken or self._dropping:
                continue
            try:
                self._stdin.write(data)
                self._stdin.flush()
            except OSError:  # a broken pipe: the child is gone (`committed` says so)
                self._broken = True

    def _died(self) -> IndexUnusable:
        code = self.proc.poll()
        return IndexUnusable(f"the full-text writer process ended early (exit {code}); run `tmem reindex`")


class WriterUnavailable(Exception):
    """The writer process did not start (nothing was sent to it yet)."""


class WithFallback:
    """A child writer that, if it does not start, hands the batch to this process instead: the
    first message waits for the child's word that it is ready, so nothing is lost by switching."""

    def __init__(self, fts: FtsIndex, new: bool) -> None:
        self.fts, self.new = fts, new
        self.inner: Child | InProcess = Child(fts, new)

    def add(self, docs: list[FtsDoc]) -> None:
        self._first(lambda: self.inner.add(docs))

    def delete(self, paths: list[str]) -> None:
        self._first(lambda: self.inner.delete(paths))

    def commit(self) -> None:
        self._first(lambda: self.inner.commit())

    def committed(self) -> None:
        self.inner.committed()

    def close(self) -> None:
        self.inner.close()

    def _first(self, call: Callable[[], None]) -> None:
        try:
            call()
        except WriterUnavailable as exc:
            log.warning("%s; writing the full text in this process", exc)
            self.inner.close()
            self.inner = InProcess(self.fts, self.new)
            call()  # `call` looks `inner` up again: the same message, to this process


def open_sink(fts: FtsIndex, new: bool, expected: int) -> Sink:
    """Where a batch of `expected` documents is written: a child process when that pays."""
    if expected >= CHILD_MIN_DOCS and (os.cpu_count() or 1) >= 2:
        try:
            return WithFallback(fts, new)
        except OSError:
            pass  # no process to spare: this one writes
    return InProcess(fts, new)


def serve(directory: Path, new: bool, source: IO[bytes], reply: IO[bytes]) -> int:
    """The child: say it is ready, then add, delete and commit as told; cancel on end of input.
    An index it cannot open ends it before it says so, and the parent writes the batch itself."""
    fts = FtsIndex.attach(directory)
    writer, add = fts.bulk_writer(new)
    pickle.dump(("ready", None), reply)
    reply.flush()
    try:
        while True:
            try:
                kind, payload = pickle.load(source)
            except (EOFError, pickle.UnpicklingError):
                return 0  # the parent is done or gone (mid-message): nothing uncommitted is kept
            if kind == "add":
                for fields in payload:
                    add(**fields)
            elif kind == "delete":
                for path in set(payload):
                    writer.delete_by_term("path", path)
            elif kind == "commit":
                try:
                    FtsIndex.commit_bulk(writer)
                except Exception as exc:
                    pickle.dump(("error", f"{type(exc).__name__}: {exc}"), reply)
                    reply.flush()
                    return 1
                pickle.dump(("ok", None), reply)
                reply.flush()
                writer, add = fts.bulk_writer(new)
    finally:
        FtsIndex.cancel_bulk(writer)
        fts.close()


def _die_with(parent: int) -> None:
    """On Linux, the kernel ends this process when its parent dies, even mid-commit: an orphan
    finishing a commit could land it in an index the next command is already rebuilding."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig, sigkill = 1, 9
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, sigkill)
    if os.getppid() != parent:  # it died before that took effect
        sys.exit(0)


if __name__ == "__main__":
    _die_with(int(sys.argv[3]))
    sys.exit(serve(Path(sys.argv[1]), sys.argv[2] == "new", sys.stdin.buffer, sys.stdout.buffer))
