"""Oversized input is refused before anything else is done with it: one line, exit 2, and the
redactor (the slow part: 60 MB took minutes) never sees it, whichever door it came through."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import FAKE_CONFIG, commit, git_log, ok, one_error_line, remember, write

from tiered_memory.app import input_size
from tiered_memory.app.api.notes import UpdateRequest
from tiered_memory.app.memory import Memory
from tiered_memory.errors import BadInput
from tiered_memory.mcp.tools import Tools
from tiered_memory.model import redact as redaction
from tiered_memory.storage.vault import Vault

Run = Callable[..., Result]
LIMIT_MB = 0.05  # ~52 KB: large inputs stay cheap to make
BIG = "all work and no play makes a dull note " * 2_000  # ~78 KB
REFUSAL = f"larger than index.max_file_mb ({LIMIT_MB} MB)"


@pytest.fixture
def small_limit(vault_path: Path) -> Path:
    write(vault_path, "tmem.yaml", FAKE_CONFIG + f"index:\n  max_file_mb: {LIMIT_MB}\n")
    commit(Vault(vault_path), ["tmem.yaml"], "config: a small limit")
    return vault_path


@pytest.fixture
def redactions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every call of the redactor, wherever a module imported it from."""
    calls: list[int] = []
    original = redaction.redact

    def counting(text: str, *args: object, **kwargs: object) -> object:
        calls.append(len(text))
        return original(text, *args, **kwargs)  # type: ignore[arg-type]

    for name, module in list(sys.modules.items()):
        if name.startswith("tiered_memory") and getattr(module, "redact", None) is original:
            monkeypatch.setattr(module, "redact", counting)
    return calls


def _big_calls(calls: list[int]) -> list[int]:
    return [n for n in calls if n >= len(BIG)]


@pytest.mark.parametrize(
    "args",
    [
        ("add", BIG),
        ("add", "--no-dedup", BIG),
        ("knowledge", "add", "--domain", "kites", BIG),
        ("session", "append", BIG),
        ("session", "end", "--summary", BIG),
        ("st", "set", "scratch", BIG),
        ("profile", "set", "about", BIG),
        ("project", "new", "kites", "--description", BIG),
        ("search", BIG),
    ],
    ids=[
        "add",
        "add-no-dedup",
        "knowledge-add",
        "session-append",
        "session-end",
        "st-set",
        "profile-set",
        "project-new",
        "search",
    ],
)
def test_cli_refuses_before_redacting(
    small_limit: Path, run: Run, redactions: list[int], args: tuple[str, ...]
) -> None:
    head = git_log(small_limit)
    assert REFUSAL in one_error_line(run(*args), 2)
    assert redactions == [] and git_log(small_limit) == head


@pytest.mark.parametrize("option", ["--body", "--append"])
def test_update_refuses_before_redacting(
    small_limit: Path, run: Run, redactions: list[int], option: str
) -> None:
    note = remember(run, "A small note about kites")
    redactions.clear()
    head = git_log(small_limit)
    assert REFUSAL in one_error_line(run("update", note["id"], option, BIG), 2)
    assert redactions == [] and git_log(small_limit) == head


def test_ingest_and_extract_refuse_before_redacting(
    small_limit: Path, run: Run, redactions: list[int], tmp_path: Path
) -> None:
    transcript = tmp_path / "chat.jsonl"
    lines = [{"role": "user", "content": BIG}, {"role": "assistant", "content": "Noted."}]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    head = git_log(small_limit)
    assert REFUSAL in one_error_line(run("ingest", str(transcript)), 2)
    assert REFUSAL in one_error_line(run("extract", str(transcript)), 2)
    assert _big_calls(redactions) == [] and git_log(small_limit) == head


def test_import_refuses_an_oversized_item_before_redacting(
    small_limit: Path, run: Run, redactions: list[int], tmp_path: Path
) -> None:
    export = tmp_path / "memories.json"
    memories = [{"id": "m1", "memory": "Likes kites"}, {"id": "m2", "memory": BIG}]
    export.write_text(json.dumps({"results": memories}), encoding="utf-8")
    head = git_log(small_limit)
    line = one_error_line(run("import", "--format", "mem0", str(export)), 2)
    assert "nothing imported" in line and REFUSAL in line
    assert redactions == [] and git_log(small_limit) == head


def test_mcp_tools_refuse_before_redacting(small_limit: Path, run: Run, redactions: list[int]) -> None:
    note = remember(run, "A small note about kites")
    redactions.clear()
    tools = Tools(small_limit)
    try:
        for call in (
            lambda: tools.remember(text=BIG),
            lambda: tools.update(id=note["id"], append=BIG),
            lambda: tools.session_append(text=BIG),
            lambda: tools.session_end(summary=BIG),
        ):
            with pytest.raises(BadInput, match=r"larger than index\.max_file_mb"):
                call()
    finally:
        tools.close()
    assert redactions == []


def test_within_the_limit_is_redacted_and_kept(small_limit: Path, run: Run, redactions: list[int]) -> None:
    ok(run("add", "Kites need steady wind over the dunes"))
    assert redactions


def test_git_textconv_of_a_large_note_is_not_refused(small_limit: Path, run: Run) -> None:
    """git diff runs textconv on any note, a person's large one too: reading is not input."""
    big = small_limit / "memory/long-term/big.md"
    big.write_text(BIG, encoding="utf-8")
    assert ok(run("textconv", str(big))).stdout == BIG


def test_a_request_nested_thousands_deep_is_measured_not_a_recursion_error(vault: Vault) -> None:
    deep: dict[str, object] = {"text": "x" * 10}
    for _ in range(5000):
        deep = {"a": deep}
    memory = Memory(vault)
    try:
        input_size.check_request(memory, UpdateRequest(id="n", fields={"plan": deep}))  # within the limit
        with pytest.raises(BadInput, match="larger than index.max_file_mb"):
            input_size.check_request(
                memory, UpdateRequest(id="n", fields={"plan": deep, "big": "y" * 3_000_000})
            )
    finally:
        memory.close()
