"""One record per concept: a sync's report, and git's NUL-separated status and name-status output
each read in one place."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from helpers import git

from tiered_memory.app.api.sync import SYNC
from tiered_memory.storage.git import Git, name_status_entries, status_entries
from tiered_memory.sync import gitsync


def test_sync_returns_the_operations_own_result() -> None:
    """The git side fills in the very record every door returns: no copy to convert field by field."""
    assert {f.name for f in dataclasses.fields(SYNC.result)} >= {"notes_in", "not_applied", "renumbered"}
    assert gitsync.SyncResult is SYNC.result


def test_status_entries_reads_renames_spaces_and_new_lines(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "old name.md").write_text("a\n", encoding="utf-8")
    (root / "kept.md").write_text("b\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "start")
    git(root, "mv", "old name.md", "new\nname.md")
    (root / "kept.md").write_text("changed\n", encoding="utf-8")
    (root / "fresh.md").write_text("c\n", encoding="utf-8")
    out = Git(root).out("status", "--porcelain=v1", "-z", "--untracked-files=all")
    entries = {path: (status, old) for status, path, old in status_entries(out)}
    assert entries == {
        "new\nname.md": ("R ", "old name.md"),
        "kept.md": (" M", None),
        "fresh.md": ("??", None),
    }
    assert sorted(Git(root).uncommitted(".")) == sorted(
        ["new\nname.md", "old name.md", "kept.md", "fresh.md"]
    )


def test_name_status_entries_pairs_a_renames_two_names(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    for name, text in (("a b.md", "alpha\n" * 20), ("gone.md", "g\n"), ("edited.md", "e\n")):
        (root / name).write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "start")
    start = git(root, "rev-parse", "HEAD").strip()
    git(root, "mv", "a b.md", "moved\tname.md")
    git(root, "rm", "-q", "gone.md")
    (root / "edited.md").write_text("changed\n", encoding="utf-8")
    (root / "new.md").write_text("n\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "next")
    out = Git(root).out("diff", "--name-status", "-M", "-z", start, "HEAD", "--")
    entries = {path: (status[0], old) for status, path, old in name_status_entries(out.split("\0"))}
    assert entries == {
        "moved\tname.md": ("R", "a b.md"),
        "gone.md": ("D", None),
        "edited.md": ("M", None),
        "new.md": ("A", None),
    }
    changes = {(c.status, c.path, c.old_path) for c in gitsync.diff_changes(Git(root), start, "HEAD")}
    assert changes == {
        ("moved", "moved\tname.md", "a b.md"),
        ("deleted", "gone.md", None),
        ("changed", "edited.md", None),
        ("added", "new.md", None),
    }
