"""Where `tmem maintain` reports, in a vault a person already had (an Obsidian vault adopted in
place): no file among their notes, only real changes listed, no report among search results unless
asked for, and the counts it prints the ones `tmem status` shows."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from helpers import FAKE_CONFIG, FIXED_NOW, build_obsidian_vault, git, ok

from tiered_memory.cli.main import cli
from tiered_memory.config import CONFIG_NAME, load_config
from tiered_memory.errors import EXIT_BAD_INPUT, ConfigError
from tiered_memory.storage.vault import init_vault

NOW = FIXED_NOW.isoformat()  # 2026-11-22 12:00 UTC
REPORT = ".tmem-reports/2026-11-22.md"
KAYAK = "Trips/Kayak trip.md"
TIERS = 'folders:\n  tiers: {"Daily/**": short}\n'
# What an earlier version wrote into a vault (a note among the person's, with a searchable body).
OLD_REPORT = (
    "---\nid: daily-2026-11-01\ntitle: Maintenance 2026-11-01\ncategory: note\ntags:\n- maintenance\n"
    "created: 2026-11-01T03:30:00Z\nupdated: 2026-11-01T03:30:00Z\n---\n# Maintenance 2026-11-01\n\n"
    "## Run at 03:30:00 UTC\n\n### Most recalled (1)\n\n1. Kayak trip (`trips-kayak-trip`): 2 recall(s)\n"
)


def tmem(root: Path | None, *args: str) -> Result:
    prefix = ["--vault", str(root)] if root else []
    return CliRunner().invoke(cli, [*prefix, *args], catch_exceptions=False)


def data(result: Result) -> Any:
    return json.loads(ok(result).stdout)


def adopt(root: Path, config: str = "") -> None:
    build_obsidian_vault(root)
    (root / "Trips").mkdir()
    (root / KAYAK).write_text(
        "# Kayak trip\n\nWe paddled the kayak round the north cape.\n", encoding="utf-8"
    )
    (root / CONFIG_NAME).write_text(FAKE_CONFIG + TIERS + config, encoding="utf-8")
    ok(tmem(None, "init", "--adopt", str(root)))


def paths(root: Path, query: str, *args: str) -> list[str]:
    found = data(tmem(root, "search", "--json", "--mode", "keyword", *args, "--", query))["results"]
    return [hit["path"] for hit in found]


def visible_files(root: Path) -> set[str]:
    """Every file a person sees in the vault's folders (Obsidian hides what starts with a dot)."""
    out = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        out |= {(Path(folder) / f).relative_to(root).as_posix() for f in files if not f.startswith(".")}
    return out


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    adopt(root)
    return root


def recall_and_maintain(root: Path) -> dict[str, Any]:
    """Searches (recalls of hand-written notes, whose confidence is already 1), then a run."""
    assert paths(root, "kayak") == [KAYAK]
    paths(root, "geodesy datum")
    result: dict[str, Any] = data(tmem(root, "maintain", "--json", "--now", NOW))
    return result


def test_maintain_writes_no_file_among_the_persons_notes(vault: Path) -> None:
    before = visible_files(vault)
    result = recall_and_maintain(vault)
    assert result["changed"] and result["commit"]
    assert visible_files(vault) == before
    assert not (vault / "memory").exists()
    assert result["report"] == REPORT
    assert REPORT in git(vault, "ls-files")  # travels with the vault
    assert git(vault, "status", "--porcelain") == ""
    message = git(vault, "log", "-1", "--format=%B")
    assert message.startswith("maintain 2026-11-22: 0 moved, 0 merged, 0 decayed, 4 recalled")
    assert f"report: {REPORT}" in message and "notes per tier: short 1, mid 0, long 7, archive 0" in message


def test_the_report_lists_only_real_changes(vault: Path) -> None:
    result = recall_and_maintain(vault)
    text = (vault / result["report"]).read_text(encoding="utf-8")
    assert "1 -> 1" not in text and "Recalled since the last run" not in text  # no confidence moved
    assert "4 note(s) recalled 4 time(s), confidence unchanged: counted." in text
    assert "Kayak trip (`trips-kayak-trip`): 1 recall(s)" in text  # what was recalled most
    assert "category: report" in text
    assert "1 -> 1" not in git(vault, "log", "-1", "--format=%B")
    shown = ok(tmem(vault, "maintain", "--dry-run", "--now", NOW)).stdout
    assert shown == "nothing to do\n"
    assert [c["before"] == c["after"] == 1.0 for c in result["boosts"]] == [True] * 4


