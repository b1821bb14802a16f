"""A git repository inside the vault (`git init memory/long-term/nested`): git would keep it as an
empty link to another repository (a gitlink), so its notes would never reach another machine.
tmem never commits it, and `status`, `doctor` and `sync` name it. A registered submodule is named
as one: its pointer does reach the other machines, its files through its own repository."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers import as_json, bare_origin, commit, git, ok

from tiered_memory.storage.vault import Vault

NESTED = "memory/long-term/nested"
NOTE = "# Tide tables\n\nHigh water at the harbour is at noon.\n"


@pytest.fixture
def nested(vault_path: Path) -> Path:
    folder = vault_path / NESTED
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / "tides.md").write_text(NOTE, encoding="utf-8")
    return folder


def gitlinks(root: Path, rev: str = "HEAD") -> list[str]:
    listing = git(root, "ls-tree", "-r", rev)
    return [line for line in listing.splitlines() if line.startswith("160000")]


def test_status_names_a_nested_repository(run: object, nested: Path) -> None:
    data = as_json(run("status", "--json"))  # type: ignore[operator]
    assert data["nested_repos"] == [NESTED]
    text = ok(run("status")).stdout  # type: ignore[operator]
    assert f"repository: {NESTED} (a git repository of its own: never committed or synced)" in text


def test_doctor_names_a_nested_repository(run: object, nested: Path) -> None:
    ok(run("reindex"))  # type: ignore[operator]
    found = run("doctor", "--json")  # type: ignore[operator]
    assert found.exit_code != 0  # type: ignore[attr-defined]
    findings = [f for f in json.loads(found.stdout)["findings"] if f["check"] == "git"]  # type: ignore[attr-defined]
    assert len(findings) == 1 and not findings[0]["ok"]
    assert findings[0]["message"].startswith(f"{NESTED} is a git repository of its own")


def test_sync_names_it_and_never_commits_a_gitlink(
    run: object, vault_path: Path, nested: Path, tmp_path: Path
) -> None:
    remote = bare_origin(vault_path, tmp_path)
    (vault_path / "memory/long-term/harbour.md").write_text("# Harbour\n\nThe quay is long.\n")
    synced = ok(run("sync"))  # type: ignore[operator]
    assert synced.stderr.count(f"{NESTED} is a git repository of its own") == 1
    assert gitlinks(vault_path) == [] and gitlinks(remote, "main") == []
    assert "memory/long-term/harbour.md" in git(remote, "ls-tree", "-r", "--name-only", "main")


def test_a_commit_leaves_the_nested_repository_out_with_one_warning(vault: Vault, nested: Path) -> None:
    warnings: list[str] = []
    (vault.root / "memory/long-term/harbour.md").write_text("# Harbour\n\nThe quay is long.\n")
    sha = vault.git.commit_paths(
        [f"{NESTED}/", f"{NESTED}/tides.md", "memory/long-term/harbour.md"],
        "edit: two folders",
        vault.state_dir / "tmp",
        warnings.append,
    )
    assert sha is not None and gitlinks(vault.root) == []
    assert git(vault.root, "ls-tree", "-r", "--name-only", "HEAD").count("nested") == 0
    assert len(warnings) == 1 and warnings[0].startswith(f"{NESTED} is a git repository of its own")
    assert commit(vault, [f"{NESTED}/"], "edit: only the nested one") is None


def test_its_notes_are_still_searched_here(run: object, nested: Path) -> None:
    found = as_json(run("search", "--json", "--mode", "keyword", "harbour high water"))  # type: ignore[operator]
    assert [r["path"] for r in found["results"]] == [f"{NESTED}/tides.md"]


@pytest.fixture
def submodule(vault_path: Path, tmp_path: Path) -> str:
    """A repository of its own registered as a submodule (`git submodule add`): the vault's commits
    carry its pointer, its files live in its own repository."""
    origin = tmp_path / "recipes"
    subprocess.run(["git", "init", "-q", "-b", "main", str(origin)], check=True)
    (origin / "soup.md").write_text("# Soup\n\nLeek and potato.\n", encoding="utf-8")
    ident = ["-c", "user.name=t", "-c", "user.email=t@x"]
    git(origin, *ident, "add", "soup.md")
    git(origin, *ident, "commit", "-qm", "soup")
    folder = "memory/long-term/recipes"
    git(
        vault_path,
        *ident,
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "--quiet",
        "add",
        str(origin),
        folder,
    )
    git(vault_path, *ident, "commit", "-qm", "person: the recipes submodule")
    return folder


def test_a_submodule_is_named_for_what_it_is_in_one_line(
    run: object, vault_path: Path, submodule: str, tmp_path: Path
) -> None:
    bare_origin(vault_path, tmp_path)
    (vault_path / "memory/long-term/harbour.md").write_text("# Harbour\n\nThe quay is long.\n")
    synced = ok(run("sync"))  # type: ignore[operator]
    [line] = [ln for ln in synced.stderr.splitlines() if submodule in ln]  # type: ignore[attr-defined]
    assert "never reach" not in line
    assert line.startswith(f"warning: {submodule} is a git submodule: tmem commits nothing inside it;")
    assert "pointer to its own repository" in line
    text = ok(run("status")).stdout  # type: ignore[operator]
    assert f"repository: {submodule} (a git submodule: synced as a pointer" in text
    assert as_json(run("status", "--json"))["submodules"] == [submodule]  # type: ignore[operator]
    findings = [f for f in json.loads(run("doctor", "--json").stdout)["findings"] if f["check"] == "git"]  # type: ignore[operator, attr-defined]
    assert [f["message"].split(":")[0] for f in findings] == [f"{submodule} is a git submodule"]
