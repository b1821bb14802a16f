"""What a command started cold (no daemon) loads before it answers: a hybrid search runs the
packaged model on ONNX Runtime, never torch (seconds of import), and still ranks by vectors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import FIXED_NOW

from tiered_memory.app.filing import NewNote, add
from tiered_memory.app.memory import Memory, default_embedder_factory
from tiered_memory.storage.vault import Vault, init_vault

TORCH_SIDE = {"torch", "sentence_transformers", "transformers"}


def _run_and_list_modules(argv: list[str]) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """`tmem ARGV` in a fresh process; what it printed, and the top-level modules it loaded."""
    code = (
        "import json, sys\n"
        "from tiered_memory.cli.main import cli\n"
        "try:\n"
        f"    cli({argv!r})\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc, set(json.loads(proc.stderr.strip().splitlines()[-1]))


@pytest.mark.model
def test_a_hybrid_search_without_a_daemon_ranks_by_vectors_without_torch(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    init_vault(root)  # the template's embeddings: the packaged model, `runtime: auto`
    vault = Vault(root)
    memory = Memory(vault, embedder_factory=default_embedder_factory(vault), now=lambda: FIXED_NOW)
    try:
        add(memory, NewNote(text="We moved the Postgres database to the new host last week", title="Move"))
        add(memory, NewNote(text="The office cat sleeps on the sofa after lunch", title="Cat"))
        memory.refresh(vectors=True)
    finally:
        memory.close()

    # No word in common with either note: only the vector side can rank "Move" first.
    query = "relocating our SQL server"
    proc, loaded = _run_and_list_modules(["--vault", str(root), "search", "--json", "--explain", query])
    answer = json.loads(proc.stdout)
    assert answer["mode"] == "hybrid" and not answer["notice"], answer
    assert "vector search unavailable" not in proc.stderr
    assert [hit["title"] for hit in answer["results"]][:1] == ["Move"]
    assert "onnxruntime" in loaded
    assert sorted(loaded & TORCH_SIDE) == []


# The application's index side: an MCP server loads it only once the agent has its tools.
APPLICATION = {"torch", "onnxruntime", "numpy", "whoosh", "hnswlib", "git"}
MCP_WRAPPER = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))
from tiered_memory.cli.main import cli
cli(sys.argv[1:])
"""


def _rpc(proc: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def test_mcp_answers_initialize_before_loading_the_application(vault_path: Path) -> None:
    """Agents start the server and wait for `initialize`: it answers with the MCP SDK and the
    tool definitions only; the application loads after the agent has listed the tools."""
    proc = subprocess.Popen(
        [sys.executable, "-c", MCP_WRAPPER, "--vault", str(vault_path), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _rpc(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"},
                },
            },
        )
        assert proc.stdout is not None
        answer = json.loads(proc.stdout.readline())
        assert answer["result"]["serverInfo"]["name"] == "tmem"
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.close()  # the agent went away: the server stops
        err = proc.stderr.read()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()
    loaded = json.loads(err.decode().strip().splitlines()[-1])
    assert sorted({m.split(".")[0] for m in loaded} & APPLICATION) == []
    assert "tiered_memory.app.local" not in loaded


def test_listing_the_tools_warms_the_backend_once(tmp_path: Path) -> None:
    import anyio

    from tiered_memory.mcp.server import build_server
    from tiered_memory.mcp.tools import Tools

    warmed: list[int] = []
    server = build_server(Tools(tmp_path), after_listing=lambda: warmed.append(1))
    assert warmed == []  # building the server (what `initialize` needs) warms nothing
    names = {tool.name for tool in anyio.run(server.list_tools)}
    assert {"recall", "remember", "context"} <= names and warmed == [1]
    anyio.run(server.list_tools)
    assert warmed == [1]


# What the MCP SDK brings (its types, pydantic, anyio, its HTTP side): ~0.6 s of CPU before
# anything else, 5 s and more on a busy machine. The handshake is answered without it.
SDK_SIDE = {
    "mcp",
    "mcp_types",
    "pydantic",
    "pydantic_core",
    "anyio",
    "starlette",
    "uvicorn",
    "httpx",
    "sse_starlette",
}
LISTED = "list-the-tools"  # the id of the agent's tools/list
# The server's stdout goes through a pipe of one page that this wrapper reads a little at a time:
# a tools/list answer (~28 KB) blocks its writer until read, so the modules seen when its first
# bytes arrive are those the server had loaded when it answered.
SPY_WRAPPER = """
import fcntl, json, os, sys, threading
read_end, write_end = os.pipe()
fcntl.fcntl(write_end, getattr(fcntl, "F_SETPIPE_SZ", 1031), 4096)
agent = os.dup(1)
os.dup2(write_end, 1)
os.close(write_end)
def relay():
    seen, told = b"", False
    while True:
        chunk = os.read(read_end, 128)
        if not chunk:
            return
        seen = (seen + chunk)[-256:]
        if not told and MARK in seen:
            print(json.dumps(sorted(sys.modules)), file=sys.stderr, flush=True)
            told = True
        os.write(agent, chunk)
threading.Thread(target=relay, daemon=True).start()
from tiered_memory.cli.main import cli
cli(sys.argv[1:])
""".replace("MARK", repr(LISTED.encode()))


def test_mcp_lists_its_tools_before_loading_the_sdk(vault_path: Path) -> None:
    """An agent waits for `initialize` and `tools/list`: both are answered before the MCP SDK (and
    pydantic, anyio, starlette...) is imported; the SDK then serves the calls that follow."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SPY_WRAPPER, "--vault", str(vault_path), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None and proc.stdin is not None
    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        }
        _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        assert json.loads(proc.stdout.readline())["result"]["serverInfo"]["name"] == "tmem"
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _rpc(proc, {"jsonrpc": "2.0", "id": LISTED, "method": "tools/list"})
        listed = json.loads(proc.stdout.readline())
        loaded = {m.split(".")[0] for m in json.loads(proc.stderr.readline())}
        arguments = {"text": "The staging cluster runs three nodes."}
        _rpc(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "remember", "arguments": arguments},
            },
        )
        called = json.loads(proc.stdout.readline())
        proc.stdin.close()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert {tool["name"] for tool in listed["result"]["tools"]} >= {"recall", "remember", "context"}
    assert sorted(loaded & SDK_SIDE) == []
    assert called["id"] == 3 and not called["result"].get("isError"), called
    assert called["result"]["structuredContent"]["action"] == "added"
