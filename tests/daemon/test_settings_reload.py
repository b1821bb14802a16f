"""A running daemon reads tmem.yaml again when it changes: a person's edit of the settings (or a
pulled one) reaches the next operation without a restart."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from daemon_process import DaemonProc, note, tmem, wait_for
from helpers import FAKE_CONFIG, git, write

from tiered_memory.storage.vault import Vault, init_vault

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


@pytest.mark.slow
def test_a_pulled_hostile_tmem_yaml_changes_nothing_in_the_running_daemon(tmp_path: Path) -> None:
    """A pulled tmem.yaml reaches the daemon at once: its outward values (an API that would get
    every note, the remote, sealed notes in prompts) wait for `tmem config approve` as in any
    command, and one that is a link, a pipe or gigabytes long is one line in the log while the
    settings in use stay and the daemon answers."""
    remote, root, other = tmp_path / "remote.git", tmp_path / "vault", tmp_path / "other"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    init_vault(root, config_text=FAKE_CONFIG + "search:\n  limit: 3\n")
    for i in range(4):
        write(root, f"{LONG}/otter-{i}.md", note(f"Otter {i}", "Sea otters hold hands while sleeping."))
    git(root, "add", "-A")
    git(root, "-c", "user.name=a", "-c", "user.email=a@a", "commit", "-qm", "notes")
    git(root, "remote", "add", "origin", str(remote))
    git(root, "push", "-q", "origin", "main")
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    daemon = DaemonProc(root, tmp_path / "daemon.log")
    try:
        wait_for(lambda: len(daemon.paths("otters hold hands", mode="keyword")) == 3, what="the notes")
        hostile = (
            FAKE_CONFIG.replace("provider: fake", "provider: openai")
            + "  base_url: http://127.0.0.1:9/v1\n"
            + "privacy:\n  sealed_in_prompts: true\ngit:\n  remote: elsewhere\nsearch:\n  limit: 2\n"
        )
        (other / "tmem.yaml").write_text(hostile, encoding="utf-8")
        git(other, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qam", "config: tune search")
        git(other, "push", "-q", "origin", "main")
        git(root, "pull", "-q", "--no-rebase", "origin", "main")
        wait_for(lambda: len(daemon.paths("otters hold hands", mode="keyword")) == 2, what="the pulled limit")
        settings = Vault(root).config
        assert settings.embeddings.provider != "openai" and settings.embeddings.base_url is None
        assert settings.git.remote == "origin" and settings.privacy.sealed_in_prompts is False
        said = {
            "link": "tmem.yaml is a symbolic link",
            "fifo": "tmem.yaml is not a regular file",
            "huge": "tmem.yaml: larger than the 4 MB a settings file may be",
        }
        for kind, line in said.items():
            path = root / "tmem.yaml"
            path.unlink()
            if kind == "link":
                os.symlink("/dev/zero", path)
            elif kind == "fifo":
                os.mkfifo(path)
            else:
                with open(path, "wb") as handle:
                    handle.truncate(2 * 1024**3)
            wait_for(lambda line=line: line in daemon.log.read_text(encoding="utf-8"), what=line)
            assert len(daemon.paths("otters hold hands", mode="keyword")) == 2
            assert daemon.proc.poll() is None
        assert "Traceback" not in daemon.log.read_text(encoding="utf-8")
    finally:
        daemon.stop()


@pytest.mark.slow
def test_the_running_daemon_follows_a_new_size_limit_and_counts_notes_as_status_does(tmp_path: Path) -> None:
    """The daemon's "notes indexed" is `tmem status`'s count (JSON state is no note), and a raised
    `index.max_file_mb` brings in the file the old limit skipped, without a restart."""
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    for i in range(2):
        write(root, f"{LONG}/otter-{i}.md", note(f"Otter {i}", "Sea otters hold hands while sleeping."))
    write(root, "memory/mid-term/tasks.json", '{"tasks": [{"title": "feed the otters"}]}\n')
    big = f"{LONG}/walrus.md"
    write(root, big, "walrus tusks grow all their lives\n" * (3 * 1024 * 1024 // 33 + 1))  # over 2 MB
    daemon = DaemonProc(root, tmp_path / "daemon.log")
    try:
        wait_for(lambda: len(daemon.paths("otters", mode="keyword")) == 3, what="the notes and the tasks")
        status = json.loads(tmem(root, "status", "--json").stdout)
        assert daemon.status()["notes"] == status["notes"] == 2
        assert daemon.paths("walrus tusks", mode="keyword") == []
        (root / "tmem.yaml").write_text(FAKE_CONFIG + "index:\n  max_file_mb: 4\n", encoding="utf-8")
        wait_for(
            lambda: daemon.paths("walrus tusks", mode="keyword") == [big], what="the file the limit let in"
        )
        wait_for(lambda: daemon.status()["notes"] == 3, what="the note counted")
    finally:
        daemon.stop()


@pytest.mark.slow
def test_the_running_daemon_indexes_a_folder_no_longer_sealed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hand-written note in a folder `privacy.encrypted_paths` seals is in no index of the
    (locked) daemon; once the person drops the folder from the list (and approves it), the
    running daemon reads the note again and finds it, without a restart."""
    from tiered_memory import config

    root = tmp_path / "vault"
    sealing = FAKE_CONFIG + "privacy:\n  encrypt: sensitive\n  encrypted_paths: [{}]\n"
    init_vault(root, config_text=sealing.format("long-term/relationships/, long-term/diary/"))
    monkeypatch.setenv("TMEM_PASSPHRASE", "correct horse battery staple")
    assert tmem(root, "unlock", "--new").returncode == 0
    monkeypatch.delenv("TMEM_PASSPHRASE")
    write(root, f"{LONG}/otter.md", note("Otter", "Sea otters hold hands while sleeping."))
    day = "memory/long-term/diary/day.md"
    write(root, day, note("Day", "Walked the quokka trail at dawn."))
    daemon = DaemonProc(root, tmp_path / "daemon.log")
    try:
        wait_for(lambda: len(daemon.paths("otters hold hands", mode="keyword")) == 1, what="the notes")
        assert daemon.paths("quokka trail", mode="keyword") == []
        config.approve(root, {"privacy.encrypted_paths": ["long-term/relationships/"]})
        (root / "tmem.yaml").write_text(sealing.format("long-term/relationships/"), encoding="utf-8")
        wait_for(lambda: daemon.paths("quokka trail", mode="keyword") == [day], what="the note unsealed")
    finally:
        daemon.stop()
