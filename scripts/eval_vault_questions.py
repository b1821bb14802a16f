#!/usr/bin/env python3
"""Questions a person asks of their own notes: found, or silenced when nothing answers them.

    .venv/bin/python scripts/eval_vault_questions.py VAULT=QUESTIONS.jsonl [VAULT=QUESTIONS.jsonl ...]
        [--dump DIR] [--from-dumps]

Each VAULT is a folder adopted and indexed (`tmem init --adopt VAULT && tmem --vault VAULT
reindex --full`); each line of its QUESTIONS file is `{"q": ..., "gold": [paths relative to the
vault, or globs], "kind": "answerable" | "unanswerable"}` (docs/eval/vault_questions/ holds the sets and
where their vaults come from). For every search mode it prints how many answerable questions find
a gold note in the top 5 (and MRR), how many are silenced by the confidence cut, and the share of
unanswerable ones that return nothing, the measure of `search.min_confidence`.

Then the hybrid confidence's rule in a person's own notes (docs/retrieval.md, "Confidence in a
person's own notes"): `search.notes_confidence_cosine_weight` and whether what the vault holds
of the query (`known`) is weighed, over a grid, each vault's figures and the leave-one-vault-out
choice (among the settings that cost no fitted vault more than one answer against the rule of
before, the one whose fitted vaults return nothing for most unanswerable questions on average,
then find most).
The figures come from each question's confidence features (best cosine, best coverage, known),
recorded with the ranking once per vault (`--dump` keeps them; `--from-dumps` reads them back).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tiered_memory.app.api.recall import SEARCH  # noqa: E402
from tiered_memory.backend import open_backend  # noqa: E402
from tiered_memory.config import SearchConfig  # noqa: E402
from tiered_memory.index import retrieve  # noqa: E402
from tiered_memory.index.confidence import (  # noqa: E402
    HYBRID_SCALE,
    KNOWN_WEIGHT,
    clear_nearest,
    is_request,
    notes_known,
)
from tiered_memory.model.search import Mode, SearchRequest  # noqa: E402

MODES: tuple[Mode, ...] = ("hybrid", "keyword", "vector")
WEIGHTS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)
# How what the vault holds of the query (`known`, of a vault of n notes) is weighed in a person's notes.
KNOWN_RULES: dict[str, Callable[[float, int], float]] = {
    "not weighed": lambda k, n: 1.0,
    "weighed": lambda k, n: k,
    "by notes": notes_known,  # the shipped rule
}
BEFORE = (0.9, "not weighed")  # the rule of before: the conversation sets' weight, `known` near turns only


def record(vault: Path, questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each question's hits in each mode, and the features its confidence was made of."""
    features: dict[str, dict[str, Any]] = {}
    judge = retrieve.Searcher.confidence

    def spy(
        self: retrieve.Searcher, found: retrieve.Candidates, cfg: SearchConfig, mode: str
    ) -> float | None:
        sure = judge(self, found, cfg, mode)  # type: ignore[arg-type]
        features[mode] = {
            "confidence": sure,
            "cosine": max((c for _, c in found.vector), default=0.0),
            "coverage": max((s for s, _ in found.coverage.values()), default=0.0),
            "known": found.known,
            "notes": self.index.fts().doc_count(),
            "turn": self._nearest_is_turn(found),
            "stated": bool(is_request(found.query) and found.vector and self._stated(found)),
            "clear": clear_nearest(
                found.vector, retrieve.COSINE_FLOORS["sentence-transformers:all-MiniLM-L6-v2"]
            ),
        }
        return None  # the hits uncut: `shown` and `under_rule` apply a rule

    retrieve.Searcher.confidence = spy  # type: ignore[method-assign]
    backend = open_backend(vault, daemon=False)
    rows = []
    try:
        for question in questions:
            row = dict(question)
            for mode in MODES:
                features.clear()
                request = SearchRequest(query=question["q"], mode=mode, limit=10, record_access=False)
                result = backend.run(SEARCH, request)
                row[mode] = {"paths": [h.path for h in result.hits], "features": dict(features)}
            rows.append(row)
    finally:
        backend.close()
        retrieve.Searcher.confidence = judge  # type: ignore[method-assign]
    return rows


def is_gold(path: str, gold: list[str]) -> bool:
    """Whether a hit is one of the question's gold notes: a path, or a glob for a note whose name
    a run makes (the demo's `tmem remember` ends its file name with a few random characters)."""
    return any(fnmatch.fnmatchcase(path, pattern) for pattern in gold)


def shown(row: dict[str, Any], mode: str) -> list[str]:
    """What a search of this mode lists, as searched: its hits, unless its confidence is under the cut."""
    features: dict[str, Any] = next(iter(row[mode]["features"].values()), {})
    sure = features.get("confidence")
    return [] if sure is not None and sure < SearchConfig().min_confidence else list(row[mode]["paths"])


