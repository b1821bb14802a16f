"""`tmem search` says nothing matched when nothing in the vault answers the question, even where a
note shares two of its words; `--min-score 0` lists the nearest notes anyway."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import MARIA, NO_ANSWER, as_json, ok, write

from tiered_memory.cli.main import cli
from tiered_memory.storage.vault import init_vault


@pytest.fixture
def maria(tmp_path: Path) -> Path:
    root = tmp_path / "maria"
    init_vault(root)  # the packaged model: the one the confidence cut was measured on
    for rel, text in MARIA.items():
        write(root, rel, text)
    return root


def _search(vault: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--vault", str(vault), "search", *args], catch_exceptions=False)


@pytest.mark.model
@pytest.mark.slow  # each search loads the model in its own process's place: about a minute in all
def test_search_prints_nothing_matched_for_a_question_nothing_answers(maria: Path) -> None:
    shown = ok(_search(maria, NO_ANSWER))
    assert shown.stdout.strip() == "no matching memories"
    assert "min score of 0" in shown.stderr
    # Asked for every hit however unsure, the person gets the nearest note.
    anyway = as_json(_search(maria, NO_ANSWER, "--json", "--min-score", "0"))["results"]
    assert [h["title"] for h in anyway] == ["Trip to Lisbon"]
    answered = as_json(_search(maria, "Where did Maria adopt her dog?", "--json"))["results"]
    assert answered[0]["title"] == "Maria adopted a dog"
