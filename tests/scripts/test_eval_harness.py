"""The recall harness's ablation and leave-one-set-out (scripts/eval_recall.py --ablate --loso),
run on tiny synthetic sets through tmem's real filing, indexing and ranking."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from helpers import FAKE_CONFIG

from tiered_memory.app.memory import Memory
from tiered_memory.index.catalog import Catalog
from tiered_memory.index.chunking import FIRST_PASSAGES
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.indexer import Indexer
from tiered_memory.storage.vault import Vault

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


def test_the_keyword_and_vector_cuts_are_reported_on_their_own_rankings() -> None:
    def asked(gold: set[str], keyword: list[str], uncut: list[str]) -> eval_recall.Asked:
        item = eval_recall.Asked({"id": "q"}, gold, no_answer=not gold, uncut=["d1"])
        item.ranked.update(hybrid=["d1"], keyword=keyword, vector=uncut)
        item.uncut_modes = {"hybrid": ["d1"], "keyword": uncut, "vector": uncut}
        return item

    answerable = [asked({"d1"}, [], ["d1"]), asked({"d2"}, ["d2"], ["d2"])]
    unanswerable = [asked(set(), [], ["x"]), asked(set(), [], [])]
    keyword = eval_recall.confidence_report(answerable, unanswerable, "keyword")
    assert (keyword["silent"], keyword["silent_without"], keyword["answerable_cut"]) == (1.0, 0.5, 0.5)
    vector = eval_recall.confidence_report(answerable, unanswerable, "vector")
    assert (vector["silent"], vector["answerable_cut"]) == (0.5, 0.0)  # nothing cut
    report = {
        "data": "set-one",
        "confidence": eval_recall.confidence_report(answerable, unanswerable),
        "confidence_modes": {"keyword": keyword, "vector": vector},
        "methods": {
            m: {"all": {"R@5": 0.5, "R@10": 0.5, "MRR": 0.5}} for m in ("hybrid", "keyword", "vector")
        },
    }
    lines = eval_recall.confidence_markdown([report])
    assert "| set-one (keyword) | 1.000 | 0.500 | 0.500 | -50.0 / -50.0 / -50.0 |" in lines
    assert "| set-one (vector) | 0.500 | 0.500 | 0.000 | -50.0 / -50.0 / -50.0 |" in lines
    assert lines.index("| set-one | 0.000 | 0.000 | 0.000 | +0.0 / +0.0 / +0.0 |") < lines.index(
        "| set-one (keyword) | 1.000 | 0.500 | 0.500 | -50.0 / -50.0 / -50.0 |"
    )


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


def _fake_models(calls: list[bool]) -> Callable[[bool], tuple[eval_recall.DenseModel, ...]]:
    """The dense baselines over FakeEmbedder; `calls` records each load."""

    def load(multilingual: bool) -> tuple[eval_recall.DenseModel, ...]:
        calls.append(multilingual)
        fake = FakeEmbedder()
        return (eval_recall.DenseModel("dense", "fake", fake.embed, lambda q: fake.embed([q])[0]),)

    return load


def test_baseline_rankings_are_cached_by_their_data_and_a_rerun_loads_no_model(tmp_path: Path) -> None:
    data = write_set(tmp_path, "set-one")
    calls: list[bool] = []

    def run() -> dict[str, Any]:
        return eval_recall.evaluate(
            data,
            None,
            tmp_path / "cache",
            [],
            with_baselines=True,
            with_cv=False,
            config_text=FAKE_CONFIG,
            models=_fake_models(calls),
        )

    first = run()
    assert len(calls) == 1  # loaded once for both conversations
    second = run()
    assert len(calls) == 1  # every ranking read back: no model loaded
    assert {k: v for k, v in second["methods"].items()} == first["methods"]
    for method in ("FTS5", "dense", "RRF"):
        assert first["methods"][method]["all"]["n"] == len(QUESTIONS)
    assert first["methods"]["FTS5"]["all"]["R@10"] > 0

    # Another question (or document) is another key: those rankings are made again.
    queries = data / "queries.jsonl"
    queries.write_text(queries.read_text(encoding="utf-8").replace("kitten", "cat"), encoding="utf-8")
    run()
    assert len(calls) == 2


def test_rerankings_read_each_catalog_row_once_and_rank_as_a_search_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = write_set(tmp_path, "set-one")
    docs = eval_recall.read_jsonl(data / "documents.jsonl")
    queries = eval_recall.read_jsonl(data / "queries.jsonl")
    asked = [eval_recall.Asked(q, set(q["evidence"])) for q in queries]
    cfg = eval_recall.SearchConfig()
    vaults = eval_recall.run_tmem(data, docs, asked, cfg, tmp_path / "cache", FAKE_CONFIG)
    try:
        read: list[str] = []
        real_rows, real_sessions = Catalog.rows, Catalog.session_rows

        def rows(self: Catalog, paths: Any = None) -> dict[str, Any]:
            paths = list(paths) if paths is not None else None
            read.extend(paths or ["*"])
            return real_rows(self, paths)

        def session_rows(self: Catalog, sessions: Any) -> dict[str, Any]:
            sessions = list(sessions)
            read.extend(f"session:{s}" for s in sessions)
            return real_sessions(self, sessions)

        monkeypatch.setattr(Catalog, "rows", rows)
        monkeypatch.setattr(Catalog, "session_rows", session_rows)
        settings, table = eval_recall.run_grid(asked, vaults, cfg)
        # Twenty-four settings re-rank each query; every row was read at most once (most of them
        # by the modes' rankings before the grid).
        assert len(read) == len(set(read))
        monkeypatch.undo()

        # The same ranking as a search's own, in every mode and under every setting of the grid.
        for setting in settings:
            variant = dataclasses.replace(cfg, **setting)
            for item in asked:
                assert item.found is not None
                for mode in eval_recall.MODES:
                    searched = vaults.hits(item, item.found, variant, mode, timed=True)
                    reranked = vaults.hits(item, item.found, variant, mode)
                    assert [(h.path, h.score) for h in reranked] == [(h.path, h.score) for h in searched]
        assert table[settings.index(_default_setting(cfg))] == [
            eval_tune.metrics(item.ranked["hybrid"], item.gold) for item in asked
        ]
    finally:
        vaults.close()


def _default_setting(cfg: eval_recall.SearchConfig) -> dict[str, Any]:
    return next(s for s in eval_tune.grid() if all(getattr(cfg, k) == v for k, v in s.items()))


def test_a_run_stopped_midway_keeps_the_sets_it_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sets = [write_set(tmp_path, name) for name in ("set-one", "set-two")]
    real = eval_recall.evaluate

    def evaluate(data: Path, *args: Any, **kwargs: Any) -> dict[str, Any]:
        if data.name == "set-two":
            raise KeyboardInterrupt  # stopped during the second set
        return real(data, *args, **{**kwargs, "config_text": FAKE_CONFIG})

    out = tmp_path / "out"
    monkeypatch.setattr(eval_recall, "evaluate", evaluate)
    argv = ["eval_recall.py", *map(str, sets), "--no-baselines", "--no-cv", "--cache", str(tmp_path / "c")]
    monkeypatch.setattr(sys, "argv", [*argv, "--out", str(out)])
    with pytest.raises(KeyboardInterrupt):
        eval_recall.main()

    assert f"results go to {out / 'results.md'}" in capsys.readouterr().err
    saved = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert [rep["data"] for rep in saved] == ["set-one"]
    assert "| set-one |" in (out / "results.md").read_text(encoding="utf-8")
    timings = json.loads((out / "timings.json").read_text(encoding="utf-8"))
    assert set(timings) == {"set-one"} and timings["set-one"]["seconds"] >= timings["set-one"]["tmem"] > 0


def test_long_turns_are_measured_with_every_passage_embedded(tmp_path: Path) -> None:
    """A vault at rest has its long notes' deeper passages too (the daemon embeds them after the
    first ones): the harness measures that, not a vault still waiting for them."""
    folder = tmp_path / "long-set"
    folder.mkdir()
    filler = " ".join(f"Paragraph {i} tells of the weather, the trains and the shops." for i in range(400))
    docs = [
        {
            "id": "c/0",
            "conversation": "c",
            "session": "s1",
            "turn_index": 0,
            "speaker": "Ann",
            "text": filler,
        },
        {
            "id": "c/1",
            "conversation": "c",
            "session": "s1",
            "turn_index": 1,
            "speaker": "Bob",
            "text": "Nice.",
        },
    ]
    queries = [{"id": "c/q0", "conversation": "c", "question": "What of the trains?", "evidence": ["c/0"]}]
    for file, rows in (("documents.jsonl", docs), ("queries.jsonl", queries)):
        (folder / file).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    eval_recall.evaluate(
        folder, None, tmp_path / "cache", [], with_baselines=False, with_cv=False, config_text=FAKE_CONFIG
    )

    vault_root = next(p for p in (tmp_path / "cache" / "long-set").iterdir() if p.is_dir())
    indexer = Indexer(Vault(vault_root), embedder_factory=lambda: FakeEmbedder(64))
    vectors = indexer.vectors()
    assert vectors is not None
    assert max(vectors.chunks_of(p) for p in vectors.paths()) > FIRST_PASSAGES
    assert vectors.partial_paths() == []
    indexer.close()


def test_an_ablation_of_the_keyword_side_keeps_the_vector_side_gathered_first(tmp_path: Path) -> None:
    data = write_set(tmp_path, "tiny")
    docs = eval_recall.read_jsonl(data / "documents.jsonl")
    item = eval_recall.Asked(eval_recall.read_jsonl(data / "queries.jsonl")[0], {"conv-a/0"})
    vaults = eval_recall.run_tmem(
        data, docs, [item], eval_recall.SearchConfig(), tmp_path / "cache", FAKE_CONFIG
    )
    try:
        assert item.found is not None
        # What the first gathering held of long turns' best chunks (none are long here).
        item.found = dataclasses.replace(item.found, undiscounted={"memory/archive/a-long-turn.md": 0.61})
        again = vaults.gather(item, eval_recall.Gathering(passages=False))
        assert again.vector == item.found.vector
        assert again.undiscounted == item.found.undiscounted
        # A gathering that changes the query's vector is made again whole.
        whole = vaults.gather(item, eval_recall.Gathering(last_turn_share=0.0))
        assert whole.undiscounted == {}
    finally:
        vaults.close()


def test_every_switch_of_gathering_has_its_ablation() -> None:
    default = eval_recall.Gathering()
    switched = {
        f.name
        for _, how in eval_recall.ABLATIONS.values()
        if how is not None
        for f in dataclasses.fields(how)
        if getattr(how, f.name) != getattr(default, f.name)
    }
    assert switched == {f.name for f in dataclasses.fields(eval_recall.Gathering)}


def test_a_ranking_switch_reaches_ranking_without_gathering_again(tmp_path: Path) -> None:
    # A keyword request whose stated preference another chat's prompt and reply, lifted by each
    # other, would rank below: the cap keeps the preference first, and its ablation measures that.
    folder = tmp_path / "requests"
    folder.mkdir()
    turns = [
        ("chat-1", "User", "What are some good ways to stay motivated during my workout routine?"),
        ("chat-1", "Assistant", "Set yourself small goals, and stay with a friend who trains too."),
        ("chat-2", "User", "I have a strong aversion to hotels located in high-rise buildings."),
    ] + [(f"garden-{i}", "User", f"Unrelated note number {i} about gardening") for i in range(6)]
    docs = [
        {
            "id": f"c/{i}",
            "conversation": "c",
            "session": session,
            "turn_index": i,
            "speaker": who,
            "text": text,
        }
        for i, (session, who, text) in enumerate(turns)
    ]
    question = "What are some of the best hotels for my stay in Tokyo?"
    queries = [{"id": "c/q0", "conversation": "c", "question": question, "evidence": ["c/2"]}]
    for file, rows in (("documents.jsonl", docs), ("queries.jsonl", queries)):
        (folder / file).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    item = eval_recall.Asked(queries[0], {"c/2"})
    vaults = eval_recall.run_tmem(
        folder, docs, [item], eval_recall.SearchConfig(), tmp_path / "cache", FAKE_CONFIG
    )
    try:
        assert item.found is not None and item.ranked["keyword"][0] == "c/2"
        how = eval_recall.Gathering(capped_lifts=False)
        again = vaults.gather(item, how)
        assert again.how == how and again.keyword is item.found.keyword  # not gathered again
        uncapped = vaults.rank(item, again, eval_recall.SearchConfig(), "keyword")
        assert uncapped.index("c/0") < uncapped.index("c/2"), uncapped
    finally:
        vaults.close()

    report = eval_recall.evaluate(
        folder,
        None,
        tmp_path / "cache",
        [],
        with_baselines=False,
        with_cv=False,
        ablate=True,
        config_text=FAKE_CONFIG,
    )
    assert report["ablation"]["request lift cap"]["keyword"]["MRR"] < 0


def test_a_sets_own_unanswerable_questions_are_reported_apart(tmp_path: Path) -> None:
    data = write_set(tmp_path, "set-own")
    own = {"id": "conv-a/q9", "conversation": "conv-a", "question": "What is Pixel's vet called?"}
    with (data / "queries.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps(own | {"evidence": [], "category_name": "abstention"}) + "\n")

    rep = eval_recall.evaluate(
        data, None, tmp_path / "cache", [], with_baselines=False, with_cv=False, config_text=FAKE_CONFIG
    )

    # Four questions asked of the other conversation, and the set's own probe.
    assert rep["no_answer"]["n"] == 5
    assert rep["no_answer"]["own"]["n"] == 1
    assert set(rep["no_answer"]["own"]) == {"n", *eval_recall.MODES}
    assert "of them its own (n=1)" in eval_recall.markdown([rep])
