"""What dedup by words alone misses, against dedup with the embedding model: a labelled set.

    .venv/bin/python scripts/eval_dedup.py [--filler 300] [--pairs tests/data/dedup_pairs.tsv]

`tmem add` with no daemon compares a new memory with its full-text (BM25) candidates by their
words only, since loading the model would cost it 10-20 s; the daemon, whose model is warm,
compares embeddings too (app/dedup.py). This measures the difference on tests/data/dedup_pairs.tsv:
pairs (older note, newer memory) labelled "same" (a restatement: remembering it should merge into
the older note) or "different" (a neighbour, a changed detail or a contradiction: never merged).

Every older note is written into one vault, beside `--filler` synthetic notes (bench_search's
builder) so that the full-text candidates are drawn from a vault of a realistic size; each newer
memory is then judged (nothing written) twice: by words alone, and with the packaged MiniLM model
warm. For each: restatements caught (merged into their older note), false merges (a "different"
memory merged into anything), and time per judgement. The last column counts the restatements
words alone miss that `tmem maintain` merges later anyway: both notes long-term, embedding cosine
>= `lifecycle.merge_similarity` (maintain's own threshold).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_search import build_vault  # noqa: E402

from tiered_memory.app import dedup, filing  # noqa: E402
from tiered_memory.app.memory import Memory  # noqa: E402
from tiered_memory.storage.vault import Vault  # noqa: E402

PAIRS = Path(__file__).resolve().parent.parent / "tests" / "data" / "dedup_pairs.tsv"


@dataclass
class Pair:
    same: bool
    older: str
    newer: str


def load_pairs(path: Path) -> list[Pair]:
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        label, older, newer = line.split("\t")
        pairs.append(Pair(label == "same", older, newer))
    return pairs


@dataclass
class Tally:
    caught: int = 0
    superseded_same: int = 0
    false_merges: int = 0
    seconds: list[float] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)  # the false merges: "newer -> the note it went into"


def judge_all(
    memory: Memory, pairs: list[Pair], ids: dict[str, str], *, vectors: bool
) -> tuple[Tally, set[int]]:
    tally = Tally()
    missed: set[int] = set()
    for i, pair in enumerate(pairs):
        start = time.perf_counter()
        verdict = dedup.judge(memory, filing.NewNote(pair.newer), use_embedder=vectors)
        tally.seconds.append(time.perf_counter() - start)
        merged_into = verdict.other.note.id if verdict.action == "merged" and verdict.other else None
        if pair.same:
            if merged_into == ids[pair.older]:
                tally.caught += 1
            else:
                missed.add(i)
                tally.superseded_same += verdict.action == "superseded"
        elif merged_into is not None and verdict.other is not None:
            tally.false_merges += 1
            tally.wrong.append(f"{pair.newer!r} -> {verdict.other.note.title!r} ({verdict.other.reason})")
    return tally, missed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--filler", type=int, default=300, help="synthetic notes beside the labelled ones")
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument(
        "--overlaps",
        default="",
        help="also judge by words alone at these dedup.token_overlap thresholds (comma-separated)",
    )
    args = parser.parse_args()
    pairs = load_pairs(args.pairs)
    same = sum(p.same for p in pairs)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        build_vault(root, args.filler)
        memory = Memory(Vault(root))
        ids: dict[str, str] = {}
        with memory.change("eval: the older notes") as tx:
            for older in dict.fromkeys(p.older for p in pairs):
                note = filing.prepare(memory, filing.NewNote(older))
                tx.create_note(note)
                ids[older] = note.id
        memory.refresh()
        words, words_missed = judge_all(memory, pairs, ids, vectors=False)
        start = time.perf_counter()
        memory.indexer.vectors()  # the model warm, as in the daemon
        load = time.perf_counter() - start
        model, model_missed = judge_all(memory, pairs, ids, vectors=True)
        sweep: list[tuple[float, Tally]] = []
        for overlap in (float(x) for x in args.overlaps.split(",") if x.strip()):
            config = memory.vault.config
            config = replace(config, dedup=replace(config.dedup, token_overlap=overlap))
            other = Memory(Vault(root, config))
            sweep.append((overlap, judge_all(other, pairs, ids, vectors=False)[0]))
            other.close()
        embedder = memory.indexer.embedder()
        assert embedder is not None
        merge_similarity = memory.vault.config.lifecycle.merge_similarity
        later = 0
        for i in words_missed:
            vectors = embedder.embed([pairs[i].older, pairs[i].newer])
            later += float(np.dot(vectors[0], vectors[1])) >= merge_similarity
        memory.close()
    print(
        f"{len(pairs)} pairs ({same} restatements, {len(pairs) - same} different) among "
        f"{args.filler + len(ids)} notes; model load {load:.1f} s\n"
    )
    print("| dedup | restatements caught | false merges | judge p50 | missed, merged later by maintain |")
    print("| --- | --- | --- | --- | --- |")
    rows = [
        ("words only (no daemon)", words, f"{later} of {len(words_missed)}"),
        ("words + model (daemon)", model, ""),
        *((f"words only, token_overlap {overlap}", tally, "") for overlap, tally in sweep),
    ]
    for name, tally, extra in rows:
        p50 = statistics.median(tally.seconds) * 1000
        print(
            f"| {name} | {tally.caught}/{same} | {tally.false_merges}/{len(pairs) - same} | "
            f"{p50:.0f} ms | {extra} |"
        )
    for name, tally, _ in rows:
        print(f"\nfalse merges, {name}:")
        for line in tally.wrong:
            print(f"  {line}")
    print(f"\nmissed by words, caught by the model: {len(words_missed - model_missed)}")
    for i in sorted(words_missed - model_missed):
        print(f"  {pairs[i].older!r} ~ {pairs[i].newer!r}")


if __name__ == "__main__":
    main()
