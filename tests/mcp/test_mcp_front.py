"""`tmem mcp` on stdio answers the handshake before the MCP SDK loads (mcp/front.py): the answers
are the SDK's own, recorded; anything else goes to the SDK, handed the conversation as it stands."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tiered_memory import __version__
from tiered_memory.mcp import front
from tiered_memory.mcp.declare import declaration, render, sdk_answers


def test_the_recorded_answers_are_what_the_sdk_answers() -> None:
    recorded = front.DECLARED.read_text(encoding="utf-8")
    assert recorded == render(declaration()), "run: python -m tiered_memory.mcp.declare"
    declared = front.load_declared()
    assert declared is not None  # recorded with the SDK installed here
    for version in [*HANDSHAKE_PROTOCOL_VERSIONS, "1999-01-01"]:
        hello, listed = sdk_answers(version)
        assert front.initialize_result(declared, version) == hello["result"]
        assert listed["result"] == {"tools": declared["tools"]}
    assert declared["initialize"]["serverInfo"]["name"] == "tmem"


def test_recorded_answers_of_another_sdk_are_not_used(tmp_path: Path) -> None:
    other = tmp_path / "declared.json"
    other.write_text(json.dumps({**json.loads(front.DECLARED.read_text()), "sdk": "0.0.1"}))
    assert front.load_declared(other) is None  # the SDK answers for itself then
    other.write_text("{not json")
    assert front.load_declared(other) is None
    other.write_text(json.dumps({"sdk": json.loads(front.DECLARED.read_text())["sdk"]}))
    assert front.load_declared(other) is None  # an installed SDK, but no answers


def _wire(*messages: dict[str, Any] | str) -> tuple[front.Wire, io.BytesIO]:
    lines = [m if isinstance(m, str) else json.dumps(m) + "\n" for m in messages]
    out = io.BytesIO()
    return front.Wire(io.BytesIO("".join(lines).encode()), out), out


HELLO = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 8, "method": "tools/list"}


def test_the_handshake_is_answered_and_replayed_for_the_sdk() -> None:
    declared = front.load_declared()
    assert declared is not None
    wire, out = _wire(HELLO, INITIALIZED, LIST, {"jsonrpc": "2.0", "id": 9, "method": "ping"})
    listed: list[int] = []
    done = front.handshake(wire, declared, lambda: listed.append(1))
    assert done is not None and done.listed and listed == [1]
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [a["id"] for a in answers] == [7, 8]
    assert answers[0]["result"]["protocolVersion"] == "2025-06-18"
    assert answers[0]["result"]["serverInfo"]["version"] == __version__
    assert answers[1]["result"]["tools"] == declared["tools"]
    # The SDK reads the agent's initialize again, under an id whose answer is dropped, then the pipe.
    replayed = [json.loads(line) for line in done.replay]
    assert replayed == [{**HELLO, "id": front.REPLAYED_ID}, INITIALIZED]
    reader = front.SdkInput(wire, done.replay)
    assert [reader.readline() for _ in range(3)][2] == json.dumps(
        {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    ) + "\n"
    sdk_out = front.SdkOutput(wire)
    sdk_out.write(json.dumps({"jsonrpc": "2.0", "id": front.REPLAYED_ID, "result": {}}) + "\n")
    sdk_out.write('{"jsonrpc":"2.0","id":9,"result":{}}\n')
    sdk_out.flush()
    assert out.getvalue().splitlines()[2:] == [b'{"jsonrpc":"2.0","id":9,"result":{}}']


@pytest.mark.parametrize(
    "first",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},  # not the handshake
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},  # before initialize
        {**HELLO, "params": {"protocolVersion": "2025-06-18"}},  # what the SDK refuses, not us
        {**HELLO, "params": {**HELLO["params"], "_meta": {"x": 1}}},  # type: ignore[dict-item]
        "not json\n",
        "[1, 2]\n",
        "[" * 100_000 + "\n",  # nested past Python's recursion limit
        '{"jsonrpc": "2.0", "id": 1, "params": ' + "[" * 100_000 + "\n",
    ],
)
def test_anything_unusual_goes_to_the_sdk_untouched(first: dict[str, Any] | str) -> None:
    declared = front.load_declared()
    assert declared is not None
    wire, out = _wire(first, LIST)
    done = front.handshake(wire, declared, lambda: None)
    assert done is not None and not done.listed
    assert out.getvalue() == b""  # the front answered nothing
    assert done.replay == [first if isinstance(first, str) else json.dumps(first) + "\n"]


def test_a_lone_surrogate_escape_reaches_the_sdk_as_a_replacement_character() -> None:
    """A client that cut a string inside an emoji sends `\\ud83d` alone: the SDK's parser refuses
    the whole message and drops it unanswered, so it gets U+FFFD in its place. Pairs, and an
    escaped backslash followed by `ud800`, are left as they are."""
    sent = [
        r'{"jsonrpc": "2.0", "id": 3, "params": {"text": "cut \ud83d", "late": "\udc00x"}}' + "\n",
        r'{"jsonrpc": "2.0", "id": 4, "params": {"text": "\ud83d\ude00", "path": "C:\\ud800"}}' + "\n",
    ]
    wire, _out = _wire(*sent)
    reader = front.SdkInput(wire, [sent[0]])
    first, again, second = reader.readline(), reader.readline(), reader.readline()
    assert first == again
    assert json.loads(first)["params"] == {"text": "cut \ufffd", "late": "\ufffdx"}
    assert second == sent[1]
    assert json.loads(second)["params"] == {"text": "\U0001f600", "path": "C:\\ud800"}


def test_tools_list_with_parameters_goes_to_the_sdk() -> None:
    declared = front.load_declared()
    assert declared is not None
    paged = {**LIST, "params": {"cursor": "abc"}}
    wire, out = _wire(HELLO, INITIALIZED, paged)
    done = front.handshake(wire, declared, lambda: None)
    assert done is not None and not done.listed
    assert len(out.getvalue().splitlines()) == 1  # initialize only
    assert json.loads(done.replay[-1]) == paged


def test_an_agent_that_leaves_during_the_handshake_needs_no_sdk() -> None:
    declared = front.load_declared()
    assert declared is not None
    wire, _out = _wire(HELLO, INITIALIZED)
    assert front.handshake(wire, declared, lambda: None) is None


class _Opened:
    kind = "in-process"

    def __init__(self, say: Any) -> None:
        say("config: a warning")

    def run(self, op: Any, request: Any) -> Any:
        return None

    def close(self) -> None:
        pass


def test_the_backend_opened_early_goes_to_the_first_tool_call_with_its_warnings(tmp_path: Path) -> None:
    opened: list[Path] = []

    def opener(root: Path, *, warn: Any, autostart: bool) -> _Opened:
        opened.append(root)
        return _Opened(warn)

    early = front.EarlyBackend(tmp_path, opener)
    early.start()
    told: list[str] = []
    backend = early(tmp_path, warn=told.append, autostart=True)
    assert isinstance(backend, _Opened) and told == ["config: a warning"] and opened == [tmp_path]
    early(tmp_path, warn=told.append, autostart=True)  # a second opening (after a close) opens anew
    assert opened == [tmp_path, tmp_path]


def test_a_backend_opened_early_that_no_call_took_is_closed(tmp_path: Path) -> None:
    closed: list[int] = []

    class Closing(_Opened):
        def close(self) -> None:
            closed.append(1)

    early = front.EarlyBackend(tmp_path, lambda root, *, warn, autostart: Closing(warn))
    early.close()
    assert closed == []  # nothing opened
    early.start()
    assert early._thread is not None
    early._thread.join(10)
    early.close()
    early.close()
    assert closed == [1]


def test_a_backend_that_failed_early_is_opened_again_by_the_first_call(tmp_path: Path) -> None:
    tries: list[int] = []

    def opener(root: Path, *, warn: Any, autostart: bool) -> _Opened:
        tries.append(1)
        if len(tries) == 1:
            raise RuntimeError("the daemon did not start")
        return _Opened(warn)

    early = front.EarlyBackend(tmp_path, opener)
    early.start()
    assert isinstance(early(tmp_path, warn=lambda m: None, autostart=True), _Opened)
    assert tries == [1, 1]


def test_an_sdk_the_recording_does_not_fit_still_serves(vault_path: Path, tmp_path: Path) -> None:
    """With no usable recording (another SDK version) the SDK answers the handshake itself."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tiered_memory.mcp import front\n"
        f"front.DECLARED = Path({str(tmp_path / 'missing.json')!r})\n"
        "from tiered_memory.cli.main import cli\n"
        "cli(sys.argv[1:])\n"
    )
    messages = [HELLO, INITIALIZED, LIST]
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--vault", str(vault_path), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # An agent keeps its end open until it has its answers: at end of input the SDK stops and may
    # drop a request still being handled, so the pipe is closed only after the last answer.
    killer = threading.Timer(120, proc.kill)
    killer.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        answers = []
        while len(answers) < 2 and (line := proc.stdout.readline()):
            answers.append(json.loads(line))
        proc.stdin.close()
        proc.stdout.read()
        stderr = proc.stderr.read() if proc.stderr is not None else ""
        proc.wait()
    finally:
        killer.cancel()
    assert proc.returncode == 0, stderr
    assert [a["id"] for a in answers] == [7, 8]
    assert {t["name"] for t in answers[1]["result"]["tools"]} >= {"recall", "remember"}
