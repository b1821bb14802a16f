"""A search answers a huge query in bounded time: what an agent pastes is untrusted, and a person
waits on the answer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import Result
from helpers import as_json, ok, write

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
