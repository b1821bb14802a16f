"""Setting up: `tmem init` creates a vault, or adopts a cloned one."""

from __future__ import annotations

__all__ = ["config", "config_approve", "config_get", "config_set", "config_unset", "init"]

import click

from tiered_memory.app.api.setup import (
    CONFIG,
    CONFIG_APPROVE,
    INIT,
    ApproveRequest,
    ConfigRequest,
    InitRequest,
)
from tiered_memory.backend import run_without_vault
from tiered_memory.cli.options import emit, json_option, vault_root
from tiered_memory.present import setup as show


@click.command()
@click.argument("path", required=False, type=click.Path(file_okay=False))
@click.option(
    "--adopt",
    is_flag=True,
    help="Use PATH as it is: an existing folder of notes or Obsidian vault (indexed in place, "
    "git initialised if needed, no file moved or rewritten), or a fresh `git clone` of a vault.",
)
@json_option
@click.pass_context
def init(ctx: click.Context, path: str | None, adopt: bool, as_json: bool) -> None:
    """Create a vault at PATH (default: the current folder) from the template, as a git repository."""
    result = run_without_vault(INIT, InitRequest(path or ctx.obj.get("vault") or ".", adopt=adopt))
    emit(result.to_dict(), as_json, show.init_text(result))


@click.group()
def config() -> None:
    """Your own settings, for every vault: `default-vault` is used when no --vault, $TMEM_VAULT
    or enclosing vault applies (agent hooks and MCP servers started from any folder find it).
    `approve` accepts, on this machine, tmem.yaml's values that reach outside the vault."""


@config.command("get")
@click.argument("key", required=False)
@json_option
def config_get(key: str | None, as_json: bool) -> None:
    """Print the settings (or one of them) and where they are kept."""
    result = run_without_vault(CONFIG, ConfigRequest())
    emit(result.to_dict(), as_json, show.config_text(result, key))


@config.command("set")
@click.argument("key")
@click.argument("value")
@json_option
def config_set(key: str, value: str, as_json: bool) -> None:
    """Set one of your settings (default-vault, author, mcp-token) to VALUE.

    For example: `tmem config set default-vault ~/memory`.
    """
    result = run_without_vault(CONFIG, ConfigRequest(key, value))
    emit(result.to_dict(), as_json, show.config_set_text(result, key))


@config.command("unset")
@click.argument("key")
@json_option
def config_unset(key: str, as_json: bool) -> None:
    """Remove a setting."""
    result = run_without_vault(CONFIG, ConfigRequest(key, ""))
    emit(result.to_dict(), as_json, show.config_removed_text(result, key))


@config.command("approve")
@click.argument("keys", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Approve every value waiting (after reading them).")
@json_option
@click.pass_context
def config_approve(ctx: click.Context, keys: tuple[str, ...], all_: bool, as_json: bool) -> None:
    """Use on this machine the value tmem.yaml gives a setting that reaches outside the vault
    (an embeddings or extraction API, the variable holding its key, a file written outside the
    vault, the sync remote, redaction). tmem.yaml comes with every pull, so such a value is left
    out until you approve it here; a later change needs approving again. Without KEYS: list them."""
    request = ApproveRequest(str(vault_root(ctx)), list(keys), all=all_)
    result = run_without_vault(CONFIG_APPROVE, request)
    emit(result.to_dict(), as_json, show.approve_text(result))
