"""`tmem install AGENT`, as text and as JSON: each settings file changed (or not), the daemon
started at login, the notes on what the agent can and cannot do, and what to do next."""

from __future__ import annotations

__all__ = [
    "AtLogin",
    "InstallReport",
    "InstalledFile",
    "at_login_json",
    "at_login_lines",
    "default_vault_note",
    "install_text",
    "start_by_hand",
]

from dataclasses import dataclass, field
from typing import Any

from tiered_memory.model.records import Record


@dataclass(frozen=True)
class InstalledFile(Record):
    """One settings file of the agent: changed or already up to date."""

    path: str
    changed: bool
    notes: list[str]  # what was added, replaced or removed in it
    backup: str | None  # the copy made beside it before it was written
    diff: str | None  # --print: what would change


@dataclass(frozen=True)
class InstallReport:
    """What `install AGENT` did (with --print: would do). `daemon` (--daemon only): what starts
    the daemon at login, as `at_login_json` gives it."""

    agent: str
    dry_run: bool
    uninstall: bool
    files: list[InstalledFile]
    notes: list[str]
    daemon: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "agent": self.agent,
            "dry_run": self.dry_run,
            "uninstall": self.uninstall,
            "files": [f.to_dict() for f in self.files],
            "notes": self.notes,
        }
        if self.daemon is not None:
            data["daemon"] = self.daemon
        return data


@dataclass
class AtLogin:
    """What `install --daemon` did (with --print: would do) about starting the daemon at login."""

    removed: list[str] = field(default_factory=list)  # the service files removed (--uninstall)
    written: list[str] = field(default_factory=list)  # the service files written
    method: str | None = None  # systemd or launchd
    units: list[str] = field(default_factory=list)  # what the service manager starts
    plan: str = ""  # --print: the service files' text
    stopped: int | None = None  # the pid of a daemon already running, stopped for the service
    by_hand: str | None = None  # no service manager here: the command that starts the daemon


def at_login_json(plan: dict[str, Any] | None, removed: list[str]) -> dict[str, Any]:
    """--daemon's part of `--json`: the service's plan (None: none written) and what was removed."""
    if plan is None:
        return {"method": None, "files": {}, "removed": removed}
    return {**plan, "removed": removed}


def default_vault_note(vault: str) -> str:
    return f"default-vault = {vault} (agents started from any folder use it)"


def start_by_hand(command: str) -> str:
    return f"no systemd user session or launchd here: start the daemon at login with `{command}`"


def at_login_lines(at: AtLogin, *, uninstall: bool, dry_run: bool) -> list[str]:
    if uninstall:
        if dry_run:
            return [f"daemon: would remove {p}" for p in at.removed]
        return [f"daemon: removed {p}" for p in at.removed] or ["daemon: nothing starts it at login"]
    if at.by_hand is not None:
        return [f"daemon: {start_by_hand(at.by_hand)}"]
    if dry_run:
        return [*(f"daemon: would write {p} ({at.method})" for p in at.written), at.plan.rstrip("\n")]
    lines = []
    if at.stopped is not None:
        lines.append(
            f"daemon: stopped the one already running (pid {at.stopped}) so that the service runs it"
        )
    lines += [f"daemon: wrote {p}" for p in at.written]
    lines.append(f"daemon: {', '.join(at.units)} starts at login (started now)")
    return lines


def install_text(report: InstallReport, at_login: AtLogin | None) -> str:
    agent, dry_run, uninstall = report.agent, report.dry_run, report.uninstall
    lines: list[str] = []
    verb = "would change" if dry_run else "changed"
    for item in report.files:
        if not item.changed:
            lines.append(f"{agent}: {item.path}: already up to date")
            continue
        lines.append(f"{agent}: {verb} {item.path}")
        lines += [f"  - {n}" for n in item.notes]
        if item.backup:
            lines.append(f"  backup: {item.backup}")
        if item.diff:
            lines.append(item.diff.rstrip("\n"))
    if not report.files:
        lines.append(f"{agent}: nothing of tmem's to remove" if uninstall else f"{agent}: nothing to change")
    if at_login is not None:
        lines += at_login_lines(at_login, uninstall=uninstall, dry_run=dry_run)
    lines += [f"note: {n}" for n in report.notes]
    if not uninstall and not dry_run and any(i.changed for i in report.files):
        lines.append(f"restart {agent} to load them")
    return "\n".join(lines)
