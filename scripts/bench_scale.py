#!/usr/bin/env python3
"""Scale benchmark: the search benchmark at 100,000 notes across all tiers (prints numbers).

    .venv/bin/python scripts/bench_scale.py [--notes 100000] [--busy N]

Reports full build time and notes/s, index size on disk, peak RSS of a process holding both
indexes and the model, warm hybrid query p50/p95 (query embedding included), keyword-only
p50/p95, and the time for one changed note to be searchable. Targets on a 2-core machine:
hybrid p95 <= 50 ms, index <= 500 MB, RSS <= 1.5 GB, build >= 150 notes/s. Notes are 80-200
words with a few of 1,000+; `--busy N` runs N CPU hogs beside it (see bench_search.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_search  # noqa: E402

if __name__ == "__main__":
    if not any(arg.startswith("--notes") for arg in sys.argv[1:]):
        sys.argv[1:1] = ["--notes", "100000"]
    bench_search.main()
