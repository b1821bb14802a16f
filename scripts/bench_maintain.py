#!/usr/bin/env python3
"""Benchmark `tmem maintain` on a synthetic vault of N notes in every tier (not a test: prints numbers).

    .venv/bin/python scripts/bench_maintain.py [--notes 5000] [--embedder fake|none]

Reports the time to plan (dry run), to apply in one commit, and of a second run the same day,
plus how many moves, merges and decays the plan had.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tiered_memory.app.maintain import run_maintenance  # noqa: E402
from tiered_memory.app.memory import Memory  # noqa: E402
from tiered_memory.errors import EmbedderUnavailable  # noqa: E402
from tiered_memory.index.embeddings import FakeEmbedder  # noqa: E402
from tiered_memory.storage.vault import Vault, init_vault  # noqa: E402

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
WORDS = (
    "survey tablet datum gps drift pylon ridge postgres index query cache retry backoff deploy "
    "release branch review client meeting budget invoice schema migration kernel driver sensor"
).split()


def text(rng: random.Random, n: int = 40) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def note(meta: dict[str, object], body: str) -> str:
    return "---\n" + "".join(f"{k}: {json.dumps(v)}\n" for k, v in meta.items()) + f"---\n{body}\n"


def build(root: Path, count: int, rng: random.Random) -> None:
    projects = [f"p{i}" for i in range(max(4, count // 100))]
    for pid in projects:
        state = rng.choice(["active"] * 6 + ["completed", "cancelled"])
        touched = (NOW - timedelta(days=rng.choice([2, 10, 200]))).isoformat()
        meta = {"id": f"project-{pid}", "category": "project", "status": state, "updated": touched}
        path = root / f"memory/mid-term/projects/{pid}/status.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note(meta, f"# {pid}"), encoding="utf-8")
    for i in range(count):
        age = rng.choice([0.2, 2, 10, 45, 90, 400])
        meta: dict[str, object] = {"id": f"n{i}", "created": (NOW - timedelta(days=age)).isoformat()}
        tier = rng.choice(["short", "mid", "long", "long", "long", "archive"])
        if tier == "short":
            rel = f"memory/short-term/n{i}.md"
        elif tier == "mid":
            rel = f"memory/mid-term/projects/{rng.choice(projects)}/n{i}.md"
            meta["category"] = rng.choice(["note", "decision", "error", "pattern"])
            meta["importance"] = rng.choice([0.3, 0.5, 0.9])
        elif tier == "long":
            rel = f"memory/long-term/knowledge_base/domains/n{i}.md"
            meta["confidence"] = 0.9
        else:
            rel = f"memory/archive/sessions/2026/01/01/n{i}.md"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        body = text(rng) if i % 50 else "duplicate " + " ".join(WORDS)  # a few near-duplicates
        path.write_text(note(meta, body), encoding="utf-8")
    subprocess.run(["git", "-C", str(root), "add", "--all"], check=True)
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "bench"],
        check=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument("--embedder", choices=["fake", "none"], default="fake")
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        init_vault(root, config_text="embeddings:\n  provider: fake\n")
        subprocess.run(["git", "-C", str(root), "config", "gc.auto", "0"], check=True)
        build(root, args.notes, rng)

        def factory() -> FakeEmbedder:
            if args.embedder == "none":
                raise EmbedderUnavailable("benchmark without embeddings")
            return FakeEmbedder(64)

        memory = Memory(Vault(root), embedder_factory=factory, now=lambda: NOW)
        try:
            start = time.perf_counter()
            dry = run_maintenance(memory, dry_run=True)
            planned = time.perf_counter() - start
            start = time.perf_counter()
            real = run_maintenance(memory)
            applied = time.perf_counter() - start
            start = time.perf_counter()
            again = run_maintenance(memory)
            second = time.perf_counter() - start
        finally:
            memory.close()
    print(f"notes: {args.notes}  embedder: {args.embedder}")
    print(
        f"plan (dry run):   {planned:7.2f} s  moves {len(dry.moves)}, merges {len(dry.merges)}, decays {len(dry.decays)}"
    )
    print(f"apply + commit:   {applied:7.2f} s  commit {real.commit[:8] if real.commit else None}")
    print(f"second run:       {second:7.2f} s  changed: {again.changed}")
    if again.changed:
        print(
            json.dumps(
                {
                    k: v
                    for k, v in again.to_dict().items()
                    if v and k in ("moves", "merges", "decays", "boosts")
                },
                default=str,
            )[:3000]
        )


if __name__ == "__main__":
    main()
