"""Short-term keys with TTLs in context_stack.json, and expiry of keys and temp files."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import Result
from helpers import FIXED_NOW, as_json, git_log, ok, one_error_line

from tiered_memory.app import shortterm
from tiered_memory.app.memory import Memory
from tiered_memory.errors import BadInput, NoteNotFound

STACK = "memory/short-term/context_stack.json"
Run = Callable[..., Result]


def stack(root: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((root / STACK).read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("30m", 1800), ("2h", 7200), ("1.5d", 129600), ("1w", 604800), ("3", 10800)],
)
def test_parse_ttl(text: str, seconds: int) -> None:
    assert shortterm.parse_ttl(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["never", "0", "NEVER"])
def test_parse_ttl_never(text: str) -> None:
    assert shortterm.parse_ttl(text) is None


@pytest.mark.parametrize("text", ["", "soon", "-2h", "2x", "0h", "36501d", "99999999999w", "9" * 400 + "h"])
def test_parse_ttl_rejects(text: str) -> None:
    with pytest.raises(BadInput, match="invalid ttl"):
        shortterm.parse_ttl(text)


@pytest.mark.parametrize("ttl", ["3000000d", "99999999999w", "9" * 400])
def test_a_ttl_past_the_calendar_is_one_line_and_changes_nothing(
    run: Run, vault_path: Path, ttl: str
) -> None:
    before = git_log(vault_path)
    line = one_error_line(run("st", "set", "topic", "geodesy", "--ttl", ttl), 2)
    assert "invalid ttl" in line and "never" in line
    assert git_log(vault_path) == before
    assert not (vault_path / STACK).exists() or "topic" not in stack(vault_path)


def test_set_get_list_clear(memory: Memory, vault_path: Path) -> None:
    entry = shortterm.set_key(memory, "topic", "geodesy", timedelta(hours=2))
    assert entry.expires_at == FIXED_NOW + timedelta(hours=2)
    shortterm.set_key(memory, "mood", "focused")  # default ttl: lifecycle.short_term_ttl_hours
    shortterm.set_key(memory, "pinned", {"a": 1}, keep=True)
    assert shortterm.get_key(memory, "topic") == "geodesy"
    assert shortterm.get_key(memory, "pinned") == {"a": 1}
    data = stack(vault_path)
    assert data["mood"] == {
        "value": "focused",
        "set_at": FIXED_NOW.isoformat(),
        "expires_at": (FIXED_NOW + timedelta(hours=24)).isoformat(),
    }
    assert list(shortterm.list_keys(memory)) == ["mood", "pinned", "topic"]
    assert git_log(vault_path)[0].startswith("st set: pinned")
    assert shortterm.clear(memory, "topic") == 1
    with pytest.raises(NoteNotFound):
        shortterm.get_key(memory, "topic")
    assert shortterm.clear(memory) == 2
    assert stack(vault_path) == {}
    assert git_log(vault_path)[0] == "st clear: all (2 keys)"


def test_expired_keys_disappear_from_reads_at_once(memory: Memory, vault_path: Path) -> None:
    shortterm.set_key(memory, "k", "v", timedelta(minutes=5))
    memory.now = lambda: FIXED_NOW + timedelta(minutes=6)
    with pytest.raises(NoteNotFound, match="expired"):
        shortterm.get_key(memory, "k")
    assert shortterm.list_keys(memory) == {}
    assert "k" in stack(vault_path)  # reading never rewrites: expire() removes it


def test_hand_written_values_never_expire(memory: Memory, vault_path: Path) -> None:
    (vault_path / STACK).write_text('{"editor": "vim"}', encoding="utf-8")
    memory.now = lambda: FIXED_NOW + timedelta(days=400)
    assert shortterm.get_key(memory, "editor") == "vim"
    assert shortterm.expire(memory) == 0


def age(path: Path, hours: float) -> None:
    when = (FIXED_NOW - timedelta(hours=hours)).timestamp()
    os.utime(path, (when, when))


def test_expire_removes_keys_and_archives_temp_files_in_one_commit(memory: Memory, vault_path: Path) -> None:
    shortterm.set_key(memory, "old", 1, timedelta(hours=1))
    shortterm.set_key(memory, "fresh", 2, timedelta(hours=10))
    temp = vault_path / "memory/short-term/temp"
    (temp / "scratch.txt").write_text("scratch\n", encoding="utf-8")
    (temp / "fresh.md").write_text("# fresh\n", encoding="utf-8")
    (temp / "due.md").write_text(
        "---\nid: due-1\nexpires: 2026-11-22T13:00:00Z\n---\n# due\n", encoding="utf-8"
    )
    age(temp / "scratch.txt", 30)
    age(temp / "fresh.md", 1)
    age(temp / "due.md", 0)  # archived under its file date: the fixed clock's day, not today's
    commits = len(git_log(vault_path))
    later = FIXED_NOW + timedelta(hours=2)
    assert shortterm.expire(memory, now=later) == 3
    assert len(git_log(vault_path)) == commits + 1
    assert git_log(vault_path)[0] == "st expire: 1 key(s), 2 temp file(s) archived"
    assert list(stack(vault_path)) == ["fresh"]
    assert sorted(p.name for p in temp.iterdir()) == [".gitkeep", "fresh.md"]
    archived = vault_path / "memory/archive/sessions/2026/11/21/temp/scratch.txt"
    assert archived.read_text(encoding="utf-8") == "scratch\n"
    due = (vault_path / "memory/archive/sessions/2026/11/22/temp/due.md").read_text(encoding="utf-8")
    assert "promoted_from: memory/short-term/temp/due.md" in due and "id: due-1" in due  # tmem's own
    tracked = os.popen(f"git -C '{vault_path}' ls-files memory/archive").read()
    assert "temp/scratch.txt" in tracked
    assert shortterm.expire(memory, now=later) == 0
    assert len(git_log(vault_path)) == commits + 1


def test_bad_keys(memory: Memory) -> None:
    for key in ["", " ", "a\nb", "x" * 201]:
        with pytest.raises(BadInput):
            shortterm.set_key(memory, key, "v")


@pytest.mark.parametrize("broken", ["{not json", "[" * 100_000])
def test_a_broken_stack_file_is_reported_not_overwritten(
    memory: Memory, vault_path: Path, broken: str
) -> None:
    (vault_path / STACK).write_text(broken, encoding="utf-8")
    with pytest.raises(Exception, match="not valid JSON"):
        shortterm.set_key(memory, "k", "v")
    assert (vault_path / STACK).read_text(encoding="utf-8") == broken


# ---- CLI ------------------------------------------------------------------------------------------


def test_cli_st(run: Run, vault_path: Path) -> None:
    invoke = run
    out = ok(invoke("st", "set", "topic", "gps drift", "--ttl", "2h")).stdout
    assert out.startswith("set topic (expires ")
    assert as_json(invoke("st", "get", "topic", "--json")) == {"key": "topic", "value": "gps drift"}
    entry = as_json(invoke("st", "set", "mood", "calm", "--json"))
    assert entry["key"] == "mood" and entry["value"] == "calm" and entry["expires_at"]
    assert ok(invoke("st", "clear", "mood")).stdout == "cleared 1 key(s)\n"
    assert ok(invoke("st", "get", "topic")).stdout == "gps drift\n"
    data = json.loads(ok(invoke("st", "list", "--json")).stdout)
    assert data["topic"]["value"] == "gps drift"
    ok(invoke("st", "set", "pin", "x", "--ttl", "never"))
    assert json.loads((vault_path / STACK).read_text())["pin"]["expires_at"] is None
    missing = invoke("st", "get", "nope")
    assert missing.exit_code == 1 and missing.stderr.startswith("tmem: no short-term key")
    bad = invoke("st", "set", "k", "v", "--ttl", "soon")
    assert bad.exit_code == 2 and bad.stderr.strip().startswith("tmem: invalid ttl 'soon'")
    assert json.loads(ok(invoke("st", "clear", "--json")).stdout) == {"cleared": 2}
    assert json.loads(ok(invoke("st", "expire", "--json")).stdout) == {"expired": 0}
