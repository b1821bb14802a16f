"""`tmem daemon start|stop|status|run` (`tmem schedule install --daemon` makes it a service).

start, stop and status talk to the daemon through its client (the socket, the lock, the heartbeat);
`run` is the daemon itself, loaded through `backend.run_daemon`.
"""

from __future__ import annotations

__all__ = ["START_TIMEOUT", "STOP_TIMEOUT", "daemon_group", "json_flag", "run", "start", "status", "stop"]

import os
import signal
import sys
import time
from datetime import datetime
from pathlib import Path

import click

from tiered_memory.backend import run_daemon
from tiered_memory.cli.options import emit, vault_root
from tiered_memory.cli.progress import progress_bar
from tiered_memory.config import load_config
from tiered_memory.daemon import client
from tiered_memory.errors import TmemError
from tiered_memory.present import daemon as show

START_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0


json_flag = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")


@click.group("daemon")
def daemon_group() -> None:
    """The background daemon: live indexing, warm searches, auto-commit of hand edits, scheduled upkeep.

    One daemon per vault. It watches memory/ (inotify), reindexes what changed within a second,
    answers `tmem search` from warm indexes over .tmem/daemon.sock, commits notes edited by hand
    after daemon.autocommit_seconds of quiet, and runs maintenance daily. Log: .tmem/daemon.log.
    """


@daemon_group.command("run")
@click.option("--detached", is_flag=True, hidden=True, help="Log only to .tmem/daemon.log (`start` uses it).")
@click.option(
    "--heartbeat-seconds",
    "heartbeat",
    type=click.FloatRange(min=0.05),
    hidden=True,
    help="Heartbeat interval (tests).",
)
@click.option(
    "--vector-save-seconds",
    "vector_save",
    type=click.FloatRange(min=0),
    hidden=True,
    help="Vector save interval.",
)
@click.option(
    "--reconcile-seconds",
    "reconcile",
    type=click.FloatRange(min=0.5),
    hidden=True,
    help="Full rescan interval.",
)
@click.option(
    "--max-batch-seconds",
    "max_batch_wait",
    type=click.FloatRange(min=0.05),
    hidden=True,
    help="The longest a batch of file events waits after its first (tests).",
)
@click.option(
    "--job-check-seconds",
    "job_check",
    type=click.FloatRange(min=0.05),
    hidden=True,
    help="Schedule check interval.",
)
@click.option(
    "--no-watch",
    "unwatched",
    is_flag=True,
    hidden=True,
    help="No file watcher, as on a file system that reports no changes (tests).",
)
@click.pass_context
def run(ctx: click.Context, detached: bool, unwatched: bool, **timings: float | None) -> None:
    """Run the daemon in the foreground, logging to stderr too; Ctrl-C or SIGTERM stops it cleanly."""
    chosen = {k: v for k, v in timings.items() if v is not None}
    if unwatched:
        chosen["watch"] = False
    code = run_daemon(vault_root(ctx), chosen, console=not detached)
    if detached:
        # All is flushed, committed and unlocked by now. The interpreter's teardown (the model's
        # and the index's threads and finalizers) would keep the process seconds after `stop`
        # has said "stopped"; a started daemon has nothing else to run.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if code:
        sys.exit(code)


@daemon_group.command("start")
@click.option(
    "--timeout",
    type=float,
    default=START_TIMEOUT,
    show_default=True,
    help="Seconds to wait for the first indexing.",
)
@json_flag
@click.pass_context
def start(ctx: click.Context, timeout: float, as_json: bool) -> None:
    """Start the daemon in the background and wait until it has indexed the vault."""
    root = vault_root(ctx)
    load_config(root)  # a bad config is said here, not buried in a log file
    info = client.ping(root)
    done = show.DaemonStart(started=False, pid=info["pid"]) if info else _start(root, timeout, as_json)
    emit(done.to_dict(), as_json, show.start_text(done))


def _start(root: Path, timeout: float, as_json: bool) -> show.DaemonStart:
    """Start the vault's daemon and wait for its first indexing (a progress bar unless `as_json`)."""
    holder = client.lock_holder(root)
    if holder is not None:
        raise TmemError(
            f"a daemon (pid {holder}) holds this vault's lock but does not answer; `tmem doctor` looks into it"
        )
    out_path = root / client.STATE_DIR / "daemon.out"
    proc = client.spawn(root)
    with progress_bar(enabled=not as_json) as progress:
        info = client.wait_ready(root, proc, timeout, progress)
    if info is None:
        code = proc.returncode
        tail = _last_line(out_path)
        if "already running" in tail:  # another `start` won the race
            return show.DaemonStart(started=False)
        raise TmemError(f"the daemon stopped at start (exit {code}): {tail or 'see .tmem/daemon.log'}")
    return show.DaemonStart(started=True, pid=proc.pid, ready=bool(info.get("ready")))


def _last_line(path: Path) -> str:
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [line for line in lines if line]
    return lines[-1].removeprefix("tmem: ") if lines else ""


@daemon_group.command("stop")
@click.option(
    "--timeout", type=float, default=STOP_TIMEOUT, show_default=True, help="Seconds to wait for it."
)
@click.option(
    "--force",
    is_flag=True,
    help="Kill it if it has not stopped in time (its work is redone at the next start).",
)
@json_flag
@click.pass_context
def stop(ctx: click.Context, timeout: float, force: bool, as_json: bool) -> None:
    """Stop the daemon after it has indexed and committed what is pending."""
    root = vault_root(ctx)
    pid = client.lock_holder(root)
    done = show.DaemonStop(stopped=False) if pid is None else _stop(root, pid, timeout, force)
    emit(done.to_dict(), as_json, show.stop_text(done))


def _stop(root: Path, pid: int, timeout: float, force: bool) -> show.DaemonStop:
    """Ask daemon `pid` to stop (SIGTERM if it does not answer) and wait for it to end; killed
    after `timeout` with `force`."""
    try:
        client.request(root, {"op": "stop"}, timeout=5.0)
    except client.DaemonUnavailable:
        if pid:
            os.kill(pid, signal.SIGTERM)  # it flushes on SIGTERM too
    deadline = time.monotonic() + timeout
    if not (_wait_unlocked(root, timeout) and (not pid or _wait_gone(pid, deadline - time.monotonic()))):
        if not (force and pid):
            raise TmemError(
                f"the daemon (pid {pid}) did not stop within {timeout:.0f} s; `tmem daemon stop --force` kills it"
            )
        os.kill(pid, signal.SIGKILL)
        _wait_unlocked(root, 10.0)
        return show.DaemonStop(stopped=True, pid=pid, killed=True)
    return show.DaemonStop(stopped=True, pid=pid)


def _wait_gone(pid: int, seconds: float) -> bool:
    """Whether process `pid` has exited within `seconds` (a zombie counts as exited: it runs
    nothing more). The lock is released a moment before the process ends."""
    deadline = time.monotonic() + max(seconds, 0.0)
    while client.pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _wait_unlocked(root: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while client.lock_holder(root) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@daemon_group.command("status")
@json_flag
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Uptime, last event handled, queue length, notes indexed, last commit and memory use. Exit 1 if not running."""
    root = vault_root(ctx)
    try:
        found = show.DaemonStatus(client.request(root, {"op": "status"}, timeout=3.0)["status"])
    except client.DaemonUnavailable:
        found = show.DaemonStatus(None, client.lock_holder(root), client.read_heartbeat(root))
    now = datetime.now().astimezone()
    emit(found.to_dict(), as_json, lambda: show.state_text(found, now))
    if not found.running:
        ctx.exit(1)
