"""YAML from the vault is bounded: a frontmatter (or tmem.yaml) whose aliases expand to billions of
values, or that is simply too long, is never built. A note over the bound reads as plain text with
a warning, and every command that reads it finishes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from helpers import commit, write

from tiered_memory.config import load_config
from tiered_memory.daemon.client import AUTOSTART_ENV, autostart_wanted
from tiered_memory.errors import ConfigError, NoteParseError
from tiered_memory.model import frontmatter, yaml_dialect
from tiered_memory.model import note as notes
from tiered_memory.model.layout import CONFIG_NAME
from tiered_memory.storage.vault import Vault

ROOT = Path(__file__).resolve().parents[2]


def bomb(levels: int = 9, width: int = 9) -> str:
    """Nine nested levels of nine aliases: a few hundred bytes standing for 9**9 strings."""
    lines = ["lol: &a [" + ", ".join(['"lol"'] * width) + "]"]
    for level in range(1, levels):
        lines.append(
            f"l{level}: &l{level} [" + ", ".join([f"*{'a' if level == 1 else f'l{level - 1}'}"] * width) + "]"
        )
    return "\n".join(lines) + "\n"


BOMB_NOTE = (
    f"---\nid: n-bomb\ntitle: Bomb\n{bomb()}---\n# Bomb\n\nThe body is plain words about lighthouses.\n"
)


def test_alias_bomb_is_read_as_plain_text_with_a_warning() -> None:
    tracemalloc.start()
    try:
        note = notes.parse(BOMB_NOTE, "memory/long-term/bomb.md")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert note.parse_warning == "frontmatter ignored: YAML aliases expand to over 100,000 values"
    assert note.meta == {} and not note.has_frontmatter and note.body == BOMB_NOTE
    assert peak < 5_000_000


def test_frontmatter_over_the_size_bound_is_plain_text() -> None:
    text = f"---\nid: n-long\nsummary: {'x' * (yaml_dialect.MAX_CHARS + 1)}\n---\nbody\n"
    note = notes.parse(text, "memory/long-term/long.md")
    assert note.parse_warning == "frontmatter ignored: YAML longer than 64 KiB"
    assert note.meta == {} and note.body == text


def test_ordinary_aliases_and_merge_keys_still_read() -> None:
    text = (
        "---\nbase: &b {x: 1}\nboth: &l [1, 2]\nagain: *l\nc:\n  <<: *b\n  y: 2\nself: &s [*s]\n---\nbody\n"
    )
    note = notes.parse(text, "memory/long-term/ok.md")
    assert note.parse_warning is None
    assert note.meta["again"] == [1, 2] and note.meta["c"] == {"x": 1, "y": 2}
    assert note.meta["self"][0] is note.meta["self"]


def test_a_bound_just_over_the_values_is_refused_and_just_under_is_read() -> None:
    text = "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9]\nb: [*a, *a]\n"  # 1 + 2 keys + 10 + (1 + 2 * 10) values
    assert yaml_dialect.load(text, max_values=34)["b"][1] == list(range(1, 10))
    with pytest.raises(yaml_dialect.YamlTooLarge):
        yaml_dialect.load(text, max_values=33)


def test_editing_a_bomb_note_is_refused() -> None:
    with pytest.raises(NoteParseError, match="frontmatter ignored"):
        frontmatter.edit_frontmatter(BOMB_NOTE, {"title": "New"})


def test_alias_bomb_in_tmem_yaml_is_one_line(tmp_path: Path) -> None:
    (tmp_path / CONFIG_NAME).write_text(bomb(), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert str(info.value) == f"{CONFIG_NAME}: YAML aliases expand to over 100,000 values"


def test_oversized_tmem_yaml_is_one_line(tmp_path: Path) -> None:
    (tmp_path / CONFIG_NAME).write_text("# " + "x" * (1024 * 1024) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert str(info.value) == f"{CONFIG_NAME}: YAML longer than 1024 KiB"


def test_commands_over_a_bomb_note_finish(vault: Vault, vault_path: Path, tmp_path: Path) -> None:
    """show, show --json, export, search, reindex and status in real processes: each finishes
    (before, each ran for minutes and grew to hundreds of MB)."""
    rel = "memory/long-term/bomb.md"
    write(vault_path, rel, BOMB_NOTE)
    commit(vault, [rel], "a person's note")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMEM_AUTOSTART": "0"}

    def tmem(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "tiered_memory", "--vault", str(vault_path), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    tmem("reindex")
    assert "lighthouses" in tmem("show", rel)
    assert json.loads(tmem("show", rel, "--json"))["warning"].startswith("frontmatter ignored")
    out = tmp_path / "out.json"
    tmem("export", "--output", str(out))
    [entry] = [n for n in json.loads(out.read_text(encoding="utf-8"))["notes"] if n["path"] == rel]
    assert entry["frontmatter"] == {}
    assert rel in tmem("search", "lighthouses", "--mode", "keyword")
    tmem("status")


def test_autostart_does_not_read_an_oversized_tmem_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(AUTOSTART_ENV, raising=False)
    (tmp_path / CONFIG_NAME).write_text("daemon:\n  autostart: true\n", encoding="utf-8")
    assert autostart_wanted(tmp_path)
    (tmp_path / CONFIG_NAME).write_text("# " + "x" * (1024 * 1024) + "\n", encoding="utf-8")
    assert not autostart_wanted(tmp_path)  # a config that does not read: no


@pytest.mark.parametrize(
    "value", ["!!int abc", "!!float x", "!!bool maybe", "!!timestamp soon", "!!int 0o99"]
)
def test_a_tag_on_a_value_it_cannot_build_is_malformed_yaml_not_a_traceback(value: str) -> None:
    """PyYAML's constructors raise ValueError, KeyError or AttributeError there, not a YAMLError:
    a pulled note holding one stopped every read of the vault."""
    with pytest.raises(yaml_dialect.YamlError):
        yaml_dialect.load(f"a: {value}\n")
    note = notes.parse(f"---\na: {value}\n---\nBody.\n", "memory/long-term/n.md")
    assert note.parse_warning == "malformed YAML frontmatter"
