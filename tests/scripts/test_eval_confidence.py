"""Choosing the confidence cut by leave-one-set-out (scripts/eval_confidence.py) on synthetic
dumps: the cut fitted on the other sets is the one scored on the set left out, and the variant
shipped is the one whose worst held-out set is best."""

from __future__ import annotations

import dataclasses
import json
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


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_a_probe_asked_of_someone_who_may_answer_it_is_not_counted_as_unanswerable(tmp_path: Path) -> None:
    # "User" speaks in every conversation: a role, not a person. Bob is in "a" and "b".
    _jsonl(
        tmp_path / "documents.jsonl",
        [
            {"conversation": c, "speaker": s}
            for c, people in (("a", ["Ann", "Bob"]), ("b", ["bob", "Cy"]), ("c", ["Dee", "Eve"]))
            for s in [*people, "User"]
        ],
    )
    _jsonl(
        tmp_path / "queries.jsonl",
        [
            {"id": "a/q", "conversation": "a", "topic": "food", "evidence": ["a/1"]},
            {"id": "b/q", "conversation": "b", "topic": "travel", "evidence": ["b/1"]},
            {"id": "c/q", "conversation": "c", "topic": "travel", "evidence": ["c/1"]},
            {"id": "c/r", "conversation": "c", "topic": "music", "evidence": ["c/2"]},
        ],
    )
    rows = [
        {"id": "a/q", "no_answer": False},
        {"id": "a/q", "no_answer": True, "conversation": "b"},  # Bob is in both
        {"id": "b/q", "no_answer": True, "conversation": "c"},  # "c" has a question on travel
        {"id": "c/r", "no_answer": True, "conversation": "a"},  # nobody in common, no music in "a"
        {"id": "c/q", "no_answer": True},  # an older dump: asked of the next conversation, "a"
        {"id": "elsewhere/q", "no_answer": True, "conversation": "a"},  # another set's question
    ]
    assert eval_confidence.sound_probes(rows, tmp_path) == [True, False, False, True, True, True]
    # Only the sound probes count: one of two unanswerable rows silent is a share of 1.0 when the
    # other may well be answered where it was asked.
    scored = [row(True, 0.2, 0.2), row(True, 0.6, 0.6)]
    qs = eval_confidence.Arrays(eval_confidence.queries(scored, sound=[True, False]))
    o = eval_confidence.outcome(eval_confidence.Rule(1.0, 0.4, 0.0), qs)
    assert o.silent == 1.0 and o.silent_all == 0.5


def test_each_mode_is_scored_on_its_own_ranking_and_evidence() -> None:
    # Keyword mode judges the coverage alone, vector mode the cosine alone, each on the hits that
    # mode returned without the cut.
    answered = row(False, 0.6, 0.2) | {"uncut_modes": {"hybrid": ["d1"], "keyword": ["d1"], "vector": []}}
    keyword = eval_confidence.queries([answered], "keyword")[0]
    vector = eval_confidence.queries([answered], "vector")[0]
    assert (keyword.coverage, keyword.cosine, keyword.found) == (0.2, 0.0, True)
    assert (vector.coverage, vector.cosine, vector.found) == (0.0, 0.6, False)
    assert eval_confidence.outcome(
        eval_confidence.Rule(0.0, 0.3, 0.0), eval_confidence.Arrays([keyword], clear_applies=False)
    ).drop == pytest.approx(100.0)


def request_row(no_answer: bool, cosine: float, meaning: bool, listed: list[str]) -> dict[str, Any]:
    """A request for a suggestion: its vector mode's hits today (`meaning`: the floor or the
    standout rule answered it) and when meaning always answers it (`listed`)."""
    today = listed if meaning else []
    return {
        "id": "q",
        "no_answer": no_answer,
        "gold": [] if no_answer else ["d1"],
        "uncut_modes": {"vector": today, "hybrid": today},
        "listed_modes": {"vector": listed, "hybrid": listed},
        "candidates": {
            "question": "can you suggest a restaurant for me",
            "best_cosine": cosine,
            "second_cosine": cosine - 0.01,
            "best_coverage": 0.0,
        },
    }


