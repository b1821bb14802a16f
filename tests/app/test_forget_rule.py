"""`forget` removes notes and nothing else, whichever door asks (the rule is in the application):
a path can name any file under memory/, a folder's `.gitkeep` or some app's data among them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import git_log, one_error_line, write
from mcp import ClientSession
from mcp_client import error, serve

from tiered_memory.app.api.notes import ForgetRequest
from tiered_memory.app.memory import Memory
from tiered_memory.app.notes import forget
from tiered_memory.errors import BadInput

Run = Callable[..., Result]
NOT_NOTES = ["memory/short-term/temp/.gitkeep", "memory/long-term/tool.py", "memory/.obsidian/app.json"]


def _place(vault_path: Path) -> None:
    write(vault_path, "memory/long-term/tool.py", "print('a person keeps this here')\n")
    write(vault_path, "memory/.obsidian/app.json", "{}\n")


@pytest.mark.parametrize("rel", NOT_NOTES)
def test_cli_forget_refuses_what_is_not_a_note(run: Run, vault_path: Path, rel: str) -> None:
    _place(vault_path)
    head = git_log(vault_path)
    line = one_error_line(run("forget", "--yes", rel), 2)
    assert line == f"tmem: {rel} is not a note; forget removes notes only"
    assert (vault_path / rel).exists() and git_log(vault_path) == head


def test_the_rule_is_the_application_s(memory: Memory, vault_path: Path) -> None:
    with pytest.raises(BadInput, match="is not a note"):
        forget(memory, ForgetRequest("memory/short-term/temp/.gitkeep"))
    assert (vault_path / "memory/short-term/temp/.gitkeep").exists()


def test_mcp_forget_refuses_a_gitkeep(vault_path: Path) -> None:
    head = git_log(vault_path)

    async def scenario(session: ClientSession) -> None:
        text = await error(session, "forget", id="memory/short-term/temp/.gitkeep")
        assert "is not a note; forget removes notes only" in text

    serve(vault_path, scenario)
    assert (vault_path / "memory/short-term/temp/.gitkeep").exists() and git_log(vault_path) == head
