"""Choosing the confidence cut by leave-one-set-out (scripts/eval_confidence.py) on synthetic
dumps: the cut fitted on the other sets is the one scored on the set left out, and the variant
shipped is the one whose worst held-out set is best."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import eval_confidence  # noqa: E402


def row(
    no_answer: bool, cosine: float, coverage: float, question: str = "when did we move"
) -> dict[str, Any]:
    gold = [] if no_answer else ["d1"]
    return {
        "id": "q",
        "no_answer": no_answer,
        "gold": gold,
        "uncut": ["d1"],
        "candidates": {
            "question": question,
            "confidence": 0.5,
            "best_cosine": cosine,
            "second_cosine": cosine - 0.01,  # no clear nearest note
            "best_coverage": coverage,
        },
    }


def arrays(rows: list[dict[str, Any]]) -> eval_confidence.Arrays:
    return eval_confidence.Arrays(eval_confidence.queries(rows))


def test_a_rule_abstains_below_its_cut_and_counts_the_recall_it_costs() -> None:
    qs = arrays([row(False, 0.6, 0.6), row(False, 0.3, 0.3), row(True, 0.2, 0.2), row(True, 0.5, 0.5)])
    o = eval_confidence.outcome(eval_confidence.Rule(1.0, 0.4, 0.0), qs)
    assert o.silent == 0.5 and o.silent_before == 0.0
    assert o.drop == pytest.approx(50.0)  # one answerable query of two silenced, its answer at rank 1
    # A request is allowed a little less: the same cut with an allowance keeps it.
    request = arrays([row(False, 0.35, 0.35, "can you suggest a restaurant for me")])
    assert eval_confidence.outcome(eval_confidence.Rule(1.0, 0.4, 0.1), request).drop == 0.0
    assert eval_confidence.outcome(eval_confidence.Rule(1.0, 0.4, 0.0), request).drop == 100.0


def test_each_set_is_scored_with_the_cut_fitted_on_the_others() -> None:
    # On "a" and "b" answers score 0.6 and non-answers 0.3 and 0.5; on "c" answers score 0.45.
    sets = {
        "a": arrays([row(False, 0.6, 0.6), row(True, 0.3, 0.3), row(True, 0.5, 0.5)]),
        "b": arrays([row(False, 0.6, 0.6), row(True, 0.3, 0.3), row(True, 0.5, 0.5)]),
        "c": arrays([row(False, 0.45, 0.45), row(True, 0.3, 0.3)]),
    }
    folds = {held: (rule, o) for held, rule, o in eval_confidence.leave_one_set_out(sets, 1.0, [0.0])}
    # Fitted on "a" and "b" alone, the cut rises above "c"'s answers: held out, "c" loses them.
    assert folds["c"][0].cut > 0.5 and folds["c"][1].drop == 100.0
    # Fitted with "c", the cut stays at or below 0.45: "a" keeps its answer, and half its non-answers
    # still get a hit.
    assert folds["a"][0].cut <= 0.45 and folds["a"][1].silent == 0.5 and folds["a"][1].drop == 0.0

    text, shipped = eval_confidence.report(sets)
    assert "least worst" in text
    assert shipped.cut <= 0.45  # fitted on every set: "c"'s answers keep their hits
