"""`tmem daemon run`: one process per vault that keeps the indexes current and answers queries warm.

Threads: the main thread writes the heartbeat, supervises the watcher and handles signals; the
indexer thread applies debounced file events (`intake`), embeds and saves vectors (`embedding`),
auto-commits hand edits and runs the scheduled jobs (`jobs`); the socket thread (`protocol`)
accepts connections. `self.lock` serialises everything that touches the indexes. Each part says
what it needs of the daemon as a small protocol of its own; none imports this module.

Crash safety: the pid file is flock-ed (the kernel drops the lock on kill -9, so a stale pid file
or socket is recognised and cleaned up); notes are listed in `.tmem/vectors.unsaved` before they
are embedded and re-embedded after a crash, because vectors are saved at most every
`Timings.vector_save` seconds; a full rescan at start and every ten minutes catches any event the
watcher missed.
"""

from __future__ import annotations

__all__ = [
    "Daemon",
    "DaemonRunning",
    "LAST_SCAN_CHUNK",
    "SCHEDULE_NAME",
    "Timings",
    "acquire_lock",
    "log",
    "release_lock",
]

import contextlib
import dataclasses
import fcntl
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiered_memory import __version__
from tiered_memory.app.memory import Memory, default_embedder_factory
from tiered_memory.app.notes import stamp_hand_edits
from tiered_memory.config import Config
from tiered_memory.daemon import client
from tiered_memory.daemon.embedding import Embedding
from tiered_memory.daemon.health import (
    DaemonLog,
    iso,
    limit_malloc_arenas,
    release_free_memory,
    rss_mb,
    watch_error,
    write_heartbeat,
)
from tiered_memory.daemon.intake import Intake
from tiered_memory.daemon.jobs import DEFAULT_JOBS, AutoCommitter, JobFunc, Schedule, run_due_jobs
from tiered_memory.daemon.protocol import SocketServer, dispatch
from tiered_memory.daemon.watcher import (
    Debouncer,
    OverflowFlag,
    OwnWrites,
    RawEvent,
    Watcher,
)
from tiered_memory.errors import BadInput, ConfigError, TmemError
from tiered_memory.index import bm25f
from tiered_memory.index.preempt import preempted
from tiered_memory.model.dates import now_utc
from tiered_memory.model.layout import CONFIG_NAME
from tiered_memory.storage.vault import Vault

if TYPE_CHECKING:
    from tiered_memory.index.indexer import IndexReport

log = logging.getLogger("tiered_memory.daemon")

SCHEDULE_NAME = "daemon.schedule.json"
LAST_SCAN_CHUNK = 50  # notes the last scan applies (and embeds) between looks at its time limit
# The settings the daemon's own timings are made of (`Daemon.follow_settings`).
_TIMED = (
    "daemon.debounce_ms",
    "daemon.autocommit_seconds",
    "daemon.expiry_check_minutes",
    "daemon.sync_minutes",
    "daemon.backup_daily",
    "lifecycle.maintenance_time",
)


def _timed(config: Config) -> tuple[object, ...]:
    d = config.daemon
    return (
        d.debounce_ms,
        d.autocommit_seconds,
        d.expiry_check_minutes,
        d.sync_minutes,
        d.backup_daily,
        config.lifecycle.maintenance_time,
    )


class DaemonRunning(TmemError):
    """Another daemon holds this vault's lock."""


@dataclasses.dataclass
class Timings:
    """Intervals in seconds; tests shorten them (`tmem daemon run` has hidden options for that)."""

    heartbeat: float = 5.0  # heartbeat file, watcher supervision, vault-still-there check
    vector_save: float = (
        30.0  # vector changes are written at most this often (a save of a large vault is slow)
    )
    reconcile: float = 600.0  # full stat scan that catches events the watcher missed
    stability: float = 1.0  # a file modified more recently than this is not committed yet
    commit_retry: float = 2.0  # wait this long while .git/index.lock or a merge is in progress
    job_check: float = 30.0  # how often the schedule is looked at
    ready_wait: float = 25.0  # how long a query waits for the first indexing to finish
    max_batch_wait: float | None = None  # debounce cap; default max(2 s, 5 x daemon.debounce_ms)
    watch: bool = True  # off: no file watcher, as on a file system that reports no changes (tests)
    # The last scan at shutdown applies what it found for at most this long; what is left, the
    # next start's scan finds. With the commit's wait for a git command of the person's (10 s),
    # a stop stays within launchd's 20 s exit timeout (systemd's is 90 s).
    last_scan: float = 5.0


