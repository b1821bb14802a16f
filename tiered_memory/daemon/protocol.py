"""The daemon's socket: JSON lines over a Unix socket only its owner can open, and the ops it serves.

Each request is one JSON object on one line, `{"op": "call", "name": "search", "request": {...}}`;
each reply is one line, `{"ok": true, ...}` or `{"ok": false, "error": "...", "code": 2}`. A
malformed request gets an error reply and the connection stays open. `call` runs any operation of
the application (`app/operations.py`); the other ops (`ping`, `status`, `stop`, `flush`) are about
the daemon itself. The ops run on whatever has the daemon's shape (`Served`).
"""

from __future__ import annotations

__all__ = ["INTERNAL_ERROR", "MAX_LINE", "OPS", "Op", "Send", "SocketServer", "dispatch", "log", "op"]

import contextlib
import json
import logging
import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from tiered_memory import __version__
from tiered_memory.app import operations
from tiered_memory.app.memory import Memory
from tiered_memory.daemon import client
from tiered_memory.daemon.embedding import Embedding
from tiered_memory.errors import BadInput, TmemError
from tiered_memory.model.records import RecordError

log = logging.getLogger("tiered_memory.daemon")

MAX_LINE = client.MAX_REQUEST
INTERNAL_ERROR = 70  # EX_SOFTWARE

Send = Callable[[dict[str, Any]], None]


class Served(Protocol):
    """What the socket's ops need of the daemon that serves them."""

    @property
    def ready(self) -> threading.Event: ...

    @property
    def stats(self) -> dict[str, Any]: ...

    @property
    def embedding(self) -> Embedding: ...

    def where(self) -> dict[str, Any]: ...

    def status(self) -> dict[str, Any]: ...

    def request_stop(self) -> None: ...

    def wait_ready(self) -> None: ...

    def flush_pending(self, vectors: bool = False) -> int: ...

    def indexing(self) -> AbstractContextManager[Memory]: ...

    def reads_as_indexed(self, wanted: bool = True) -> AbstractContextManager[None]: ...

    def record_error(self, what: str) -> None: ...


Op = Callable[[Served, dict[str, Any], Send], dict[str, Any]]
OPS: dict[str, Op] = {}


def op(name: str) -> Callable[[Op], Op]:
    """Register a socket op: `{"op": name, ...}` -> the function's dict, sent back with "ok": true."""

    def register(func: Op) -> Op:
        OPS[name] = func
        return func

    return register


def dispatch(daemon: Served, line: bytes, send: Send = lambda event: None) -> dict[str, Any]:
    """One request line -> one reply (after any progress or warning lines sent through `send`).
    Never raises: a bad request gets an error reply."""
    try:
        payload = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nested thousands deep
        return {"ok": False, "error": "malformed request: not a JSON object on one line", "code": 2}
    if not isinstance(payload, dict) or not isinstance(payload.get("op"), str):
        return {"ok": False, "error": 'malformed request: expected {"op": ...}', "code": 2}
    name = payload["op"]
    handler = OPS.get(name)
    if handler is None:
        return {"ok": False, "error": f"unknown op '{name}' (known: {', '.join(sorted(OPS))})", "code": 2}
    try:
        reply = {"ok": True, **handler(daemon, payload, send)}
    except TmemError as exc:
        reply = {"ok": False, "error": str(exc), "code": exc.exit_code}
    except Exception as exc:
        daemon.record_error(f"op {name} failed")
        reply = {
            "ok": False,
            "error": f"internal error in {name}: {exc.__class__.__name__}: {exc}",
            "code": INTERNAL_ERROR,
        }
    if "id" in payload:
        reply["id"] = payload["id"]
    return reply


# ---- the ops ----------------------------------------------------------------------------------


@op("ping")
def _ping(daemon: Served, payload: dict[str, Any], send: Send) -> dict[str, Any]:
    # The phase and its progress let whoever waits for the first indexing say where it stands.
    return {
        "pid": os.getpid(),
        "ready": daemon.ready.is_set(),
        "version": __version__,
        **daemon.where(),
    }


@op("status")
def _status(daemon: Served, payload: dict[str, Any], send: Send) -> dict[str, Any]:
    return {"status": daemon.status()}


