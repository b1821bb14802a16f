"""`tmem mcp`: serve the vault to agents over MCP, on stdio (one agent) or streamable HTTP (several)."""

from __future__ import annotations

__all__ = ["TOKEN_ENV", "mcp"]

import os

import click

from tiered_memory.app.api.setup import CONFIG, MIN_TOKEN_CHARS, NO_TOKEN, TOKEN_TOO_SHORT, ConfigRequest
from tiered_memory.backend import run_without_vault
from tiered_memory.cli.options import vault_root
from tiered_memory.errors import BadInput

TOKEN_ENV = "TMEM_MCP_TOKEN"


@click.command()
@click.option(
    "--http", is_flag=True, help="Streamable HTTP on 127.0.0.1 instead of stdio (needs a bearer token)."
)
@click.option(
    "--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="Port for --http."
)
@click.pass_context
def mcp(ctx: click.Context, http: bool, port: int) -> None:
    """Serve the vault to agents over MCP. Stdio by default (`tmem install AGENT` registers it);
    `--http` serves several clients from one process on 127.0.0.1 only, refusing every request
    without `Authorization: Bearer TOKEN` (TOKEN: `tmem config set mcp-token VALUE` or $TMEM_MCP_TOKEN).

    Operations run in the vault's daemon, started when none runs (`daemon.autostart: false` in
    tmem.yaml, or $TMEM_AUTOSTART=0, keeps them in this process)."""
    root = vault_root(ctx)
    token = None
    if http:
        token = os.environ.get(TOKEN_ENV) or run_without_vault(CONFIG, ConfigRequest()).settings.get(
            "mcp_token"
        )
        # Refused here, before the MCP SDK loads (a second or two of imports for one line).
        if not token:
            raise BadInput(NO_TOKEN)
        if len(token) < MIN_TOKEN_CHARS:
            raise BadInput(TOKEN_TOO_SHORT)
    early = None
    if not http:
        # The agent's handshake (initialize, tools/list) is answered before the MCP SDK loads.
        from tiered_memory.mcp.front import begin  # the standard library only

        early = begin(root)
        if early is None:
            return  # the agent went away before it needed more than the handshake
    from tiered_memory.mcp.server import serve  # the MCP SDK: loaded for this command only

    serve(root, http=http, port=port, token=token, early=early)
