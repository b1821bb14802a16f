"""An index error the core does not handle reaches the person as one line, not a traceback."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import pytest
from click.testing import Result
from helpers import one_error_line

from tiered_memory.errors import EXIT_FAILED
from tiered_memory.index.catalog import Catalog


def test_a_failing_index_is_one_line_naming_the_rebuild(
    run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(self: Catalog, *args: object, **kwargs: object) -> object:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(Catalog, "rows", failing)
    # tmem's failure, not a note that does not exist (1) nor bad input (2)
    line = one_error_line(run("search", "tea", "--mode", "keyword"), EXIT_FAILED)
    assert "disk I/O error" in line and "tmem reindex --full" in line
