"""The `tmem` group: the global options, and every command group registered by a plain import."""

from __future__ import annotations

import click

from tiered_memory.cli import (
    agents,
    crypto,
    daemon,
    lifecycle,
    longterm,
    notes,
    portability,
    projects,
    sessions,
    setup,
    sync,
)
from tiered_memory.cli.options import TmemGroup


@click.group(cls=TmemGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--vault",
    type=click.Path(file_okay=False),
    help="Vault folder (default: $TMEM_VAULT, then the current folder or a parent).",
)
@click.version_option(package_name="tiered-memory-vault", prog_name="tmem")
@click.pass_context
def cli(ctx: click.Context, vault: str | None) -> None:
    """tiered-memory: Markdown memory in a git vault, with hybrid search for people and agents."""
    ctx.ensure_object(dict)
    ctx.obj["vault"] = vault


for _module in (
    setup,
    notes,
    lifecycle,
    longterm,
    projects,
    sessions,
    agents,
    sync,
    daemon,
    portability,
    crypto,
):
    for _command in _module.COMMANDS:
        cli.add_command(_command)
for _name, _command in notes.ALIASES.items():
    cli.add_command(_command, _name)