def acquire_lock(root: Path) -> int:
    """flock the pid file and write our pid in it; DaemonRunning when another daemon holds it."""
    path = client.pid_path(root)
    path.parent.mkdir(exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    for _attempt in range(10):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            time.sleep(0.05)  # `tmem daemon status` holds a shared lock for a moment
    else:
        os.close(fd)
        pid = client.read_pid(root)
        raise DaemonRunning(f"a tmem daemon is already running for this vault (pid {pid or 'unknown'})")
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return fd


def release_lock(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)  # nobody reads our pid once we are gone
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


class _Memo:
    """Builds the embedder once: reopening the indexes must not reload a model."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self._factory = factory
        self._value: Any = None

    def __call__(self) -> Any:
        if self._value is None:
            self._value = self._factory()
        return self._value


class Daemon:
    def __init__(
        self,
        root: Path,
        *,
        timings: Timings | None = None,
        embedder_factory: Callable[[], Any] | None = None,
        jobs: dict[str, JobFunc] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        now: Callable[[], datetime] = now_utc,
        local_now: Callable[[], datetime] = lambda: datetime.now().astimezone(),
        console: bool = False,
    ) -> None:
        self.root = root.resolve()
        self.vault = Vault(self.root)
        config = self.vault.config
        self.timings = t = timings or Timings()
        self.clock = clock
        self.wall = wall
        self.now = now
        self.local_now = local_now
        self.console = console
        self.jobs = DEFAULT_JOBS if jobs is None else jobs
        self._embedder = _Memo(embedder_factory or default_embedder_factory(self.vault))
        self.debouncer = Debouncer(*self._batching(config), clock)
        # The watcher leaves out the events of the daemon's own units of work (their commit and
        # reindex are done): told what each write makes a path hold, just before it is made.
        self.own_writes = OwnWrites()
        self.vault.will_write = self.own_writes.told
        self.watcher = Watcher(self.root, self.debouncer.add, self.own_writes)
        self.committer = AutoCommitter(
            self.vault,
            self._commit_hand_edits,
            config.daemon.autocommit_seconds,
            stability=t.stability,
            retry=t.commit_retry,
            clock=clock,
            wall=wall,
        )
        self.schedule = Schedule(self.vault.state_dir / SCHEDULE_NAME, config)
        self._timed_by = config  # the settings the timings above were taken from
        self.lock = threading.RLock()
        self._reads = threading.local()
        self._held = threading.local()  # `indexing` already entered on this thread
        self.ready = threading.Event()
        self.stopping = threading.Event()
        self._watcher_stopped = threading.Event()  # the last events are in: the final flush may start
        self.memory: Memory | None = None
        self.exit_code = 0
        self.vault_gone = False
        self.stats: dict[str, Any] = {
            "batches": 0,
            "notes": 0,
            "last_event": None,
            "errors": 0,
            "last_error": None,
        }
        self._started = wall()
        self._phase, self._phase_since = "starting", wall()
        self.embedding = Embedding(self, self.vault.state_dir, save_every=t.vector_save, clock=clock)
        self.intake = Intake(
            self,
            self.vault,
            committer=self.committer,
            embedding=self.embedding,
            stats=self.stats,
            clock=clock,
            wall=wall,
        )
        self._reconcile_at = clock() + t.reconcile
        self._settings_stale = False  # tmem.yaml or the templates settings changed: read them again
        # tmem.yaml as the heartbeat last saw it: as read above, so an edit since is noticed
        self._settings_seen = self.vault.read_stamp
        # The first look too: daemons started together (one scheduler, one outage) would all
        # make their first sync, due at once, in the same second.
        self._next_job_check = clock() + t.job_check * self.schedule.rng.uniform(0.5, 1.0)
        self._thread_error: str | None = None
        self._watcher_restarts = 0
        self._overflow = OverflowFlag()
        self._watching = False
        self._server: SocketServer | None = None
        self._worker: threading.Thread | None = None
        self._log: DaemonLog | None = None
        self._progress: list[Any] | None = None
        self._signals = 0
        self._lock_inode = 0

    # ---- lifecycle --------------------------------------------------------------------------------
    def run(self) -> int:
        """Serve until stopped. Returns the exit code (0 after a clean stop)."""
        lock_fd = acquire_lock(self.root)
        self._lock_inode = os.fstat(lock_fd).st_ino
        limit_malloc_arenas()
        bm25f.prefer_arrays()
        self._log = DaemonLog(self.vault.state_dir, self.console, self._overflow)
        previous_hook = threading.excepthook
        threading.excepthook = self._thread_died
        try:
            log.info("daemon %s starting (pid %d) for %s", __version__, os.getpid(), self.root)
            self._clean_stale_files()
            self._server = SocketServer(
                client.socket_path(self.root), lambda line, send: dispatch(self, line, send)
            )
            self._server.start()
            self._install_signals()
            self._worker = threading.Thread(target=self._work, name="tmem-indexer", daemon=True)
            self._worker.start()
            self._main_loop()
        except Exception:
            self.record_error("the daemon failed")
            self.exit_code = 1
        finally:
            self._shutdown()
            threading.excepthook = previous_hook
            log.info("daemon stopped (exit %d)", self.exit_code)
            if self._log is not None:
                self._log.close()
            release_lock(lock_fd)
        return self.exit_code

    def request_stop(self) -> None:
        self.stopping.set()
        self.debouncer.close()

    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # in-process tests run the daemon on a thread and stop it with request_stop()

        def handle(signum: int, _frame: object) -> None:
            self._signals += 1
            if self._signals > 1:
                log.warning("second signal: exiting at once, without flushing")
                os._exit(1)
            log.info("%s received: flushing and stopping", signal.Signals(signum).name)
            self.request_stop()

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, handle)

    def _main_loop(self) -> None:
        while True:
            write_heartbeat(self.root, self.status())
            if self.stopping.wait(self.timings.heartbeat):
                return
            # A write racing the move can make the folder up again, holding only .tmem/: a vault
            # without its repository is gone as well.
            if not self.root.is_dir() or not (self.root / ".git").exists():
                log.error("the vault folder %s disappeared; the daemon stops", self.root)
                self.vault_gone = True
                self.exit_code = 1
                return
            if self._state_removed():
                log.error(
                    "%s was removed; the daemon stops (start it again to rebuild the indexes)",
                    client.STATE_DIR,
                )
                self.exit_code = 1
                return
            if self._worker is not None and not self._worker.is_alive():
                log.error("the indexer thread stopped; the daemon stops")
                self.exit_code = self.exit_code or 1
                return
            self._supervise_watcher()
            self._notice_settings()

    def _notice_settings(self) -> None:
        """tmem.yaml changed since its settings were read, and nothing said so: no watcher (it
        could not start, or a file system sends no events) and no operation since. Found by its
        stamp at each heartbeat, so the settings and the daemon's own timings follow within a
        heartbeat and a step, whatever reports it. A stamp is reported once: a file that does not
        load is not read again until it changes again."""
        stamp = self.vault.settings_stamp()
        if stamp == self._settings_seen:
            return
        self._settings_seen = stamp
        if stamp != self.vault.read_stamp:
            self.settings_changed()

    def _state_removed(self) -> bool:
        """`.tmem/` deleted under us: another daemon could now start beside this one."""
        try:
            return os.stat(client.pid_path(self.root)).st_ino != self._lock_inode
        except FileNotFoundError:
            return True

    def _shutdown(self) -> None:
        self.request_stop()
        # Events of a write made just before the stop may be lost with the watcher: the final
        # flush's last scan finds that write on disk instead (`_last_scan`).
        self.watcher.stop()
        self._watcher_stopped.set()
        if self._worker is not None:
            self._worker.join()  # it applies pending events, saves the vectors, commits
        if self._server is not None:
            self._server.stop()
        if self.memory is not None:
            with contextlib.suppress(Exception):
                self.memory.close()
        if not self.vault_gone:
            with contextlib.suppress(OSError):
                client.heartbeat_path(self.root).unlink()  # no heartbeat and no lock: stopped cleanly

    def _clean_stale_files(self) -> None:
        """We hold the lock, so a socket or heartbeat here is what a crashed daemon left behind."""
        beat = client.read_heartbeat(self.root)
        if client.socket_path(self.root).exists() or beat:
            pid = beat.get("pid") if beat else "unknown"
            log.warning("a previous daemon (pid %s) did not shut down cleanly; cleaning up after it", pid)
        with contextlib.suppress(FileNotFoundError):
            client.socket_path(self.root).unlink()

    def _thread_died(self, args: threading.ExceptHookArgs) -> None:
        name = args.thread.name if args.thread else "?"
        self._thread_error = f"thread {name} died: {args.exc_type.__name__}: {args.exc_value}"
        log.error("thread %s died", name, exc_info=(args.exc_type, args.exc_value, args.exc_traceback))  # type: ignore[arg-type]

    def record_error(self, what: str) -> None:
        log.exception(what)
        self.stats["errors"] += 1
        self.stats["last_error"] = f"{iso(self.wall())} {what}"

    def _supervise_watcher(self) -> None:
        if self._overflow.event.is_set():
            self._overflow.event.clear()
            log.warning("the kernel's inotify queue overflowed and events were lost; rescanning the vault")
            self._rescan_soon()
        if not self._watching:
            return
        problem = self.watcher.problem()
        if problem is None:
            return
        why = problem + (f"; {self._thread_error}" if self._thread_error else "")
        log.warning("the watcher stopped (%s); restarting it", why)
        self.watcher.stop()
        try:
            self.watcher.start()
        except OSError as exc:
            log.error(
                "cannot restart the watcher: %s; trying again in %.0f s",
                watch_error(exc),
                self.timings.heartbeat,
            )
            return
        self._thread_error = None
        self._watcher_restarts += 1
        self._rescan_soon()  # events during the gap were missed

    def settings_changed(self) -> None:
        """tmem.yaml or the editor's templates settings changed (a person's edit, a pull): the next
        step reads them again and rescans under the new rules, so notes the rules now leave out
        (a templates folder named, a folder excluded) leave the index at once, and those they let
        in come in. The templates settings only ever narrow what is indexed
        (`storage.editor_templates`), and tmem.yaml's values are taken as every command takes
        them (`config.load_config`: an outward value a pull brings waits for approval)."""
        self._settings_stale = True
        self._rescan_soon()

    def rescan_in(self, seconds: float) -> None:
        """A full rescan in `seconds` (a batch failed: the rescan catches what it missed)."""
        self._reconcile_at = self.clock() + seconds

    def _rescan_soon(self) -> None:
        self._reconcile_at = 0.0
        self.debouncer.add(RawEvent("rescan", ""))  # wakes the indexer thread; the event itself is ignored

    def status(self) -> dict[str, Any]:
        now = self.wall()
        problem = self.watcher.problem() if self._watching else "not started"
        return {
            "pid": os.getpid(),
            "vault": str(self.root),
            "version": __version__,
            "started": iso(self._started),
            "uptime_s": round(now - self._started, 1),
            "ready": self.ready.is_set(),
            "phase": self._phase,
            "progress": self._progress,
            "phase_since": iso(self._phase_since),
            "heartbeat": iso(now),
            "heartbeat_at": now,
            "heartbeat_every_s": self.timings.heartbeat,
            "queue": len(self.debouncer),
            "events_received": self.debouncer.received,
            "events_dropped": self.watcher.dropped,  # the daemon's own writes, left out by the watcher
            "batches": self.stats["batches"],
            "notes": self.stats["notes"],
            "last_event": self.stats["last_event"],
            "last_commit": self.committer.last_commit,
            "pending_commit": self.committer.pending(),
            "vectors_unsaved": self.embedding.dirty_since is not None,
            "vectors_waiting": self.embedding.pending,  # notes still to embed; -1: not counted yet
            "vector_drafts": self.embedding.drafts,  # notes whose int8 draft vectors are still to refine
            "preempted": preempted(self._embedder._value),  # backlog batches a query cancelled
            "watcher": {"alive": problem is None, "problem": problem, "restarts": self._watcher_restarts},
            "errors": self.stats["errors"],
            "last_error": self.stats["last_error"],
            "rss_mb": rss_mb(),
        }

    def set_phase(self, phase: str) -> None:
        self._phase, self._phase_since = phase, self.wall()
        self._progress = None

    def where(self) -> dict[str, Any]:
        """What the daemon is doing: its phase and, while it indexes, how far it got."""
        return {"phase": self._phase, "progress": self._progress}

    def report_progress(self, phase: str, done: int, total: int) -> None:
        """Where the first indexing stands, for `tmem daemon start` and commands waiting on it."""
        self._progress = [phase, done, total]

    # ---- what the socket ops call ----------------------------------------------------------------------
    def wait_ready(self) -> None:
        if self.ready.is_set():
            return
        if self.stopping.is_set() or not self.ready.wait(self.timings.ready_wait):
            raise BadInput("the daemon is still building its indexes; try again in a moment")

    @contextlib.contextmanager
    def indexing(self) -> Iterator[Memory]:
        """The memory, under the lock; first adopts a vector index another process rewrote meanwhile.

        Only the outermost use on a thread may reload: a nested one (an operation whose read
        applies the watcher's queued events) runs inside a caller still holding the memory, and
        closing it there would fail that caller on a closed database."""
        with self.embedding.queued(threading.current_thread() is not self._worker):
            self.lock.acquire()
        outermost = not getattr(self._held, "indexing", False)
        self._held.indexing = True
        try:
            assert self.memory is not None
            if outermost and self.embedding.rewritten_elsewhere():
                self._reopen_memory("the vector index was rewritten by another process")
            elif outermost and self.vault.config_changed():
                # A person's edit of the settings (encryption turned on, `folders:`) or a pulled
                # one reaches the operations at once, and the daemon's own timings at the indexer
                # thread's next step (`follow_settings`).
                self._reopen_memory(f"{CONFIG_NAME} changed")
            yield self.memory
            self.embedding.used(self.memory)
        finally:
            if outermost:
                self._held.indexing = False
            self.lock.release()

    def flush_pending(self, vectors: bool = False) -> int:
        """Apply the watcher's queued events before a read; returns how many notes still wait for
        a vector when the read wants vectors."""
        batch = self.debouncer.take(force=True)
        if batch:
            self.intake.apply_events(batch)
        return self.embedding.pending_vectors() if vectors else 0

    def compact_fulltext(self) -> None:
        """Every edit leaves a deleted copy of the note in the full-text index; compacting now and
        then keeps its size and the daemon's memory bounded over months of edits. Runs outside
        `self.lock` (in the indexer thread, so no batch interleaves): searches keep reading the old
        generation until the merged one is in place."""
        memory = self.memory
        if memory is None or not memory.indexer.fts.needs_compaction():
            return
        segments, deleted = memory.indexer.fts.fragmentation()
        self.set_phase("compacting")
        start = self.clock()
        memory.indexer.compact_fulltext(force=True)
        release_free_memory()
        log.info(
            "compacted the full-text index (%d segments, %.0f%% deleted) in %.1f s",
            segments,
            deleted * 100,
            self.clock() - start,
        )

    def reindex(self, full: bool = False) -> IndexReport:
        with self.indexing() as memory:
            if full:
                memory.indexer.wipe()
                self.memory = None
                memory = self._reopen_memory("a full reindex was asked for")
            report = memory.refresh(vectors=True)
            self.stats["notes"] = memory.note_count()
        self.embedding.refreshed()  # refresh() saved the vectors
        return report

    def _reopen_memory(self, why: str) -> Memory:
        log.warning("%s; reloading the indexes", why)
        if self.memory is not None:
            self.memory.close()
        memory = self.open_memory()
        self.embedding.reloaded(memory)  # embedded here but never saved: not in the index just loaded
        return memory

    # ---- the indexer thread ---------------------------------------------------------------------------
    def open_memory(self) -> Memory:
        # The watcher keeps the indexes current here: a read only applies the events queued so far.
        self.memory = Memory(
            self.vault,
            embedder_factory=self._embedder,
            now=self.now,
            warn=log.warning,
            freshen=self._freshen,
        )
        return self.memory

    def _freshen(self, vectors: bool = False) -> int:
        if getattr(self._reads, "as_indexed", False):
            return self.embedding.pending_vectors() if vectors else 0
        return self.flush_pending(vectors)

    @contextlib.contextmanager
    def reads_as_indexed(self, wanted: bool = True) -> Iterator[None]:
        """Reads on this thread see the indexes as the watcher has brought them so far, without
        applying the events still queued (a benchmark measuring the watcher's own pace)."""
        self._reads.as_indexed = wanted
        try:
            yield
        finally:
            self._reads.as_indexed = False

    def _work(self) -> None:
        try:
            self.set_phase("loading")
            memory = self.open_memory()
            memory.indexer.vectors()  # the model and the vector index, loaded once, up front
            embedder = memory.indexer.embedder()
            if embedder is not None:
                # The first inference pays one-off costs (kernels, caches): paid here, not by the
                # first agent's first recall.
                embedder.embed(["warm up"])
            self.embedding.recover(memory)  # the last daemon was killed before saving some vectors
            if self.timings.watch:
                try:
                    self.watcher.start()  # before the first scan, so nothing edited meanwhile is missed
                except OSError as exc:
                    log.error("cannot start the watcher: %s; retrying", watch_error(exc))
                self._watching = True
            self._reconcile(initial=True)
            self.schedule.start(self.local_now())
            self.set_phase("idle")
            self.ready.set()
            log.info("ready: %d notes indexed", self.stats["notes"])
            while not self.stopping.is_set():
                self._step()
                self.debouncer.wait(self._idle_timeout())
        except Exception:
            self.record_error("the indexer thread failed")
            self.exit_code = 1
            self.request_stop()
        finally:
            self._watcher_stopped.wait(30.0)
            self._final_flush()

    def _batching(self, config: Config) -> tuple[float, float]:
        """The debouncer's quiet spell and its cap, in seconds, by `daemon.debounce_ms`."""
        quiet = config.daemon.debounce_ms / 1000
        return quiet, self.timings.max_batch_wait or max(2.0, 5 * quiet)

    def follow_settings(self) -> None:
        """The daemon's own timings follow tmem.yaml as its operations do, from the next step on:
        the debouncer's, the auto-commit's quiet spell, the schedule's times and intervals. They
        are taken from the settings the vault holds, read again at each change of the file (the
        watcher reports it, an operation finds it): a file that does not load keeps the settings
        in use (and the rescan that reads it says why in one line), and an outward value a pull
        brings still waits for approval (`config.load_config`)."""
        config = self.vault.config
        if config is self._timed_by:
            return
        before, self._timed_by = self._timed_by, config
        changed = [
            f"{key} {old} -> {new}"
            for key, old, new in zip(_TIMED, _timed(before), _timed(config), strict=True)
            if old != new
        ]
        if not changed:
            return
        self.debouncer.retime(*self._batching(config))
        self.committer.retime(config.daemon.autocommit_seconds)
        self.schedule.follow(config, self.local_now())
        self._next_job_check = self.clock()  # a time moved earlier, an interval shortened: look now
        log.info("%s changed the daemon's timings: %s", CONFIG_NAME, ", ".join(changed))

    def _step(self) -> None:
        self.follow_settings()
        batch = self.debouncer.take()
        if batch:
            self.intake.apply_events(batch)
        if self.embedding.busy():
            self._guarded(self.embedding.embed_slice, "embedding")
        now = self.clock()
        save_at = self.embedding.save_at()
        if save_at is not None and now >= save_at:
            self._guarded(self.embedding.save, "saving the vectors")
            self._guarded(self.compact_fulltext, "compacting the full-text index")
        due = self.committer.due_at()
        if due is not None and now >= due:
            self._guarded(self.committer.commit, "auto-commit")
        if now >= self._next_job_check:
            # At random within the period, not every period from the start: daemons started
            # together would look at their schedules, and sync, in the same second every time.
            self._next_job_check = now + self.timings.job_check * self.schedule.rng.uniform(0.5, 1.0)
            self._guarded(self.run_due_jobs, "scheduled jobs")
        if now >= self._reconcile_at:
            self._guarded(self._reconcile, "rescanning the vault")
            self.follow_settings()  # the rescan may have read new settings: the wait goes by them

    def _commit_hand_edits(self, paths: list[str], describe: Callable[[], str]) -> str | None:
        memory = self.memory if self.memory is not None else self.open_memory()
        with memory.change("edit: by hand") as tx:
            tx.include(paths)
            stamp_hand_edits(memory, tx, paths)  # tmem's own notes: `updated` follows the edit
            # Under the write lock, after the writes above: the message names what git will commit.
            tx.message = describe()
        return tx.sha

    def _guarded(self, func: Callable[[], object], what: str) -> None:
        try:
            func()
        except Exception:
            self.record_error(f"{what} failed")
            if what.startswith("rescanning"):
                self._reconcile_at = self.clock() + 60.0
        finally:
            self.set_phase("idle")

    def _idle_timeout(self) -> float:
        if self.embedding.busy():
            return 0.0  # more to embed: loop again at once
        now = self.clock()
        deadlines = [self._next_job_check, self._reconcile_at, now + 60.0]
        save_at = self.embedding.save_at()
        if save_at is not None:
            deadlines.append(save_at)
        due = self.committer.due_at()
        if due is not None:
            deadlines.append(due)
        return min(60.0, max(0.02, min(deadlines) - now))

    def _reconcile(self, initial: bool = False) -> None:
        self.set_phase("indexing" if initial else "rescanning")
        with self.indexing() as memory:
            if self._settings_stale:
                self._settings_stale = False
                try:
                    self.vault.reload_config()
                except ConfigError as exc:  # halfway through an edit: the next save comes back here
                    log.warning("%s; the settings in use stay until it is fixed", exc)
                else:
                    memory = self._reopen_memory("the vault's settings changed")
            # Keyword first: searchable as soon as the catalog and the full text are current; the
            # vectors follow a slice at a time from the loop (see Embedding.embed_slice).
            report = memory.refresh(vectors=False, progress=self.report_progress if initial else None)
            self.stats["notes"] = memory.note_count()
            self.embedding.pending = 0 if memory.indexer.vectors_current() else -1
            self.embedding.deep_waiting = not memory.indexer.passages_current()
            self.embedding.drafts = memory.indexer.drafts_waiting()
        self.embedding.save()
        release_free_memory()
        self._reconcile_at = self.clock() + self.timings.reconcile
        if initial or report.touched:
            # What the rescan found changed, the watcher never reported: committed like an edit
            # it reported (else it waited for the next start).
            self.intake.adopt_uncommitted()
        if report.touched or initial:
            how = "first scan" if initial else "rescan found changes the watcher had not reported"
            log.info(
                "%s: %d added, %d changed, %d deleted, %d embedded",
                how,
                report.added,
                report.changed,
                report.deleted,
                report.embedded,
            )

    def _final_flush(self) -> None:
        if self.memory is None or self.vault_gone:
            return
        self.set_phase("stopping")
        self._guarded(self.flush_pending, "applying the last events")
        self._guarded(self._last_scan, "the last scan")
        self._guarded(self.embedding.save, "saving the vectors")
        if self.committer.pending():
            self._guarded(lambda: self.committer.commit(final=True), "the last auto-commit")

    def _last_scan(self) -> None:
        """Writes the watcher never reported (their events were still on their way when it
        stopped, or there is no watcher): found by the rescan's change detection, one stat per
        file against the catalog, and applied as a batch of events is (indexed, embedded, queued
        for the last auto-commit) for at most `Timings.last_scan` seconds."""
        memory = self.memory
        assert memory is not None
        start = self.clock()
        notes, attachments = memory.indexer.differing()
        if attachments:
            self.intake.note_attachments(attachments)
        done = 0
        while done < len(notes) and self.clock() - start < self.timings.last_scan:
            chunk = notes[done : done + LAST_SCAN_CHUNK]
            with self.lock:
                self.intake.apply_paths(chunk, 0)
            done += len(chunk)
        if notes or attachments:
            log.info(
                "last scan: %d note(s) and %d attachment(s) the watcher had not reported, in %.1f s",
                len(notes),
                len(attachments),
                self.clock() - start,
            )
        if done < len(notes):
            log.warning("%d note(s) are left for the next start's scan to index", len(notes) - done)

    # ---- scheduled jobs -------------------------------------------------------------------------------
    def run_due_jobs(self) -> list[str]:
        return run_due_jobs(self)