def test_a_report_is_no_search_result_unless_asked_for(vault: Path) -> None:
    recall_and_maintain(vault)
    (vault / "memory/archive/daily").mkdir(parents=True, exist_ok=True)
    (vault / "memory/archive/daily/2026-11-01.md").write_text(OLD_REPORT, encoding="utf-8")
    assert paths(vault, "kayak") == [KAYAK]  # neither today's report nor the old one
    assert paths(vault, "kayak", "--category", "report") == ["memory/archive/daily/2026-11-01.md"]
    assert paths(vault, "kayak", "--category", "note") == [KAYAK]
    # The old report stays as it was: the file is the person's.
    assert (vault / "memory/archive/daily/2026-11-01.md").read_text(encoding="utf-8") == OLD_REPORT


def test_a_visible_report_folder_holds_reports_search_shows_only_when_asked(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    adopt(root, "lifecycle:\n  report_folder: Reports/Maintenance/\n")
    assert paths(root, "kayak") == [KAYAK]
    planned = data(tmem(root, "maintain", "--json", "--dry-run", "--now", NOW))
    result = data(tmem(root, "maintain", "--json", "--now", NOW))
    assert planned["tier_counts"] == result["tier_counts"]
    assert result["report"] == "Reports/Maintenance/2026-11-22.md"
    assert paths(root, "kayak") == [KAYAK]
    assert paths(root, "kayak", "--category", "report") == ["Reports/Maintenance/2026-11-22.md"]
    status = data(tmem(root, "status", "--json"))
    assert {t: n for t, n in result["tier_counts"].items() if n} == status["tiers"] == {"short": 1, "long": 8}


def test_maintain_counts_the_notes_per_tier_as_status_does(vault: Path) -> None:
    result = recall_and_maintain(vault)
    status = data(tmem(vault, "status", "--json"))
    assert {t: n for t, n in result["tier_counts"].items() if n} == status["tiers"]
    assert status["notes"] == 8 and status["tiers"] == {"short": 1, "long": 7}
    assert result["tier_counts"] == {"short": 1, "mid": 0, "long": 7, "archive": 0}
    paths(vault, "kayak")
    shown = ok(tmem(vault, "maintain", "--now", NOW)).stdout
    assert "notes per tier: short 1, mid 0, long 7, archive 0" in shown


@pytest.mark.parametrize(
    "folder",
    ["/tmp/reports", "~/reports", "C:/reports", "../reports", "a/../../b", ".tmem/reports", ".git", ""],
)
def test_a_report_folder_outside_the_vault_is_refused(tmp_path: Path, folder: str) -> None:
    (tmp_path / CONFIG_NAME).write_text(
        f"lifecycle:\n  report_folder: {json.dumps(folder)}\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    message = str(info.value)
    assert message.startswith(f"{CONFIG_NAME}: lifecycle.report_folder must be a folder inside the vault")
    assert "\n" not in message and info.value.exit_code == EXIT_BAD_INPUT
    assert message.endswith(f"(got {folder!r})")
    if folder.startswith(".tmem"):
        assert ", not in tmem's private state" in message


@pytest.mark.parametrize(
    ("folder", "kept"),
    [
        ("Reports/", "Reports"),
        ("memory/archive/daily", "memory/archive/daily"),
        (".tmem-reports", ".tmem-reports"),
    ],
)
def test_a_report_folder_inside_the_vault_is_kept(tmp_path: Path, folder: str, kept: str) -> None:
    (tmp_path / CONFIG_NAME).write_text(f"lifecycle:\n  report_folder: {folder}\n", encoding="utf-8")
    assert load_config(tmp_path).lifecycle.report_folder == kept


def test_two_machines_maintaining_the_same_day_sync_both_reports(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    laptop, desktop = tmp_path / "laptop", tmp_path / "desktop"
    init_vault(laptop, config_text=FAKE_CONFIG)
    git(laptop, "remote", "add", "origin", str(remote))
    ok(tmem(laptop, "add", "--", "The kayak club meets on Thursdays"))
    ok(tmem(laptop, "sync"))
    subprocess.run(["git", "clone", "-q", str(remote), str(desktop)], check=True)
    ok(tmem(None, "init", "--adopt", str(desktop)))
    for side, hour in ((laptop, 9), (desktop, 10)):
        assert paths(side, "kayak")
        when = FIXED_NOW.replace(hour=hour).isoformat()
        assert data(tmem(side, "maintain", "--json", "--now", when))["report"] == REPORT
    ok(tmem(laptop, "sync"))
    synced = data(tmem(desktop, "sync", "--json"))
    ok(tmem(laptop, "sync"))
    assert synced["conflicts"] == []  # both runs' reports kept, no note left to resolve
    for side in (laptop, desktop):
        text = "".join(p.read_text(encoding="utf-8") for p in sorted((side / ".tmem-reports").iterdir()))
        assert "## Run at 09:00:00 UTC" in text and "## Run at 10:00:00 UTC" in text, side
        assert git(side, "status", "--porcelain") == ""
        assert paths(side, "kayak") == paths(laptop, "kayak")  # no report among them
