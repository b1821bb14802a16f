"""Over MCP, an id no note has is one error line naming the notes close to it, as at the CLI."""

from __future__ import annotations

from pathlib import Path

from helpers import write
from mcp import ClientSession
from mcp_client import error, serve


def test_an_unknown_id_over_mcp_names_the_notes_close_to_it(vault_path: Path) -> None:
    write(vault_path, "recipes/pasta.md", "Boil the water for the pasta and salt it well.\n")

    async def scenario(session: ClientSession) -> None:
        missing = await error(session, "read", id="pasta")
        assert "no note with id 'pasta'" in missing and "recipes-pasta" in missing
        assert "recipes-pasta" in await error(session, "forget", id="pasta")

    serve(vault_path, scenario)
