"""What the commands without an operation's own result print with `--json`, pinned byte for byte
through the command line (key order included): the daemon's start, stop and status, `st get`, the
schedule, `install`, git's merge driver and post-merge hook. Each shape is a record's `to_dict()`
or a present/ function's, never a dict built in the door."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from daemon_process import stop_detached, tmem
from fake_system import FakeSystem, which
from helpers import FAKE_CONFIG, ok

from tiered_memory.cli import cli
from tiered_memory.daemon import schedule
from tiered_memory.storage.vault import init_vault

Run = Callable[..., Result]


def _dumps(value: object) -> str:
    """What `--json` prints for `value`: two-space indent, UTF-8 as is, one newline."""
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


def test_daemon_stop_and_status_when_none_runs(run: Run) -> None:
    stopped = ok(run("daemon", "stop", "--json"))
    assert stopped.stdout == '{\n  "running": false,\n  "stopped": false\n}\n'
    down = run("daemon", "status", "--json")
    assert down.exit_code == 1
    assert down.stdout == '{\n  "running": false,\n  "pid": null,\n  "last_heartbeat": null\n}\n'


@pytest.fixture
def daemon_vault(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    yield root
    stop_detached(root)


@pytest.mark.slow
def test_daemon_start_again_status_and_stop(daemon_vault: Path) -> None:
    started = tmem(daemon_vault, "daemon", "start", "--json")
    assert started.returncode == 0, started.stderr
    pid = json.loads(started.stdout)["pid"]
    assert started.stdout == _dumps({"running": True, "started": True, "pid": pid})
    again = tmem(daemon_vault, "daemon", "start", "--json")
    assert again.stdout == _dumps({"running": True, "started": False, "pid": pid})
    status = tmem(daemon_vault, "daemon", "status", "--json")
    data = json.loads(status.stdout)
    assert list(data)[:3] == ["running", "pid", "vault"] and data["running"] is True
    assert data["pid"] == pid and status.stdout == _dumps(data)
    stopped = tmem(daemon_vault, "daemon", "stop", "--json")
    assert stopped.stdout == _dumps({"running": False, "stopped": True, "pid": pid})


def test_st_get_prints_the_key_and_its_value(run: Run) -> None:
    ok(run("st", "set", "branch", '{"name": "main", "ahead": 2}'))
    got = ok(run("st", "get", "branch", "--json"))
    assert got.stdout == '{\n  "key": "branch",\n  "value": "{\\"name\\": \\"main\\", \\"ahead\\": 2}"\n}\n'


def test_post_merge_prints_how_many_notes_it_reindexed(run: Run) -> None:
    assert ok(run("post-merge", "--json")).stdout == '{\n  "reindexed": 0\n}\n'


def test_merge_driver_prints_the_path_the_conflict_and_its_remarks(tmp_path: Path) -> None:
    def merge(base: str, ours: str, theirs: str) -> Result:
        for name, text in (("O", base), ("A", ours), ("B", theirs)):
            (tmp_path / name).write_text(text, encoding="utf-8")
        args = ["merge-driver", *(str(tmp_path / n) for n in "OAB"), "memory/long-term/été.md", "--json"]
        return CliRunner().invoke(cli, args, catch_exceptions=False)

    note = "---\ntitle: Été\n---\n{}\n"
    clean = ok(merge(note.format("one"), note.format("one"), note.format("two")))
    remarks = json.loads(clean.stdout)["notes"]
    assert clean.stdout == _dumps({"path": "memory/long-term/été.md", "conflict": False, "notes": remarks})
    both = merge(note.format("one"), note.format("ours"), note.format("theirs"))
    assert json.loads(both.stdout)["conflict"] is True
    assert both.stdout.startswith(
        '{\n  "path": "memory/long-term/été.md",\n  "conflict": true,\n  "notes": ['
    )


def test_schedule_install_print_remove_and_show(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-scheduler"))  # no crontab, systemctl or launchctl
    printed = ok(run("schedule", "install", "--method", "cron", "--print", "--json"))
    line = json.loads(printed.stdout)["cron_line"]
    assert printed.stdout == _dumps(
        {"installed": False, "method": "cron", "files": {}, "cron_line": line, "units": []}
    )
    assert ok(run("schedule", "remove", "--json")).stdout == '{\n  "removed": []\n}\n'
    shown = ok(run("schedule", "show", "--json")).stdout
    assert shown == '{\n  "cron": [],\n  "systemd": [],\n  "launchd": [],\n  "outdated": []\n}\n'


def test_install_print_lists_each_file(vault_path: Path) -> None:
    args = ["install", "codex", "--vault", str(vault_path), "--print", "--json"]
    printed = ok(CliRunner().invoke(cli, args, catch_exceptions=False))
    data = json.loads(printed.stdout)
    assert list(data) == ["agent", "dry_run", "uninstall", "files", "notes"]
    assert data["agent"] == "codex" and data["dry_run"] is True and data["uninstall"] is False
    assert data["files"] and all(
        list(item) == ["path", "changed", "notes", "backup", "diff"] for item in data["files"]
    )
    assert printed.stdout == _dumps(data)
    nothing = ok(
        CliRunner().invoke(cli, ["install", "codex", "--uninstall", "--json"], catch_exceptions=False)
    )
    assert nothing.stdout == _dumps(
        {"agent": "codex", "dry_run": False, "uninstall": True, "files": [], "notes": []}
    )


def test_install_daemon_adds_what_starts_it_at_login(
    vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def install(*args: str, programs: tuple[str, ...] = ()) -> str:
        fake = FakeSystem()
        monkeypatch.setattr(schedule, "system", lambda: (fake, which(*programs), "linux"))
        argv = ["install", "codex", "--vault", str(vault_path), "--daemon", "--json", *args]
        return ok(CliRunner().invoke(cli, argv, catch_exceptions=False)).stdout

    printed = install("--print", programs=("systemctl",))
    data = json.loads(printed)
    assert list(data) == ["agent", "dry_run", "uninstall", "files", "notes", "daemon"]
    assert list(data["daemon"]) == ["method", "files", "cron_line", "units", "removed"]
    assert data["daemon"]["method"] == "systemd" and data["daemon"]["removed"] == []
    assert printed == _dumps(data)
    by_hand = json.loads(install("--print"))["daemon"]
    assert json.dumps(by_hand) == json.dumps({"method": None, "files": {}, "removed": []})
    gone = json.loads(install("--uninstall", programs=("systemctl",)))["daemon"]
    assert json.dumps(gone) == json.dumps({"method": None, "files": {}, "removed": []})
