"""`tmem mcp` on stdio answers an agent's handshake before the MCP SDK is loaded.

An agent starts the server and waits for `initialize` and `tools/list` before it does anything
else. Importing the SDK (its types, pydantic models of every protocol version, its client and
its HTTP side) is ~0.6 s of CPU, 5 s and more on a busy laptop; those two answers are always the
same. So this module, which imports nothing but the standard library, answers them from
`declared.json` (what the SDK answered, recorded by `python -m tiered_memory.mcp.declare` and
checked against the SDK by the tests), and only then is the SDK loaded. It is handed the
conversation as it stands: the agent's `initialize` again (under an id of ours, whose answer is
dropped), `notifications/initialized`, then the pipe itself.

Anything else, or anything unusual (another first message, a parameter, a line that is not one
JSON object, an SDK other than the one recorded), goes to the SDK at once, which answers it as
it always did.
"""

from __future__ import annotations

__all__ = [
    "DECLARED",
    "REPLAYED_ID",
    "load_declared",
    "Wire",
    "Handshake",
    "initialize_result",
    "handshake",
    "EarlyBackend",
    "Early",
    "begin",
    "SdkInput",
    "SdkOutput",
]

import contextlib
import importlib.util
import json
import os
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from tiered_memory import __version__
from tiered_memory.backend import Backend, Warn, open_backend

DECLARED = Path(__file__).with_name("declared.json")
# The id the agent's `initialize` is replayed under: the SDK's answer to it is not the agent's.
REPLAYED_ID = "tmem-replayed-initialize"


def load_declared(path: Path | None = None) -> dict[str, Any] | None:
    """The recorded answers (DECLARED), when they were recorded with the SDK installed here;
    else None."""
    try:
        declared = json.loads((path or DECLARED).read_text(encoding="utf-8"))
        sdk = str(declared["sdk"])
        spec = importlib.util.find_spec("mcp")  # finds the package without running it
    except (OSError, ValueError, KeyError, TypeError, ImportError):
        return None
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    if not any((Path(place).parent / f"mcp-{sdk}.dist-info").is_dir() for place in places):
        return None  # another SDK version (or an unusual install): it answers for itself
    shapes = (("versions", list), ("initialize", dict), ("tools", list))
    if not all(isinstance(declared.get(key), kind) for key, kind in shapes) or not declared["versions"]:
        return None
    if not isinstance(declared["initialize"].get("serverInfo"), dict):
        return None
    return declared


class Wire:
    """The agent's pipes. Taken off fd 0 and 1, which then point at /dev/null and stderr (as the
    SDK's own stdio transport does), so that a child process or a stray print never reads the
    agent's messages nor writes into its answers."""

    def __init__(self, reader: BinaryIO, writer: BinaryIO) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    def claim(cls) -> Wire:
        import fcntl  # POSIX; `tmem mcp` runs where the daemon does

        sys.stdout.flush()
        wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
        wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.dup2(2, 1)
        return cls(os.fdopen(wire_in, "rb"), os.fdopen(wire_out, "wb"))

    def read(self) -> bytes:
        return self.reader.readline()

    def send(self, message: dict[str, Any]) -> None:
        self.writer.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
        self.writer.flush()


@dataclass
class Handshake:
    """What the front answered: the lines the SDK must read before the pipe, and whether the
    agent has its tools already."""

    replay: list[str] = field(default_factory=list)
    listed: bool = False


