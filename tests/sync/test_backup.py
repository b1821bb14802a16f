"""`tmem backup`: dated git bundles, rotation to the newest N, restore into a working vault."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import FIXED_NOW, approve_outward, git, git_log

from tiered_memory.app.api.notes import ForgetRequest
from tiered_memory.app.filing import NewNote, add
from tiered_memory.app.memory import Memory
from tiered_memory.app.notes import forget
from tiered_memory.errors import BadInput, VaultError
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault, merge_driver_command
from tiered_memory.sync.backup import backup, list_backups, restore_backup


def test_backup_writes_a_dated_bundle_inside_the_ignored_folder(memory: Memory) -> None:
    add(memory, NewNote(text="Back me up.", title="Backed"))
    vault = memory.vault
    bundle = backup(vault, now=FIXED_NOW)
    assert bundle == vault.root / ".tmem-backups" / "tmem-vault-2026-11-22-120000.bundle"
    heads = subprocess.run(
        ["git", "bundle", "list-heads", str(bundle)], capture_output=True, text=True
    ).stdout
    assert git(vault.root, "rev-parse", "HEAD").strip() + " refs/heads/main" in heads
    assert git(vault.root, "status", "--porcelain") == ""  # the folder is gitignored
    again = backup(vault, now=FIXED_NOW)  # same second: a second file, never an overwrite
    assert again.name == "tmem-vault-2026-11-22-120000-2.bundle" and bundle.exists()


def test_backup_keeps_only_the_newest_n_of_this_vault(vault: Vault, tmp_path: Path) -> None:
    dest = tmp_path / "backups"
    dest.mkdir()
    foreign = [dest / "notes.txt", dest / "tmem-othervault-2026-01-01-000000.bundle"]
    for path in foreign:
        path.write_text("not ours")
    made = [backup(vault, dest, keep=3, now=FIXED_NOW + timedelta(days=d)) for d in range(5)]
    kept = list_backups(dest, vault)
    assert kept == made[-3:]
    assert [p.name for p in kept][-1] == "tmem-vault-2026-11-26-120000.bundle"
    assert all(p.exists() for p in foreign)
    # a local-time clock still names (and so orders) bundles by UTC
    local = datetime(2026, 11, 27, 9, 0, tzinfo=UTC).astimezone()
    assert backup(vault, dest, keep=3, now=local).name == "tmem-vault-2026-11-27-090000.bundle"


def test_backup_settings_come_from_the_config(tmp_path: Path) -> None:
    from tiered_memory.storage.vault import init_vault

    dest = tmp_path / "elsewhere"
    init_vault(tmp_path / "v", config_text=f"backup:\n  keep: 2\n  directory: {dest}\n")
    approve_outward(tmp_path / "v")  # a folder outside the vault: this machine's user said so
    vault = Vault(tmp_path / "v")
    for day in range(4):
        backup(vault, now=FIXED_NOW + timedelta(days=day))
    assert [p.name for p in list_backups(dest, vault)] == [
        "tmem-v-2026-11-24-120000.bundle",
        "tmem-v-2026-11-25-120000.bundle",
    ]
    with pytest.raises(BadInput, match="keep must be at least 1"):
        backup(vault, keep=0)


def test_restore_makes_a_working_vault(memory: Memory, tmp_path: Path) -> None:
    note = add(memory, NewNote(text="The zebracorn survives disasters.", title="Zebracorn"))
    forget(memory, ForgetRequest(note.id))  # history, not just the current tree, is in the bundle
    add(memory, NewNote(text="Still here.", title="Here"))
    bundle = backup(memory.vault, tmp_path / "b", now=FIXED_NOW)
    target = restore_backup(bundle, tmp_path / "restored")
    assert git_log(target) == git_log(memory.vault.root)
    assert git(target, "status", "--porcelain") == ""
    assert git(target, "config", "merge.tmem.driver").strip() == merge_driver_command()
    assert git(target, "remote").split() == ["backup"]  # the bundle is no place to push to
    restored = Memory(Vault(target), embedder_factory=lambda: FakeEmbedder(64))
    try:
        hits = restored.search(SearchRequest(query="still here", mode="keyword"), record_access=False).hits
        assert [h.title for h in hits] == ["Here"]
        from tiered_memory.sync.history import restore

        assert "zebracorn" in (target / restore(restored, note.id).path).read_text()
    finally:
        restored.close()


def test_restore_refuses_bad_input(vault: Vault, tmp_path: Path) -> None:
    bundle = backup(vault, tmp_path / "b", now=FIXED_NOW)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "file.txt").write_text("mine")
    with pytest.raises(VaultError, match="not empty"):
        restore_backup(bundle, busy)
    assert (busy / "file.txt").read_text() == "mine"
    junk = tmp_path / "junk.bundle"
    junk.write_text("not a bundle")
    with pytest.raises(BadInput, match="is not a git bundle"):
        restore_backup(junk, tmp_path / "x")
    with pytest.raises(BadInput, match="no such bundle"):
        restore_backup(tmp_path / "missing.bundle", tmp_path / "x")
    # a bundle of some other repository is not a vault: the clone is removed again
    plain = tmp_path / "plain"
    subprocess.run(["git", "init", "-q", "-b", "main", str(plain)], check=True)
    (plain / "a.txt").write_text("a")
    git(plain, "add", "a.txt")
    git(plain, "-c", "user.name=x", "-c", "user.email=x@y", "commit", "-qm", "a")
    git(plain, "bundle", "create", str(tmp_path / "plain.bundle"), "--all")
    with pytest.raises(VaultError, match="does not hold a tmem vault"):
        restore_backup(tmp_path / "plain.bundle", tmp_path / "notvault")
    assert not (tmp_path / "notvault").exists()
