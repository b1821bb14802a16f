"""The recall harness's ablation and leave-one-set-out (scripts/eval_recall.py --ablate --loso),
run on tiny synthetic sets through tmem's real filing, indexing and ranking."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import FAKE_CONFIG

from tiered_memory.app.memory import Memory

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import eval_recall  # noqa: E402
import eval_tune  # noqa: E402

TURNS = {
    "conv-a": [
        ("Ann", "I adopted a grey kitten called Pixel last week."),
        ("Bob", "Lovely! Does Pixel sleep a lot?"),
        ("Ann", "She sleeps on my keyboard while I write code."),
        ("Bob", "I went hiking in the Alps with my brother."),
    ],
    "conv-b": [
        ("Cy", "My sourdough starter finally rose after three days."),
        ("Di", "Which flour did you feed it?"),
        ("Cy", "Rye flour, and I keep it warm near the oven."),
        ("Di", "I repaired my bicycle's brakes on Sunday."),
    ],
}
QUESTIONS = [
    ("conv-a", "What is the name of Ann's kitten?", ["conv-a/0"]),
    ("conv-a", "Where did Bob go hiking?", ["conv-a/3"]),
    ("conv-b", "Which flour feeds the sourdough starter?", ["conv-b/2"]),
    ("conv-b", "What did Di repair?", ["conv-b/3"]),
]


def write_set(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir()
    docs = [
        {
            "id": f"{conv}/{i}",
            "conversation": conv,
            "session": "session_1",
            "turn_index": i,
            "date": f"2024-03-0{i + 1}T10:00:00",
            "speaker": speaker,
            "text": text,
        }
        for conv, turns in TURNS.items()
        for i, (speaker, text) in enumerate(turns)
    ]
    queries = [
        {"id": f"{conv}/q{i}", "conversation": conv, "question": q, "evidence": gold, "category": 1}
        for i, (conv, q, gold) in enumerate(QUESTIONS)
    ]
    for file, rows in (("documents.jsonl", docs), ("queries.jsonl", queries)):
        (folder / file).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def test_ablation_and_leave_one_set_out_cover_every_set(tmp_path: Path) -> None:
    sets = [write_set(tmp_path, name) for name in ("set-one", "set-two")]
    reports = [
        eval_recall.evaluate(
            data,
            None,
            tmp_path / "cache",
            [],
            with_baselines=False,
            with_cv=False,
            ablate=True,
            loso=True,
            config_text=FAKE_CONFIG,
        )
        for data in sets
    ]

    table = eval_recall.ablation_markdown(reports)
    for mode in eval_recall.MODES:
        assert f"{mode}:" in table
    header = next(line for line in table.splitlines() if line.startswith("| set |"))
    for name in eval_recall.ABLATIONS:
        assert name in header
    rows = [line for line in table.splitlines() if line.startswith("| set-")]
    assert len(rows) == 2 * len(eval_recall.MODES)
    for rep in reports:
        for name in eval_recall.ABLATIONS:
            for mode in eval_recall.MODES:
                assert set(rep["ablation"][name][mode]) == {"R@5", "R@10", "MRR", "silent"}
        # With the evidence cut off every candidate is a hit: no unanswerable question stays silent.
        change = rep["ablation"]["evidence cut"]["hybrid"]["silent"]
        assert rep["no_answer"]["hybrid"] + change == pytest.approx(0.0)

    loso, chosen = eval_recall.loso_markdown(reports)
    assert [fold["held_out"] for fold in chosen["folds"]] == ["set-one", "set-two"]
    assert chosen["least_worst"] in eval_tune.grid()
    assert "least worst" in loso


def test_leave_one_set_out_chooses_on_the_other_sets_only() -> None:
    # Setting 0 is best on "a" and "b", setting 1 on "c"; held out, each set gets the setting that
    # is least below the best on the other two.
    per_set = {
        "a": [(0.9, 0.9, 0.9), (0.5, 0.5, 0.5)],
        "b": [(0.8, 0.8, 0.8), (0.7, 0.7, 0.7)],
        "c": [(0.1, 0.1, 0.1), (0.6, 0.6, 0.6)],
    }

    folds = eval_tune.leave_one_set_out(per_set)

    # Without "a": setting 1 is 0.1 below the best on "b", setting 0 is 0.5 below on "c".
    assert [(f.held_out, f.chosen) for f in folds] == [("a", 1), ("b", 1), ("c", 0)]
    assert folds[0].regret == pytest.approx(0.4)
    assert folds[2].regret == pytest.approx(0.5)
    # Setting 1's worst set is "a" (0.4 below its best), setting 0's is "c" (0.5): 1 is shipped.
    assert eval_tune.shipped(per_set, [0, 1]) == 1


def test_the_confidence_cut_is_reported_with_and_without_it() -> None:
    def asked(gold: set[str], ranked: list[str], uncut: list[str]) -> eval_recall.Asked:
        item = eval_recall.Asked({"id": "q"}, gold, no_answer=not gold, uncut=uncut)
        item.ranked["hybrid"] = ranked
        return item

    answerable = [asked({"d1"}, [], ["d1"]), asked({"d2"}, ["d2"], ["d2"])]
    unanswerable = [asked(set(), [], ["x"]), asked(set(), [], [])]

    figures = eval_recall.confidence_report(answerable, unanswerable)

    # Both unanswerable questions return nothing; without the cut one of them returned a note.
    assert figures["silent"] == 1.0 and figures["silent_without"] == 0.5
    # One answerable question of two lost its answer to the cut: without it, R@5 was whole.
    assert figures["answerable_cut"] == 0.5
    assert figures["without"]["R@5"] == 1.0
    report = {
        "data": "set-one",
        "confidence": figures,
        "methods": {"hybrid": {"all": {"R@5": 0.5, "R@10": 0.5, "MRR": 0.5}}},
    }
    row = next(line for line in eval_recall.confidence_markdown([report]) if line.startswith("| set-one"))
    assert row == "| set-one | 1.000 | 0.500 | 0.500 | -50.0 / -50.0 / -50.0 |"


def test_each_turn_is_filed_with_its_speaker_as_the_catalog_reads_it(memory: Memory) -> None:
    docs = [
        {"id": f"conv-a/{i}", "conversation": "conv-a", "session": "session_1", "turn_index": i}
        | {"speaker": speaker, "text": text, "date": "2024-03-01T10:00:00"}
        for i, (speaker, text) in enumerate(TURNS["conv-a"])
    ]
    paths = eval_recall.ingest(memory, docs, vectors=False)
    written = {doc: path for path, doc in paths.items()}
    note = memory.read_note(written["conv-a/1"])
    assert note.meta["speaker"] == "Bob"
    assert note.meta["seq"] == 1
    catalog = memory.indexer.catalog
    assert [catalog.get(written[d["id"]]).speaker for d in docs] == ["Ann", "Bob", "Ann", "Bob"]  # type: ignore[union-attr]