def shipped(rows: list[dict[str, Any]], mode: str) -> dict[str, float]:
    """The figures of one mode as searched (the shipped rule)."""
    answerable = [(shown(r, mode), r["gold"]) for r in rows if r["kind"] == "answerable"]
    unanswerable = [shown(r, mode) for r in rows if r["kind"] != "answerable"]
    found = sum(any(is_gold(p, gold) for p in hits[:5]) for hits, gold in answerable)
    mrr = sum(
        next((1 / (i + 1) for i, p in enumerate(hits) if is_gold(p, gold)), 0.0) for hits, gold in answerable
    )
    return {
        "answerable": len(answerable),
        "found@5": found,
        "MRR": mrr / max(len(answerable), 1),
        "silenced": sum(not hits for hits, _ in answerable),
        "unanswerable": len(unanswerable),
        "no hit": sum(not hits for hits in unanswerable) / max(len(unanswerable), 1),
    }


def under_rule(rows: list[dict[str, Any]], weight: float, known_rule: str) -> tuple[int, float]:
    """(answerable questions found in the top 5, share of unanswerable ones with no hit) of hybrid
    mode, had a person's notes been judged with this cosine weight and `known` rule. The ranking
    is hybrid's own: the rule only decides whether it is shown."""
    allowance = SearchConfig().confidence_request_allowance
    found = silent = unanswerable = 0
    for row in rows:
        hits = row["hybrid"]["paths"]
        f = next(iter(row["hybrid"]["features"].values()), None)
        if f is None or f["turn"]:
            sure = None if f is None else f["confidence"]
        elif f["clear"]:
            sure = 1.0
        else:
            known = KNOWN_RULES[known_rule](f["known"], f["notes"])
            score = weight * f["cosine"] + (1 - weight) * f["coverage"] + KNOWN_WEIGHT * known
            sure = HYBRID_SCALE * score + (allowance if f["stated"] else 0.0)
        shown = bool(hits) and (sure is None or sure >= SearchConfig().min_confidence)
        if row["kind"] == "answerable":
            found += shown and any(is_gold(p, row["gold"]) for p in hits[:5])
        else:
            unanswerable += 1
            silent += not shown
    return found, silent / max(unanswerable, 1)


def choose(
    table: dict[tuple[tuple[float, str], str], tuple[int, float]], names: list[str]
) -> tuple[float, str]:
    allowed = [g for g in grid() if all(table[g, n][0] >= table[BEFORE, n][0] - 1 for n in names)]
    return max(
        allowed, key=lambda g: (sum(table[g, n][1] for n in names), sum(table[g, n][0] for n in names))
    )


def grid() -> list[tuple[float, str]]:
    return [(w, k) for w in WEIGHTS for k in KNOWN_RULES]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sets", nargs="+", help="VAULT=QUESTIONS.jsonl (with --from-dumps: NAME=DUMP.json)")
    parser.add_argument("--dump", type=Path, help="write each vault's recorded rows here")
    parser.add_argument("--from-dumps", action="store_true", help="read recorded rows instead of searching")
    args = parser.parse_args()
    data: dict[str, list[dict[str, Any]]] = {}
    for spec in args.sets:
        where, _, source = spec.partition("=")
        name = Path(where).name if not args.from_dumps else where
        if args.from_dumps:
            data[name] = json.loads(Path(source).read_text())
            continue
        questions = [json.loads(line) for line in Path(source).read_text().splitlines() if line.strip()]
        data[name] = record(Path(where), questions)
        if args.dump:
            args.dump.mkdir(parents=True, exist_ok=True)
            (args.dump / f"{name}.json").write_text(json.dumps(data[name]))
    print("| vault | mode | found@5 | MRR | answerable silenced | unanswerable with no hit |")
    print("|---|---|---|---|---|---|")
    for name, rows in data.items():
        for mode in MODES:
            s = shipped(rows, mode)
            print(
                f"| {name} | {mode} | {s['found@5']}/{s['answerable']} | {s['MRR']:.3f} | {s['silenced']} "
                f"| {s['no hit']:.3f} of {s['unanswerable']} |"
            )
    table = {(g, n): under_rule(rows, *g) for g in grid() for n, rows in data.items()}
    print("\nHybrid in a person's own notes, by cosine weight and `known` (found@5, no hit):")
    for g in grid():
        cells = "  ".join(f"{n} {table[g, n][0]} {table[g, n][1]:.3f}" for n in data)
        print(f"  {g[0]:.1f} {g[1]:<12} {cells}")
    if len(data) > 1:
        print("\nLeave one vault out:")
        for out in data:
            g = choose(table, [n for n in data if n != out])
            (found, silent), (found0, silent0) = table[g, out], table[BEFORE, out]
            print(
                f"  {out}: chosen {g[0]:.1f} / {g[1]}: found@5 {found} (before {found0}), no hit {silent:.3f} (before {silent0:.3f})"
            )
        g = choose(table, list(data))
        print(f"On every vault: {g[0]:.1f} / {g[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
