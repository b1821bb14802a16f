#!/usr/bin/env python3
"""Benchmark the daemon on a synthetic vault of N realistic notes (not a test: prints numbers).

    .venv/bin/python scripts/bench_daemon.py [--notes 10000] [--edits 10000] [--idle 60] [--fake] [--out DIR]

Starts `tmem daemon start` on the vault (real embedding model unless --fake) and reports: start
times, edit-to-searchable latency p50/p95 (file written -> found by a search, which does not
force the pending batch), `tmem search` wall time through the daemon (Python start included),
the daemon's CPU while idle, its RSS when ready and after every 1,000 of --edits hand edits
(applied in rounds of 100, each round waited for), and the time `tmem daemon stop` takes to flush
and auto-commit them. Heavy: run it once, on a quiet machine.

    .venv/bin/python scripts/bench_daemon.py --backlog [--notes 2000] [--searches 20]

Queries first: starts the daemon on a new vault, which is keyword-searchable at once and then
embeds its backlog a slice at a time, and times `tmem search` (keyword and hybrid, through the
daemon, Python start included) and the same requests on an open socket while it embeds, then
again once the backlog is done and its drafts refined (idle): p50 / p95 and the ratio busy / idle
of the p50. Also the backlog's pace (notes embedded a second while searched, and alone
afterwards) and the batches a query cancelled in the model (they run again: wasted work), as the
daemon's status counts them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_search import build_vault, percentile  # noqa: E402

from tiered_memory.daemon import client

TMEM = str(Path(sys.executable).parent / "tmem")
_COUNTER = re.compile(r"\nEdit counter \w+\.\n\Z")


def tmem(root: Path, *args: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [TMEM, "--vault", str(root), *args], capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise SystemExit(f"tmem {' '.join(args)} failed: {done.stderr.strip()}")
    return done


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Probe:
    """One connection to the daemon for polling searches: a poll costs the daemon a search, not a
    new connection and thread (which would slow down the very thing being measured)."""

    def __init__(self, root: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        with client.unix_address(client.socket_path(root)) as address:
            self.sock.connect(address)
        self.sock.settimeout(600)
        self.reader = self.sock.makefile("rb")

    def found(self, token: str, rel: str, fresh: bool = False) -> bool:
        payload = {
            "op": "call",
            "name": "search",
            "request": {"query": token, "mode": "keyword", "limit": 3},
            # False: the pending batch is not applied early, so this measures the watcher's pace.
            "fresh": fresh,
        }
        self.sock.sendall(json.dumps(payload).encode() + b"\n")
        reply = json.loads(self.reader.readline())
        return any(h["path"] == rel for h in reply["result"]["hits"])

    def search(self, query: str, mode: str) -> None:
        payload = {"op": "call", "name": "search", "request": {"query": query, "mode": mode, "limit": 10}}
        self.sock.sendall(json.dumps(payload).encode() + b"\n")
        reply = json.loads(self.reader.readline())
        assert reply.get("ok"), reply

    def close(self) -> None:
        self.sock.close()


def edit(path: Path, counter: int) -> None:
    """Replace (not append) a counter line: notes keep their size over thousands of edits."""
    text = _COUNTER.sub("", path.read_text(encoding="utf-8"))
    path.write_text(text + f"\nEdit counter {counter_token(counter)}.\n", encoding="utf-8")


def counter_token(counter: int) -> str:
    return f"ec{counter:06d}x"


def wait_searchable(probe: Probe, token: str, rel: str, fresh: bool = False, timeout: float = 600) -> float:
    start = time.perf_counter()
    while not probe.found(token, rel, fresh):
        if time.perf_counter() - start > timeout:
            raise SystemExit(f"{rel} not searchable after {timeout} s")
        time.sleep(0.02)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--edits", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=40, help="edits timed one by one for the latency")
    parser.add_argument("--searches", type=int, default=20)
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of idle CPU measurement")
    parser.add_argument("--fake", action="store_true", help="fake embedder (no model): a quick smoke run")
    parser.add_argument(
        "--out", type=Path, default=None, help="keep the vault here (default: a temp dir, removed)"
    )
    parser.add_argument(
        "--backlog",
        action="store_true",
        help="time searches while the daemon embeds a new vault's backlog against idle, and stop",
    )
    args = parser.parse_args()
    if args.backlog:
        backlog_bench(args)
        return

    base = args.out or Path(tempfile.mkdtemp(prefix="tmem-bench-daemon-"))
    root = base / "vault"
    if root.exists():
        shutil.rmtree(root)
    t0 = time.perf_counter()
    written = build_vault(root, args.notes)
    if args.fake:
        (root / "tmem.yaml").write_text("embeddings:\n  provider: fake\n", encoding="utf-8")
    print(f"built vault of {args.notes} notes in {time.perf_counter() - t0:.1f}s at {root}", flush=True)

    rows: list[tuple[str, str, str]] = [
        ("notes", str(args.notes), ""),
        ("embedder", "fake" if args.fake else "MiniLM", ""),
    ]
    try:
        t0 = time.perf_counter()
        tmem(root, "daemon", "start", "--timeout", "3600")
        rows.append(("first start (indexes and embeds the vault)", f"{time.perf_counter() - t0:.1f} s", ""))
        tmem(root, "daemon", "stop")
        t0 = time.perf_counter()
        tmem(root, "daemon", "start", "--timeout", "3600")
        rows.append(("start with an up-to-date index", f"{time.perf_counter() - t0:.1f} s", ""))
        pid = client.lock_holder(root)
        assert pid
        rss_ready = rss_mb(pid)
        print(f"daemon ready (pid {pid}, {rss_ready:.0f} MB)", flush=True)

        rng = random.Random(5)
        picks = rng.sample(range(len(written)), 2 * args.samples)
        probe = Probe(root)
        latencies: dict[bool, list[float]] = {False: [], True: []}
        for n, index in enumerate(picks):
            rel = written[index][0]
            token = f"zqx{n:04d}vk"
            path = root / rel
            path.write_text(
                path.read_text(encoding="utf-8") + f"\nThe {token} checkpoint passed.\n", encoding="utf-8"
            )
            # First half: nobody asks, the watcher and debouncer bring the edit in. Second half: a
            # search right after the write (an agent reading its own note) flushes what is pending.
            fresh = n >= args.samples
            latencies[fresh].append(wait_searchable(probe, token, rel, fresh))
            time.sleep(0.5)
        probe.close()
        for fresh, label in (
            (False, "edit -> searchable p50 / p95"),
            (True, "  ... when a search asks at once"),
        ):
            values = latencies[fresh]
            rows.append(
                (
                    label,
                    f"{percentile(values, 50) * 1000:.0f} / {percentile(values, 95) * 1000:.0f} ms",
                    "" if fresh else "p95 <= 1 s",
                )
            )

        walls = []
        for n in range(args.searches):
            start = time.perf_counter()
            subprocess.run(
                [TMEM, "--vault", str(root), "search", f"what did we decide about the migration {n}"],
                capture_output=True,
                check=True,
            )
            walls.append(time.perf_counter() - start)
        baseline = []
        for _ in range(5):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            baseline.append(time.perf_counter() - start)
        rows.append(
            (
                "`tmem search` wall via daemon p50 / p95",
                f"{percentile(walls, 50) * 1000:.0f} / {percentile(walls, 95) * 1000:.0f} ms",
                "<= 300 ms",
            )
        )
        rows.append(
            ("  (bare `python -c pass` for comparison)", f"{statistics.median(baseline) * 1000:.0f} ms", "")
        )

        deadline = time.monotonic() + 180
        while (
            client.request(root, {"op": "status"})["status"]["pending_commit"] and time.monotonic() < deadline
        ):
            time.sleep(1)  # let the auto-commit of the edits above happen before measuring idle
        time.sleep(2)
        cpu0, t0 = cpu_seconds(pid), time.perf_counter()
        time.sleep(args.idle)
        idle = (cpu_seconds(pid) - cpu0) / (time.perf_counter() - t0) * 100
        rows.append((f"idle CPU over {args.idle:.0f} s", f"{idle:.2f} %", "~0 %"))
        rows.append(("RSS when ready", f"{rss_ready:.0f} MB", "<= 800 MB"))

        samples = [f"0: {rss_mb(pid):.0f}"]
        round_size = 100
        done = 0
        t0 = time.perf_counter()
        while done < args.edits:
            part = min(round_size, args.edits - done)
            chosen = [written[(done + i) % len(written)][0] for i in range(part)]
            for i, rel in enumerate(chosen):
                edit(root / rel, done + i)
            last = chosen[-1]
            probe = Probe(root)
            wait_searchable(probe, counter_token(done + part - 1), last)
            probe.close()
            done += part
            if done % 1000 == 0 or done == args.edits:
                samples.append(f"{done}: {rss_mb(pid):.0f}")
                print(f"  {done} edits, RSS {rss_mb(pid):.0f} MB", flush=True)
        edit_time = time.perf_counter() - t0
        rows.append(
            (
                f"{args.edits} edits in rounds of {round_size}",
                f"{edit_time:.0f} s ({args.edits / edit_time:.0f} edits/s)",
                "",
            )
        )
        rows.append((f"RSS after {args.edits} edits", f"{rss_mb(pid):.0f} MB", "bounded"))
        rows.append(("  RSS by edits done (MB)", ", ".join(samples), ""))
        status = client.request(root, {"op": "status"})["status"]
        rows.append(("batches / errors", f"{status['batches']} / {status['errors']}", ""))
        t0 = time.perf_counter()
        tmem(root, "daemon", "stop", "--timeout", "3600")
        rows.append(
            ("`tmem daemon stop` (flush + auto-commit of the edits)", f"{time.perf_counter() - t0:.1f} s", "")
        )
        t0 = time.perf_counter()
        subprocess.run([TMEM, "--vault", str(root), "search", "migration"], capture_output=True, check=True)
        rows.append(
            ("`tmem search` wall without a daemon (for comparison)", f"{time.perf_counter() - t0:.2f} s", "")
        )
    finally:
        if client.lock_holder(root):
            subprocess.run([TMEM, "--vault", str(root), "daemon", "stop", "--force"], capture_output=True)

    print("\n| measure | value | target |\n|---|---|---|")
    for name, value, target in rows:
        print(f"| {name} | {value} | {target} |")
    if args.out is None:
        shutil.rmtree(base, ignore_errors=True)


QUERIES = ["migration rollback plan", "what did we decide about caching", "flaky test in the pipeline"]


def timed_searches(root: Path, probe: Probe, count: int) -> dict[str, list[float]]:
    """`count` searches of each kind, interleaved: CLI keyword, CLI hybrid, socket keyword, socket hybrid."""
    out: dict[str, list[float]] = {
        k: [] for k in ("cli keyword", "cli hybrid", "socket keyword", "socket hybrid")
    }
    for n in range(count):
        query = f"{QUERIES[n % len(QUERIES)]} {n}"
        for mode in ("keyword", "hybrid"):
            start = time.perf_counter()
            subprocess.run(
                [TMEM, "--vault", str(root), "search", "--mode", mode, query], capture_output=True, check=True
            )
            out[f"cli {mode}"].append(time.perf_counter() - start)
            start = time.perf_counter()
            probe.search(query, mode)
            out[f"socket {mode}"].append(time.perf_counter() - start)
    return out


def vectors_waiting(root: Path) -> int:
    return int(client.request(root, {"op": "status"})["status"]["vectors_waiting"])


def drafts_waiting(root: Path) -> int:
    """Notes whose int8 draft vectors the daemon has still to refine to float32 (0: none drafted)."""
    return int(client.request(root, {"op": "status"})["status"].get("vector_drafts") or 0)


def preempted(root: Path) -> tuple[int, float] | None:
    """Batches cancelled by a query and the model seconds they had spent (None: not counted)."""
    counted = client.request(root, {"op": "status"})["status"].get("preempted")
    return None if counted is None else (int(counted["batches"]), float(counted["seconds"]))


def backlog_bench(args: argparse.Namespace) -> None:
    base = args.out or Path(tempfile.mkdtemp(prefix="tmem-bench-backlog-"))
    root = base / "vault"
    if root.exists():
        shutil.rmtree(root)
    build_vault(root, args.notes)
    if args.fake:
        (root / "tmem.yaml").write_text("embeddings:\n  provider: fake\n", encoding="utf-8")
    rows: list[tuple[str, str, str]] = []
    try:
        t0 = time.perf_counter()
        tmem(root, "daemon", "start", "--timeout", "3600")
        waiting = vectors_waiting(root)
        while waiting < 0 and time.perf_counter() - t0 < 120:  # counted by the first slice
            time.sleep(0.2)
            waiting = vectors_waiting(root)
        print(f"daemon ready in {time.perf_counter() - t0:.1f} s, {waiting} note(s) to embed", flush=True)
        probe = Probe(root)
        t0, before = time.perf_counter(), vectors_waiting(root)
        busy = timed_searches(root, probe, args.searches)
        left = vectors_waiting(root)
        searched = time.perf_counter() - t0
        searched_pace = (before - left) / searched
        cancelled = preempted(root)
        print(f"busy searches done, {left} note(s) still to embed", flush=True)
        if left == 0:
            print("warning: the backlog ran out during the busy searches; use more --notes", flush=True)
        t0 = time.perf_counter()
        while vectors_waiting(root) != 0:
            time.sleep(0.5)
        drained = time.perf_counter() - t0
        print(f"backlog embedded {drained:.0f} s later", flush=True)
        # The idle figures need an idle model: a drafted backlog is refined to float32 first.
        t1 = time.perf_counter()
        while drafts_waiting(root) != 0:
            time.sleep(0.5)
        print(f"drafts refined {time.perf_counter() - t1:.0f} s after that", flush=True)
        rows.append(
            ("backlog notes/s while searched / alone", f"{searched_pace:.1f} / {left / drained:.1f}", "")
        )
        if cancelled is not None:
            rows.append(
                (
                    "  model runs a query cancelled while searched (model seconds lost / searched)",
                    f"{cancelled[0]} ({cancelled[1]:.2f} s / {searched:.1f} s)",
                    "",
                )
            )
        probe.close()  # the daemon closes a connection idle for a minute
        time.sleep(2)
        probe = Probe(root)
        idle = timed_searches(root, probe, args.searches)
        probe.close()
    finally:
        if client.lock_holder(root):
            subprocess.run([TMEM, "--vault", str(root), "daemon", "stop", "--force"], capture_output=True)
    for kind, target in (
        ("cli keyword", "<= 1.2x"),
        ("cli hybrid", "<= 1.5x"),
        ("socket keyword", ""),
        ("socket hybrid", ""),
    ):
        b, i = busy[kind], idle[kind]
        rows.append(
            (
                f"{kind}: embedding / idle p50 (p95), ms",
                f"{percentile(b, 50) * 1000:.0f} ({percentile(b, 95) * 1000:.0f}) / "
                f"{percentile(i, 50) * 1000:.0f} ({percentile(i, 95) * 1000:.0f})",
                "",
            )
        )
        rows.append(("  ratio of the p50s", f"{percentile(b, 50) / percentile(i, 50):.2f}x", target))
    # What the query's embedding adds, within each phase: the machine's load can change between
    # the two phases (other programs), and it moves keyword and hybrid alike.
    for door in ("cli", "socket"):
        added = [
            percentile(phase[f"{door} hybrid"], 50) - percentile(phase[f"{door} keyword"], 50)
            for phase in (busy, idle)
        ]
        rows.append(
            (
                f"{door}: hybrid - keyword p50, embedding / idle, ms",
                f"{added[0] * 1000:.0f} / {added[1] * 1000:.0f}",
                "",
            )
        )
    print(f"\n{args.notes} notes, {waiting} to embed at start, {args.searches} searches of each kind")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1, 5, 15 min)")
    print("\n| measure | value | target |\n|---|---|---|")
    for name, value, target in rows:
        print(f"| {name} | {value} | {target} |")
    if args.out is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
