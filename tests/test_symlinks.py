"""Symbolic links in a vault are never read, indexed, exposed, dereferenced into a commit or synced."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import Result
from helpers import as_json, git, ok

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
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    git(vault_path, "remote", "add", "origin", str(remote))
    plant(vault_path, outside)
    ok(run("maintain"))  # type: ignore[operator]
    assert (vault_path / "memory/long-term/passwd.md").is_symlink()  # not replaced by a copy
    ok(run("sync"))  # type: ignore[operator]
    tracked = git(vault_path, "ls-files")
    assert "passwd" not in tracked and "linked-folder" not in tracked
    assert SECRET not in git(remote, "log", "-p", "--all")


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
