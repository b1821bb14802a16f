"""`tmem daemon start|stop|status`, as text and as JSON: what each found or did is a record
(`DaemonStart`, `DaemonStop`, `DaemonStatus`) that both renderings take. The status is the daemon's
own `status` answer (a plain dict: it comes over the socket, and is `--json` as it is)."""

from __future__ import annotations

__all__ = [
    "NOT_RUNNING",
    "DaemonStart",
    "DaemonStatus",
    "DaemonStop",
    "already_running_text",
    "down_text",
    "start_text",
    "started_text",
    "state_text",
    "status_text",
    "stop_text",
    "stopped_text",
]

from dataclasses import dataclass
from datetime import datetime
from typing import Any

NOT_RUNNING = "daemon not running"


@dataclass(frozen=True)
class DaemonStart:
    """What `start` did: found one running (`started` False; `pid` None when another `start` won
    the race), or started one (`ready` False while it still indexes)."""

    started: bool
    pid: int | None = None
    ready: bool = True

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"running": True, "started": self.started}
        if self.pid is not None:
            data["pid"] = self.pid
        if not self.ready:
            data["ready"] = False
        return data


@dataclass(frozen=True)
class DaemonStop:
    """What `stop` did: none ran (`stopped` False), or daemon `pid` stopped (`killed` when it had
    to be killed)."""

    stopped: bool
    pid: int | None = None
    killed: bool = False

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"running": False, "stopped": self.stopped}
        if self.killed:
            data["killed"] = True
        if self.stopped:
            data["pid"] = self.pid
        return data


@dataclass(frozen=True)
class DaemonStatus:
    """What `status` found: the daemon's own answer, or (`answer` None) that none answered, with
    the pid holding the vault's lock and the last heartbeat left behind, if any."""

    answer: dict[str, Any] | None
    pid: int | None = None
    last_heartbeat: dict[str, Any] | None = None

    @property
    def running(self) -> bool:
        return self.answer is not None

    def to_dict(self) -> dict[str, Any]:
        if self.answer is not None:
            return {"running": True, **self.answer}
        return {"running": False, "pid": self.pid, "last_heartbeat": self.last_heartbeat}


def start_text(done: DaemonStart) -> str:
    if not done.started:
        return already_running_text(done.pid)
    assert done.pid is not None  # a started daemon has a pid
    return started_text(done.pid, ready=done.ready)


def stop_text(done: DaemonStop) -> str:
    if not done.stopped or done.pid is None:
        return NOT_RUNNING
    return stopped_text(done.pid, killed=done.killed)


def state_text(found: DaemonStatus, now: datetime) -> str:
    """`status`: the running daemon's status (times before `now`), or why none answers."""
    if found.answer is None:
        return down_text(found.pid, found.last_heartbeat)
    return status_text(found.answer, now)


def already_running_text(pid: int | None) -> str:
    """`start` found one running (`pid` None: another `start` won the race)."""
    return f"daemon already running (pid {pid})" if pid is not None else "daemon already running"


def started_text(pid: int, *, ready: bool) -> str:
    if ready:
        return f"daemon started (pid {pid})"
    return f"daemon started (pid {pid}), still indexing; `tmem daemon status` shows progress"


def stopped_text(pid: int, *, killed: bool = False) -> str:
    return f"daemon killed (pid {pid})" if killed else f"daemon stopped (pid {pid})"


def down_text(holder: int | None, heartbeat: dict[str, Any] | None) -> str:
    """`status` when no daemon answers: one holds the lock without answering, one died without
    tidying up (its last heartbeat is left), or none runs."""
    if holder is not None:
        return f"daemon (pid {holder}) holds the vault lock but does not answer; `tmem doctor` looks into it"
    if heartbeat:
        return (
            f"daemon not running (pid {heartbeat.get('pid')} did not stop cleanly; "
            "`tmem doctor --fix` tidies up)"
        )
    return NOT_RUNNING


def status_text(s: dict[str, Any], now: datetime) -> str:
    """The daemon's status, one line per part; times as how long before `now` (an aware time)."""
    event = s.get("last_event")
    event_text = (
        f"{_ago(event['at'], now)}: {event['paths']} note path(s) from {event['events']} event(s) in {event['ms']} ms"
        if event
        else "none since start"
    )
    commit = s.get("last_commit")
    commit_text = (
        f"{_ago(commit['at'], now)}  {commit['sha'][:8]} {commit['message']}"
        if commit
        else "none since start"
    )
    watcher = s.get("watcher") or {}
    watch_text = "alive" if watcher.get("alive") else f"NOT RUNNING ({watcher.get('problem')})"
    ready = "ready" if s.get("ready") else f"{s.get('phase')} (not ready yet)"
    lines = [
        f"daemon:        running (pid {s['pid']}), up {_span(s['uptime_s'])}, {ready}",
        f"vault:         {s['vault']}",
        f"last event:    {event_text}",
        f"queue:         {s['queue']} event(s) waiting",
        f"notes indexed: {s['notes']}"
        + _waiting_vectors(s.get("vectors_waiting", 0))
        + _drafts(s.get("vector_drafts", 0)),
        f"last commit:   {commit_text}",
        f"auto-commit:   {s['pending_commit']} edited note(s) waiting",
        f"watcher:       {watch_text}, {watcher.get('restarts', 0)} restart(s)",
        f"memory (RSS):  {s['rss_mb']:.0f} MB",
        f"errors:        {s['errors']}" + (f" (last: {s['last_error']})" if s.get("last_error") else ""),
    ]
    return "\n".join(lines)


def _ago(iso: str | None, now: datetime) -> str:
    if not iso:
        return "never"
    seconds = max(0.0, (now - datetime.fromisoformat(iso)).total_seconds())
    return f"{_span(seconds)} ago"


def _span(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"
    return f"{seconds / 86400:.1f} days"


def _drafts(drafts: int) -> str:
    return f", {drafts} with int8 draft vectors (refined to float32 in the background)" if drafts > 0 else ""


def _waiting_vectors(waiting: int) -> str:
    if waiting > 0:
        return f", {waiting} waiting for a vector (embedded in the background)"
    return ", vectors being checked" if waiting < 0 else ""
