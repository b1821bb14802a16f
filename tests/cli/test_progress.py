"""Progress on stderr for every wait over a second: status lines when piped, a model load said,
the daemon's first indexing reported to whoever waits for it, and a search that starts the daemon."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import FAKE_CONFIG, ok

from tiered_memory.app.memory import Memory
from tiered_memory.cli import cli
from tiered_memory.cli.progress import progress_bar, status_lines
from tiered_memory.daemon import client
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.storage.vault import Vault, init_vault

ROOT = Path(__file__).resolve().parents[2]


def test_a_daemon_started_in_the_background_is_said_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    line = status_lines(clock=lambda: 0.0)
    line("starting the daemon", 0, 0)
    line("starting the daemon", 0, 0)
    assert capsys.readouterr().err.splitlines() == ["tmem: starting the daemon…"]


def test_status_lines_only_for_phases_that_last(capsys: pytest.CaptureFixture[str]) -> None:
    now = [0.0]
    line = status_lines(clock=lambda: now[0])
    line("indexing", 1, 500)
    now[0] = 0.5
    line("indexing", 200, 500)
    assert capsys.readouterr().err == ""  # quick so far
    now[0] = 1.5
    line("indexing", 300, 500)
    line("indexing", 400, 500)
    line("quick", 1, 3)
    now[0] = 3.0
    line("quick", 3, 3)  # done before anyone waited: nothing
    line("loading the embedding model", 0, 1)
    assert capsys.readouterr().err.splitlines() == [
        "tmem: indexing 300/500…",
        "tmem: loading the embedding model…",
    ]


def test_a_slow_model_load_is_reported(vault: Vault) -> None:
    seen: list[tuple[str, int, int]] = []

    def slow() -> FakeEmbedder:
        time.sleep(1.3)
        return FakeEmbedder(64)

    memory = Memory(vault, embedder_factory=slow, progress=lambda *event: seen.append(event))
    try:
        memory.refresh(vectors=True)
    finally:
        memory.close()
    assert ("loading the embedding model", 0, 1) in seen and ("loading the embedding model", 1, 1) in seen
    fast: list[tuple[str, int, int]] = []
    memory = Memory(vault, embedder_factory=lambda: FakeEmbedder(64), progress=lambda *e: fast.append(e))
    try:
        memory.refresh(vectors=True)
    finally:
        memory.close()
    assert not [e for e in fast if e[0].startswith("loading")]


def test_a_search_starts_the_daemon_and_daemon_start_reports_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    for i in range(30):
        note = root / "memory" / "long-term" / f"note-{i}.md"
        note.write_text(f"---\ntitle: Note {i}\n---\nThe tile cache number {i} lives in Redis.\n")
    monkeypatch.setenv("TMEM_AUTOSTART", "1")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    try:
        found = ok(
            CliRunner().invoke(
                cli, ["--vault", str(root), "search", "tile cache Redis"], catch_exceptions=False
            )
        )
        assert "Note" in found.stdout
        info = client.ping(root)
        assert info is not None and info["ready"]
        # It answered first (queries come before the backlog); the embedding it started finishes.
        deadline = time.monotonic() + 60
        while info is not None and info["phase"] != "idle" and time.monotonic() < deadline:
            time.sleep(0.1)
            info = client.ping(root)
        assert info is not None and info["phase"] == "idle"
        # `keyword` searches and a vault that says no never start one.
        ok(CliRunner().invoke(cli, ["--vault", str(root), "daemon", "stop"], catch_exceptions=False))
        (root / "tmem.yaml").write_text(FAKE_CONFIG + "daemon:\n  autostart: false\n")
        ok(CliRunner().invoke(cli, ["--vault", str(root), "search", "tile cache"], catch_exceptions=False))
        assert client.ping(root) is None
    finally:
        subprocess.run(
            [sys.executable, "-m", "tiered_memory", "--vault", str(root), "daemon", "stop"],
            capture_output=True,
            timeout=60,
            env={**os.environ},
        )


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_bar_starts_with_the_first_progress_and_stops_at_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command that reports no progress starts no drawing thread (which would also keep the
    freshness scan from looking ahead in a forked child); one that does gets a bar until it ends."""
    monkeypatch.setattr(sys, "stderr", _Terminal())
    before = threading.active_count()
    with progress_bar() as update:
        assert update is not None
        assert threading.active_count() == before  # nothing reported yet: no bar
    with progress_bar() as update:
        assert update is not None
        update("embedding", 1, 10)
        update("embedding", 10, 10)
        assert threading.active_count() == before + 1  # the bar's refresh thread
    assert threading.active_count() == before  # stopped with the command
