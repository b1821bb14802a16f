"""`tmem doctor [--fix]`: what keeps search from reflecting the vault, and repairing it."""

from __future__ import annotations

__all__ = ["doctor"]

import click

from tiered_memory.backend import doctor as run_doctor
from tiered_memory.cli.options import emit, json_option, vault_root
from tiered_memory.present import doctor as show_doctor


@click.command()
@click.option(
    "--fix",
    is_flag=True,
    help="Repair what can be repaired (reindex, remove stale files, stop a stuck daemon).",
)
@json_option
@click.pass_context
def doctor(ctx: click.Context, fix: bool, as_json: bool) -> None:
    """Check the daemon, the watcher and the indexes; exit 1 while a problem remains."""

    def say(line: str) -> None:
        if not as_json:
            click.echo(line, err=True)

    report = run_doctor(vault_root(ctx), fix=fix, say=say)
    emit(report.to_dict(), as_json, lambda: show_doctor.doctor_text(report))
    if not report.healthy:
        ctx.exit(1)
