"""An id no note has gets one line naming the notes it comes close to (at most three), for every
command that takes a note; its exit code is that of any unknown id."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import write

Run = Callable[..., Result]


@pytest.fixture
def notes_vault(vault_path: Path) -> Path:
    write(
        vault_path,
        "memory/long-term/kafka.md",
        "---\ntitle: Kafka retention\n---\nKeep logs for seven days.\n",
    )
    write(vault_path, "recipes/pasta.md", "Boil the water for the pasta and salt it well.\n")
    return vault_path


NEAR_COMMANDS = [
    ("show",),
    ("edit",),
    ("forget",),
    ("promote",),
    ("archive",),
    ("log",),
    ("related",),
    ("links",),
    ("update", "--append", "more"),
]


@pytest.mark.parametrize("command", NEAR_COMMANDS, ids=lambda c: c[0])
def test_an_unknown_id_names_the_notes_close_to_it(
    run: Run, notes_vault: Path, command: tuple[str, ...]
) -> None:
    name, *rest = command
    nothing = run(name, "zanzibar-quokka", *rest)
    close = run(name, "pasta", *rest)
    assert close.exit_code == nothing.exit_code != 0
    assert "did you mean" not in nothing.output
    lines = close.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in close.output
    assert "'pasta'" in lines[0] and "did you mean: recipes-pasta?" in lines[0]


def test_close_names_come_from_titles_file_names_and_id_tails(run: Run, notes_vault: Path) -> None:
    assert "did you mean: kafka?" in run("show", "kafka-retention").output  # its title's words
    assert "did you mean: recipes-pasta?" in run("show", "PASTA").output  # the file's name, any case
    for i in range(5):
        write(notes_vault, f"menu{i}/pasta.md", f"Pasta number {i}.\n")
    line = run("show", "pasta").output.strip()
    assert line.count("-pasta") == 3  # at most three
