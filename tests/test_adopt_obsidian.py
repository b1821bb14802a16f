"""An Obsidian vault adopted in place, searched, maintained for a month and synced between two
machines: tmem never changes a byte of a file a person wrote unless a command named that file."""

from __future__ import annotations

import json
import os
import re
import subprocess
from datetime import UTC, datetime, timedelta
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
    assert daily["title"] == "2026-11-20" and daily["fields"] == {"mood": ["good"]}
    plan = data(tmem(root, "show", "projects-survey-plan", "--json"))
    assert plan["tier"] == "long" and plan["fields"] == {"Owner": ["Alice"]}
    geodesy = data(tmem(root, "show", "geodesy", "--json"))
    assert geodesy["aliases"] == ["datum notes", "CRS"]
    assert geodesy["tags"] == ["geodesy", "survey", "geodesy/datum"]
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
        stats = json.loads((side / STATS_FILE).read_text())
        assert stats["projects-survey-plan"]["access_count"] == 2, (side, stats, git(side, "log", "--stat"))
    for side in (laptop, desktop):  # the picture the other machine added is found by its name
        assert hits(side, "diagram")[0]["path"] == "Projects/diagram.png"


def test_attachments_are_found_by_their_file_names(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    adopt(root)
    found = hits(root, "report 2026")
    assert found[0]["path"] == "Attachments/Report 2026.pdf"
    assert (found[0]["category"], found[0]["title"]) == ("attachment", "Report 2026.pdf")
    assert found[0]["snippet"].startswith("PDF attachment, ")
    text = ok(tmem(root, "search", "map.png")).stdout
    assert "map.png" in text and "Projects/map.png" in text
    # A query that does not name the file finds the notes first, the attachment after them.
    found = data(tmem(root, "search", "--json", "--mode", "keyword", "--", "projects plan"))["results"]
    paths = [h["path"] for h in found]
    assert (paths[0], paths[-1]) == ("Projects/Survey plan.md", "Projects/map.png") and len(paths) > 2
    assert not (root / ".tmem-access.jsonl").exists() or "map.png" not in (
        root / ".tmem-access.jsonl"
    ).read_text(encoding="utf-8")  # a file found is not a memory recalled
    (root / "Projects/map.png").rename(root / "Projects/site-plan.png")
    assert "Projects/map.png" not in [h["path"] for h in hits(root, "map.png")]
    assert hits(root, "site plan")[0]["path"] == "Projects/site-plan.png"


def test_links_related_and_old_ids_after_a_move(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    adopt(root)
    found = data(tmem(root, "links", "projects-survey-plan", "--json"))
    assert [(x["target"], (x["note"] or {}).get("id"), x["attachment"]) for x in found["outgoing"]] == [
        ("Geodesy", "geodesy", ""),
        ("map.png", None, "Projects/map.png"),
    ]
    assert [x["source"]["id"] for x in found["backlinks"]] == ["daily-2026-11-20", "home"]
    text = ok(tmem(root, "links", "projects-survey-plan")).stdout
    assert "Projects/map.png  (attachment)" in text and "linked from:" in text
    related = data(tmem(root, "related", "geodesy", "--json"))["notes"]
    assert {r["id"] for r in related} >= {"home", "projects-survey-plan"}
    # The person moves and renames a note in Obsidian: its old id still finds it.
    (root / "Archive").mkdir()
    (root / "Geodesy.md").rename(root / "Archive/Geodesy (old).md")
    shown = data(tmem(root, "show", "geodesy", "--json"))
    assert shown["path"] == "Archive/Geodesy (old).md" and shown["title"] == "Geodesy (old)"


def test_tmem_edit_bumps_updated_of_its_own_notes_only(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    written = adopt(root)
    added = data(tmem(root, "add", "--json", "--", "The survey uses GNSS receivers."))["note"]
    own = root / added["path"]
    lines = own.read_text(encoding="utf-8").splitlines(keepends=True)
    before = "".join("updated: 2026-01-01\n" if x.startswith("updated:") else x for x in lines)
    own.write_text(before, encoding="utf-8")
    editor = {"EDITOR": 'sh -c \'printf "Edited by hand.\\n" >> "$0"\''}
    runner = CliRunner()
    edit = ["--vault", str(root), "edit"]
    ok(runner.invoke(cli, [*edit, added["id"]], env=editor, catch_exceptions=False))
    after = own.read_text(encoding="utf-8")
    assert after.endswith("Edited by hand.\n") and "updated: 2026-01-01\n" not in after
    assert len(after.splitlines()) == len(before.splitlines()) + 1  # only `updated` changed
    ok(runner.invoke(cli, [*edit, "Home.md"], env=editor, catch_exceptions=False))
    assert (root / "Home.md").read_bytes() == written["Home.md"] + b"Edited by hand.\n"
    assert "Home.md" not in git(root, "status", "--porcelain")


def test_tmem_update_dates_a_note_without_adding_frontmatter_to_a_persons(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    written = adopt(root)
    old = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    os.utime(root / "Home.md", (old, old))  # written long ago: its date is that mtime
    before = data(tmem(root, "show", "home", "--json"))["updated"]
    assert before.startswith("2026-01-01")
    ok(tmem(root, "update", "home", "--append", "Laptop line."))
    text = (root / "Home.md").read_bytes()
    assert text == written["Home.md"] + b"\nLaptop line.\n"  # no frontmatter appeared
    assert data(tmem(root, "show", "home", "--json"))["updated"] > before
    added = data(tmem(root, "add", "--json", "--", "The survey uses GNSS receivers."))["note"]
    own = root / added["path"]
    own.write_text(re.sub(r"(?m)^updated: .*$", "updated: 2026-01-01", own.read_text(encoding="utf-8")))
    ok(tmem(root, "update", added["id"], "--append", "And a total station."))
    assert "updated: 2026-01-01" not in own.read_text(encoding="utf-8")
    assert added["id"] in [n["id"] for n in data(tmem(root, "list", "--since", "2026-11-01", "--json"))]
