"""The stages of an unmerged path, as sync's merge reads them from git's index: named, and named
right (git's stage 2 is this branch's version, 3 the merged-in branch's, 1 their ancestor's)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from helpers import git

from tiered_memory.storage.git import Git
from tiered_memory.sync import gitmerge


def test_the_named_stages_are_the_ancestor_ours_and_theirs(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@example.com")
    (root / "note.txt").write_text("base\n")
    git(root, "add", "note.txt")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "other")
    (root / "note.txt").write_text("theirs\n")
    git(root, "commit", "-q", "-am", "theirs")
    git(root, "checkout", "-q", "main")
    (root / "note.txt").write_text("ours\n")
    git(root, "commit", "-q", "-am", "ours")
    merge = subprocess.run(["git", "-C", str(root), "merge", "-q", "other"], capture_output=True, text=True)
    assert merge.returncode != 0  # a conflict: the path is unmerged

    repo = Git(root)
    stages = gitmerge._unmerged(repo)["note.txt"]
    assert repo.blob(stages[gitmerge.STAGE_BASE]) == b"base\n"
    assert repo.blob(stages[gitmerge.STAGE_OURS]) == b"ours\n"
    assert repo.blob(stages[gitmerge.STAGE_THEIRS]) == b"theirs\n"
