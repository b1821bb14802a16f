"""Making the public sets at their pinned commits (scripts/fetch_eval_sets.py), from local git
repositories standing in for GitHub: a file:// URL to clone from, a folder of mirrors to read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import eval_recall  # noqa: E402
import fetch_eval_sets as fetcher  # noqa: E402

from tests.scripts.test_convert_eval_sets import _realtalk  # noqa: E402


def _published(tmp_path: Path) -> tuple[Path, str]:
    """A bare repository holding the source at one commit, with a later commit on top."""
    work = tmp_path / "upstream"
    _realtalk(work)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-C", str(work)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "data"], check=True)
    pinned = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    (work / "data" / "Chat_1_Ann_Bo.json").unlink()  # the later commit has no data: only the pin does
    subprocess.run([*git, "commit", "-qam", "gone"], check=True)
    bare = tmp_path / "github" / "ann" / "REALTALK.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return bare, pinned


def test_a_set_is_cloned_at_its_pinned_commit_and_kept_for_the_next_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bare, commit = _published(tmp_path)
    pin = fetcher.Pinned("realtalk", "realtalk", "ann/REALTALK", commit, url=bare.as_uri())
    into = tmp_path / "sets"

    assert fetcher.fetch(into, [], [pin]) == [into / "realtalk"]

    manifest = json.loads((into / "realtalk" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["source_commit"] == commit and manifest["documents"] == 5
    assert sorted(p.name for p in (into / "sources").iterdir()) == ["ann+REALTALK.git"]
    # The next run neither clones nor converts: the source may be gone.
    subprocess.run(["rm", "-rf", str(bare)], check=True)
    capsys.readouterr()
    assert fetcher.fetch(into, [], [pin]) == [into / "realtalk"]
    assert "already at" in capsys.readouterr().err


def test_a_mirror_already_on_the_machine_is_read_without_cloning(tmp_path: Path) -> None:
    bare, commit = _published(tmp_path)
    mirrors = tmp_path / "mirrors"
    (mirrors / "ann+REALTALK").mkdir(parents=True)
    bare.rename(mirrors / "ann+REALTALK" / "repo")
    pin = fetcher.Pinned("realtalk", "realtalk", "ann/REALTALK", commit, url=(tmp_path / "nowhere").as_uri())

    [made] = fetcher.fetch(tmp_path / "sets", [mirrors], [pin])

    assert eval_recall.read_jsonl(made / "queries.jsonl")
    assert not (tmp_path / "sets" / "sources").exists()


def test_an_unreachable_source_is_one_line_and_leaves_no_half_clone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pin = fetcher.Pinned(
        "realtalk", "realtalk", "ann/REALTALK", "0" * 40, url=(tmp_path / "nowhere").as_uri()
    )
    monkeypatch.setattr(fetcher, "PINNED", (pin,))

    assert fetcher.main(["--into", str(tmp_path / "sets")]) == 2

    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot fetch" in err and "--from" in err and "Traceback" not in err
    assert list((tmp_path / "sets" / "sources").iterdir()) == []


def test_the_harness_reads_the_fetched_sets_beside_the_shared_ones(tmp_path: Path) -> None:
    shared, fetched = tmp_path / "shared", tmp_path / "fetched"
    for root, name in (
        (shared, "locomo-dev"),
        (shared, "realtalk"),
        (fetched, "realtalk"),
        (fetched, "beam-100k"),
    ):
        (root / name).mkdir(parents=True)
        (root / name / "queries.jsonl").write_text("", encoding="utf-8")
    (fetched / "sources").mkdir()  # the clones: not a set

    sets = eval_recall.default_sets(shared, fetched, tmp_path / "absent")

    assert sets == [fetched / "beam-100k", shared / "locomo-dev", shared / "realtalk"]


def test_the_probes_borrowed_from_other_sets_do_not_depend_on_the_order_sets_are_named(
    tmp_path: Path,
) -> None:
    named = {
        tmp_path / name: [{"question": f"{name} {i}?"} for i in range(2)] for name in ("zh", "en", "beam")
    }
    backwards = dict(reversed(named.items()))

    asked_in_en = eval_recall.foreign_questions(named, tmp_path / "en")

    assert asked_in_en == eval_recall.foreign_questions(backwards, tmp_path / "en")
    assert [q["question"] for q in asked_in_en] == ["beam 0?", "beam 1?", "zh 0?", "zh 1?"]
