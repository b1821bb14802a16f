"""A search answers a huge query in bounded time, and a filter of thousands of folders is one line:
what an agent pastes or builds is untrusted, and a person waits on the answer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import Result
from helpers import as_json, ok, one_error_line, write

from tiered_memory.model.search import MAX_FILTER_VALUES

OTTERS = "memory/long-term/knowledge/otters.md"


def _otters(vault: Path) -> None:
    write(vault, OTTERS, "---\ntitle: Otters\n---\nSea otters hold hands while they sleep.\n")
    write(
        vault, "memory/long-term/knowledge/survey.md", "---\ntitle: Survey\n---\nThe survey starts Monday.\n"
    )


def _chat(megabytes: float, last: str) -> str:
    """A pasted conversation of that size about nothing in the vault, whose last turn is `last`."""
    turn = "User: what did the quarterly planning meeting decide about the budget?\nAssistant: it moved on.\n"
    return turn * int(megabytes * 1024 * 1024 / len(turn)) + f"User: {last}"


def test_a_huge_query_is_searched_by_its_start_and_end_and_says_so(
    run: Callable[..., Result], vault_path: Path
) -> None:
    """A 1.3 MB query took 4 s in keyword mode on ten notes (16 s on a busy machine): each step of
    a search read all of it. Its first and last 32 K characters are searched: a pasted
    conversation's last turn still finds its note."""
    _otters(vault_path)
    query = _chat(1.3, "do sea otters sleep holding hands?")
    done = ok(run("search", "--mode", "keyword", "--json", query))
    found = as_json(done)
    assert [hit["path"] for hit in found["results"]][:1] == [OTTERS]
    assert (
        f"the query has {len(query):,} characters: its first and last 32 K of them were searched"
        in done.stderr
    )
    # A question is searched whole, and says nothing of it.
    asked = ok(run("search", "--mode", "keyword", "do otters sleep holding hands?"))
    assert "characters" not in asked.stderr


def test_thousands_of_folder_globs_are_one_line(run: Callable[..., Result], vault_path: Path) -> None:
    """10,000 `--in` globs took 5.6 s over 2,000 notes: each note's path was tried against each."""
    _otters(vault_path)
    many = [arg for i in range(10_000) for arg in ("--in", f"memory/**/topic{i}*.md")]
    line = one_error_line(run("search", "--mode", "keyword", "otters", *many), 2)
    assert line == f"tmem: too many folders to filter by (10,000; at most {MAX_FILTER_VALUES})"
    line = one_error_line(run("list", *many[: 2 * (MAX_FILTER_VALUES + 1)]), 2)
    assert (
        line == f"tmem: too many folders to filter by ({MAX_FILTER_VALUES + 1}; at most {MAX_FILTER_VALUES})"
    )
    tags = [arg for i in range(MAX_FILTER_VALUES + 1) for arg in ("--tag", f"t{i}")]
    assert "too many tags" in one_error_line(run("search", "otters", *tags), 2)
    # As many as the bound: searched as before.
    within = many[: 2 * (MAX_FILTER_VALUES - 1)] + ["--in", "memory/long-term/**"]
    found = as_json(ok(run("search", "--mode", "keyword", "--json", "otters", *within)))
    assert [hit["path"] for hit in found["results"]] == [OTTERS]
