"""One record per concept: what an operation takes and what tmem's own code files, listing lines,
sync reports, git's NUL-separated status, and a single name for "this object as plain data"."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from helpers import git

from tiered_memory.app.api.notes import RememberRequest
from tiered_memory.app.api.sync import SYNC
from tiered_memory.app.filing import NewNote
from tiered_memory.app.summaries import iso, summary
from tiered_memory.index.catalog import NoteRow
from tiered_memory.storage.git import Git, name_status_entries, status_entries
from tiered_memory.sync import gitsync

PACKAGE = Path(__file__).resolve().parents[2] / "tiered_memory"


def test_every_field_a_door_may_send_reaches_filing() -> None:
    """A field added to the remember contract is one filing knows, with no copy to keep in step."""
    assert issubclass(NewNote, RememberRequest)
    sent = {f.name for f in dataclasses.fields(RememberRequest)}
    assert sent <= {f.name for f in dataclasses.fields(NewNote)}


def _row(updated: float) -> NoteRow:
    return NoteRow(
        path="memory/long-term/knowledge/tea.md",
        id="tea",
        title="Tea",
        tier="long",
        category="knowledge",
        status="active",
        tags=["tea"],
        updated=updated,
    )


def test_a_listing_line_dates_a_note_to_the_second_in_utc() -> None:
    assert summary(_row(1_772_357_400.75)).updated == "2026-03-01T09:30:00Z"


def test_a_date_no_calendar_holds_lists_as_no_date() -> None:
    """A hand-typed epoch far outside years 1..9999 is listed without a date, not a traceback."""
    assert summary(_row(1e18)).updated == ""
    assert iso(0) == "" and iso(None) == ""


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


def test_plain_data_has_one_name() -> None:
    """`to_dict` everywhere: records, config sections, plans, entries."""
    named = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name == "as_dict"
    ]
    assert named == []
