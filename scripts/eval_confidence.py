#!/usr/bin/env python3
"""Choose each search mode's confidence cut (`search.min_confidence` and the rules' weights) by leave-one-set-out.

    .venv/bin/python scripts/eval_recall.py ../shared/eval/* --no-cv --no-baselines --dump /tmp/dump
    .venv/bin/python scripts/eval_confidence.py /tmp/dump/*.json [--data ../shared/eval]

Reads the harness's `--dump` files (each query's candidates: the best cosines, each keyword
candidate's coverage; its ranking in each mode without the cut). A rule abstains when

    w · best cosine + (1 − w) · best coverage + g · lead + r · (a request, with a statement near) < t

(`lead`: the best cosine's lead over the mean of the next nine, `index.confidence.lead`; a request
keeps its allowance r when a person's short statement about themselves is at least s near in
meaning, always when s = 0) unless its nearest note is a clear one
(`index.confidence.clear_nearest`, a fixed rule). Keyword mode has no cosines (w = 0, g = 0, s = 0);
vector mode no coverage (w = 1).

For each set in turn the rule is fitted on the others: among the grid's (w, g, t, r, s) whose R@5 drop
is at most `max_drop` points on every one of them, the one whose worst set's share of unanswerable
queries returning nothing is highest (then the next worst's, and so on). It is then scored on the set left out. Each variant
(`max_drop`, and whether the request allowance is fitted or requests are never cut) is judged by
its held-out sets: first how many lose more than one point of R@5 (the target allows one), then
the worst held-out abstention, then the mean. The variant that stands best is fitted on every
set: those are the shipped constants.

Which unanswerable queries count. The harness asks each question of the next conversation of its
set. That conversation may answer it after all: REALTALK's next chat often has one of the same
two people (Kevin talks with Elise, then with Paola), and every PrefEval user states a preference
on most of the same twenty topics (user-00's "restaurants in Rome" asked of user-01, whose
shellfish allergy is exactly what constrains it). With `--data` (the sets' folders' parent) a
question asked of a conversation sharing a person with its own (a speaker in every conversation,
"User", is a role, not a person) or holding a question on its topic is not counted as
unanswerable: neither fitted nor scored, only shown ("all probes").
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tiered_memory.index.confidence import CLEAR_MARGIN, is_request, lead  # noqa: E402
from tiered_memory.index.query_terms import cjk_share, dialogue_turns  # noqa: E402
from tiered_memory.index.retrieve import CJK_QUERY_SHARE, COSINE_FLOORS  # noqa: E402

FLOOR = COSINE_FLOORS["sentence-transformers:all-MiniLM-L6-v2"]  # the model the dumps were made with

MODES = ("hybrid", "keyword", "vector")
WEIGHTS = {
    "hybrid": [round(0.1 * i, 1) for i in range(11)],
    "keyword": [0.0],  # coverage alone
    "vector": [1.0],  # the cosine alone
}
LEADS = {"hybrid": [0.0, 0.2, 0.4], "keyword": [0.0], "vector": [0.0, 0.2, 0.4]}
CUTS = [round(0.1 + 0.01 * i, 2) for i in range(61)]
ALLOWANCES = [0.0, 0.05, 0.1, 0.15, 0.2]
NEVER_CUT = 1.0  # an allowance no confidence falls below: requests are never cut
TARGET_DROP = 1.0  # points of R@5 a held-out set may lose before it counts against the variant


@dataclass(frozen=True)
class Query:
    no_answer: bool
    measured: bool  # the confidence applies (the measured model, not a pasted conversation, not CJK)
    found: bool  # the mode returns a hit without the cut
    cosine: float
    second: float  # the second best cosine (-1: none)
    coverage: float
    request: bool
    recall5: float
    recall10: float
    rr: float  # reciprocal rank of the first answer
    lead: float = 0.0  # the best cosine's lead over the next ones (index.confidence.lead)
    sound: bool = True  # an unanswerable query known to have no answer in the conversation asked
    statement: float = 0.0  # the best cosine of a person's short statement about themselves


@dataclass(frozen=True)
class Rule:
    weight: float
    cut: float
    allowance: float
    lead: float = 0.0
    # A request is allowed `allowance` only when a person's own statement is this near (0: always).
    statement: float = 0.0


@dataclass(frozen=True)
class Outcome:
    silent: float  # share of unanswerable queries with no hit under the rule
    silent_before: float  # same without it
    drop: float  # points of R@5 the rule costs the answerable ones
    drop10: float = 0.0  # of R@10
    drop_mrr: float = 0.0  # of MRR
    silent_all: float = 0.0  # share of every unanswerable probe, sound or not, with no hit


def measured(candidates: dict[str, Any], mode: str) -> bool:
    """Whether `Searcher.confidence` judges this query in `mode` (the harness runs the packaged model)."""
    question = candidates.get("question", "")
    if dialogue_turns(question) or cjk_share(question) >= CJK_QUERY_SHARE:
        return False
    return mode == "keyword" or not candidates.get("multilingual", False)


def queries(rows: list[dict[str, Any]], mode: str = "hybrid", sound: list[bool] | None = None) -> list[Query]:
    """A dump's rows as the features a rule of `mode` looks at; `sound`: which rows' unanswerable
    probes are known to have no answer (`sound_probes`), all of them when not given."""
    out = []
    for i, row in enumerate(rows):
        found = row.get("candidates") or {}
        gold = set(row["gold"])
        uncut = (row.get("uncut_modes") or {}).get(mode, row["uncut"] if mode == "hybrid" else [])
        cosines = [score for _, score in found.get("vector", [])]
        statements = set(found.get("statements", []))
        out.append(
            Query(
                no_answer=row["no_answer"],
                measured=bool(found) and measured(found, mode),
                found=bool(uncut),
                cosine=found.get("best_cosine", 0.0) if mode != "keyword" else 0.0,
                second=found.get("second_cosine", -1.0) if mode != "keyword" else -1.0,
                coverage=found.get("best_coverage", 0.0) if mode != "vector" else 0.0,
                request=is_request(found.get("question", "")),
                recall5=len(gold & set(uncut[:5])) / len(gold) if gold else 0.0,
                recall10=len(gold & set(uncut[:10])) / len(gold) if gold else 0.0,
                rr=next((1 / rank for rank, doc in enumerate(uncut, 1) if doc in gold), 0.0),
                lead=lead(cosines) if mode != "keyword" else 0.0,
                sound=sound[i] if sound is not None else True,
                statement=max((c for p, c in found.get("vector", []) if p in statements), default=0.0)
                if mode != "keyword"
                else 0.0,
            )
        )
    return out


def sound_probes(rows: list[dict[str, Any]], data_dir: Path) -> list[bool]:
    """For each row, whether it is known to have no answer where it was asked: not a question
    asked of a conversation that shares a person with its own (a speaker of every conversation is
    a role, not a person) or that holds a question on the same topic. Rows the set's own files do
    not describe (another set's questions, the set's own abstention probes) count as sound."""
    speakers: dict[str, set[str]] = defaultdict(set)
    for line in (data_dir / "documents.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            doc = json.loads(line)
            speakers[doc["conversation"]].add(str(doc.get("speaker") or "").lower())
    roles = set.intersection(*speakers.values()) if speakers else set()
    asked: dict[str, dict[str, Any]] = {}
    topics: dict[str, set[str]] = defaultdict(set)
    for line in (data_dir / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            query = json.loads(line)
            asked[query["id"]] = query
            if query.get("topic"):
                topics[query["conversation"]].add(query["topic"])
    # A dump of an older harness does not say where it asked: the next conversation (no_answer_queries).
    convs = sorted({q["conversation"] for q in asked.values() if q.get("evidence")})
    following = {c: convs[(i + 1) % len(convs)] for i, c in enumerate(convs)} if len(convs) > 1 else {}
    out = []
    for row in rows:
        query = asked.get(row["id"])
        host = row.get("conversation") or (following.get(query["conversation"]) if query else None)
        if not row["no_answer"] or query is None or host is None or host == query["conversation"]:
            out.append(True)
            continue
        people = (speakers[host] & speakers[query["conversation"]]) - roles
        out.append(not people and query.get("topic") not in topics[host])
    return out


class Arrays:
    """One set's queries as arrays, to score the whole grid of cuts at once."""

    def __init__(self, qs: list[Query], clear_applies: bool = True) -> None:
        # A clear nearest note (index.confidence.clear_nearest) is never cut.
        clear = [clear_applies and q.cosine >= FLOOR and q.cosine - q.second >= CLEAR_MARGIN for q in qs]
        self.live = np.array([q.measured and q.found and not c for q, c in zip(qs, clear, strict=True)])
        self.no_answer = np.array([q.no_answer for q in qs], dtype=bool)
        self.sound = np.array([q.sound for q in qs], dtype=bool) & self.no_answer
        self.found = np.array([q.found for q in qs], dtype=bool)
        self.cosine = np.array([q.cosine for q in qs])
        self.coverage = np.array([q.coverage for q in qs])
        self.lead = np.array([q.lead for q in qs])
        self.request = np.array([q.request for q in qs], dtype=float)
        self.statement = np.array([q.statement for q in qs])
        self.recall5 = np.array([q.recall5 for q in qs])
        self.recall10 = np.array([q.recall10 for q in qs])
        self.rr = np.array([q.rr for q in qs])
        self.unanswerable = max(1, int(self.sound.sum()))
        self.probes = max(1, int(self.no_answer.sum()))
        self.answerable = max(1, int((~self.no_answer).sum()))

    def outcomes(
        self, weight: float, allowance: float, cuts: list[float], lead: float = 0.0, statement: float = 0.0
    ) -> list[Outcome]:
        """The outcome of the rule (weight, cut, allowance, lead, statement) for each of `cuts`."""
        score = weight * self.cosine + (1 - weight) * self.coverage + lead * self.lead
        score = score + allowance * self.request * (self.statement >= statement)
        abstains = self.live[None, :] & (score[None, :] < np.array(cuts)[:, None])
        silenced = ~self.found | abstains
        silent = (silenced & self.sound).sum(axis=1) / self.unanswerable
        silent_all = (silenced & self.no_answer).sum(axis=1) / self.probes
        cut = abstains & ~self.no_answer
        lost = (
            100 * np.stack([cut @ self.recall5, cut @ self.recall10, cut @ self.rr], axis=1) / self.answerable
        )
        before = float((~self.found & self.sound).sum()) / self.unanswerable
        return [
            Outcome(float(s), before, float(x[0]), float(x[1]), float(x[2]), float(a))
            for s, x, a in zip(silent, lost, silent_all, strict=True)
        ]


