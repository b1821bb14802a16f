"""`tmem schedule install|remove|show`: daily maintenance (or the daemon) from the user's crontab or
systemd user units. These edit the user's own scheduler, so they run in this process whatever the
daemon does; their own module keeps the scheduler and the config (pydantic) out of other commands.
`tmem schedule tick` is what the installed timer runs: the maintenance, when tmem.yaml's time has
come (through the backend, as `tmem maintain`)."""

from __future__ import annotations

__all__ = ["schedule", "schedule_install", "schedule_remove", "schedule_show", "schedule_tick"]

from datetime import datetime

import click

from tiered_memory.app.api.lifecycle import MAINTAIN, MaintainRequest
from tiered_memory.cli.options import backend, emit, json_option, vault_root
from tiered_memory.config import load_config
from tiered_memory.daemon import schedule as sched
from tiered_memory.model.dates import to_datetime
from tiered_memory.present import lifecycle as maintained
from tiered_memory.present import schedule as show


@click.group()
def schedule() -> None:
    """Run `tmem maintain` daily from a user crontab or systemd user timer (or install the daemon)."""


_method = click.option(
    "--method",
    type=click.Choice(["auto", "cron", "systemd", "launchd"]),
    default="auto",
    show_default=True,
    help="auto: a systemd user timer when systemd answers, else crontab (the daemon: systemd or launchd).",
)


@schedule.command("install")
@_method
@click.option(
    "--daemon",
    is_flag=True,
    help="Install the daemon (`tmem daemon run`) instead, started at login (systemd user service or launchd agent).",
)
@click.option("--print", "print_only", is_flag=True, help="Only print what would be installed.")
@json_option
@click.pass_context
def schedule_install(ctx: click.Context, method: str, daemon: bool, print_only: bool, as_json: bool) -> None:
    """Install the daily maintenance for this vault (replaces this vault's earlier schedule)."""
    root = vault_root(ctx)
    if method != "auto":
        chosen = method
    elif daemon:
        chosen = sched.detect_daemon(sched.run_command) or "none"  # "none": render says what to do
    elif print_only:
        # Nothing here to install into is no reason to refuse to print: the crontab line is what
        # a person installs by hand (and the refusal itself says to use --print).
        chosen = sched.detect(sched.run_command, fallback="cron")
    else:
        chosen = sched.detect(sched.run_command)
    plan = sched.render(root, chosen, daemon=daemon)
    if not print_only:
        sched.install(plan)
    emit(
        show.installed_json(plan.to_dict(), installed=not print_only),
        as_json,
        show.installed_text(chosen, plan.text(), printed_only=print_only),
    )


@schedule.command("remove")
@json_option
@click.pass_context
def schedule_remove(ctx: click.Context, as_json: bool) -> None:
    """Remove this vault's cron line, timer and daemon service."""
    removed = sched.remove(vault_root(ctx))
    emit(show.removed_json(removed), as_json, show.removed_text(removed))


@schedule.command("show")
@json_option
@click.pass_context
def schedule_show(ctx: click.Context, as_json: bool) -> None:
    """Show this vault's installed schedule."""
    root = vault_root(ctx)
    found = sched.installed(root)
    old = sched.outdated(root)
    emit(show.schedule_json(found, old), as_json, show.schedule_text(found, old))


@schedule.command("tick")
@click.option("--now", "now_text", hidden=True, help="Pretend it is this ISO local time (tests).")
@json_option
@click.pass_context
def schedule_tick(ctx: click.Context, now_text: str | None, as_json: bool) -> None:
    """Run the daily maintenance if it is due (what the installed timer runs every quarter hour):
    once a day, at the first tick at or after lifecycle.maintenance_time in tmem.yaml, read now."""
    root = vault_root(ctx)
    now = datetime.now().astimezone()
    if now_text:
        given = to_datetime(now_text)
        if given is None:
            raise click.BadParameter(f"'{now_text}' is not an ISO time", param_hint="--now")
        now = given
    when = load_config(root).lifecycle.maintenance_time
    if not sched.maintenance_due(root, when, now):
        if as_json:  # quiet otherwise: the timer's log gets a line only when something ran
            emit(show.tick_json(when, None), as_json, show.tick_text(None))
        return
    report = backend(ctx).run(MAINTAIN, MaintainRequest())
    emit(show.tick_json(when, report.to_dict()), as_json, show.tick_text(maintained.maintain_text(report)))
