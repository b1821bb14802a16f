"""`tmem schedule install|remove|show`, as text."""

from __future__ import annotations

__all__ = [
    "installed_json",
    "installed_text",
    "removed_json",
    "removed_text",
    "schedule_text",
    "tick_json",
    "tick_text",
]

from typing import Any


def installed_json(plan: dict[str, Any], *, installed: bool) -> dict[str, Any]:
    """`install --json`: whether it was installed (not with --print), then the plan's own data."""
    return {"installed": installed, **plan}


def installed_text(method: str, plan: str, *, printed_only: bool) -> str:
    """What `install` put in place (`plan`: the cron line or the units' text), or would with --print."""
    return plan if printed_only else f"installed ({method}):\n{plan.rstrip()}"


def removed_json(removed: list[str]) -> dict[str, list[str]]:
    return {"removed": removed}


def removed_text(removed: list[str]) -> str:
    return "\n".join(f"removed {r}" for r in removed) or "nothing was installed"


def schedule_text(found: dict[str, list[str]]) -> str:
    """Each installed entry, by kind (cron, systemd, launchd)."""
    lines = [f"{kind}: {entry}" for kind, entries in found.items() for entry in entries]
    return "\n".join(lines) or "no schedule installed"


def tick_json(maintenance_time: str, report: dict[str, Any] | None) -> dict[str, Any]:
    """`tick --json`: the time tmem.yaml gives, and the maintenance's report when it ran."""
    return {"maintenance_time": maintenance_time, "ran": report is not None, "maintenance": report}


def tick_text(maintained: str | None) -> str:
    """A tick as text: what the maintenance did, or nothing when it was not due (a line every
    quarter hour in the timer's log would bury the ones that matter)."""
    return maintained or ""
