"""An index error the core does not handle reaches the person as one line, not a traceback."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import pytest
from click.testing import Result
from helpers import one_error_line

from tiered_memory.index.catalog import Catalog


def test_a_failing_index_is_one_line_naming_the_rebuild(
    run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(self: Catalog, *args: object, **kwargs: object) -> object:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(Catalog, "rows", failing)
    line = one_error_line(run("search", "tea", "--mode", "keyword"), 1)
    assert "disk I/O error" in line and "tmem reindex --full" in line
