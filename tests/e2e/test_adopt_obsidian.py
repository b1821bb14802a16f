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


# The same vault grown the way a person's does: one folder per language, notes deep in subfolders
# whose first heading is not their file name, aliases, inline #tags and [[links]] across languages.
LANGUAGE_NOTES: dict[str, bytes] = {
    "en/Projects/Field work/2026 season.md": (
        "---\naliases: [coastal campaign]\ntags: [fieldwork]\n---\n# Summer survey on the coast\n\n"
        "Twelve GNSS stations along the cliffs, see [[Geodesy]] and [[测绘计划]]. #project/coast\n"
    ).encode(),
    "en/Reading/Papers on tides.md": (
        b"# What I read about tides\n\nHarmonic analysis of GNSS tide gauge records, read before the "
        b"summer survey on the coast: a survey on the coast in summer meets the highest tides. #reading\n"
    ),
    "zh/项目/外业/测绘计划.md": (
        "---\naliases: [外业方案]\ntags: [测绘]\n---\n# 二〇二六年海岸测量\n\n"
        "沿海岸布设十二个 GNSS 控制点，坐标系使用 CGCS2000。参见 [[2026 season]]。 #项目\n"
    ).encode(),
    "zh/笔记/高程基准.md": (
        "# 关于高程\n\n高程基准采用 1985 国家高程基准，GNSS 水准联测。"
        "二〇二六年海岸测量前先完成海岸水准测量。\n"
    ).encode(),
    "ja/研究/潮位観測.md": (
        "---\naliases: [検潮所メモ]\n---\n# 潮汐の記録について\n\n"
        "検潮所の GNSS 観測で地盤沈下を補正する。[[高程基準]] も参照。 #観測\n"
    ).encode(),
    "ja/日記/2026-11-21.md": "今日は海岸で GNSS の受信機を設置した。潮汐の記録についても調べた。\n".encode(),
}
# (question, the note it must find first): by file name, by first heading, by alias, in all three
# languages.
LANGUAGE_QUESTIONS: list[tuple[str, str]] = [
    ("2026 season", "en/Projects/Field work/2026 season.md"),
    ("Papers on tides", "en/Reading/Papers on tides.md"),
    ("测绘计划", "zh/项目/外业/测绘计划.md"),
    ("高程基准", "zh/笔记/高程基准.md"),
    ("潮位観測", "ja/研究/潮位観測.md"),
    ("Summer survey on the coast", "en/Projects/Field work/2026 season.md"),
    ("二〇二六年海岸测量", "zh/项目/外业/测绘计划.md"),
    ("潮汐の記録について", "ja/研究/潮位観測.md"),
    ("coastal campaign", "en/Projects/Field work/2026 season.md"),
    ("外业方案", "zh/项目/外业/测绘计划.md"),
    ("検潮所メモ", "ja/研究/潮位観測.md"),
    ("datum notes", "Geodesy.md"),
]
# (question, folder, the note it must find first there; in the whole vault another comes first).
FOLDER_QUESTIONS: list[tuple[str, str, str]] = [
    ("2026", "en/", "en/Projects/Field work/2026 season.md"),
    ("高程", "ja/", "ja/研究/潮位観測.md"),
    ("GNSS", "zh/项目/", "zh/项目/外业/测绘计划.md"),
    ("GNSS", "ja/研究/", "ja/研究/潮位観測.md"),
]


def first(root: Path, question: str) -> str | None:
    found = data(tmem(root, "search", "--json", "--mode", "keyword", "--", question))["results"]
    return found[0]["path"] if found else None


def test_a_multilingual_obsidian_vault_adopted_maintained_for_a_month_and_synced(tmp_path: Path) -> None:
    laptop = tmp_path / "laptop"
    for rel, text in LANGUAGE_NOTES.items():
        (laptop / rel).parent.mkdir(parents=True, exist_ok=True)
        (laptop / rel).write_bytes(text)
    written = {**adopt(laptop), **LANGUAGE_NOTES}
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    git(laptop, "remote", "add", "origin", str(remote))
    ok(tmem(laptop, "sync"))
    desktop = tmp_path / "desktop"
    subprocess.run(["git", "clone", "-q", str(remote), str(desktop)], check=True)
    ok(tmem(None, "init", "--adopt", str(desktop)))
    for day in range(31):  # a month of daily use on the laptop, a sync now and then
        now = (FIXED_NOW + timedelta(days=day)).isoformat()
        # Recall raises these notes, each a rival of a note asked for by its heading below.
        hits(laptop, ["survey plan", "受信機", "水准", "tides"][day % 4])
        ok(tmem(laptop, "maintain", "--now", now))
        if day % 10 == 9:
            ok(tmem(laptop, "sync"))
            ok(tmem(desktop, "sync"))
    ok(tmem(laptop, "sync"))
    ok(tmem(desktop, "sync"))
    shared = {k: v for k, v in written.items() if k not in (".obsidian/workspace.json", ".trash/deleted.md")}
    assert changed_files(laptop, written) == []
    assert changed_files(desktop, shared) == []  # the clone holds every byte the person wrote
    stats = json.loads((desktop / STATS_FILE).read_text(encoding="utf-8"))  # the month's recall, synced
    assert stats["ja-日記-2026-11-21"]["access_count"] >= 8, stats
    tagged = data(tmem(desktop, "list", "--tag", "project/coast", "--json"))
    assert [n["path"] for n in tagged] == ["en/Projects/Field work/2026 season.md"]
    for side in (laptop, desktop):
        for question, expected in LANGUAGE_QUESTIONS:
            assert first(side, question) == expected, (side.name, question)
        for question, folder, expected in FOLDER_QUESTIONS:
            assert first(side, question) != expected, (side.name, question)
            found = data(
                tmem(side, "search", "--json", "--mode", "keyword", "--folder", folder, "--", question)
            )
            paths = [h["path"] for h in found["results"]]
            assert paths[0] == expected and all(p.startswith(folder) for p in paths), (
                side.name,
                question,
                paths,
            )
    assert changed_files(laptop, written) == []
