"""The daemon's client: a burst of connections (many agents' hooks and servers at once) waits for a
daemon that is accepting, rather than taking it for gone and running everything in-process."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

from tiered_memory.daemon import client


def test_a_full_queue_of_connections_is_waited_for_not_taken_for_no_daemon(tmp_path: Path) -> None:
    """A Unix socket whose queue of connections not yet accepted is full refuses a new one at once
    (EAGAIN), whatever timeout the caller set: 35 of 100 hooks connecting in the same instant
    were told there was no daemon. The daemon here accepts after 0.1 s; the ping waits for it."""
    root = tmp_path / "vault"
    path = client.socket_path(root)
    path.parent.mkdir(parents=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    queued: list[socket.socket] = []
    while True:  # fill the queue: the daemon is busy accepting others
        waiting = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        waiting.setblocking(False)
        try:
            waiting.connect(str(path))
        except BlockingIOError:
            waiting.close()
            break
        queued.append(waiting)
        assert len(queued) < 100
    for waiting in queued:
        waiting.close()  # their requests never come; the daemon takes and drops them

    def accept() -> None:
        time.sleep(0.1)
        server.settimeout(5)
        while True:
            conn, _ = server.accept()
            with conn:
                line = conn.makefile("rb").readline()
                if line and json.loads(line)["op"] == "ping":
                    conn.sendall(b'{"ok": true, "ready": true, "pid": 1}\n')
                    return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        assert client.ping(root, timeout=5) == {"ok": True, "ready": True, "pid": 1}
    finally:
        thread.join(10)
        server.close()
