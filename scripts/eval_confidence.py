#!/usr/bin/env python3
"""Choose hybrid search's confidence cut (`search.min_confidence` and its two weights) by leave-one-set-out.

    .venv/bin/python scripts/eval_recall.py ../shared/eval/* --no-cv --no-baselines --dump /tmp/dump
    .venv/bin/python scripts/eval_confidence.py /tmp/dump/*.json

Reads the harness's `--dump` files (each query's best cosine, best keyword coverage, whether the
confidence applies to it, its hybrid ranking without the cut, its evidence). A rule abstains when

    w · best cosine + (1 − w) · best coverage + r · (the query is a request) < t

unless its nearest note is a clear one (`index.confidence.clear_nearest`, a fixed rule).

For each set in turn the rule is fitted on the others: among the grid's (w, t, r) whose R@5 drop
is at most `max_drop` points on every one of them, the one with the highest mean share of
unanswerable queries returning nothing. It is then scored on the set left out. Each variant
(`max_drop`, and whether the request allowance is fitted or requests are never cut) is judged by
its held-out sets: first how many lose more than one point of R@5 (the target allows one), then
the worst held-out abstention, then the mean. The variant that stands best is fitted on every
set: those are the shipped constants.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tiered_memory.index.confidence import CLEAR_MARGIN, is_request  # noqa: E402
from tiered_memory.index.retrieve import COSINE_FLOORS  # noqa: E402

FLOOR = COSINE_FLOORS["sentence-transformers:all-MiniLM-L6-v2"]  # the model the dumps were made with

WEIGHTS = [round(0.1 * i, 1) for i in range(11)]
CUTS = [round(0.2 + 0.01 * i, 2) for i in range(51)]
ALLOWANCES = [0.0, 0.05, 0.1, 0.15, 0.2]
NEVER_CUT = 1.0  # an allowance no confidence falls below: requests are never cut
TARGET_DROP = 1.0  # points of R@5 a held-out set may lose before it counts against the variant


@dataclass(frozen=True)
class Query:
    no_answer: bool
    measured: bool  # the confidence applies (hybrid, the measured model, not a pasted conversation)
    found: bool  # hybrid returns a hit without the cut
    cosine: float
    second: float  # the second best cosine (-1: none)
    coverage: float
    request: bool
    recall5: float
    recall10: float
    rr: float  # reciprocal rank of the first answer


@dataclass(frozen=True)
class Rule:
    weight: float
    cut: float
    allowance: float


@dataclass(frozen=True)
class Outcome:
    silent: float  # share of unanswerable queries with no hit under the rule
    silent_before: float  # same without it
    drop: float  # points of R@5 the rule costs the answerable ones
    drop10: float = 0.0  # of R@10
    drop_mrr: float = 0.0  # of MRR


def queries(rows: list[dict[str, Any]]) -> list[Query]:
    """A dump's rows as the features a rule looks at."""
    out = []
    for row in rows:
        found = row.get("candidates") or {}
        gold = set(row["gold"])
        uncut = row["uncut"]
        out.append(
            Query(
                no_answer=row["no_answer"],
                measured=found.get("confidence") is not None,
                found=bool(uncut),
                cosine=found.get("best_cosine", 0.0),
                second=found.get("second_cosine", -1.0),
                coverage=found.get("best_coverage", 0.0),
                request=is_request(found.get("question", "")),
                recall5=len(gold & set(uncut[:5])) / len(gold) if gold else 0.0,
                recall10=len(gold & set(uncut[:10])) / len(gold) if gold else 0.0,
                rr=next((1 / rank for rank, doc in enumerate(uncut, 1) if doc in gold), 0.0),
            )
        )
    return out


class Arrays:
    """One set's queries as arrays, to score the whole grid of cuts at once."""

    def __init__(self, qs: list[Query]) -> None:
        # A clear nearest note (index.confidence.clear_nearest) is never cut.
        clear = [q.cosine >= FLOOR and q.cosine - q.second >= CLEAR_MARGIN for q in qs]
        self.live = np.array([q.measured and q.found and not c for q, c in zip(qs, clear, strict=True)])
        self.no_answer = np.array([q.no_answer for q in qs])
        self.found = np.array([q.found for q in qs])
        self.cosine = np.array([q.cosine for q in qs])
        self.coverage = np.array([q.coverage for q in qs])
        self.request = np.array([q.request for q in qs], dtype=float)
        self.recall5 = np.array([q.recall5 for q in qs])
        self.recall10 = np.array([q.recall10 for q in qs])
        self.rr = np.array([q.rr for q in qs])
        self.unanswerable = max(1, int(self.no_answer.sum()))
        self.answerable = max(1, int((~self.no_answer).sum()))

    def outcomes(self, weight: float, allowance: float, cuts: list[float]) -> list[Outcome]:
        """The outcome of the rule (weight, cut, allowance) for each of `cuts`."""
        score = weight * self.cosine + (1 - weight) * self.coverage + allowance * self.request
        abstains = self.live[None, :] & (score[None, :] < np.array(cuts)[:, None])
        silent = ((~self.found | abstains) & self.no_answer).sum(axis=1) / self.unanswerable
        cut = abstains & ~self.no_answer
        lost = (
            100 * np.stack([cut @ self.recall5, cut @ self.recall10, cut @ self.rr], axis=1) / self.answerable
        )
        before = float((~self.found & self.no_answer).sum()) / self.unanswerable
        return [
            Outcome(float(s), before, float(x[0]), float(x[1]), float(x[2]))
            for s, x in zip(silent, lost, strict=True)
        ]


