#!/usr/bin/env python3
"""What asking git about the auto-commit's queue costs (prints numbers).

    .venv/bin/python scripts/bench_autocommit.py [--notes 10000] [--queued 2000]

Writes a vault of `--notes` committed notes, queues `--queued` of them as the watcher would after
a tmem command wrote them (all committed already: nothing waits), and times what the daemon then
does with the queue: `pending()` (each heartbeat and `daemon status` while the queue is not
empty, one `git status` per 500 paths) and `commit()` (the same question, then no commit). Then
one of them is edited by hand and the auto-commit of it is timed.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tiered_memory.daemon.jobs import AutoCommitter
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import Vault, init_vault

FOLDER = "memory/long-term/knowledge_base/domains"


def _timed(name: str, run: Callable[[], object]) -> object:
    start = time.perf_counter()
    out = run()
    print(f"{name:<44} {(time.perf_counter() - start) * 1000:9.1f} ms   -> {out!r}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=10000)
    parser.add_argument("--queued", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        init_vault(root, config_text="embeddings:\n  provider: none\n")
        vault = Vault(root)
        rels = [f"{FOLDER}/note-{i:05d}.md" for i in range(args.notes)]
        for i, rel in enumerate(rels):
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"---\ntitle: Note {i}\n---\nFact number {i}.\n", encoding="utf-8")
        tx = Transaction(vault, "bench: notes")
        tx.include(rels)
        tx.commit()

        def commit(paths: list[str], describe: Callable[[], str]) -> str | None:
            tx = Transaction(vault, describe())
            tx.include(paths)
            return tx.commit()

        auto = AutoCommitter(vault, commit, 1, stability=0.0, wall=lambda: time.time() + 60)
        queued = rels[: args.queued]
        print(f"{args.notes} notes committed, {len(queued)} queued")
        auto.note({rel: "" for rel in queued})
        _timed("pending(), all committed already", auto.pending)
        _timed("commit(), all committed already", auto.commit)
        edited = root / queued[0]
        edited.write_text(edited.read_text(encoding="utf-8") + "Edited.\n", encoding="utf-8")
        auto.note({rel: "" for rel in queued})
        _timed("pending(), one edited by hand", auto.pending)
        _timed("pending() again (the next heartbeat)", auto.pending)
        _timed("commit(), one edited by hand", lambda: bool(auto.commit()))


if __name__ == "__main__":
    main()
