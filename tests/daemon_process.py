"""A `tmem daemon run` child process for tests, and the waiting and `tmem` calls that go with it.

Shared by the daemon's tests and by every test elsewhere that needs a real daemon beside it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tiered_memory.daemon import client

TMEM = str(Path(sys.executable).parent / "tmem")


def wait_for(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def note(title: str, body: str) -> str:
    return f"---\ntitle: {title}\n---\n# {title}\n\n{body}\n"


class DaemonProc:
    """A `tmem daemon run` subprocess of this test, with a log file outside the vault."""

    def __init__(self, root: Path, log: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.log = log
        cmd = [sys.executable, "-m", "tiered_memory", "--vault", str(root), "daemon", "run"]
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [*cmd, "--heartbeat-seconds", "0.2", *args], stdout=out, stderr=subprocess.STDOUT, env=env
            )
        wait_for(self._ready, 60.0, "the daemon to be ready")

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"daemon exited {self.proc.returncode}:\n{self.log.read_text()}")
        info = client.ping(self.root)
        return bool(info and info["ready"])

    def request(self, payload: dict[str, Any], timeout: float = 20.0) -> dict[str, Any]:
        return client.request(self.root, payload, timeout=timeout)

    def paths(self, query: str, **fields: Any) -> list[str]:
        """What a search finds once the watcher has applied the edits (queued ones are not forced)."""
        payload = {"op": "call", "name": "search", "request": {"query": query, **fields}, "fresh": False}
        return [h["path"] for h in self.request(payload)["result"]["hits"]]

    def status(self) -> dict[str, Any]:
        return self.request({"op": "status"})["status"]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode


def stop_detached(root: Path) -> None:
    """Stop a daemon started with `tmem daemon start` (not our child): by the pid holding the lock."""
    pid = client.lock_holder(root)
    if not pid:
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while client.lock_holder(root) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    if client.lock_holder(root) is not None:
        os.kill(pid, signal.SIGKILL)


def tmem(root: Path, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TMEM, "--vault", str(root), *args], capture_output=True, text=True, timeout=timeout
    )
