"""The one place that decides whether an operation runs in a running daemon or in this process.

`open_backend(root)` returns an object with the same `run(op, request)` whichever it is. With a
daemon up, operations go to it over the vault's socket: its model and indexes are warm, and all
writers of the vault queue behind its one writer. Without one (or for an operation that must run
here), the application is loaded in this process.

The application is imported lazily, in `_local`, and only here: its imports (numpy, Whoosh, YAML,
the index modules) take longer than a warm search, and `tmem --help` and every search the daemon
answers never pay for them. The few things a door runs in this process whatever the daemon does
(the daemon itself, `tmem doctor`, git's merge driver) load the same way, through the functions at
the end. The MCP server is a door of its own, above this module: `tmem mcp` (cli/mcp.py) starts
it, and its tools come back here.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tiered_memory.app.api import Op, Req, Res
from tiered_memory.daemon import client
from tiered_memory.daemon.client import fallback_hint
from tiered_memory.errors import EXIT_FAILED, TmemError
from tiered_memory.model import records
from tiered_memory.storage.git import Git
from tiered_memory.storage.locate import find_vault

if TYPE_CHECKING:
    from tiered_memory.app.api.doctor import DoctorReport
    from tiered_memory.app.local import LocalBackend
    from tiered_memory.model.merge3 import MergeResult, Sides

Warn = Callable[[str], None]
Progress = Callable[[str, int, int], None]


class Backend(Protocol):
    @property
    def kind(self) -> str:
        """ "daemon" or "in-process": who runs the operations."""
        ...

    # The agent (an MCP client's name) the operations run for: their commits name it. None: a person.
    agent: str | None

    def run(self, op: Op[Req, Res], request: Req) -> Res: ...

    def close(self) -> None: ...


__all__ = [
    "Backend",
    "DaemonBackend",
    "DaemonLost",
    "doctor",
    "fallback_hint",
    "find_vault",
    "merge_driver",
    "open_backend",
    "run_daemon",
    "run_without_vault",
    "start_daemon",
    "Warn",
]


class DaemonLost(TmemError):
    """The daemon took a request that changes the vault and then stopped answering: tmem's
    failure, not the person's input (EXIT_FAILED)."""

    exit_code = EXIT_FAILED


