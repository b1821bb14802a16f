#!/usr/bin/env python3
"""Choose each search mode's confidence cut (`search.min_confidence` and the rules' weights) by leave-one-set-out.

    .venv/bin/python scripts/eval_recall.py ../shared/eval/* --no-cv --no-baselines --dump /tmp/dump
    .venv/bin/python scripts/eval_confidence.py /tmp/dump/*.json [--data ../shared/eval]

Reads the harness's `--dump` files (each query's candidates: the best cosines, each keyword
candidate's coverage; its ranking in each mode without the cut). A rule abstains when

    w · best cosine + (1 − w) · best coverage + g · lead + k · known + r · (a request, with a statement near) < t

(`lead`: the best cosine's lead over the mean of the next nine, `index.confidence.lead`; `known`:
the share of the query's weight some note of the vault holds, `FtsIndex.known`; a request
keeps its allowance r when a person's short statement about themselves is at least s near in
meaning, always when s = 0) unless its nearest note is a clear one
(`index.confidence.clear_nearest`, a fixed rule). Keyword mode has no cosines (w = 0, g = 0, s = 0);
vector mode no coverage (w = 1).

For each set in turn the rule is fitted on the others: among the grid's (w, g, t, r, s, k) whose R@5 drop
is at most `max_drop` points on every one of them, the one whose worst set's share of unanswerable
queries returning nothing is highest (then the next worst's, and so on). It is then scored on the set left out. Each variant
(`max_drop`, and whether the request allowance is fitted or requests are never cut) is judged by
its held-out sets: first how many lose more than one point of R@5 (the target allows one), then
the worst held-out abstention, then the mean. The variant that stands best is fitted on every
set.

Those were the shipped constants until what the vault holds of the query (`known`) was weighed.
Since, each mode's rule is fitted beyond the one it had (`fit_beyond`, PREVIOUS): among the rules
that cost no fitted set more R@5 than a bound (or the previous rule, if more) nor more than
BEYOND_COST beyond the previous rule, and silence every fitted set's sound probes as often, the one
that silences most beyond it; printed after the variants with its held-out table for each bound.
The shipped constants are its fit on every set at the bound of 0.75 (docs/retrieval.md, "What the
vault holds of a question"); `requests_kept` shows the shipped rule with requests never cut
against requests kept near an own statement.

Which unanswerable queries count. The harness now asks each question of a conversation that
cannot answer it (`eval_probes`: no person in common, the least alike in words; another set's
question where none may be asked). Dumps of the harness before asked of the next conversation of
the set, which may answer it after all: REALTALK's next chat often has one of the same two people
(Kevin talks with Elise, then with Paola), and every PrefEval user states a preference on most of
the same twenty topics (user-00's "restaurants in Rome" asked of user-01, whose shellfish allergy
is exactly what constrains it). With `--data` (the sets' folders' parent) a
question asked of a conversation sharing a person with its own (a speaker in every conversation,
"User", is a role, not a person) or holding a question on its topic is not counted as
unanswerable: neither fitted nor scored, only shown ("all probes").
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tiered_memory.config import SearchConfig  # noqa: E402
from tiered_memory.index.confidence import (  # noqa: E402
    CLEAR_MARGIN,
    HYBRID_SCALE,
    KEYWORD_SCALE,
    KNOWN_WEIGHT,
    LEAD_WEIGHT,
    VECTOR_LEAD_WEIGHT,
    VECTOR_SCALE,
    is_request,
    lead,
    names_unheard,
)
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
    known: float = 1.0  # the share of the query's weight some note holds (FtsIndex.known)


@dataclass(frozen=True)
class Rule:
    weight: float
    cut: float
    allowance: float
    lead: float = 0.0
    # A request is allowed `allowance` only when a person's own statement is this near (0: always).
    statement: float = 0.0
    known: float = 0.0  # the weight of the share of the query's weight the vault holds


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
                coverage=0.0
                if mode == "vector"
                or (mode == "keyword" and names_unheard(found.get("question", ""), found.get("unheard", [])))
                else found.get("best_coverage", 0.0),
                request=is_request(found.get("question", "")),
                recall5=len(gold & set(uncut[:5])) / len(gold) if gold else 0.0,
                recall10=len(gold & set(uncut[:10])) / len(gold) if gold else 0.0,
                rr=next((1 / rank for rank, doc in enumerate(uncut, 1) if doc in gold), 0.0),
                lead=lead(cosines) if mode != "keyword" else 0.0,
                sound=sound[i] if sound is not None else True,
                statement=max((c for p, c in found.get("vector", []) if p in statements), default=0.0)
                if mode != "keyword"
                else 0.0,
                known=found.get("known", 1.0),
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
    # A dump of an older harness does not say where it asked: the next conversation.
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
        self.known = np.array([q.known for q in qs])
        self.recall5 = np.array([q.recall5 for q in qs])
        self.recall10 = np.array([q.recall10 for q in qs])
        self.rr = np.array([q.rr for q in qs])
        self.unanswerable = max(1, int(self.sound.sum()))
        self.probes = max(1, int(self.no_answer.sum()))
        self.answerable = max(1, int((~self.no_answer).sum()))

    def outcomes(
        self,
        weight: float,
        allowance: float,
        cuts: list[float],
        lead: float = 0.0,
        statement: float = 0.0,
        known: float = 0.0,
    ) -> list[Outcome]:
        """The outcome of the rule (weight, cut, allowance, lead, statement, known) for each of `cuts`."""
        score = weight * self.cosine + (1 - weight) * self.coverage + lead * self.lead + known * self.known
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
    return qs.outcomes(rule.weight, rule.allowance, [rule.cut], rule.lead, rule.statement, rule.known)[0]


def fit(
    sets: dict[str, Arrays],
    max_drop: float,
    allowances: list[float],
    weights: list[float] | None = None,
    leads: list[float] | None = None,
    statements: list[float] | None = None,
    knowns: list[float] | None = None,
) -> Rule:
    """Among the rules costing each of `sets` at most `max_drop` points of R@5, the one whose worst
    set abstains most, then the next worst, and so on (the first of the grid, the mildest, when
    none does): a rule good on average that leaves one kind of conversation behind is not chosen."""
    weights = weights if weights is not None else WEIGHTS["hybrid"]
    leads = leads if leads is not None else [0.0]
    statements = statements if statements is not None else [0.0]
    knowns = knowns if knowns is not None else [0.0]
    best: tuple[tuple[float, ...], Rule] | None = None
    for w, g, r, s, k in itertools.product(weights, leads, allowances, statements, knowns):
        per_set = [qs.outcomes(w, r, CUTS, g, s, k) for qs in sets.values()]
        for i, t in enumerate(CUTS):
            results = [outcomes[i] for outcomes in per_set]
            if any(o.drop > max_drop for o in results):
                continue
            key = tuple(sorted(round(o.silent, 6) for o in results))
            if best is None or key > best[0]:
                best = (key, Rule(w, t, r, g, s, k))
    return best[1] if best else Rule(weights[0], CUTS[0], allowances[0], leads[0], statements[0], knowns[0])


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
    knowns: list[float] | None = None,
) -> list[tuple[str, Rule, Outcome]]:
    folds = []
    for held in sets:
        others = {k: v for k, v in sets.items() if k != held}
        rule = fit(others, max_drop, allowances, weights, leads, statements, knowns)
        folds.append((held, rule, outcome(rule, sets[held])))
    return folds


# How near a person's own statement must be for a request to keep its allowance (0: always).
STATEMENTS = [0.2, 0.25, 0.3, 0.35, 0.4]
# Any statement among the nearest notes the harness dumps (`confidence.STATEMENT_DEPTH`): the rule
# shipped, nothing fitted (`Searcher.confidence`).
AMONG_THE_NEAREST = 1e-6
# The weights of the share of the query's weight the vault holds (`known`) a variant may fit.
KNOWNS = [0.0, 0.1, 0.2, 0.3]
REQUESTS = {
    "request allowance fitted": (ALLOWANCES, [0.0], [0.0]),
    "requests never cut": ([NEVER_CUT], [0.0], [0.0]),
    "requests kept when an own statement is near": ([NEVER_CUT], STATEMENTS, [0.0]),
    "requests kept when an own statement is among the nearest": ([NEVER_CUT], [AMONG_THE_NEAREST], [0.0]),
    "the same, and what the vault holds of the query fitted": ([NEVER_CUT], [AMONG_THE_NEAREST], KNOWNS),
}
VARIANTS = {
    f"{name}, R@5 drop ≤ {drop:g} on each set fitted": (drop, allowances, statements, knowns)
    for drop in (1.0, 0.5, 0.3)
    for name, (allowances, statements, knowns) in REQUESTS.items()
}


def _rule(rule: Rule) -> str:
    return f"{rule.weight:g}, {rule.lead:g}, {rule.cut:g}, {rule.allowance:g}, {rule.statement:g}, {rule.known:g}"


def report(sets: dict[str, Arrays], mode: str = "hybrid") -> tuple[str, Rule]:
    weights, leads = WEIGHTS[mode], LEADS[mode]
    lines: list[str] = [f"## {mode}", ""]
    ranks: dict[str, tuple[int, float, float]] = {}
    for name, (drop, allowances, statements, knowns) in VARIANTS.items():
        if mode == "keyword" and statements != [0.0]:
            continue  # keyword mode has no cosines to find a statement near
        folds = leave_one_set_out(sets, drop, allowances, weights, leads, statements, knowns)
        ranks[name] = misses, worst, mean = standing([o for _, _, o in folds])
        lines += [
            f"{name}: {-misses} held-out set(s) losing more than {TARGET_DROP:g} point of R@5; "
            f"held-out abstention worst {worst:.3f}, mean {mean:.3f}",
            "",
        ]
        lines += [
            "| held-out set | fitted on the others (w, g, t, r, s, k) | no hit, unanswerable | before | all probes | ΔR@5 |",
            "|---|---|---|---|---|---|",
        ]
        for held, rule, o in folds:
            lines.append(
                f"| {held} | {_rule(rule)} | {o.silent:.3f} | {o.silent_before:.3f} | {o.silent_all:.3f} "
                f"| {-o.drop:+.1f} |"
            )
        lines.append("")
    chosen = max(ranks, key=lambda k: ranks[k])
    drop, allowances, statements, knowns = VARIANTS[chosen]
    rule = fit(sets, drop, allowances, weights, leads, statements, knowns)
    lines += [f"least worst: {chosen}; fitted on every set (w, g, t, r, s, k): {_rule(rule)}", ""]
    lines += [
        "| set | no hit, unanswerable | before | all probes | ΔR@5 / ΔR@10 / ΔMRR |",
        "|---|---|---|---|---|",
    ]
    for name, qs in sets.items():
        o = outcome(rule, qs)
        change = f"{-o.drop:+.1f} / {-o.drop10:+.1f} / {-o.drop_mrr:+.1f}"
        lines.append(f"| {name} | {o.silent:.3f} | {o.silent_before:.3f} | {o.silent_all:.3f} | {change} |")
    lines += ["", *requests_kept(sets, mode), "", *beyond_report(sets, mode)]
    return "\n".join(lines) + "\n", rule


def shipped(mode: str) -> Rule:
    """The mode's shipped rule on the scale the grid fits (`index.confidence`'s weights and
    scales with `search.min_confidence`): requests keep their allowance near an own statement."""
    cut = SearchConfig().min_confidence
    if mode == "keyword":
        return Rule(0.0, round(cut / KEYWORD_SCALE, 4), NEVER_CUT)
    if mode == "vector":
        return Rule(
            1.0, round(cut / VECTOR_SCALE, 4), NEVER_CUT, VECTOR_LEAD_WEIGHT, AMONG_THE_NEAREST, KNOWN_WEIGHT
        )
    weight = SearchConfig().confidence_cosine_weight
    return Rule(weight, round(cut / HYBRID_SCALE, 4), NEVER_CUT, LEAD_WEIGHT, AMONG_THE_NEAREST, KNOWN_WEIGHT)


def requests_kept(sets: dict[str, Arrays], mode: str) -> list[str]:
    """The shipped rule with requests never cut against requests kept only when the person's own
    word is among their nearest notes (nothing fitted: what `Searcher.confidence` does)."""
    rule = shipped(mode)
    lines = [
        f"The shipped rule (w, g, t, r, s, k: {_rule(rule)}): requests never cut → kept only when an "
        "own statement is among the nearest",
        "",
        "| set | no hit, unanswerable | all probes | ΔR@5 / ΔR@10 / ΔMRR |",
        "|---|---|---|---|",
    ]
    for name, qs in sets.items():
        before = outcome(dataclasses.replace(rule, statement=0.0), qs)
        after = outcome(rule, qs)
        changes = " → ".join(
            f"{-o.drop:+.1f} / {-o.drop10:+.1f} / {-o.drop_mrr:+.1f}" for o in (before, after)
        )
        lines.append(
            f"| {name} | {before.silent:.3f} → {after.silent:.3f} | {before.silent_all:.3f} → "
            f"{after.silent_all:.3f} | {changes} |"
        )
    return lines


# The rule each mode had before what the vault holds of the query (`known`) was weighed, with
# requests kept near an own statement: what `fit_beyond` must not fall behind on any fitted set.
PREVIOUS = {
    "hybrid": Rule(0.6, 0.38, NEVER_CUT, 0.2, AMONG_THE_NEAREST),
    "keyword": Rule(0.0, 0.28, NEVER_CUT),
    "vector": Rule(1.0, 0.40, NEVER_CUT, 0.4, AMONG_THE_NEAREST),
}
BEYOND_SLACK = 0.01  # the share of sound unanswerable probes a fitted set may give back
BEYOND_COST = 0.5  # the points of R@5 a fitted set may lose beyond what the previous rule cost it


def fit_beyond(
    sets: dict[str, Arrays],
    previous: Rule,
    max_drop: float,
    weights: list[float],
    leads: list[float],
    knowns: list[float],
) -> Rule:
    """Among the rules that keep each of `sets` within `max_drop` points of R@5 (or what
    `previous` cost it, if more) and within BEYOND_COST of what `previous` cost it, and silence
    every set's sound unanswerable probes as often as `previous` does (BEYOND_SLACK), the one that
    silences most beyond it summed over the sets; `previous` when none silences more."""
    before = {name: outcome(previous, qs) for name, qs in sets.items()}
    best: tuple[float, Rule] | None = None
    for w, g, k in itertools.product(weights, leads, knowns):
        per_set = {
            name: qs.outcomes(w, NEVER_CUT, CUTS, g, previous.statement, k) for name, qs in sets.items()
        }
        for i, t in enumerate(CUTS):
            results = {name: outcomes[i] for name, outcomes in per_set.items()}
            if any(
                o.drop > max(max_drop, before[n].drop)
                or o.drop > before[n].drop + BEYOND_COST
                or o.silent < before[n].silent - BEYOND_SLACK
                for n, o in results.items()
            ):
                continue
            gain = sum(o.silent - before[n].silent for n, o in results.items())
            if gain > (best[0] if best else 0.0) + 1e-9:
                best = (gain, Rule(w, t, NEVER_CUT, g, previous.statement, k))
    return best[1] if best else previous


def beyond_report(sets: dict[str, Arrays], mode: str) -> list[str]:
    """What the vault holds of the query (`known`) adds to the previous rule (PREVIOUS), fitted by
    `fit_beyond` on five sets and scored on the sixth, for each R@5 bound; then fitted on all."""
    previous = PREVIOUS[mode]
    lines = [f"Beyond the previous rule (w, g, t, r, s, k: {_rule(previous)}), what the vault holds weighed:"]
    for max_drop in (0.5, 0.75, 1.0):
        lines += [
            "",
            f"R@5 drop ≤ {max_drop:g} (or the previous rule's) on each set fitted, held out:",
            "",
            "| held-out set | fitted on the others (w, g, t, r, s, k) | no hit, unanswerable: previous → rule "
            "| ΔR@5 previous → rule |",
            "|---|---|---|---|",
        ]
        for held in sets:
            others = {k: v for k, v in sets.items() if k != held}
            rule = fit_beyond(others, previous, max_drop, WEIGHTS[mode], LEADS[mode], KNOWNS)
            before, after = outcome(previous, sets[held]), outcome(rule, sets[held])
            lines.append(
                f"| {held} | {_rule(rule)} | {before.silent:.3f} → {after.silent:.3f} "
                f"| {-before.drop:+.1f} → {-after.drop:+.1f} |"
            )
        rule = fit_beyond(sets, previous, max_drop, WEIGHTS[mode], LEADS[mode], KNOWNS)
        lines += ["", f"fitted on every set: {_rule(rule)}", ""]
        lines += ["| set | no hit, unanswerable | ΔR@5 / ΔR@10 / ΔMRR |", "|---|---|---|"]
        for name, qs in sets.items():
            before, after = outcome(previous, qs), outcome(rule, qs)
            changes = " → ".join(
                f"{-o.drop:+.1f} / {-o.drop10:+.1f} / {-o.drop_mrr:+.1f}" for o in (before, after)
            )
            lines.append(f"| {name} | {before.silent:.3f} → {after.silent:.3f} | {changes} |")
    return lines


# ---- requests for a suggestion ------------------------------------------------------------------

# The cosines a request's own floor is fitted over (`search.request_min_cosine`); 0 never silences.
REQUEST_FLOORS = [round(0.01 * i, 2) for i in range(61)]
REQUEST_DROP = 1.0  # points of R@5 on a set's answerable requests a floor may cost against no cut


@dataclass(frozen=True)
class Request:
    """One request for a suggestion in one mode: what silences it, and what it ranks when answered."""

    no_answer: bool
    sound: bool  # an unanswerable request known to have no answer where it was asked
    cosine: float
    lead: float
    coverage: float
    confidence: float  # the mode's confidence without the request's allowance
    found: bool  # today's rule gives it a hit (the floor or the standout rule, or the keyword side)
    meaning: (
        bool  # today's rule answers it by meaning (vector mode has a hit: the floor or the standout rule)
    )
    uncut: tuple[float, float, float]  # R@5, R@10, reciprocal rank of today's hits
    listed: tuple[float, float, float]  # the same when meaning always answers it (request_min_cosine 0)
    listed_found: bool


def _measures(ranked: list[str], gold: set[str]) -> tuple[float, float, float]:
    if not gold:
        return 0.0, 0.0, 0.0
    rr = next((1 / rank for rank, doc in enumerate(ranked, 1) if doc in gold), 0.0)
    return len(gold & set(ranked[:5])) / len(gold), len(gold & set(ranked[:10])) / len(gold), rr


def mode_confidence(mode: str, cosine: float, coverage: float, lead_: float, known: float = 1.0) -> float:
    """The confidence `index.confidence` gives a query in `mode`, without a request's allowance or
    the clear-nearest rule."""
    if mode == "keyword":
        return KEYWORD_SCALE * coverage
    if mode == "vector":
        return VECTOR_SCALE * (cosine + VECTOR_LEAD_WEIGHT * lead_ + KNOWN_WEIGHT * known)
    weight = SearchConfig().confidence_cosine_weight
    return HYBRID_SCALE * (
        weight * cosine + (1 - weight) * coverage + LEAD_WEIGHT * lead_ + KNOWN_WEIGHT * known
    )


def requests_of(
    rows: list[dict[str, Any]], mode: str, sound: list[bool] | None = None, requests: bool = True
) -> list[Request]:
    """The dump's requests for a suggestion (`is_request`; with `requests` False, its other
    queries) as `mode` judges them; a pasted conversation or a Chinese/Japanese/Korean query is not
    judged and is left out."""
    out = []
    for i, row in enumerate(rows):
        found = row.get("candidates") or {}
        question = found.get("question", "")
        if not found or is_request(question) != requests or not measured(found, mode):
            continue
        gold = set(row["gold"])
        uncut = (row.get("uncut_modes") or {}).get(mode, [])
        listed = (row.get("listed_modes") or {}).get(mode, uncut)
        cosines = [score for _, score in found.get("vector", [])]
        cosine = found.get("best_cosine", 0.0) if mode != "keyword" else 0.0
        coverage = found.get("best_coverage", 0.0) if mode != "vector" else 0.0
        lead_ = lead(cosines) if mode != "keyword" else 0.0
        out.append(
            Request(
                no_answer=row["no_answer"],
                sound=row["no_answer"] and (sound[i] if sound is not None else True),
                cosine=cosine,
                lead=lead_,
                coverage=coverage,
                confidence=mode_confidence(mode, cosine, coverage, lead_, found.get("known", 1.0)),
                found=bool(uncut),
                meaning=bool((row.get("uncut_modes") or {}).get("vector")),
                uncut=_measures(uncut, gold),
                listed=_measures(listed, gold),
                listed_found=bool(listed),
            )
        )
    return out


def auc(positive: list[float], negative: list[float]) -> float | None:
    """The chance that a random positive scores above a random negative (ties half): 0.5 is no
    separation at all. None when either side is empty."""
    if not positive or not negative:
        return None
    neg = np.sort(np.array(negative))
    pos = np.array(positive)
    below = np.searchsorted(neg, pos, side="left")
    ties = np.searchsorted(neg, pos, side="right") - below
    return float((below + 0.5 * ties).sum() / (len(pos) * len(neg)))


@dataclass(frozen=True)
class FloorOutcome:
    silent: float  # share of sound unanswerable requests with no hit
    silent_all: float  # share of every unanswerable request with no hit
    drop: tuple[float, float, float]  # points of R@5 / R@10 / MRR lost on answerable requests vs no cut


def floor_outcome(reqs: list[Request], floor: float | None) -> FloorOutcome:
    """A request's own floor: answered by meaning (its listed ranking) when today's rule answers it
    or its best cosine is at least `floor`; otherwise today's hits. None: today's rule alone."""
    answerable = [r for r in reqs if not r.no_answer]
    unanswerable = [r for r in reqs if r.no_answer]
    sound = [r for r in unanswerable if r.sound]

    def answered(r: Request) -> bool:
        return r.meaning or (floor is not None and r.cosine >= floor)

    def ranked(r: Request) -> tuple[float, float, float]:
        return r.listed if answered(r) else r.uncut

    def silent(r: Request) -> bool:
        return not (r.listed_found if answered(r) else r.found)

    lost = [sum(r.listed[k] - ranked(r)[k] for r in answerable) for k in range(3)]
    n = max(1, len(answerable))
    return FloorOutcome(
        sum(map(silent, sound)) / max(1, len(sound)),
        sum(map(silent, unanswerable)) / max(1, len(unanswerable)),
        (100 * lost[0] / n, 100 * lost[1] / n, 100 * lost[2] / n),
    )


def cut_outcome(reqs: list[Request], cut: float) -> FloorOutcome:
    """A request's own confidence cut: silenced when its confidence (without the allowance) is
    below `cut`, else answered by meaning (its listed ranking)."""
    answerable = [r for r in reqs if not r.no_answer]
    unanswerable = [r for r in reqs if r.no_answer]
    sound = [r for r in unanswerable if r.sound]

    def silent(r: Request) -> bool:
        return r.confidence < cut or not r.listed_found

    lost = [sum(r.listed[k] for r in answerable if r.confidence < cut) for k in range(3)]
    n = max(1, len(answerable))
    return FloorOutcome(
        sum(map(silent, sound)) / max(1, len(sound)),
        sum(map(silent, unanswerable)) / max(1, len(unanswerable)),
        (100 * lost[0] / n, 100 * lost[1] / n, 100 * lost[2] / n),
    )


RULES: dict[str, Any] = {"a floor of their own": floor_outcome, "a confidence cut of their own": cut_outcome}


def fit_requests(sets: dict[str, list[Request]], rule: Any, max_drop: float = REQUEST_DROP) -> float:
    """The threshold of `rule` whose worst set silences most sound unanswerable requests (then the
    next worst) among those costing no set's answerable requests more than `max_drop` points of
    R@5 against no cut; the mildest when none does. Sets without an answerable request do not
    bind the drop; sets without a sound unanswerable one do not count for abstention."""
    best: tuple[tuple[float, ...], float] | None = None
    for t in REQUEST_FLOORS:
        results = {name: rule(reqs, t) for name, reqs in sets.items()}
        if any(o.drop[0] > max_drop for o in results.values()):
            continue
        key = tuple(
            sorted(round(o.silent, 6) for name, o in results.items() if any(r.sound for r in sets[name]))
        )
        if best is None or key > best[0]:
            best = (key, t)
    return best[1] if best else REQUEST_FLOORS[0]


def floor_below_answers(sets: dict[str, list[Request]], share: float) -> float | None:
    """The floor under which no more than `share` of any fitted set's answerable requests fall:
    the least, over the sets holding answerable requests, of their best cosines' `share` quantile
    (the lowest one for 0). None when no set holds one."""
    lows = [
        float(np.quantile([r.cosine for r in reqs if not r.no_answer], share, method="lower"))
        for reqs in sets.values()
        if any(not r.no_answer for r in reqs)
    ]
    return round(min(lows), 3) if lows else None


# How each variant of a request's own floor is fitted on some sets: today's rule alone (None), never
# silenced (0), the most abstention within an R@5 drop on each set, or below (almost) every
# answerable request.
FLOOR_VARIANTS: dict[str, Any] = {
    "today's rule (the floor or the standout rule)": lambda sets: None,
    "never silenced": lambda sets: 0.0,
    **{
        f"most abstention, R@5 drop ≤ {d:g} on each fitted set": (
            lambda sets, d=d: fit_requests(sets, floor_outcome, d)
        )
        for d in (1.0, 0.5)
    },
    **{
        f"below every answerable request but the lowest {100 * q:g} % of each fitted set": (
            lambda sets, q=q: floor_below_answers(sets, q)
        )
        for q in (0.0, 0.01, 0.02, 0.05)
    },
}


def floor_variants(
    by_mode: dict[str, dict[str, list[Request]]],
) -> tuple[list[str], str, float | None]:
    """Each way of fitting a request's own floor (FLOOR_VARIANTS), left one set out: fitted on the
    other sets (best cosines are the same in vector mode and hybrid; the vector side's requests
    fit it) and scored on the one left out, in both modes. Variants rank as the confidence's do
    (`standing`): fewest held-out (set, mode) pairs losing more than REQUEST_DROP points of R@5
    on answerable requests against no cut, then the worst held-out abstention on sound
    unanswerable requests, then the mean. Returns the report's lines, the best variant, and its
    floor fitted on every set."""
    fitting = by_mode["vector"]
    names = [n for n, reqs in fitting.items() if reqs]
    lines: list[str] = []
    ranks: dict[str, tuple[int, float, float]] = {}
    for variant, fit_on in FLOOR_VARIANTS.items():
        rows, held_out = [], []
        for held in names:
            floor = fit_on({k: v for k, v in fitting.items() if k != held and v})
            cells = []
            for sets in by_mode.values():
                o = floor_outcome(sets[held], floor)
                held_out.append((o, any(r.sound for r in sets[held])))
                cells.append(f"{o.silent:.3f}, {-o.drop[0]:+.1f}")
            rows.append(f"| {held} | {'–' if floor is None else f'{floor:g}'} | " + " | ".join(cells) + " |")
        misses = sum(1 for o, _ in held_out if o.drop[0] > REQUEST_DROP)
        judged = [o.silent for o, has in held_out if has]
        ranks[variant] = (-misses, min(judged, default=0.0), sum(judged) / max(1, len(judged)))
        lines += [
            "",
            f"{variant}: {misses} held-out (set, mode) losing more than {REQUEST_DROP:g} point of R@5; "
            f"held-out abstention worst {ranks[variant][1]:.3f}, mean {ranks[variant][2]:.3f}",
            "",
            "| held-out set | floor fitted on the others | "
            + " | ".join(f"{m}: silent, ΔR@5" for m in by_mode)
            + " |",
            "|---|---|" + "---|" * len(by_mode),
            *rows,
        ]
    best = max(ranks, key=lambda k: ranks[k])
    return lines, best, FLOOR_VARIANTS[best]({n: fitting[n] for n in names})


def requests_report(dumps: dict[str, list[dict[str, Any]]], sound: dict[str, list[bool]]) -> str:
    """How requests for a suggestion fare in each mode, set by set, against every other query; how
    well their best cosine and confidence tell answerable from unanswerable ones (AUC); and each
    request rule fitted by leave-one-set-out over the sets holding requests."""
    lines = ["## Requests for a suggestion", ""]
    lines += [
        "| set | requests: answerable | unanswerable (sound / all) | other queries: answerable | unanswerable (sound / all) |",
        "|---|---|---|---|---|",
    ]
    for name, rows in dumps.items():
        flags = sound.get(name) or [True] * len(rows)
        req = [is_request((r.get("candidates") or {}).get("question", "")) for r in rows]

        def count(want: bool, no_answer: bool, sound_only: bool, flags=flags, req=req, rows=rows) -> int:
            return sum(
                1
                for r, q, f in zip(rows, req, flags, strict=True)
                if q == want and r["no_answer"] == no_answer and (f or not sound_only)
            )

        lines.append(
            f"| {name} | {count(True, False, False)} | {count(True, True, True)} / {count(True, True, False)} "
            f"| {count(False, False, False)} | {count(False, True, True)} / {count(False, True, False)} |"
        )
    for mode in MODES:
        sets = {name: requests_of(rows, mode, sound.get(name)) for name, rows in dumps.items()}
        others = {name: requests_of(rows, mode, sound.get(name), False) for name, rows in dumps.items()}
        lines += ["", f"### {mode}", ""]
        lines += [
            "| set | answerable with a hit today / no cut | sound unanswerable with a hit today / no cut "
            "| AUC best cosine / lead / confidence | R@5 / R@10 / MRR today | no cut |",
            "|---|---|---|---|---|---|",
        ]
        for label, reqs in [*sets.items(), *((f"{n}, other queries", q) for n, q in others.items())]:
            name = label
            if not reqs:
                continue
            ans = [r for r in reqs if not r.no_answer]
            neg = [r for r in reqs if r.sound]
            aucs = [
                auc([getattr(r, f) for r in ans], [getattr(r, f) for r in neg])
                for f in ("cosine", "lead", "confidence")
            ]
            shown = " / ".join("–" if a is None else f"{a:.2f}" for a in aucs)

            def share(flags: list[bool]) -> str:
                return f"{sum(flags) / len(flags):.3f}" if flags else "–"

            def mean(vals: list[tuple[float, float, float]]) -> str:
                if not vals:
                    return "–"
                return " / ".join(f"{sum(v[k] for v in vals) / len(vals):.3f}" for k in range(3))

            lines.append(
                f"| {name} | {share([r.found for r in ans])} / {share([r.listed_found for r in ans])} "
                f"| {share([r.found for r in neg])} / {share([r.listed_found for r in neg])} | {shown} "
                f"| {mean([r.uncut for r in ans])} | {mean([r.listed for r in ans])} |"
            )
        lines += [
            "",
            "Share of each side at or above a best cosine / a confidence (answerable | sound unanswerable):",
            "",
        ]
        lines += ["| set | " + " | ".join(f"≥ {t:g}" for t in (0.2, 0.25, 0.3, 0.35, 0.4, 0.5)) + " |"]
        lines += ["|---" * 7 + "|"]
        for name, reqs in sets.items():
            ans = [r for r in reqs if not r.no_answer]
            neg = [r for r in reqs if r.sound]
            if not ans and not neg:
                continue
            cells = []
            for t in (0.2, 0.25, 0.3, 0.35, 0.4, 0.5):
                parts = []
                for side in (ans, neg):
                    if not side:
                        parts.append("–")
                        continue
                    a = sum(r.cosine >= t for r in side) / len(side)
                    c = sum(r.confidence >= t for r in side) / len(side)
                    parts.append(f"{a:.2f}/{c:.2f}")
                cells.append(" \\| ".join(parts))
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        held = {name: reqs for name, reqs in sets.items() if reqs}
        for rule_name, rule in RULES.items():
            if mode == "keyword" and rule is floor_outcome:
                continue  # keyword mode has no cosine
            lines += [
                "",
                f"Requests judged by {rule_name}, leave one set out (R@5 drop ≤ {REQUEST_DROP:g} on each set fitted):",
                "",
            ]
            lines += [
                "| held-out set | fitted on the others | silent, sound / all (today → rule) "
                "| ΔR@5 / ΔR@10 / ΔMRR against no cut (today → rule) |",
                "|---|---|---|---|",
            ]
            for name in held:
                others = {k: v for k, v in held.items() if k != name}
                t = fit_requests(others, rule)
                today, o = floor_outcome(held[name], None), rule(held[name], t)
                lines.append(
                    f"| {name} | {t:g} | {today.silent:.3f} / {today.silent_all:.3f} → "
                    f"{o.silent:.3f} / {o.silent_all:.3f} | "
                    + " / ".join(f"{-d:+.1f}" for d in today.drop)
                    + " → "
                    + " / ".join(f"{-d:+.1f}" for d in o.drop)
                    + " |"
                )
            lines.append(f"fitted on every set: {fit_requests(held, rule):g}")
    by_mode = {
        mode: {n: requests_of(rows, mode, sound.get(n)) for n, rows in dumps.items()}
        for mode in ("vector", "hybrid")
    }
    variant_lines, best, floor = floor_variants(by_mode)
    lines += [
        "",
        "### A request's own floor (`search.request_min_cosine`), each way of fitting it left one set out",
    ]
    lines += variant_lines
    lines += ["", f"least worst: {best}; fitted on every set: {floor}", ""]
    lines += [
        "| set | " + " | ".join(f"{m}: silent, sound / all; ΔR@5 / ΔR@10 / ΔMRR" for m in by_mode) + " |"
    ]
    lines += ["|---|" + "---|" * len(by_mode)]
    for name in by_mode["vector"]:
        cells = []
        for sets in by_mode.values():
            o = floor_outcome(sets[name], floor)
            cells.append(f"{o.silent:.3f} / {o.silent_all:.3f}; " + " / ".join(f"{-d:+.1f}" for d in o.drop))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dumps", type=Path, nargs="+", help="eval_recall.py --dump files, one per set")
    parser.add_argument(
        "--data", type=Path, help="the sets' folders' parent: count only probes known to have no answer"
    )
    parser.add_argument("--mode", choices=MODES, action="append", help="the modes to fit (default: all)")
    parser.add_argument(
        "--requests",
        action="store_true",
        help="requests for a suggestion only: how they fare, their own rules",
    )
    args = parser.parse_args()
    dumps = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in args.dumps}
    sound = {
        name: sound_probes(rows, args.data / name)
        for name, rows in dumps.items()
        if args.data is not None and (args.data / name / "queries.jsonl").is_file()
    }
    if args.requests:
        print(requests_report(dumps, sound))
        return
    for mode in args.mode or MODES:
        sets = {
            name: Arrays(queries(rows, mode, sound.get(name)), clear_applies=mode != "keyword")
            for name, rows in dumps.items()
        }
        print(report(sets, mode)[0])


if __name__ == "__main__":
    main()
