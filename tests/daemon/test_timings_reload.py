"""The daemon's own timings (the watcher's debounce, the auto-commit's quiet spell, the schedule)
follow tmem.yaml without a restart: from the indexer thread's next step, by the daemon's injected
clocks here, and in a real daemon process for the auto-commit."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from daemon_process import DaemonProc, note, wait_for
from helpers import FAKE_CONFIG, git_log, write

from tiered_memory.daemon.loop import Daemon
from tiered_memory.daemon.watcher import RawEvent
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.storage.vault import init_vault

LONG = "memory/long-term/knowledge_base/domains"


def timings(debounce_ms: int, autocommit: int, maintenance: str, extra: str = "") -> str:
    return (
        f"{FAKE_CONFIG}daemon:\n  debounce_ms: {debounce_ms}\n  autocommit_seconds: {autocommit}\n"
        f"lifecycle:\n  maintenance_time: '{maintenance}'\n{extra}"
    )


class Clocks:
    """The daemon's monotonic clock and its local time, moved by the test."""

    def __init__(self) -> None:
        self.mono = 1000.0
        self.local = datetime.fromisoformat("2026-11-22T10:00:00+00:00")


@pytest.fixture
def clocks() -> Clocks:
    return Clocks()


@pytest.fixture
def ran() -> list[str]:
    return []


@pytest.fixture
def daemon(vault_path: Path, clocks: Clocks, ran: list[str]) -> Iterator[Daemon]:
    """A daemon (not running its threads: the test takes its steps) whose maintenance runs at
    23:00 and whose hand edits are committed after ten minutes without a change."""
    (vault_path / "tmem.yaml").write_text(timings(300, 600, "23:00"), encoding="utf-8")
    jobs = {"expiry": lambda d: ran.append("expiry"), "maintenance": lambda d: ran.append("maintenance")}
    made = Daemon(
        vault_path,
        jobs=jobs,
        clock=lambda: clocks.mono,
        local_now=lambda: clocks.local,
        embedder_factory=lambda: FakeEmbedder(64),
    )
    memory = made.open_memory()
    made.schedule.start(clocks.local)
    assert made.run_due_jobs() == ["expiry"]  # maintenance ran last night, and runs at 23:00
    ran.clear()
    yield made
    memory.close()


def change(daemon: Daemon, text: str) -> None:
    """tmem.yaml saved, the watcher's report of it, the indexer thread's next step."""
    (daemon.root / "tmem.yaml").write_text(text, encoding="utf-8")
    daemon.settings_changed()
    daemon._step()


def test_a_shorter_debounce_and_auto_commit_spell_count_at_once(
    daemon: Daemon, caplog: pytest.LogCaptureFixture
) -> None:
    daemon.committer.note({f"{LONG}/otters.md": "Otters"})  # a hand edit waits for its commit
    assert daemon.committer.due_at() == 1600.0
    # A value that reaches outside the vault comes with the new timings: it waits for approval,
    # they do not.
    with caplog.at_level(logging.INFO, logger="tiered_memory.daemon"):
        change(daemon, timings(50, 5, "23:00", "git:\n  remote: elsewhere\n"))
    assert daemon.vault.config.git.remote == "origin"
    assert daemon.committer.due_at() == 1005.0  # the shorter spell counts from the edit
    daemon.debouncer.add(RawEvent("modified", str(daemon.root / LONG / "seals.md")))
    assert daemon.debouncer.take(now=1000.06)  # due after 50 ms, not 300
    said = [r.getMessage() for r in caplog.records if "changed the daemon's timings" in r.getMessage()]
    assert said == [
        "tmem.yaml changed the daemon's timings: daemon.debounce_ms 300 -> 50, "
        "daemon.autocommit_seconds 600 -> 5"
    ]


def test_a_daily_time_moved_earlier_runs_at_the_new_time(
    daemon: Daemon, clocks: Clocks, ran: list[str]
) -> None:
    change(daemon, timings(300, 600, "10:05"))
    clocks.local = datetime.fromisoformat("2026-11-22T10:06:00+00:00")
    clocks.mono += 1.0  # the schedule is looked at on the next step, not 30 s later
    daemon._step()
    assert ran == ["maintenance"]  # at 10:05, not tonight at 23:00
    clocks.mono += 60.0
    daemon._step()
    assert ran == ["maintenance"]  # once a day


