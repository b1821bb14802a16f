"""A real MCP session for tests: the official SDK's stdio client spawning `python -m tiered_memory
mcp` on a vault, and the checks every tool call makes of its answer."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent

Scenario = Callable[[ClientSession], Awaitable[None]]


def serve(vault: Path, scenario: Scenario, **extra_env: str) -> None:
    """Run `scenario` against a server process on this vault, with the test's isolated git config."""
    env = {
        k: os.environ[k]
        for k in (
            "GIT_CONFIG_NOSYSTEM",
            "GIT_CONFIG_GLOBAL",
            "HF_HUB_OFFLINE",
            "TMEM_AUTOSTART",
            "TMEM_CONFIG_HOME",
        )
        if k in os.environ
    }
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra_env)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tiered_memory", "--vault", str(vault), "mcp"], env=env
    )

    async def main() -> None:
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await scenario(session)

    anyio.run(main)


async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content
    return result.content[0].text  # type: ignore[union-attr]


async def error(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error
    text: str = result.content[0].text  # type: ignore[union-attr]
    assert "\n" not in text and "Traceback" not in text
    return text