def outcome(rule: Rule, qs: Arrays) -> Outcome:
    return qs.outcomes(rule.weight, rule.allowance, [rule.cut], rule.lead, rule.statement)[0]


def fit(
    sets: dict[str, Arrays],
    max_drop: float,
    allowances: list[float],
    weights: list[float] | None = None,
    leads: list[float] | None = None,
    statements: list[float] | None = None,
) -> Rule:
    """Among the rules costing each of `sets` at most `max_drop` points of R@5, the one whose worst
    set abstains most, then the next worst, and so on (the first of the grid, the mildest, when
    none does): a rule good on average that leaves one kind of conversation behind is not chosen."""
    weights = weights if weights is not None else WEIGHTS["hybrid"]
    leads = leads if leads is not None else [0.0]
    statements = statements if statements is not None else [0.0]
    best: tuple[tuple[float, ...], Rule] | None = None
    for w, g, r, s in itertools.product(weights, leads, allowances, statements):
        per_set = [qs.outcomes(w, r, CUTS, g, s) for qs in sets.values()]
        for i, t in enumerate(CUTS):
            results = [outcomes[i] for outcomes in per_set]
            if any(o.drop > max_drop for o in results):
                continue
            key = tuple(sorted(round(o.silent, 6) for o in results))
            if best is None or key > best[0]:
                best = (key, Rule(w, t, r, g, s))
    return best[1] if best else Rule(weights[0], CUTS[0], allowances[0], leads[0], statements[0])


