"""One rule for what stays out unless `--include-sensitive` asks for it, shared by `context` and
`export` (`model.privacy.withheld`): a sensitive note, and one sealed because of its path."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import FAKE_CONFIG, as_json, commit, ok, write

from tiered_memory.model.privacy import withheld
from tiered_memory.storage.vault import Vault

Run = Callable[..., Result]
SEALED_BY_PATH = "memory/long-term/relationships/meilin.md"  # under the default encrypted_paths
PLAIN = "memory/long-term/knowledge_base/domains/kites.md"


@pytest.fixture
def rule_vault(vault_path: Path) -> Path:
    write(vault_path, "tmem.yaml", FAKE_CONFIG + "privacy:\n  encrypt: sensitive\n")
    # Written by hand while no key is set up: stored in plain text, sealed by its path all the same.
    write(vault_path, SEALED_BY_PATH, "---\nid: meilin\n---\nMeilin flies red kites on the lagoon dunes.\n")
    write(vault_path, PLAIN, "---\nid: kites\n---\nKites need steady wind over the lagoon dunes.\n")
    commit(Vault(vault_path), ["tmem.yaml", SEALED_BY_PATH, PLAIN], "notes by hand")
    return vault_path


def _context_paths(run: Run, *args: str) -> set[str]:
    return {m["path"] for m in as_json(run("context", "--format", "json", *args))["memories"]}


def _export_paths(run: Run, out: Path, *args: str) -> set[str]:
    ok(run("export", "-o", str(out), *args))
    return {n["path"] for n in json.loads(out.read_text(encoding="utf-8"))["notes"]}


@pytest.mark.parametrize("query", [("--query", "kites lagoon dunes"), ()], ids=["query", "no-query"])
def test_context_leaves_out_what_export_leaves_out(
    rule_vault: Path, run: Run, tmp_path: Path, query: tuple[str, ...]
) -> None:
    exported = _export_paths(run, tmp_path / "out.json")
    assert SEALED_BY_PATH not in exported and PLAIN in exported
    shown = _context_paths(run, *query)
    assert SEALED_BY_PATH not in shown and PLAIN in shown

    assert SEALED_BY_PATH in _export_paths(run, tmp_path / "all.json", "--include-sensitive")
    assert SEALED_BY_PATH in _context_paths(run, *query, "--include-sensitive")


def test_the_rule() -> None:
    paths = ["long-term/relationships/"]
    assert withheld("memory/long-term/a.md", True, "none", paths)
    assert withheld(SEALED_BY_PATH, False, "sensitive", paths)
    assert not withheld(SEALED_BY_PATH, False, "none", paths)  # encryption off: nothing sealed
    assert not withheld(PLAIN, False, "sensitive", paths)
    assert not withheld("memory/long-term/relationships/state.json", False, "sensitive", paths)
