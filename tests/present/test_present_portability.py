"""What `tmem import` prints: what it did, with the items an earlier import brought in counted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import Result
from helpers import as_json, ok

FIXTURES = Path(__file__).parents[1] / "fixtures" / "imports"


def test_an_import_run_again_counts_what_it_left_alone(run: Callable[..., Result]) -> None:
    source = str(FIXTURES / "mem0" / "memories.json")
    first = ok(run("import", "--format", "mem0", source)).stdout.splitlines()
    added = [line for line in first if line.startswith("  added")]
    assert len(added) >= 2
    again = ok(run("import", "--format", "mem0", source)).stdout.splitlines()
    assert again[1:] == [f"  skipped    {len(added)} already imported (--json lists them)", "nothing new"]
    listed = as_json(run("import", "--format", "mem0", source, "--json"))["items"]
    assert [i["why"] for i in listed] == ["already imported"] * len(added)
