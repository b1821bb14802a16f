#!/usr/bin/env python3
"""Benchmark concurrent MCP sessions sharing one warm daemon (not a test: prints numbers).

    .venv/bin/python scripts/bench_mcp.py [--notes 300] [--sessions 3] [--fake] [--out DIR]

Builds a synthetic vault, starts its daemon (`tmem daemon start`, real embedding model unless
--fake) and waits until it is warm, then opens --sessions concurrent `tmem mcp` sessions with the
official SDK's stdio client. For each session it reports the time to the first `recall` answer
(from the moment the session is initialized) and the RSS of its server process, and the daemon's
RSS before and after: what each additional agent session costs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_search import build_vault  # noqa: E402

from tiered_memory.daemon import client  # noqa: E402

QUERIES = ["database index migration", "deploy on friday", "cache eviction policy", "tile server port"]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children_running(marker: str) -> list[int]:
    """This process's child processes whose command line holds `marker`."""
    me = os.getpid()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(stat[1]) == me and marker in cmdline:
            found.append(int(entry.name))
    return found


def tmem(root: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tiered_memory", "--vault", str(root), *args], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"tmem {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


async def session(
    root: Path, index: int, results: list[dict[str, float]], opened: anyio.Event, hold: anyio.Event
) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tiered_memory", "--vault", str(root), "mcp"],
        env={"PYTHONPATH": os.environ.get("PYTHONPATH", ""), "HF_HUB_OFFLINE": "1"},
    )
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as mcp:
            start = time.perf_counter()
            await mcp.initialize()
            initialized = time.perf_counter()
            answer = await mcp.call_tool("recall", {"query": QUERIES[index % len(QUERIES)], "limit": 5})
            first = time.perf_counter()
            assert not answer.is_error, answer.content
            second_start = time.perf_counter()
            await mcp.call_tool("recall", {"query": QUERIES[(index + 1) % len(QUERIES)], "limit": 5})
            second = time.perf_counter()
            results.append(
                {
                    "session": index + 1,
                    "initialize_ms": (initialized - start) * 1000,
                    "first_recall_ms": (first - initialized) * 1000,
                    "second_recall_ms": (second - second_start) * 1000,
                }
            )
            opened.set()
            await hold.wait()  # keep every session open while the RSS is read


async def run_sessions(root: Path, count: int) -> tuple[list[dict[str, float]], list[float]]:
    results: list[dict[str, float]] = []
    rss: list[float] = []
    hold = anyio.Event()
    async with anyio.create_task_group() as group:
        for i in range(count):
            opened = anyio.Event()
            group.start_soon(session, root, i, results, opened, hold)
            await opened.wait()  # one after the other: the 2nd and 3rd are the ones that must be cheap
        pids = children_running("tiered_memory")
        rss = [rss_mb(pid) for pid in pids if pid not in (client.read_pid(root),)]
        hold.set()
    return results, rss


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--fake", action="store_true", help="The fake embedder (no model): plumbing only.")
    parser.add_argument("--out", type=Path, help="Build the vault here (default: a temporary folder).")
    args = parser.parse_args()
    base = args.out or Path(tempfile.mkdtemp(prefix="tmem-bench-mcp-"))
    root = base / "vault"
    if root.exists():
        shutil.rmtree(root)
    build_vault(root, args.notes)
    if args.fake:
        (root / "tmem.yaml").write_text("embeddings:\n  provider: fake\n", encoding="utf-8")
    os.environ.setdefault("PYTHONPATH", str(Path(__file__).resolve().parent.parent))
    started = time.perf_counter()
    tmem(root, "daemon", "start", "--timeout", "1800")
    pid = client.read_pid(root)
    assert pid is not None
    print(
        f"vault: {args.notes} notes; daemon warm in {time.perf_counter() - started:.1f} s, RSS {rss_mb(pid):.0f} MB"
    )
    try:
        before = rss_mb(pid)
        results, rss = anyio.run(run_sessions, root, args.sessions)
        after = rss_mb(pid)
        for row, mb in zip(sorted(results, key=lambda r: r["session"]), rss, strict=False):
            print(
                f"session {row['session']}: initialize {row['initialize_ms']:.0f} ms, "
                f"first recall {row['first_recall_ms']:.0f} ms, second {row['second_recall_ms']:.0f} ms, "
                f"server RSS {mb:.0f} MB"
            )
        print(
            f"daemon RSS {before:.0f} MB -> {after:.0f} MB with {args.sessions} sessions (one model for all)"
        )
    finally:
        tmem(root, "daemon", "stop")
        if not args.out:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
