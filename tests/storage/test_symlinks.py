"""Symbolic links in a vault are never read, indexed, exposed, dereferenced into a commit or synced."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import Result
from helpers import as_json, bare_origin, commit, git, ok, one_error_line

from tiered_memory.errors import VaultError
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import Vault

SECRET = "root:x:0:0:the-outside-file-must-never-leak"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "passwd"
    path.parent.mkdir()
    path.write_text(SECRET + "\n")
    return path


def plant(vault_path: Path, outside: Path) -> None:
    (vault_path / "memory/long-term/passwd.md").symlink_to(outside)
    (vault_path / "memory/long-term/linked-folder").symlink_to(outside.parent, target_is_directory=True)


def no_leak(result: Result) -> None:
    assert SECRET not in result.output
    assert "the-outside-file" not in result.output


def test_linked_files_and_folders_are_never_searched_or_shown(
    run: object, vault_path: Path, outside: Path
) -> None:
    plant(vault_path, outside)
    search = run("search", "--json", "--mode", "keyword", "root outside file leak")  # type: ignore[operator]
    no_leak(ok(search))
    assert all("passwd" not in r["path"] for r in as_json(search)["results"])
    listing = ok(run("list", "--json"))  # type: ignore[operator]
    no_leak(listing)
    assert all("passwd" not in n["path"] for n in as_json(listing))
    shown = run("show", "memory/long-term/passwd.md")  # type: ignore[operator]
    no_leak(shown)
    assert shown.exit_code != 0


def test_maintain_and_sync_never_commit_a_link_or_its_content(
    run: object, vault_path: Path, outside: Path, tmp_path: Path
) -> None:
    remote = bare_origin(vault_path, tmp_path)
    plant(vault_path, outside)
    ok(run("maintain"))  # type: ignore[operator]
    assert (vault_path / "memory/long-term/passwd.md").is_symlink()  # not replaced by a copy
    ok(run("sync"))  # type: ignore[operator]
    tracked = git(vault_path, "ls-files")
    assert "passwd" not in tracked and "linked-folder" not in tracked
    assert SECRET not in git(remote, "log", "-p", "--all")


def test_a_sync_commit_names_only_what_it_committed(
    run: object, vault_path: Path, outside: Path, tmp_path: Path
) -> None:
    bare_origin(vault_path, tmp_path)
    plant(vault_path, outside)
    (vault_path / "memory/long-term/by-hand.md").write_text("Written in an editor.\n")
    ok(run("sync"))  # type: ignore[operator]
    message = git(vault_path, "log", "-1", "--format=%B")
    assert message.startswith("sync: pending edits to by-hand")
    assert "passwd" not in message and "linked-folder" not in message
    assert git(vault_path, "show", "--format=", "--name-only", "HEAD").split() == [
        "memory/long-term/by-hand.md"
    ]


def test_status_lists_the_links_it_leaves_alone(run: object, vault_path: Path, outside: Path) -> None:
    plant(vault_path, outside)
    data = as_json(run("status", "--json"))  # type: ignore[operator]
    assert data["links"] == ["memory/long-term/linked-folder", "memory/long-term/passwd.md"]
    text = ok(run("status")).stdout  # type: ignore[operator]
    assert "link:       memory/long-term/passwd.md (a symbolic link: never read or committed)" in text


def test_a_linked_entity_profile_is_never_read(run: object, vault_path: Path, tmp_path: Path) -> None:
    """A profile under relationships/ that is a link (or sits in a linked folder) is not an entity:
    its text could come from anywhere on the machine and end up in an agent's context."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    profile = "---\nentity: Mallory\nkind: person\n---\n# Mallory\n\n## Preferences\n- " + SECRET + "\n"
    (outside / "mallory.md").write_text(profile, encoding="utf-8")
    relationships = vault_path / "memory/long-term/relationships"
    relationships.mkdir(parents=True, exist_ok=True)
    (relationships / "mallory.md").symlink_to(outside / "mallory.md")
    (relationships / "linked").symlink_to(outside, target_is_directory=True)
    listed = as_json(run("entity", "list", "--json"))  # type: ignore[operator]
    assert listed == []
    missing = run("entity", "show", "Mallory")  # type: ignore[operator]
    assert missing.exit_code == 1
    no_leak(missing)
    no_leak(ok(run("context", "--entity", "Mallory")))  # type: ignore[operator]


# ---- writing: a linked folder is refused before a byte is written -----------------------------------