def standing(held_out: list[Outcome]) -> tuple[int, float, float]:
    """How a variant's held-out results rank, higher is better: fewer sets losing more than
    TARGET_DROP points of R@5, then the worst abstention, then the mean."""
    misses = sum(1 for o in held_out if o.drop > TARGET_DROP)
    return (-misses, min(o.silent for o in held_out), sum(o.silent for o in held_out) / len(held_out))


def leave_one_set_out(
    sets: dict[str, Arrays],
    max_drop: float,
    allowances: list[float],
    weights: list[float] | None = None,
    leads: list[float] | None = None,
    statements: list[float] | None = None,
) -> list[tuple[str, Rule, Outcome]]:
    folds = []
    for held in sets:
        others = {k: v for k, v in sets.items() if k != held}
        rule = fit(others, max_drop, allowances, weights, leads, statements)
        folds.append((held, rule, outcome(rule, sets[held])))
    return folds


# How near a person's own statement must be for a request to keep its allowance (0: always).
STATEMENTS = [0.2, 0.25, 0.3, 0.35, 0.4]
REQUESTS = {
    "request allowance fitted": (ALLOWANCES, [0.0]),
    "requests never cut": ([NEVER_CUT], [0.0]),
    "requests kept when an own statement is near": ([NEVER_CUT], STATEMENTS),
}
VARIANTS = {
    f"{name}, R@5 drop ≤ {drop:g} on each set fitted": (drop, allowances, statements)
    for drop in (1.0, 0.5, 0.3)
    for name, (allowances, statements) in REQUESTS.items()
}


