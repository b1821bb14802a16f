"""Setting up: `tmem init` creates a vault, or adopts a cloned one."""

from __future__ import annotations

import click

from tiered_memory.app.api.setup import INIT, InitRequest
from tiered_memory.backend import run_without_vault
from tiered_memory.cli.options import emit, json_option


@click.command()
@click.argument("path", required=False, type=click.Path(file_okay=False))
@click.option(
    "--adopt",
    is_flag=True,
    help="PATH is an existing vault (e.g. a fresh `git clone`): register tmem's merge driver there.",
)
@json_option
@click.pass_context
def init(ctx: click.Context, path: str | None, adopt: bool, as_json: bool) -> None:
    """Create a vault at PATH (default: the current folder) from the template, as a git repository."""
    result = run_without_vault(INIT, InitRequest(path or ctx.obj.get("vault") or ".", adopt=adopt))
    if result.adopted:
        text = f"adopted vault at {result.vault}: git merges notes with tmem's driver"
    else:
        text = f"created vault at {result.vault}"
    emit(result.to_dict(), as_json, text)


COMMANDS = [init]
