"""Obsidian's templates folder (core Templates plugin, Templater): notes full of placeholders,
left out of the index, counted by `tmem status`, still read by `tmem show`. The settings naming the
folder come through git, so they only narrow what this machine indexes, inside the vault."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import as_json, ok, write

from tiered_memory.storage import editor_templates

Run = Callable[..., Result]
CORE = ".obsidian/templates.json"
TEMPLATER = ".obsidian/plugins/templater-obsidian/data.json"
MONTHLY = "---\ntags: [monthly-log]\n---\n# {{date:YYYY-MM}}\n#monthly-log\n- distance:: \n"
LOG = "# November\n#monthly-log\nRan 40 km this month, mostly along the river.\n"


def _found(run: Run, query: str) -> list[str]:
    return [r["path"] for r in as_json(run("search", "--json", "--mode", "keyword", query))["results"]]


def test_notes_in_obsidian_s_templates_folders_are_not_indexed(run: Run, vault_path: Path) -> None:
    write(vault_path, CORE, json.dumps({"folder": "Templates"}))
    write(
        vault_path,
        TEMPLATER,
        json.dumps({"templates_folder": "Meta/Templater/", "trigger_on_file_creation": True}),
    )
    write(vault_path, "Templates/Monthly log.md", MONTHLY)
    write(vault_path, "Meta/Templater/Weekly.md", "# <% tp.file.title %>\n#monthly-log\n")
    write(vault_path, "Logs/2026-11.md", LOG)
    assert _found(run, "#monthly-log") == ["Logs/2026-11.md"]
    text = ok(run("status")).stdout
    assert "templates:  2 in the editor's templates folder (Templates, Meta/Templater): not indexed" in text
    assert "skipped:" not in text
    findings = json.loads(run("doctor", "--json").stdout)["findings"]
    [index] = [f for f in findings if f["check"] == "index" and f["ok"]]
    assert index["message"].startswith("1 note file(s), all indexed")
    assert "2 in the editor's templates folder, not indexed" in index["message"]
    shown = as_json(run("show", "Templates/Monthly log.md", "--json"))
    assert "{{date:YYYY-MM}}" in shown["body"] and shown["tags"] == ["monthly-log"]


def test_a_top_folder_that_is_an_obsidian_vault_names_its_own_templates_folder(
    run: Run, vault_path: Path
) -> None:
    """A Quartz site adopted whole: the Obsidian vault is `content/`, its settings in
    `content/.obsidian/`, and the folder they name is inside `content/`."""
    write(vault_path, "content/" + CORE, json.dumps({"folder": "templates"}))
    write(vault_path, "content/templates/Monthly log.md", MONTHLY)
    write(vault_path, "content/Logs/2026-11.md", LOG)
    write(vault_path, "templates/Kept.md", "# Kept\n#monthly-log\n")  # the root's own folder of that name
    assert sorted(_found(run, "#monthly-log")) == ["content/Logs/2026-11.md", "templates/Kept.md"]
    assert editor_templates.folders(vault_path) == ("content/templates",)


def test_a_templates_folder_named_or_unnamed_later_is_applied_to_what_is_indexed(
    run: Run, vault_path: Path
) -> None:
    write(vault_path, "Templates/Monthly log.md", MONTHLY)
    write(vault_path, "Logs/2026-11.md", LOG)
    assert sorted(_found(run, "#monthly-log")) == ["Logs/2026-11.md", "Templates/Monthly log.md"]
    write(vault_path, CORE, json.dumps({"folder": "Templates"}))  # a pull brings the setting
    assert _found(run, "#monthly-log") == ["Logs/2026-11.md"]
    (vault_path / CORE).unlink()
    assert sorted(_found(run, "#monthly-log")) == ["Logs/2026-11.md", "Templates/Monthly log.md"]


@pytest.mark.parametrize(
    "settings",
    [
        {"folder": "../outside"},
        {"folder": "Templates/../Logs"},
        {"folder": "/etc"},
        {"folder": str(Path("/tmp").resolve())},
        {"folder": ""},
        {"folder": "."},
        {"folder": ".obsidian"},
        {"folder": ["Logs"]},
        {"folder": "Linked"},  # a symbolic link to Logs
        {"folder": "Nowhere"},
        {"folder": "memory"},
        {"folder": "memory/long-term"},
    ],
)
def test_a_setting_that_would_leave_the_vault_or_follow_a_link_is_ignored(
    vault_path: Path, settings: dict[str, object]
) -> None:
    write(vault_path, "Logs/2026-11.md", LOG)
    write(vault_path, "memory/long-term/run.md", LOG)
    os.symlink("Logs", vault_path / "Linked")
    write(vault_path, CORE, json.dumps(settings))
    assert editor_templates.folders(vault_path) == ()


def test_malformed_or_linked_settings_are_ignored_without_a_traceback(run: Run, vault_path: Path) -> None:
    write(vault_path, "Logs/2026-11.md", LOG)
    write(vault_path, CORE, '{"folder": "Logs"')  # cut off mid-write
    write(vault_path, TEMPLATER, "[" * 100_000)  # nested past the recursion limit
    assert editor_templates.folders(vault_path) == ()
    result = run("status")
    assert result.exit_code == 0 and "Traceback" not in result.output
    assert _found(run, "#monthly-log") == ["Logs/2026-11.md"]
    # A settings file that is a link (to one naming Logs) is not read.
    write(vault_path, "elsewhere.json", json.dumps({"folder": "Logs"}))
    (vault_path / CORE).unlink()
    os.symlink(vault_path / "elsewhere.json", vault_path / CORE)
    assert editor_templates.folders(vault_path) == ()
    # Nor the folder reached through a linked .obsidian.
    (vault_path / CORE).unlink()
    (vault_path / ".obsidian").rename(vault_path / "obsidian-real")
    write(vault_path, "obsidian-real/templates.json", json.dumps({"folder": "Logs"}))
    os.symlink("obsidian-real", vault_path / ".obsidian")
    assert editor_templates.folders(vault_path) == ()
