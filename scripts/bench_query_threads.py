#!/usr/bin/env python3
"""Warm hybrid query latency with the query's embedding sparing a core for the keyword side, or not
(not a test: prints numbers).

    .venv/bin/python scripts/bench_query_threads.py VAULT [--threads 2] [--queries 60] [--rounds 2]
                                                          [--busy N]

A hybrid search embeds its query on a second thread while it runs the keyword side. The thread
tuner sizes torch's pool to the free cores, so on an idle machine the pool and the keyword side
together ask for one core more than there are free. This pins the pool at `--threads` (what the
tuner picks on an idle machine of that many cores) and times the same queries, alternately, with
the embedder's `embed_beside` (one thread fewer while the keyword side runs) and with its plain
`embed`. VAULT is an indexed vault with vectors, such as `bench_search.py --out DIR`'s DIR/vault.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tiered_memory.app.memory import Memory  # noqa: E402
from tiered_memory.model.search import SearchRequest  # noqa: E402
from tiered_memory.storage.vault import Vault  # noqa: E402

WORDS = "database migration deploy rollback kubernetes latency cache index query release audit incident"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("vault", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--busy", type=int, default=0, metavar="N", help="run N CPU hogs beside it")
    args = parser.parse_args()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        run(args)
    finally:
        for hog in hogs:
            hog.kill()


def run(args: argparse.Namespace) -> None:
    memory = Memory(Vault(args.vault))
    memory.refresh(vectors=False)
    embedder: object = memory.indexer.embedder()
    tuner = getattr(embedder, "_threads", None)
    if tuner is None:
        raise SystemExit("the vault's embedder has no torch thread pool (sentence-transformers only)")
    tuner.every = float("inf")  # no retuning during the run: the pool stays at --threads
    tuner.torch.set_num_threads(args.threads)
    tuner.threads = args.threads
    cls = type(embedder)
    beside = cls.embed_beside  # type: ignore[attr-defined]
    rng = random.Random(3)
    words = WORDS.split()
    queries = [" ".join(rng.sample(words, 4)) for _ in range(args.queries)]
    for query in queries[:5]:
        memory.searcher.search(SearchRequest(query=query, mode="hybrid"))

    def timed() -> tuple[float, float]:
        latencies = []
        for query in queries:
            start = time.perf_counter()
            memory.searcher.search(SearchRequest(query=query, mode="hybrid"))
            latencies.append((time.perf_counter() - start) * 1000)
        latencies.sort()
        return latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.95)]

    print(f"torch pool pinned at {args.threads} thread(s), {args.busy} CPU hog(s), {len(queries)} queries")
    print("| round | plain embed p50 / p95 | embed_beside p50 / p95 |\n|---|---|---|")
    for number in range(1, args.rounds + 1):
        cls.embed_beside = cls.embed  # type: ignore[attr-defined]
        plain = timed()
        cls.embed_beside = beside  # type: ignore[attr-defined]
        spared = timed()
        print(f"| {number} | {plain[0]:.1f} / {plain[1]:.1f} ms | {spared[0]:.1f} / {spared[1]:.1f} ms |")
    memory.close()


if __name__ == "__main__":
    main()
