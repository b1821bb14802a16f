#!/usr/bin/env python3
"""Benchmark `tmem sync` between two clones of an N-note vault (not a test: prints numbers).

    .venv/bin/python scripts/bench_sync.py [--notes 10000] [--rounds 3] [--out DIR]

Builds a vault of realistic notes (the generator of bench_search.py), pushes it to a bare remote
and clones it ("laptop" and "desktop"), indexes both (keyword side, as a machine in use has its
indexes), then per round changes one note on the laptop and times, with the real `tmem` executable:
`tmem sync` on the laptop, `tmem sync` on the desktop, and `tmem search --mode keyword` on the
desktop until the change is found. "Searchable" means keyword search (vectors of the changed note
are embedded by the next hybrid search or by the daemon). Target: <= 5 s in all, aiming for 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_search import build_vault  # noqa: E402

TMEM = str(Path(sys.executable).parent / "tmem")


def run(*cmd: str, env: dict[str, str] | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return took, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--out", type=Path, default=None, help="keep the vaults here (default: a temp dir, removed)"
    )
    args = parser.parse_args()

    base = args.out or Path(tempfile.mkdtemp(prefix="tmem-bench-sync-"))
    laptop, desktop, remote = base / "laptop", base / "desktop", base / "remote.git"
    for path in (laptop, desktop, remote):
        if path.exists():
            shutil.rmtree(path)
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x"}
    env |= {"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@x"}

    t0 = time.perf_counter()
    written = build_vault(laptop, args.notes)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    subprocess.run(["git", "-C", str(laptop), "remote", "add", "origin", str(remote)], check=True)
    first_push, _ = run(TMEM, "--vault", str(laptop), "sync", env=env)
    clone, _ = run("git", "clone", "-q", str(remote), str(desktop), env=env)
    run(TMEM, "init", "--adopt", str(desktop), env=env)
    index_laptop, _ = run(TMEM, "--vault", str(laptop), "reindex", "--keyword-only", env=env)
    index_desktop, _ = run(TMEM, "--vault", str(desktop), "reindex", "--keyword-only", env=env)
    print(
        f"setup {time.perf_counter() - t0:.0f}s: {args.notes} notes, first push {first_push:.1f}s, "
        f"clone {clone:.1f}s, keyword index {index_laptop:.1f}s / {index_desktop:.1f}s",
        flush=True,
    )

    rounds: list[tuple[float, float, float]] = []
    for n in range(args.rounds):
        rel, _ = written[(n + 1) * len(written) // (args.rounds + 1)]
        marker = f"quokkaflux{n}"
        path = laptop / rel
        path.write_text(
            path.read_text(encoding="utf-8") + f"\nThe {marker} rollout is done.\n", encoding="utf-8"
        )
        push, _ = run(TMEM, "--vault", str(laptop), "sync", env=env)
        pull, _ = run(TMEM, "--vault", str(desktop), "sync", env=env)
        search, out = run(
            TMEM, "--vault", str(desktop), "search", "--json", "--mode", "keyword", marker, env=env
        )
        hits = [h["path"] for h in json.loads(out)["results"]]
        if hits[:1] != [rel]:
            raise SystemExit(f"round {n}: changed note not found first on the desktop (got {hits[:3]})")
        rounds.append((push, pull, search))
        print(
            f"round {n + 1}: laptop sync {push:.2f}s, desktop sync {pull:.2f}s, search {search:.2f}s",
            flush=True,
        )

    def median(i: int) -> float:
        return statistics.median(r[i] for r in rounds)

    total = statistics.median(sum(r) for r in rounds)
    rows = [
        ("notes", f"{args.notes}", ""),
        ("`tmem sync` on the laptop (commit + push)", f"{median(0):.2f} s", ""),
        ("`tmem sync` on the desktop (fetch + merge + reindex)", f"{median(1):.2f} s", ""),
        ("`tmem search --mode keyword` on the desktop", f"{median(2):.2f} s", ""),
        ("change searchable on the other machine, in all", f"{total:.2f} s", "<= 5 s (aim 2 s)"),
    ]
    print(f"\nmedian of {len(rounds)} rounds\n\n| measure | value | target |\n|---|---|---|")
    for name, value, target in rows:
        print(f"| {name} | {value} | {target} |")
    if args.out is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