def linked_folder(vault_path: Path, rel: str, tmp_path: Path) -> Path:
    """`rel` (a folder of the template) replaced by a link to an empty folder outside the vault."""
    target = tmp_path / "out"
    target.mkdir(exist_ok=True)
    folder = vault_path / rel
    if folder.exists():
        subprocess.run(["rm", "-rf", str(folder)], check=True)
    folder.symlink_to(target, target_is_directory=True)
    return target


def refused(result: Result, link: str) -> None:
    line = one_error_line(result, 2)
    assert link in line and "symbolic link" in line, line


def test_a_new_note_is_never_written_into_a_linked_folder(
    run: object, vault_path: Path, tmp_path: Path
) -> None:
    out = linked_folder(vault_path, "memory/long-term/knowledge_base/patterns", tmp_path)
    before = git(vault_path, "rev-parse", "HEAD")
    refused(run("pattern", "add", "x"), "memory/long-term/knowledge_base/patterns")  # type: ignore[operator]
    assert list(out.iterdir()) == []
    assert git(vault_path, "rev-parse", "HEAD") == before


def test_a_link_deeper_down_is_refused_and_no_folder_is_made_through_it(
    vault: Vault, vault_path: Path, tmp_path: Path
) -> None:
    out = linked_folder(vault_path, "memory/long-term/decisions", tmp_path)
    tx = Transaction(vault, "edit: through a link")
    with pytest.raises(VaultError, match="memory/long-term/decisions is a symbolic link"):
        tx.create_text("memory/long-term/decisions/2026/x.md", "# X\n")
    with pytest.raises(VaultError, match="memory/long-term/decisions is a symbolic link"):
        tx.write_text("memory/long-term/decisions/y.md", "# Y\n")
    tx.rollback()
    assert list(out.iterdir()) == []


def test_maintain_never_moves_notes_into_a_linked_archive(
    run: object, vault_path: Path, tmp_path: Path
) -> None:
    old = "---\nid: chat-old\ncreated: 2020-01-02T09:00:00Z\n---\n# Old chat\nweather talk\n"
    (vault_path / "memory/short-term/chat-old.md").write_text(old, encoding="utf-8")
    commit(Vault(vault_path), ["memory/short-term/chat-old.md"], "add an old chat")
    out = linked_folder(vault_path, "memory/archive", tmp_path)
    refused(run("maintain"), "memory/archive")  # type: ignore[operator]
    assert (vault_path / "memory/short-term/chat-old.md").read_text(encoding="utf-8") == old
    assert [p for p in out.rglob("*")] == []


def test_a_move_out_of_a_linked_folder_is_refused(vault: Vault, vault_path: Path, tmp_path: Path) -> None:
    out = linked_folder(vault_path, "memory/long-term/decisions", tmp_path)
    (out / "outside.md").write_text(SECRET, encoding="utf-8")
    tx = Transaction(vault, "edit: a move")
    with pytest.raises(VaultError, match="memory/long-term/decisions is a symbolic link"):
        tx.move("memory/long-term/decisions/outside.md", "memory/long-term/inside.md")
    with pytest.raises(VaultError, match="memory/long-term/decisions is a symbolic link"):
        tx.remove("memory/long-term/decisions/outside.md")
    tx.rollback()
    assert (out / "outside.md").read_text(encoding="utf-8") == SECRET
    assert not (vault_path / "memory/long-term/inside.md").exists()


def test_a_linked_folder_a_remote_committed_is_never_written_through(
    run: object, vault_path: Path, tmp_path: Path
) -> None:
    remote = bare_origin(vault_path, tmp_path)
    ok(run("sync"))  # type: ignore[operator]
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(other, "rm", "-rq", "memory/long-term/decisions")
    (other / "memory/long-term/decisions").symlink_to(elsewhere, target_is_directory=True)
    git(other, "add", "memory/long-term/decisions")
    git(other, "-c", "user.name=o", "-c", "user.email=o@x", "commit", "-qm", "decisions elsewhere")
    git(other, "push", "-q", "origin", "main")
    refused(run("sync"), "memory/long-term/decisions")  # type: ignore[operator]  # tmem's pull refuses it
    # A plain `git pull` brings the link all the same: tmem's writes still refuse to go through it.
    git(
        vault_path, "-c", "user.name=v", "-c", "user.email=v@x", "pull", "-q", "--no-rebase", "origin", "main"
    )
    assert (vault_path / "memory/long-term/decisions").is_symlink()
    refused(run("decide", "Use tabs", "--why", "consistency"), "memory/long-term/decisions")  # type: ignore[operator]
    assert list(elsewhere.iterdir()) == []