def test_a_request_floor_answers_by_meaning_what_today_silences_and_counts_what_it_costs() -> None:
    rows = [
        request_row(False, 0.5, True, ["d1"]),
        request_row(False, 0.3, False, ["d1"]),  # answered only below the question's floor
        request_row(True, 0.35, False, ["x"]),
        request_row(True, 0.1, False, ["x"]),
    ]
    reqs = eval_confidence.requests_of(rows, "vector")
    assert len(reqs) == 4 and eval_confidence.requests_of(rows, "vector", requests=False) == []
    today = eval_confidence.floor_outcome(reqs, None)
    assert today.drop[0] == pytest.approx(50.0) and today.silent == 1.0
    floored = eval_confidence.floor_outcome(reqs, 0.25)
    assert floored.drop[0] == 0.0 and floored.silent == 0.5  # 0.35 now answered, 0.1 still silent
    assert eval_confidence.floor_outcome(reqs, 0.0).silent == 0.0
    # Below every answerable request of the sets fitted on: the least of their lowest best cosines.
    other = eval_confidence.requests_of([request_row(False, 0.28, True, ["d1"])], "vector")
    assert eval_confidence.floor_below_answers({"a": reqs, "b": other}, 0.0) == 0.28
    assert eval_confidence.auc([0.5, 0.3], [0.35, 0.1]) == pytest.approx(0.75)


def test_a_request_keeps_its_allowance_only_with_an_own_statement_among_its_nearest_notes() -> None:
    # Two unanswerable requests as weak as each other: one asked of a vault where the person said
    # something of themselves among its nearest notes, one of a vault of what others did.
    def asked(statements: list[str]) -> dict[str, Any]:
        r = row(True, 0.3, 0.1, "can you suggest a restaurant for me")
        r["candidates"] |= {"vector": [["n1", 0.3], ["n2", 0.2]], "statements": statements}
        return r

    answered = row(False, 0.3, 0.1, "can you suggest a restaurant for me")
    answered["candidates"] |= {"vector": [["d1", 0.3]], "statements": ["d1"]}
    sets = {"a": arrays([asked(["n2"]), asked([]), answered])}
    never_cut = eval_confidence.Rule(0.6, 0.38, eval_confidence.NEVER_CUT, 0.2)
    kept = dataclasses.replace(never_cut, statement=eval_confidence.AMONG_THE_NEAREST)
    assert eval_confidence.outcome(never_cut, sets["a"]).silent == 0.0
    o = eval_confidence.outcome(kept, sets["a"])
    assert o.silent == 0.5 and o.drop == 0.0  # the request of the vault of others' doings is cut
    lines = eval_confidence.requests_kept(sets, "hybrid")
    assert any(line.startswith("| a | 0.000 → 0.500 |") for line in lines)


def test_the_fit_beyond_the_previous_rule_weighs_what_the_vault_holds_without_giving_back() -> None:
    # Answers and non-answers have the same best cosine and coverage; only what the vault holds of
    # the question (`known`) tells them apart.
    def asked(no_answer: bool, known: float) -> dict[str, Any]:
        r = row(no_answer, 0.45, 0.4)
        r["candidates"]["known"] = known
        return r

    sets = {
        name: arrays([asked(False, 1.0), asked(False, 0.9), asked(True, 0.3), asked(True, 1.0)])
        for name in ("a", "b")
    }
    previous = eval_confidence.Rule(0.6, 0.38, eval_confidence.NEVER_CUT)
    assert eval_confidence.outcome(previous, sets["a"]).silent == 0.0
    rule = eval_confidence.fit_beyond(sets, previous, 0.5, [0.6], [0.0], eval_confidence.KNOWNS)
    assert rule.known > 0
    o = eval_confidence.outcome(rule, sets["a"])
    assert o.silent == 0.5 and o.drop == 0.0  # the question the vault holds a third of is cut
    # With nothing to gain within the bound, the previous rule stands.
    flat = {"a": arrays([asked(False, 0.3), asked(True, 0.3)])}
    assert eval_confidence.fit_beyond(flat, previous, 0.5, [0.6], [0.0], [0.0, 0.3]) == previous