def _message(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
        return None
    return message if isinstance(message, dict) and message.get("jsonrpc") == "2.0" else None


def _plain_initialize(message: dict[str, Any]) -> bool:
    """An `initialize` whose answer is the recorded one: the fields the SDK checks, well formed."""
    params = message.get("params")
    if not isinstance(params, dict) or "_meta" in params or "id" not in message:
        return False
    client = params.get("clientInfo")
    return (
        isinstance(params.get("protocolVersion"), str)
        and isinstance(params.get("capabilities"), dict)
        and isinstance(client, dict)
        and isinstance(client.get("name"), str)
        and isinstance(client.get("version"), str)
    )


def initialize_result(declared: dict[str, Any], requested: str) -> dict[str, Any]:
    """The SDK's answer: the version asked for when it speaks it, else its newest."""
    versions = [str(v) for v in declared["versions"]]
    result = dict(declared["initialize"])
    result["protocolVersion"] = requested if requested in versions else versions[-1]
    result["serverInfo"] = {**result["serverInfo"], "version": __version__}
    return result


def handshake(wire: Wire, declared: dict[str, Any], listed: Callable[[], None]) -> Handshake | None:
    """Answer `initialize` and `tools/list` from the declaration; stop at the first message the
    SDK must answer (kept for it) or once the tools are listed (`listed` is then called). None
    when the agent went away before."""
    done = Handshake()
    initialized = False
    while True:
        line = wire.read()
        if not line:
            return None
        message = _message(line)
        method = message.get("method") if message is not None else None
        if message is not None and method == "initialize" and not initialized and _plain_initialize(message):
            wire.send(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": initialize_result(declared, message["params"]["protocolVersion"]),
                }
            )
            done.replay.append(json.dumps({**message, "id": REPLAYED_ID}) + "\n")
            initialized = True
        elif message is not None and method == "notifications/initialized" and initialized:
            done.replay.append(line.decode("utf-8", "replace"))
        elif (
            message is not None
            and method == "tools/list"
            and initialized
            and "id" in message
            and not message.get("params")
        ):
            wire.send({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": declared["tools"]}})
            done.listed = True
            listed()
            return done
        else:
            done.replay.append(line.decode("utf-8", "replace"))
            return done


class EarlyBackend:
    """The backend, opened on a thread as soon as the agent has its tools (the daemon starts, or
    the application loads, while the SDK loads and the agent thinks), and handed to the first
    tool call (`Tools`' opener). One that failed to open is opened again by that call, which
    then says what is wrong."""

    def __init__(self, root: Path, opener: Callable[..., Backend] = open_backend) -> None:
        self.root = root
        self._opener = opener
        self._thread: threading.Thread | None = None
        self._opened: Backend | None = None
        self._said: list[str] = []
        self._warn: Warn = self._said.append  # until a tool's own list takes over

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._open, name="tmem-warm", daemon=True)
            self._thread.start()

    def _open(self) -> None:
        with contextlib.suppress(Exception):  # the first tool call will say what is wrong
            self._opened = self._opener(self.root, warn=lambda message: self._warn(message), autostart=True)

    def __call__(self, root: Path, *, warn: Warn, autostart: bool = True) -> Backend:
        if self._thread is not None:
            self._thread.join()
        opened, self._opened = self._opened, None
        if opened is None or root != self.root:
            return self._opener(root, warn=warn, autostart=autostart)
        self._warn = warn
        for message in self._said:
            warn(message)
        self._said.clear()
        return opened

    def close(self) -> None:
        """Close a backend opened early that no tool call took (the agent left first)."""
        opened, self._opened = self._opened, None
        if opened is not None:
            opened.close()


@dataclass
class Early:
    """What `tmem mcp` on stdio had done when the SDK was loaded."""

    wire: Wire
    handshake: Handshake
    backend: EarlyBackend


def begin(root: Path) -> Early | None:
    """Take the pipes and answer the handshake (when the recorded answers fit this SDK). None when
    the agent went away before it needed the SDK."""
    declared = load_declared()
    wire = Wire.claim()
    backend = EarlyBackend(root)
    if declared is None:
        return Early(wire, Handshake(), backend)
    done = handshake(wire, declared, listed=backend.start)
    return None if done is None else Early(wire, done, backend)


# A UTF-16 surrogate escaped in a JSON string: a pair is one character, one alone is none. An
# escaped backslash is matched first, so `\\ud800` (a backslash, then text) is left as it is.
_SURROGATE_ESCAPES = re.compile(
    r"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)


def _lone_surrogates_replaced(line: str) -> str:
    """`line` with each lone surrogate escape (`\\ud83d` without its pair, as a client that cut a
    string inside an emoji writes) made U+FFFD. The SDK's JSON parser refuses the whole message
    otherwise, and drops it without an answer: the agent would wait for ever."""
    if "\\u" not in line and "\\U" not in line:
        return line
    return _SURROGATE_ESCAPES.sub(lambda m: m.group() if len(m.group()) != 6 else "\\ufffd", line)


class SdkInput:
    """The agent's messages as the SDK's stdio transport reads them (text lines): the replayed
    ones first, then the pipe."""

    def __init__(self, wire: Wire, replay: list[str]) -> None:
        self.wire = wire
        self.replay = list(replay)

    def readline(self) -> str:
        if self.replay:
            return _lone_surrogates_replaced(self.replay.pop(0))
        return _lone_surrogates_replaced(self.wire.read().decode("utf-8", "replace"))


class SdkOutput:
    """The SDK's answers onto the pipe, less its answer to the replayed `initialize` (the agent
    had the front's)."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire

    def write(self, text: str) -> int:
        if REPLAYED_ID in text:
            with contextlib.suppress(ValueError):
                answer = json.loads(text)
                if isinstance(answer, dict) and answer.get("id") == REPLAYED_ID:
                    return len(text)
        self.wire.writer.write(text.encode("utf-8"))
        return len(text)

    def flush(self) -> None:
        self.wire.writer.flush()
