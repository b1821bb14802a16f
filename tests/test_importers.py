"""`tmem import --format <tool>` over the fixtures in tests/fixtures/imports (each written in its
tool's documented format): what lands where, one commit per import, idempotence, dedup, redaction."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import as_json, git_log, ok

from tiered_memory.model import note as notes

Run = Callable[..., Result]
FIXTURES = Path(__file__).parent / "fixtures" / "imports"
AWS_KEY = "AKIA" + "QX7RZ2MPL4TN6VBC"

CASES = [
    # format, path under FIXTURES, items added, a phrase that must land in the vault
    ("claude", "claude/conversations.json", 2, "7-parameter Helmert transformation"),
    ("chatgpt", "chatgpt", 1, "Cache them in the CI workspace"),
    ("mcp-memory", "mcp-memory/memory.json", 3, "leads [[Tunnel Project]]"),
    ("basic-memory", "basic-memory", 2, "- [decision] We use SQLite FTS5"),
    ("claude-code", "claude-code/project", 4, "never mock the EPSG database"),
    ("claude-code", "claude-code/automemory", 3, "**Why:** mocked tests passed"),
    ("mem0", "mem0/memories.json", 3, "Is a vegetarian and allergic to nuts"),
    ("claude-mem", "claude-mem/export.json", 3, "the grids now live under data/grids"),
]


def _vault_text(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((root / "memory").rglob("*.md")))


@pytest.mark.parametrize(("fmt", "rel", "added", "phrase"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_import_once_then_nothing_changes(
    run: Run, vault_path: Path, fmt: str, rel: str, added: int, phrase: str
) -> None:
    commits = len(git_log(vault_path))
    result = as_json(run("import", "--format", fmt, str(FIXTURES / rel), "--json"))
    assert result["added"] == added and result["skipped"] == 0, result["items"]
    assert len(git_log(vault_path)) == commits + 1
    assert git_log(vault_path)[0].startswith(f"import: {fmt} ")
    assert phrase in _vault_text(vault_path)
    assert all(i["source"].startswith(f"{fmt}:") for i in result["items"])

    again = as_json(run("import", "--format", fmt, str(FIXTURES / rel), "--json"))
    assert again["added"] == again["merged"] == again["updated"] == 0
    assert again["skipped"] == added and again["commit"] is None
    assert len(git_log(vault_path)) == commits + 1


def test_conversations_become_archived_sessions(run: Run, vault_path: Path) -> None:
    ok(run("import", "--format", "chatgpt", str(FIXTURES / "chatgpt/conversations.json")))
    [session] = (vault_path / "memory/archive/sessions").rglob("*.md")
    note = notes.parse(session.read_text(encoding="utf-8"), "x.md")
    assert note.meta["origin"] == "67e0c1a2-93b4-8005-a1b2-c3d4e5f60718"
    assert note.meta["messages"] == 3  # the hidden system message and the regenerated answer are left out
    assert "regenerated" not in note.body and "## Summary" in note.body
    listed = as_json(run("session", "list", "--json"))
    assert any(s["title"] == "Flaky CI job on the geodesy repo" for s in listed)


def test_mcp_people_are_profiles_about_the_entity(run: Run, vault_path: Path) -> None:
    ok(run("import", "--format", "mcp-memory", str(FIXTURES / "mcp-memory/memory.json")))
    [alice] = (vault_path / "memory/long-term/relationships").glob("alice-chen-*.md")
    note = notes.parse(alice.read_text(encoding="utf-8"), "x.md")
    assert note.category == "profile" and note.entities == ["Alice Chen"]
    assert "- Prefers pyproj over vendor software" in note.body


def test_import_goes_through_dedup_and_redaction(run: Run, vault_path: Path, tmp_path: Path) -> None:
    ok(run("add", "Prefers morning meetings and async communication"))
    data = json.loads((FIXTURES / "mem0/memories.json").read_text())
    data["results"][2]["memory"] = f"Deploys with the key {AWS_KEY}"
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = as_json(run("import", "--format", "mem0", str(path), "--json"))
    assert result["merged"] == 1 and result["added"] == 2
    assert AWS_KEY not in _vault_text(vault_path)
    assert AWS_KEY not in (vault_path / ".tmem-imports.jsonl").read_text()


def test_changed_item_is_imported_again(run: Run, vault_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "bm"
    shutil.copytree(FIXTURES / "basic-memory", folder)
    ok(run("import", "--format", "basic-memory", str(folder)))
    page = folder / "decisions.md"
    page.write_text(page.read_text() + "- [decision] Vectors are stored with hnswlib\n", encoding="utf-8")
    result = as_json(run("import", "--format", "basic-memory", str(folder), "--json"))
    assert result["skipped"] == 1 and result["added"] + result["updated"] + result["merged"] == 1


def test_dry_run_changes_nothing(run: Run, vault_path: Path) -> None:
    head = git_log(vault_path)
    result = as_json(
        run("import", "--format", "mem0", str(FIXTURES / "mem0/memories.json"), "--dry-run", "--json")
    )
    assert result["dry_run"] and result["added"] == 3 and result["commit"] is None
    assert git_log(vault_path) == head and not (vault_path / ".tmem-imports.jsonl").exists()
    assert "Is a vegetarian" not in _vault_text(vault_path)


def test_wrong_format_is_one_line(run: Run) -> None:
    result = run("import", "--format", "chatgpt", str(FIXTURES / "claude/conversations.json"))
    assert result.exit_code == 2 and "not a ChatGPT conversations export" in result.stderr