class DaemonBackend:
    """Operations run by the vault's daemon; its warnings and progress come back to this caller.
    When the daemon does not answer, operations run in this process instead (a read after
    `read_timeout` seconds, a repeatable write after `write_timeout`: a caller with a deadline of
    its own, such as an agent's hook, says so). A long-lived caller (an MCP server) asks the
    daemon again `RETRY_DAEMON` seconds later: a daemon restarted after a crash serves it again,
    rather than each such process going on writing the indexes beside it for the rest of its life."""

    RETRY_DAEMON = 30.0

    def __init__(
        self,
        root: Path,
        warn: Warn,
        progress: Progress | None,
        fallback: Callable[[], Backend],
        read_timeout: float = client.SEARCH_TIMEOUT,
        write_timeout: float = client.CALL_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = root
        self._clock = clock
        self._lost_at: float | None = None  # when the daemon last failed to answer
        self.read_timeout = read_timeout
        self.write_timeout = write_timeout
        self.warn = warn
        self.progress = progress
        self._fallback_factory = fallback
        self._fallback: Backend | None = None
        self.agent: str | None = None

    @property
    def kind(self) -> str:
        return "in-process" if self._given_up() else "daemon"

    def _given_up(self) -> bool:
        return self._lost_at is not None and self._clock() - self._lost_at < self.RETRY_DAEMON

    def run(self, op: Op[Req, Res], request: Req) -> Res:
        if op.where == "local" or self._given_up() or records.stays_here(request):
            return self._local().run(op, request)
        # A silent daemon is given up on sooner for a read: the read then runs here.
        timeout = self.write_timeout if op.writes else self.read_timeout
        # A write that cannot simply run again: the commit it starts from tells, if the daemon
        # dies with it, whether it landed.
        before = _head(self.root) if op.writes and not op.repeatable else None
        try:
            data = client.call(
                self.root, op.name, request.to_dict(), timeout=timeout, on_event=self._event, agent=self.agent
            )
        except client.DaemonUnavailable as exc:
            self._lost_at = self._clock()
            if exc.sent and op.writes and not op.repeatable:
                raise DaemonLost(_what_happened(self.root, op.name, str(exc), before)) from None
            return self._local().run(op, request)
        return op.result.from_dict(data)

    def _event(self, event: dict[str, Any]) -> None:
        if "warning" in event:
            self.warn(str(event["warning"]))
        elif "progress" in event and self.progress is not None:
            phase, done, total = event["progress"]
            self.progress(str(phase), int(done), int(total))

    def _local(self) -> Backend:
        if self._fallback is None:
            self._fallback = self._fallback_factory()
        self._fallback.agent = self.agent
        return self._fallback

    def close(self) -> None:
        if self._fallback is not None:
            self._fallback.close()


# How long a git commit the daemon had started may still run after the daemon was killed.
SETTLE_AFTER_LOSS = 0.5


def _head(root: Path) -> str | None:
    try:
        return Git(root).rev("HEAD")
    except TmemError:
        return None


def _what_happened(root: Path, name: str, why: str, before: str | None) -> str:
    """The one line for a write the daemon took and never answered: whether it happened when that
    can be told (the daemon is gone and no commit landed: it did not, and what it began is undone
    by the next command), else where to look."""
    lost = f"the daemon stopped answering during '{name}' ({why})"
    if before is None:
        return f"{lost}; it may or may not have happened: `tmem daemon status` and `git log -1` tell"
    time.sleep(SETTLE_AFTER_LOSS)
    now = _head(root)
    if now == before and client.lock_holder(root) is None:
        return (
            f"{lost}; it did not happen: the daemon is gone and nothing was committed (what it "
            "began is undone by the next command), so it can run again"
        )
    if now is not None and now != before:
        return (
            f"{lost}; commits landed meanwhile: `git log {before[:8]}..{now[:8]}` tells whether it "
            "is among them before it runs again"
        )
    return (
        f"{lost}; the daemon is still running: `tmem daemon status` and `git log -1` tell whether it happened"
    )


# How long a command waits for a daemon it started to index the vault before it runs anyway.
AUTOSTART_WAIT = 300.0


def open_backend(
    root: Path,
    *,
    warn: Warn = lambda message: None,
    progress: Progress | None = None,
    daemon: bool = True,
    autostart: bool = False,
    scan_ahead: bool = False,
    read_timeout: float = client.SEARCH_TIMEOUT,
    write_timeout: float = client.CALL_TIMEOUT,
) -> Backend:
    """The daemon when one serves this vault (and `daemon` allows it), else this process.
    A read the daemon has not answered within `read_timeout` seconds runs in this process, and so
    does a repeatable write (`Op.repeatable`) after `write_timeout`.

    With `autostart` (for the doors whose next call needs a warm model: searches, contexts, MCP),
    a vault without a daemon gets one started, unless `daemon.autostart: false` in tmem.yaml or
    $TMEM_AUTOSTART=0 says no; its first indexing is waited for, with progress.

    With `scan_ahead` (for the commands people wait on, whose first step is the freshness scan),
    this process starts that scan's stat walk in a child before it loads the application
    (index.scan_ahead)."""

    def local(ahead: bool = False) -> Backend:
        return _local(root, warn, progress, scan_ahead=ahead)

    # A stale socket (a daemon that was killed) counts as none; start_daemon leaves alone a daemon
    # that holds the vault's lock without answering.
    if daemon and autostart and (not client.socket_path(root).exists() or client.ping(root) is None):
        start_daemon(root, progress)
    if daemon and client.socket_path(root).exists():
        return DaemonBackend(root, warn, progress, local, read_timeout, write_timeout)
    return local(scan_ahead)


def start_daemon(root: Path, progress: Progress | None = None, wait: float = AUTOSTART_WAIT) -> bool:
    """Start the vault's daemon when it is allowed to and none runs; True when one answers after."""
    if client.ping(root) is not None:
        return True
    if not client.autostart_wanted(root) or client.lock_holder(root) is not None:
        return False
    proc = client.spawn(root)
    info = client.wait_ready(root, proc, wait, progress)
    return info is not None or client.ping(root) is not None  # None: it stopped (another one won the race?)


def run_without_vault(op: Op[Req, Res], request: Req) -> Res:
    """An operation that needs no vault (creating one, say), always in this process."""
    from tiered_memory.app.operations import find_vaultless  # the application: see the module docstring

    _op, function = find_vaultless(op.name)
    result: Res = function(request)
    return result


def doctor(root: Path, *, fix: bool = False, say: Warn = lambda line: None) -> DoctorReport:
    """`tmem doctor`: always in this process, since it looks at the daemon itself (which may be
    stuck). `say` hears what a long repair is doing."""
    from tiered_memory.daemon.doctor import run_doctor  # the indexes: see the module docstring

    return run_doctor(root, fix=fix, say=say)


def merge_driver(base: str, ours: str, theirs: str, path: str) -> MergeResult:
    """git's merge driver for notes: the three temp files git gives, merged into `ours`. It runs
    once per merged file, so it loads only the merge (and YAML), never the whole application.
    Raises OSError when a file cannot be read or written; `ours` is rewritten only when the merge
    changed it (git's own temp file, outside the vault)."""
    from tiered_memory.model.merge_driver import run_driver  # YAML: see the module docstring

    base_bytes, ours_bytes, theirs_bytes = (Path(name).read_bytes() for name in (base, ours, theirs))
    result = run_driver(
        base_bytes, ours_bytes, theirs_bytes, path, key=_merge_key, sides=lambda: _merge_sides(path)
    )
    merged = result.text.encode("utf-8")
    if merged != ours_bytes:
        Path(ours).write_bytes(merged)
    return result


def _merge_sides(path: str) -> Sides:
    """What the markers call the two versions, asked only when there are markers to write. git
    runs the driver at the top of the work tree, so that is the repository to look in."""
    from tiered_memory.sync.merge_labels import driver_sides  # only once a conflict is met

    return driver_sides(Path.cwd(), path)


def _merge_key() -> bytes | None:
    """The vault's key for merging an encrypted note, found as every command finds it ($TMEM_PASSPHRASE,
    the OS keyring). git runs the driver at the top of the work tree, so that is the vault."""
    from tiered_memory.storage import crypto  # only once an encrypted note is met

    root = Path.cwd()
    if not (root / crypto.SETTINGS).is_file():
        return None
    try:
        return crypto.key_for(root)
    except TmemError:  # a wrong $TMEM_PASSPHRASE: merged by `tmem sync`, which says so
        return None


def run_daemon(root: Path, timings: dict[str, Any], *, console: bool) -> int:
    """`tmem daemon run`: the daemon itself, in this process, until it is stopped; its exit code.
    `timings` shortens its intervals (tests)."""
    from tiered_memory.daemon.loop import Daemon, Timings  # the application: see the module docstring

    return Daemon(root, timings=Timings(**timings), console=console).run()


def _local(root: Path, warn: Warn, progress: Progress | None, *, scan_ahead: bool = False) -> LocalBackend:
    with _collector_paused():
        if not scan_ahead:
            from tiered_memory.app.local import LocalBackend  # the application: see the module docstring

            return LocalBackend(root, warn=warn, progress=progress)
        # Only what the look needs loads before the fork (storage.walk): the rest loads meanwhile.
        from tiered_memory.config import load_config, to_dict
        from tiered_memory.index import scan_mark
        from tiered_memory.index.scan_ahead import begin as look_ahead
        from tiered_memory.model.folders import FolderRules
        from tiered_memory.model.layout import STATE_DIR

        config = load_config(root)  # an invalid config is reported before anything else runs
        rules = FolderRules.of(**to_dict(config.folders))
        resolved = root.resolve()
        text = scan_mark.vault_rules(resolved, config.folders, config.index, config.privacy)
        last = scan_mark.read(resolved / STATE_DIR / scan_mark.FILE)  # how large the vault was
        ahead = look_ahead(resolved, rules, text, last.rows if last is not None else 0)
        try:
            from tiered_memory.app.local import LocalBackend

            return LocalBackend(root, warn=warn, progress=progress, config=config, ahead=ahead)
        except BaseException:
            if ahead is not None:
                ahead.cancel()
            raise


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No garbage collection while the application loads: its imports make objects that live as
    long as the process, and the collector's passes over them free nothing.
    LocalBackend then moves them out of the collector's generations for good (gc.freeze)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
