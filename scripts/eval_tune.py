"""Cross-validated choice of ranking settings for the recall evaluation.

Every query is gathered once (keyword and vector candidates); ranking is pure over that, so each
setting of the grid is a cheap re-rank. A fold's setting is the one with the best mean of R@5,
R@10 and MRR on the other folds; the cross-validated figure scores each fold with the setting
chosen without it. Folds are conversations (leave one conversation out) when a set has several,
else five interleaved slices of its queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any

Metrics = tuple[float, float, float]  # R@5, R@10, reciprocal rank


def metrics(ranked: Sequence[str], gold: set[str]) -> Metrics:
    r5 = len(gold & set(ranked[:5])) / len(gold)
    r10 = len(gold & set(ranked[:10])) / len(gold)
    first = next((i for i, doc in enumerate(ranked, 1) if doc in gold), None)
    return r5, r10, 1.0 / first if first else 0.0


def mean(rows: Sequence[Metrics]) -> Metrics:
    n = len(rows) or 1
    return (sum(r[0] for r in rows) / n, sum(r[1] for r in rows) / n, sum(r[2] for r in rows) / n)


def objective(m: Metrics) -> float:
    return (m[0] + m[1] + m[2]) / 3


def grid() -> list[dict[str, Any]]:
    """The settings searched: fusion weights, neighbour propagation, time decay."""
    return [
        {
            "keyword_weight": round(1 - vw, 2),
            "vector_weight": vw,
            "neighbor_weight": nw,
            "decay_lambda": decay,
        }
        for vw, nw, decay in product((0.2, 0.3, 0.4, 0.5), (0.0, 0.35, 0.7), (0.0, 0.0002))
    ]


def folds_of(queries: Sequence[dict[str, Any]]) -> list[int]:
    conversations = sorted({q["conversation"] for q in queries})
    if len(conversations) > 1:
        index = {c: i for i, c in enumerate(conversations)}
        return [index[q["conversation"]] for q in queries]
    return [i % 5 for i in range(len(queries))]


@dataclass
class CvResult:
    cv: Metrics
    chosen: list[dict[str, Any]] = field(default_factory=list)  # per fold
    best_in_sample: dict[str, Any] = field(default_factory=dict)
    best_in_sample_metrics: Metrics = (0.0, 0.0, 0.0)


def cross_validate(table: list[list[Metrics]], settings: list[dict[str, Any]], folds: list[int]) -> CvResult:
    """`table[s][q]`: metrics of query q ranked under settings[s]."""
    out: list[Metrics] = [(0.0, 0.0, 0.0)] * len(folds)
    chosen = []
    for fold in sorted(set(folds)):
        train = [q for q, f in enumerate(folds) if f != fold]
        best = max(range(len(settings)), key=lambda s: objective(mean([table[s][q] for q in train])))
        chosen.append(settings[best])
        for q, f in enumerate(folds):
            if f == fold:
                out[q] = table[best][q]
    whole = [objective(mean(row)) for row in table]
    top = max(range(len(settings)), key=lambda s: whole[s])
    return CvResult(mean(out), chosen, settings[top], mean(table[top]))


@dataclass
class SetFold:
    """One set left out: the setting chosen on the other sets, and how it does on this one."""

    held_out: str
    chosen: int  # index into the settings
    held_out_metrics: Metrics
    regret: float  # the held-out set's best objective over the grid minus the chosen setting's


def regret(per_set: dict[str, list[Metrics]], name: str, s: int) -> float:
    """How far setting `s` is from the best setting of the grid on one set (objective points)."""
    return max(objective(m) for m in per_set[name]) - objective(per_set[name][s])


def leave_one_set_out(per_set: dict[str, list[Metrics]]) -> list[SetFold]:
    """`per_set[name][s]`: a set's mean metrics under setting s. For each set in turn, the setting
    whose mean regret over the other sets is least (each set counts once, whatever its size: its
    queries are not independent of each other), scored on the set left out."""
    names = sorted(per_set)
    out = []
    for held in names:
        others = [n for n in names if n != held] or [held]
        n_settings = len(per_set[held])
        best = min(range(n_settings), key=lambda s: (sum(regret(per_set, n, s) for n in others), s))
        out.append(SetFold(held, best, per_set[held][best], regret(per_set, held, best)))
    return out


def worst_regret(per_set: dict[str, list[Metrics]], s: int) -> float:
    return max(regret(per_set, name, s) for name in per_set)


def shipped(per_set: dict[str, list[Metrics]], candidates: Sequence[int]) -> int:
    """Of the candidate settings (those the folds chose, and the current default), the one whose
    worst set is best: the least largest regret."""
    return min(candidates, key=lambda s: (worst_regret(per_set, s), s))
