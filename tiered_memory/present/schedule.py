"""`tmem schedule install|remove|show`, as text."""

from __future__ import annotations

__all__ = [
    "OUTDATED",
    "installed_json",
    "migrated_text",
    "installed_text",
    "removed_json",
    "removed_text",
    "schedule_json",
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


# What an older install's timer does wrong, and the command that replaces it (show, doctor).
OUTDATED = (
    "this vault's maintenance timer is an older tmem's: it runs `tmem maintain` at the time it was "
    "installed with, not at lifecycle.maintenance_time as tmem.yaml says it now; "
    "run `tmem schedule install` to replace it"
)


def schedule_json(found: dict[str, list[str]], outdated: list[str]) -> dict[str, list[str]]:
    """`show --json`: the entries by kind, and those an older install wrote (`outdated`)."""
    return {**found, "outdated": outdated}


def schedule_text(found: dict[str, list[str]], outdated: list[str] | None = None) -> str:
    """Each installed entry, by kind (cron, systemd, launchd), and a line when one is an older
    install's timer."""
    lines = [f"{kind}: {entry}" for kind, entries in found.items() for entry in entries]
    if outdated:
        lines.append(OUTDATED)
    return "\n".join(lines) or "no schedule installed"


def migrated_text(replaced: list[str]) -> str:
    """What the maintenance an older timer started did to that timer, one line for its log."""
    return (
        f"replaced this vault's older maintenance timer ({'; '.join(replaced)}) with one that runs "
        "`tmem schedule tick` every quarter hour, at lifecycle.maintenance_time as tmem.yaml says it"
    )


def tick_json(maintenance_time: str, report: dict[str, Any] | None) -> dict[str, Any]:
    """`tick --json`: the time tmem.yaml gives, and the maintenance's report when it ran."""
    return {"maintenance_time": maintenance_time, "ran": report is not None, "maintenance": report}


def tick_text(maintained: str | None) -> str:
    """A tick as text: what the maintenance did, or nothing when it was not due (a line every
    quarter hour in the timer's log would bury the ones that matter)."""
    return maintained or ""