def _rule(rule: Rule) -> str:
    return f"{rule.weight:g}, {rule.lead:g}, {rule.cut:g}, {rule.allowance:g}, {rule.statement:g}"


def report(sets: dict[str, Arrays], mode: str = "hybrid") -> tuple[str, Rule]:
    weights, leads = WEIGHTS[mode], LEADS[mode]
    lines: list[str] = [f"## {mode}", ""]
    ranks: dict[str, tuple[int, float, float]] = {}
    for name, (drop, allowances, statements) in VARIANTS.items():
        if mode == "keyword" and statements != [0.0]:
            continue  # keyword mode has no cosines to find a statement near
        folds = leave_one_set_out(sets, drop, allowances, weights, leads, statements)
        ranks[name] = misses, worst, mean = standing([o for _, _, o in folds])
        lines += [
            f"{name}: {-misses} held-out set(s) losing more than {TARGET_DROP:g} point of R@5; "
            f"held-out abstention worst {worst:.3f}, mean {mean:.3f}",
            "",
        ]
        lines += [
            "| held-out set | fitted on the others (w, g, t, r, s) | no hit, unanswerable | before | all probes | ΔR@5 |",
            "|---|---|---|---|---|---|",
        ]
        for held, rule, o in folds:
            lines.append(
                f"| {held} | {_rule(rule)} | {o.silent:.3f} | {o.silent_before:.3f} | {o.silent_all:.3f} "
                f"| {-o.drop:+.1f} |"
            )
        lines.append("")
    chosen = max(ranks, key=lambda k: ranks[k])
    drop, allowances, statements = VARIANTS[chosen]
    rule = fit(sets, drop, allowances, weights, leads, statements)
    lines += [f"least worst: {chosen}; fitted on every set (w, g, t, r, s): {_rule(rule)}", ""]
    lines += [
        "| set | no hit, unanswerable | before | all probes | ΔR@5 / ΔR@10 / ΔMRR |",
        "|---|---|---|---|---|",
    ]
    for name, qs in sets.items():
        o = outcome(rule, qs)
        change = f"{-o.drop:+.1f} / {-o.drop10:+.1f} / {-o.drop_mrr:+.1f}"
        lines.append(f"| {name} | {o.silent:.3f} | {o.silent_before:.3f} | {o.silent_all:.3f} | {change} |")
    return "\n".join(lines) + "\n", rule


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dumps", type=Path, nargs="+", help="eval_recall.py --dump files, one per set")
    parser.add_argument(
        "--data", type=Path, help="the sets' folders' parent: count only probes known to have no answer"
    )
    parser.add_argument("--mode", choices=MODES, action="append", help="the modes to fit (default: all)")
    args = parser.parse_args()
    dumps = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in args.dumps}
    sound = {
        name: sound_probes(rows, args.data / name)
        for name, rows in dumps.items()
        if args.data is not None and (args.data / name / "queries.jsonl").is_file()
    }
    for mode in args.mode or MODES:
        sets = {
            name: Arrays(queries(rows, mode, sound.get(name)), clear_applies=mode != "keyword")
            for name, rows in dumps.items()
        }
        print(report(sets, mode)[0])


if __name__ == "__main__":
    main()
