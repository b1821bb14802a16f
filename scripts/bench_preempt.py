#!/usr/bin/env python3
"""Queries first in the model, measured in one process (not a test: prints numbers).

    .venv/bin/python scripts/bench_preempt.py [--seconds 10] [--rounds 3] [--every 0.5]

A thread embeds a backlog of notes (60-200 words each, as `OnnxEmbedder.embed` runs a daemon's
batches) for --seconds, alone and then with a query (`embed_beside`, as a search embeds it)
every --every seconds, in alternating rounds. Prints the backlog's pace in each case (what the
queries' cancels cost it), the runs cancelled and their model seconds, and the query's time in
the model against a query on an idle model. The daemon's own view: bench_daemon.py --backlog.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tiered_memory.index.onnx_embedder import OnnxEmbedder  # noqa: E402

WORDS = (
    "the migration plan moves every table to the new host while the cache warms up and we keep a "
    "rollback script ready for the database team on call tonight after the release review"
).split()


def notes(count: int, seed: int) -> list[str]:
    import random

    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(60, 200))) for _ in range(count)]


def backlog_round(embedder: OnnxEmbedder, seconds: float, every: float | None) -> tuple[float, list[float]]:
    """Texts per second the backlog embedded, and each query's time (when `every`)."""
    stop = threading.Event()
    done = [0]

    def backlog() -> None:
        seed = 0
        while not stop.is_set():
            batch = notes(8, seed)  # a daemon's short batch: a few notes at a time
            embedder.embed(batch)
            done[0] += len(batch)
            seed += 1

    worker = threading.Thread(target=backlog)
    began = time.perf_counter()
    worker.start()
    waits: list[float] = []
    while time.perf_counter() - began < seconds:
        if every is None:
            time.sleep(0.05)
            continue
        time.sleep(every)
        start = time.perf_counter()
        embedder.embed_beside(["what did we decide about the rollback"])
        waits.append(time.perf_counter() - start)
    stop.set()
    worker.join()
    return done[0] / (time.perf_counter() - began), waits


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--every", type=float, default=0.5, help="seconds between two queries")
    args = parser.parse_args()
    embedder = OnnxEmbedder()
    idle = []
    for _ in range(20):
        start = time.perf_counter()
        embedder.embed_beside(["what did we decide about the rollback"])
        idle.append(time.perf_counter() - start)
    alone: list[float] = []
    searched: list[float] = []
    waits: list[float] = []
    turns = embedder.model_turns
    for n in range(args.rounds):
        for queried in (False, True) if n % 2 == 0 else (True, False):
            before = (turns.preempted, turns.wasted_seconds)
            pace, timed = backlog_round(embedder, args.seconds, args.every if queried else None)
            (searched if queried else alone).append(pace)
            waits += timed
            if queried:
                print(
                    f"round {n}: {pace:.1f} texts/s with queries, {turns.preempted - before[0]} runs "
                    f"cancelled ({turns.wasted_seconds - before[1]:.2f} s)",
                    flush=True,
                )
            else:
                print(f"round {n}: {pace:.1f} texts/s alone", flush=True)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"\nload {load}; a query every {args.every} s; {args.rounds} rounds of {args.seconds:.0f} s each way"
    )
    print("| measure | value |\n|---|---|")
    a, s = statistics.median(alone), statistics.median(searched)
    print(f"| backlog texts/s alone / with queries (median) | {a:.1f} / {s:.1f} ({s / a:.2f}x) |")
    print(f"| runs cancelled (model seconds lost) | {turns.preempted} ({turns.wasted_seconds:.2f} s) |")
    q50 = statistics.median(waits) * 1000
    q95 = sorted(waits)[int(0.95 * (len(waits) - 1))] * 1000
    print(f"| query in the model during the backlog p50 / p95, ms | {q50:.0f} / {q95:.0f} |")
    print(f"| query on an idle model p50, ms | {statistics.median(idle) * 1000:.0f} |")


if __name__ == "__main__":
    main()