@op("stop")
def _stop(daemon: Served, payload: dict[str, Any], send: Send) -> dict[str, Any]:
    log.info("stop requested over the socket")
    daemon.request_stop()
    return {"stopping": True, "pid": os.getpid()}


@op("flush")
def _flush(daemon: Served, payload: dict[str, Any], send: Send) -> dict[str, Any]:
    """Apply pending file events now, embed what waits for a vector and save the vectors (tests,
    benchmarks, `tmem doctor`)."""
    daemon.wait_ready()
    daemon.flush_pending()
    daemon.embedding.finish()
    daemon.embedding.save()
    return {"batches": daemon.stats["batches"], "notes": daemon.stats["notes"]}


@op("call")
def _call(daemon: Served, payload: dict[str, Any], send: Send) -> dict[str, Any]:
    """Run an operation of the application (`app/operations.py`) on the warm memory: the same
    function an in-process call runs, so the same result. Warnings and progress go to the caller.
    `"fresh": false` reads the indexes without first applying the file events still queued."""
    name = payload.get("name")
    if not isinstance(name, str):
        raise BadInput('call needs the operation\'s "name"')
    operation, function = operations.find(name)
    fields = payload.get("request", {})
    try:
        request = operation.request.from_dict(fields)
    except RecordError as exc:
        raise BadInput(f"bad request for {name}: {exc}") from None
    daemon.wait_ready()

    def progress(phase: str, done: int, total: int) -> None:
        send({"progress": [phase, done, total]})

    as_indexed = payload.get("fresh", True) is False  # see Daemon.reads_as_indexed
    agent = payload.get("agent")  # the agent the caller runs for: its commits name it
    with (
        daemon.indexing() as memory,
        daemon.reads_as_indexed(as_indexed),
        memory.reporting_to(lambda text: send({"warning": text}), progress),
        memory.acting_as(agent if isinstance(agent, str) else None),
    ):
        result = function(memory, request)
    return {"result": result.to_dict()}


# ---- the server ---------------------------------------------------------------------------------


class SocketServer:
    """Accepts connections on a thread; each connection gets its own thread for its requests."""

    IDLE_TIMEOUT = 60.0

    def __init__(self, path: Path, handle: Callable[[bytes, Send], dict[str, Any]]) -> None:
        self.path = path
        self._handle = handle
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._closing = False
        self._inode: int | None = None

    def start(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # the caller holds the vault lock: a socket here is a stale one
        with client.unix_address(self.path) as address:
            sock.bind(address)
        # Nobody can connect before listen(), and by then only the owner may open the socket.
        os.chmod(self.path, 0o600)
        self._inode = os.stat(self.path).st_ino
        sock.listen(64)
        self._sock = sock
        self._thread = threading.Thread(target=self._accept_loop, name="tmem-socket", daemon=True)
        self._thread.start()

    def _accept_loop(self) -> None:
        assert self._sock is not None
        while not self._closing:
            try:
                conn, _ = self._sock.accept()
            except OSError as exc:
                if self._closing:
                    return
                log.warning("socket accept failed: %s", exc)
                time.sleep(0.1)  # out of file descriptors, say: do not spin
                continue
            if not _same_user(conn):
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), name="tmem-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError, ValueError):
            conn.settimeout(self.IDLE_TIMEOUT)
            reader = conn.makefile("rb")
            while True:
                line = reader.readline(MAX_LINE + 1)
                if not line:
                    return
                if len(line) > MAX_LINE:
                    conn.sendall(_encode({"ok": False, "error": "request larger than 1 MB", "code": 2}))
                    while line and not line.endswith(b"\n"):  # skip the rest of it, keep serving
                        line = reader.readline(MAX_LINE)
                    continue
                if line.strip():

                    def send(event: dict[str, Any], conn: socket.socket = conn) -> None:
                        conn.sendall(_encode(event))

                    conn.sendall(_encode(self._handle(line, send)))

    def stop(self) -> None:
        self._closing = True
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
            self._sock.close()
        if self._thread is not None:
            self._thread.join(2.0)
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self._inode:
                self.path.unlink()


def _encode(reply: dict[str, Any]) -> bytes:
    return json.dumps(reply, ensure_ascii=False, default=str).encode("utf-8") + b"\n"


def _same_user(conn: socket.socket) -> bool:
    if not hasattr(socket, "SO_PEERCRED"):
        return True
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return False
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())
