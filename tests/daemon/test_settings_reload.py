"""A running daemon reads tmem.yaml again when it changes: a person's edit of the settings (or a
pulled one) reaches the next operation without a restart."""

from __future__ import annotations

from pathlib import Path

import pytest
from daemon_process import DaemonProc, note, wait_for
from helpers import FAKE_CONFIG, write

from tiered_memory.storage.vault import init_vault

LONG = "memory/long-term/knowledge_base/domains"


@pytest.mark.slow
def test_an_edit_of_tmem_yaml_reaches_the_running_daemons_operations(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    for i in range(4):
        write(root, f"{LONG}/otter-{i}.md", note(f"Otter {i}", "Sea otters hold hands while sleeping."))
    daemon = DaemonProc(root, tmp_path / "daemon.log")
    try:
        wait_for(lambda: len(daemon.paths("otters hold hands", mode="keyword")) == 4, what="the notes")
        (root / "tmem.yaml").write_text(FAKE_CONFIG + "search:\n  limit: 2\n", encoding="utf-8")
        wait_for(lambda: len(daemon.paths("otters hold hands", mode="keyword")) == 2, what="the new limit")
        assert "tmem.yaml changed; reloading the indexes" in daemon.log.read_text(encoding="utf-8")
    finally:
        daemon.stop()
