#!/usr/bin/env python3
"""Benchmark the one-time look an index embedded from an older text form takes (not a test:
prints numbers).

    .venv/bin/python scripts/bench_embed_form.py [--notes 10000] [--queries 0.1]

Builds a synthetic vault of N notes (a share of them with a Dataview block, which today's form of
the embedded text leaves out), indexes it with the fake embedder, then opens its vectors twice:
once as an index that records today's form (nothing to look at), once as one from before the form
was recorded (every note read once, those that embed otherwise marked to be embedded again).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tiered_memory.app.memory import Memory  # noqa: E402
from tiered_memory.index.embeddings import FakeEmbedder  # noqa: E402
from tiered_memory.index.indexer import EMBEDDED_FORM  # noqa: E402
from tiered_memory.storage.vault import Vault, init_vault  # noqa: E402

WORDS = "survey tablet datum drift ridge index query cache deploy review budget schema kernel sensor".split()
QUERY = "\n```dataview\nTABLE file.mtime FROM #log SORT file.mtime DESC\n```\n"


def build(root: Path, notes: int, share: float) -> int:
    rng = random.Random(7)
    init_vault(root, config_text="embeddings:\n  provider: fake\n")
    with_queries = 0
    for i in range(notes):
        body = " ".join(rng.choice(WORDS) for _ in range(60))
        if rng.random() < share:
            body += QUERY
            with_queries += 1
        path = root / "Notes" / f"{i // 500:03d}" / f"n{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {i}\n\n{body}\n", encoding="utf-8")
    return with_queries


def open_vectors(root: Path, *, older: bool) -> tuple[float, int]:
    """Seconds to open the vector index, and the notes then waiting for vectors."""
    memory = Memory(Vault(root), embedder_factory=lambda: FakeEmbedder(64))
    try:
        catalog = memory.indexer.catalog
        if older:
            catalog.db.execute("DELETE FROM meta WHERE key=?", (EMBEDDED_FORM,))
            catalog.db.commit()
        started = time.perf_counter()
        memory.indexer.vectors()
        elapsed = time.perf_counter() - started
        return elapsed, len(catalog.pending_vectors())
    finally:
        memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=10000)
    parser.add_argument("--queries", type=float, default=0.1, help="share of notes with a Dataview block")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-embed-form-") as folder:
        root = Path(folder) / "vault"
        with_queries = build(root, args.notes, args.queries)
        memory = Memory(Vault(root), embedder_factory=lambda: FakeEmbedder(64))
        try:
            memory.refresh(vectors=True)
        finally:
            memory.close()
        current, _ = open_vectors(root, older=False)
        older, pending = open_vectors(root, older=True)
        print(f"notes: {args.notes}, with a Dataview block: {with_queries}")
        print(f"open vectors, form current: {current:.2f} s")
        print(f"open vectors, older form:   {older:.2f} s (then {pending} note(s) wait to be embedded again)")


if __name__ == "__main__":
    main()