def test_a_value_the_file_does_not_allow_keeps_the_timings_in_use(
    daemon: Daemon, caplog: pytest.LogCaptureFixture
) -> None:
    change(daemon, timings(50, 5, "23:00"))
    daemon.committer.note({f"{LONG}/otters.md": "Otters"})
    with caplog.at_level(logging.INFO, logger="tiered_memory.daemon"):
        change(daemon, timings(-1, 5, "23:00"))
    said = [r.getMessage() for r in caplog.records if "debounce_ms" in r.getMessage()]
    assert len(said) == 1 and "the settings in use stay" in said[0]
    daemon.debouncer.add(RawEvent("modified", str(daemon.root / LONG / "seals.md")))
    assert daemon.debouncer.take(now=1000.06)
    assert daemon.committer.due_at() == 1005.0


def test_a_job_turned_on_starts_as_at_a_daemons_start(vault_path: Path) -> None:
    """Backups turned on at 10:00 run at the next maintenance time, not the moment the file is saved."""
    (vault_path / "tmem.yaml").write_text(timings(300, 60, "03:30"), encoding="utf-8")
    clock = {"local": datetime.fromisoformat("2026-11-22T10:00:00+00:00")}
    ran: list[str] = []
    jobs = {name: (lambda d, n=name: ran.append(n)) for name in ("expiry", "maintenance", "backup")}
    daemon = Daemon(
        vault_path, jobs=jobs, local_now=lambda: clock["local"], embedder_factory=lambda: FakeEmbedder(64)
    )
    daemon.open_memory()
    try:
        daemon.schedule.start(clock["local"])
        daemon.run_due_jobs()
        daemon.vault.config_changed()  # nothing changed yet
        extra = timings(300, 60, "03:30").replace("daemon:\n", "daemon:\n  backup_daily: true\n")
        (vault_path / "tmem.yaml").write_text(extra, encoding="utf-8")
        assert daemon.vault.config_changed()  # an operation found the change
        daemon._step()
        assert "backup" in daemon.schedule.last and daemon.run_due_jobs() == []
        clock["local"] = datetime.fromisoformat("2026-11-23T03:31:00+00:00")
        assert "backup" in daemon.run_due_jobs()
    finally:
        assert daemon.memory is not None
        daemon.memory.close()


@pytest.mark.slow
def test_a_shortened_auto_commit_spell_commits_a_waiting_edit_at_once(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    init_vault(root, config_text=timings(100, 3600, "03:30"))
    daemon = DaemonProc(root, tmp_path / "daemon.log")
    try:
        write(root, f"{LONG}/otters.md", note("Otters", "Sea otters hold hands while sleeping."))
        wait_for(lambda: daemon.status()["pending_commit"] == 1, what="the edit waiting for its commit")
        write(root, "tmem.yaml", timings(100, 1, "03:30"))
        wait_for(lambda: git_log(root)[0].startswith("edit: Otters"), what="the auto-commit")
        assert "changed the daemon's timings" in daemon.log.read_text(encoding="utf-8")
    finally:
        assert daemon.stop() == 0


@pytest.mark.slow
def test_without_the_watcher_a_changed_setting_is_followed_at_the_next_heartbeat(tmp_path: Path) -> None:
    """No watcher reports tmem.yaml's change (none started, as on a file system that sends no
    events) and no operation comes: the daemon finds the change by itself, within a heartbeat."""
    root = tmp_path / "vault"
    init_vault(root, config_text=timings(100, 3600, "03:30"))
    daemon = DaemonProc(root, tmp_path / "daemon.log", "--no-watch")
    try:
        write(root, "tmem.yaml", timings(100, 3600, "04:45"))
        said = wait_for(
            lambda: [
                line
                for line in daemon.log.read_text(encoding="utf-8").splitlines()
                if "changed the daemon's timings" in line
            ],
            what="the daemon following tmem.yaml",
        )
        assert said[0].endswith("lifecycle.maintenance_time 03:30 -> 04:45")
    finally:
        assert daemon.stop() == 0
