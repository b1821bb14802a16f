"""Records what the MCP SDK answers to `initialize` and `tools/list` in mcp/declared.json, which
`tmem mcp` gives on stdio before the SDK is loaded (mcp/front.py). Run it after changing a tool,
its description or hints, the instructions, or the SDK (a test fails until then):

    python -m tiered_memory.mcp.declare
"""

from __future__ import annotations

__all__ = ["sdk_answers", "declaration", "render", "main"]

import json
import tempfile
import threading
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tiered_memory.mcp.front import DECLARED
from tiered_memory.mcp.server import build_server
from tiered_memory.mcp.tools import Tools


class _Script:
    """An agent that sends `lines`, then waits for `answers` answers before it hangs up."""

    def __init__(self, lines: list[dict[str, Any]], answers: int) -> None:
        self.lines = [json.dumps(line) + "\n" for line in lines]
        self.answers: list[dict[str, Any]] = []
        self.expected = answers
        self.all_in = threading.Event()

    def readline(self) -> str:
        if self.lines:
            return self.lines.pop(0)
        self.all_in.wait(30)
        return ""

    def write(self, text: str) -> int:
        self.answers.append(json.loads(text))
        if len(self.answers) >= self.expected:
            self.all_in.set()
        return len(text)

    def flush(self) -> None:
        pass


def sdk_answers(protocol: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The SDK's answers (whole JSON-RPC messages) to an agent's `initialize` with `protocol`
    and its `tools/list`."""
    hello = {
        "protocolVersion": protocol,
        "capabilities": {},
        "clientInfo": {"name": "declare", "version": "0"},
    }
    script = _Script(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ],
        answers=2,
    )
    with tempfile.TemporaryDirectory() as nowhere:  # listing opens no vault
        anyio.run(build_server(Tools(Path(nowhere))).run_lines, script, script)
    by_id = {answer.get("id"): answer for answer in script.answers}
    return by_id[1], by_id[2]


def declaration() -> dict[str, Any]:
    """What declared.json holds: the SDK's version, the protocol versions it speaks in the
    handshake, its `initialize` result less what the front fills in (the protocol version agreed,
    tmem's version) and the tools as listed."""
    hello, listed = sdk_answers(HANDSHAKE_PROTOCOL_VERSIONS[-1])
    result = dict(hello["result"])
    del result["protocolVersion"]
    result["serverInfo"] = {k: v for k, v in result["serverInfo"].items() if k != "version"}
    return {
        "sdk": metadata.version("mcp"),
        "versions": list(HANDSHAKE_PROTOCOL_VERSIONS),
        "initialize": result,
        "tools": listed["result"]["tools"],
    }


def render(declared: dict[str, Any]) -> str:
    return json.dumps(declared, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def main() -> None:
    DECLARED.write_text(render(declaration()), encoding="utf-8")
    print(f"wrote {DECLARED}")


if __name__ == "__main__":
    main()
