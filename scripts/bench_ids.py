#!/usr/bin/env python3
"""What settling colliding default ids costs a keyword index build and an edit (prints numbers).

    .venv/bin/python scripts/bench_ids.py [--notes 13000] [--groups 15]

Writes a vault of hand-written notes without `id:` keys (an adopted Obsidian vault), `--groups` of
them in groups of three whose names slug alike (`Topic 7.md`, `Topic 7?.md`, `Topic-7!.md`), builds
the keyword index from nothing, then changes one note of a group and one note of none, and reports
each step's time and the time the settle pass took within it (`index.settled_ids`).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from tiered_memory.index import settled_ids
from tiered_memory.index.indexer import Indexer
from tiered_memory.storage.vault import init_vault

_settling = [0.0]
_settle = settled_ids.SettledIds.settle


def _timed_settle(self: settled_ids.SettledIds, *args: object, **kwargs: object) -> None:
    start = time.perf_counter()
    try:
        _settle(self, *args, **kwargs)  # type: ignore[arg-type]
    finally:
        _settling[0] += time.perf_counter() - start


def _step(name: str, run: object) -> None:
    _settling[0] = 0.0
    start = time.perf_counter()
    run()  # type: ignore[operator]
    total = time.perf_counter() - start
    print(f"{name:<28} {total * 1000:9.1f} ms   settle pass {_settling[0] * 1000:8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=13000)
    parser.add_argument("--groups", type=int, default=15)
    args = parser.parse_args()
    settled_ids.SettledIds.settle = _timed_settle  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as tmp:
        vault = init_vault(Path(tmp) / "vault")
        folder = vault.root / "Notes"
        folder.mkdir()
        for i in range(args.notes):
            (folder / f"Note {i}.md").write_text(f"# Note {i}\n\nSome words about item {i}.\n")
        for g in range(args.groups):
            for name in (f"Topic {g}", f"Topic {g}?", f"Topic-{g}!"):
                (folder / f"{name}.md").write_text(f"# {name}\n\nA topic.\n")
        indexer = Indexer(vault)
        try:
            _step(f"build ({args.notes + 3 * args.groups} notes)", lambda: indexer.refresh(vectors=False))
            rows = indexer.catalog.rows()
            ids = [r.id for r in rows.values() if not r.skipped]
            print(
                f"notes {len(ids)}, distinct ids {len(set(ids))}, settled {len(indexer.settled_ids.ids_of(rows))}"
            )
            (folder / "Topic 0?.md").write_text("# Topic 0?\n\nA topic, edited.\n")
            _step(
                "one note of a group edited",
                lambda: indexer.update_paths(["Notes/Topic 0?.md"], vectors=False),
            )
            (folder / "Note 1.md").write_text("# Note 1\n\nEdited.\n")
            _step("one other note edited", lambda: indexer.update_paths(["Notes/Note 1.md"], vectors=False))
        finally:
            indexer.close()


if __name__ == "__main__":
    main()