def outcome(rule: Rule, qs: Arrays) -> Outcome:
    return qs.outcomes(rule.weight, rule.allowance, [rule.cut])[0]


def fit(sets: dict[str, Arrays], max_drop: float, allowances: list[float]) -> Rule:
    """The rule with the highest mean abstention over `sets` among those costing each at most
    `max_drop` points of R@5 (the first of the grid, the mildest, when none does)."""
    best: tuple[tuple[float, float], Rule] | None = None
    for w, r in itertools.product(WEIGHTS, allowances):
        per_set = [qs.outcomes(w, r, CUTS) for qs in sets.values()]
        for i, t in enumerate(CUTS):
            results = [outcomes[i] for outcomes in per_set]
            if any(o.drop > max_drop for o in results):
                continue
            key = (sum(o.silent for o in results) / len(results), min(o.silent for o in results))
            if best is None or key > best[0]:
                best = (key, Rule(w, t, r))
    return best[1] if best else Rule(WEIGHTS[0], CUTS[0], allowances[0])


def standing(held_out: list[Outcome]) -> tuple[int, float, float]:
    """How a variant's held-out results rank, higher is better: fewer sets losing more than
    TARGET_DROP points of R@5, then the worst abstention, then the mean."""
    misses = sum(1 for o in held_out if o.drop > TARGET_DROP)
    return (-misses, min(o.silent for o in held_out), sum(o.silent for o in held_out) / len(held_out))


def leave_one_set_out(
    sets: dict[str, Arrays], max_drop: float, allowances: list[float]
) -> list[tuple[str, Rule, Outcome]]:
    folds = []
    for held in sets:
        rule = fit({k: v for k, v in sets.items() if k != held}, max_drop, allowances)
        folds.append((held, rule, outcome(rule, sets[held])))
    return folds


VARIANTS = {
    f"{name}, R@5 drop ≤ {drop:g} on each set fitted": (drop, allowances)
    for drop in (1.0, 0.5, 0.3)
    for name, allowances in (("request allowance fitted", ALLOWANCES), ("requests never cut", [NEVER_CUT]))
}


def report(sets: dict[str, Arrays]) -> tuple[str, Rule]:
    lines: list[str] = []
    ranks: dict[str, tuple[int, float, float]] = {}
    for name, (drop, allowances) in VARIANTS.items():
        folds = leave_one_set_out(sets, drop, allowances)
        ranks[name] = misses, worst, mean = standing([o for _, _, o in folds])
        lines += [
            f"{name}: {-misses} held-out set(s) losing more than {TARGET_DROP:g} point of R@5; "
            f"held-out abstention worst {worst:.3f}, mean {mean:.3f}",
            "",
        ]
        lines += ["| held-out set | fitted on the others (w, t, r) | no hit, unanswerable | before | ΔR@5 |"]
        lines += ["|---|---|---|---|---|"]
        for held, rule, o in folds:
            lines.append(
                f"| {held} | {rule.weight:g}, {rule.cut:g}, {rule.allowance:g} | {o.silent:.3f} | "
                f"{o.silent_before:.3f} | {-o.drop:+.1f} |"
            )
        lines.append("")
    chosen = max(ranks, key=lambda k: ranks[k])
    drop, allowances = VARIANTS[chosen]
    rule = fit(sets, drop, allowances)
    lines += [
        f"least worst: {chosen}; fitted on every set: w {rule.weight:g}, t {rule.cut:g}, r {rule.allowance:g}",
        "",
    ]
    lines += ["| set | no hit, unanswerable | before | ΔR@5 / ΔR@10 / ΔMRR |", "|---|---|---|---|"]
    for name, qs in sets.items():
        o = outcome(rule, qs)
        change = f"{-o.drop:+.1f} / {-o.drop10:+.1f} / {-o.drop_mrr:+.1f}"
        lines.append(f"| {name} | {o.silent:.3f} | {o.silent_before:.3f} | {change} |")
    return "\n".join(lines) + "\n", rule


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dumps", type=Path, nargs="+", help="eval_recall.py --dump files, one per set")
    args = parser.parse_args()
    sets = {path.stem: Arrays(queries(json.loads(path.read_text(encoding="utf-8")))) for path in args.dumps}
    print(report(sets)[0])


if __name__ == "__main__":
    main()
