#!/usr/bin/env python3
"""What tmem's own writes cost the daemon's watcher (not a test: prints numbers).

    .venv/bin/python scripts/bench_daemon_own_writes.py [--adds 1000] [--out DIR]

Starts `tmem daemon start` on a new vault (fake embedder) and sends it `--adds` `remember`
calls (what `tmem add` runs through the daemon, without a Python start each), one after
another on one connection. Then waits until the watcher's queue is empty and nothing is
waiting for the auto-commit. Prints: the daemon's CPU seconds while the calls ran and while it
settled after them, the file events its watcher received (and those it dropped as the daemon's
own writes, before they were queued), the batches it applied (each reads
its paths again and reindexes them), the milliseconds those batches took (from its log), and
what share of the daemon's CPU the watcher's handling of those writes is, at most (the batches'
time over the daemon's CPU: a batch's wall time includes waiting for the lock).

The load average at the start and the end is printed with the figures: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tiered_memory.daemon import client  # noqa: E402
from tiered_memory.daemon.health import LOG_NAME  # noqa: E402
from tiered_memory.storage.vault import init_vault  # noqa: E402

TMEM = [sys.executable, "-m", "tiered_memory"]
_BATCH = re.compile(r"batch \d+: (\d+) path\(s\) from (\d+) event\(s\).* in (\d+) ms")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_line() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min) {five:.1f} (5 min) on {os.cpu_count()} cores"


def batches(log: Path) -> tuple[int, int, int, int]:
    """(batches, paths, events, ms) the daemon's log names."""
    found = [tuple(map(int, m.groups())) for m in _BATCH.finditer(log.read_text(errors="replace"))]
    return len(found), sum(f[0] for f in found), sum(f[1] for f in found), sum(f[2] for f in found)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--adds", type=int, default=1000)
    parser.add_argument("--out", type=Path, help="keep the vault here (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tmem-own-writes-") as temp:
        work = args.out or Path(temp)
        work.mkdir(parents=True, exist_ok=True)
        root = work / "vault"
        env = {
            **os.environ,
            "TMEM_CONFIG_HOME": str(work / "config"),
            "PYTHONPATH": str(ROOT),
            "TMEM_VAULT": str(root),
        }
        os.environ.update(env)
        init_vault(root, config_text="embeddings:\n  provider: fake\n")
        print(f"start: {load_line()}")
        subprocess.run(
            [*TMEM, "daemon", "start", "--timeout", "600"], check=True, env=env, capture_output=True
        )
        try:
            run(root, args.adds)
        finally:
            subprocess.run([*TMEM, "daemon", "stop"], env=env, capture_output=True)
        print(f"end: {load_line()}")


def run(root: Path, adds: int) -> None:
    status = client.request(root, {"op": "status"})["status"]
    pid = status["pid"]
    before = status
    cpu0 = cpu_seconds(pid)
    sock = socket.socket(socket.AF_UNIX)
    with client.unix_address(client.socket_path(root)) as address:
        sock.connect(address)
    reader = sock.makefile("rb")
    started = time.perf_counter()
    for i in range(adds):
        request = {
            "text": f"Burst memory {i}: the kiln at station {i} runs at {900 + i} degrees.",
            "dedup": False,
        }
        sock.sendall(json.dumps({"op": "call", "name": "remember", "request": request}).encode() + b"\n")
        reply = json.loads(reader.readline())
        assert reply.get("ok"), reply
    sock.close()
    calls = time.perf_counter() - started
    cpu1 = cpu_seconds(pid)
    # Settled: nothing queued, nothing waiting for the auto-commit, no new batch for 3 s.
    quiet_since, last = time.monotonic(), None
    while True:
        now = client.request(root, {"op": "status"})["status"]
        key = (now["batches"], now["events_received"], now["queue"], now["pending_commit"])
        if key != last:
            quiet_since, last = time.monotonic(), key
        elif now["queue"] == 0 and now["pending_commit"] == 0 and time.monotonic() - quiet_since > 3:
            break
        time.sleep(0.5)
    settled = time.perf_counter() - started
    cpu2 = cpu_seconds(pid)
    after = now
    count, paths, events, ms = batches(root / ".tmem" / LOG_NAME)
    total = cpu2 - cpu0
    print(f"{adds} remember calls in {calls:.1f} s; settled {settled - calls:.1f} s later")
    print(
        f"daemon CPU: {cpu1 - cpu0:.1f} s during the calls, {cpu2 - cpu1:.1f} s settling, {total:.1f} s in all"
    )
    dropped = after.get("events_dropped", 0) - before.get("events_dropped", 0)
    print(
        f"watcher: {after['events_received'] - before['events_received']} events received "
        f"({dropped} more dropped as the daemon's own writes), "
        f"{after['batches'] - before['batches']} batches ({count} logged: {paths} paths from {events} events, "
        f"{ms / 1000:.1f} s)"
    )
    print(f"share of the daemon's CPU in those batches: at most {min(1.0, ms / 1000 / total) * 100:.0f}%")


if __name__ == "__main__":
    main()
