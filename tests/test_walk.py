"""The stat walk behind every freshness scan: what it keeps and skips, its split into parts that
two processes can walk at once, and its listing through folder descriptors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tiered_memory.index import scan_mark
from tiered_memory.model.folders import FolderRules
from tiered_memory.storage import walk


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A vault-like tree: notes and attachments at several depths, and what a walk must skip."""
    root = tmp_path / "vault"
    for i in range(40):
        folder = root / "memory" / ("long-term" if i % 2 else "mid-term/projects/p1")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note-{i}.md").write_text(f"# Note {i}\n")
    (root / "memory/long-term/map.png").write_bytes(b"\x89PNG\r\n")
    (root / "memory/long-term/diagram.canvas").write_text("{}")
    (root / "memory/long-term/.hidden.md").write_text("hidden\n")
    (root / "memory/long-term/note-1.md.swp").write_text("swap\n")
    (root / "memory/long-term/#autosave#.md").write_text("autosave\n")
    (root / "memory/long-term/x.tmp.md").write_text("temp\n")
    (root / ".obsidian").mkdir()
    (root / ".obsidian/workspace.md").write_text("editor state\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("never read\n")
    (root / "memory/long-term/linked").symlink_to(outside, target_is_directory=True)
    (root / "memory/long-term/linked-note.md").symlink_to(outside / "secret.md")
    return root


def every(parts: list[walk.Stats]) -> walk.Stats:
    return {path: stat for part in parts for path, stat in part.items()}


def test_the_walk_keeps_notes_and_attachments_and_skips_the_rest(tree: Path) -> None:
    notes, attachments = walk.stat_walk(tree.resolve(), FolderRules())
    expected = {f"memory/{'long-term' if i % 2 else 'mid-term/projects/p1'}/note-{i}.md" for i in range(40)}
    assert set(every(notes)) == expected
    assert set(every(attachments)) == {"memory/long-term/map.png", "memory/long-term/diagram.canvas"}
    stat = (tree / "memory/long-term/note-1.md").stat()
    assert every(notes)["memory/long-term/note-1.md"] == (stat.st_mtime, stat.st_size)


def test_each_part_holds_the_files_its_name_gives_and_a_part_walk_stats_only_those(tree: Path) -> None:
    root = tree.resolve()
    notes, attachments = walk.stat_walk(root, FolderRules())
    assert len(notes) == len(attachments) == walk.PARTS
    for part in range(walk.PARTS):
        assert all(walk.part_of(path.rsplit("/", 1)[-1]) == part for path in notes[part])
        assert 10 <= len(notes[part]) <= 30  # names split both ways, not all into one part
        only_notes, only_attachments = walk.stat_walk(root, FolderRules(), part)
        assert only_notes[part] == notes[part] and only_attachments[part] == attachments[part]
        assert not any(d for k, d in enumerate(only_notes + only_attachments) if k % walk.PARTS != part)


def test_listing_by_descriptor_and_by_path_agree(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tree.resolve()
    by_descriptor = walk.stat_walk(root, FolderRules())
    monkeypatch.setattr(walk, "_BY_DESCRIPTOR", False)
    assert walk.stat_walk(root, FolderRules()) == by_descriptor


@pytest.mark.skipif(not walk._BY_DESCRIPTOR, reason="folders are listed by path here")
def test_no_descriptor_is_left_open_and_a_linked_folder_is_never_opened(tree: Path) -> None:
    root = tree.resolve()
    fds = set(os.listdir("/proc/self/fd")) if Path("/proc/self/fd").is_dir() else None
    walk.stat_walk(root, FolderRules())
    if fds is not None:
        assert set(os.listdir("/proc/self/fd")) == fds
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError):  # a folder swapped for a link after it was listed
            walk._open(str(root), root_fd, "memory/long-term/linked/")
    finally:
        os.close(root_fd)


def test_excluded_folders_are_not_listed(tree: Path) -> None:
    rules = FolderRules.of(exclude=("memory/mid-term/projects",))
    notes, _ = walk.stat_walk(tree.resolve(), rules)
    assert set(every(notes)) == {f"memory/long-term/note-{i}.md" for i in range(1, 40, 2)}


def test_the_looks_at_each_part_join_into_the_whole_look(tree: Path) -> None:
    root, rules = tree.resolve(), FolderRules()
    text = "rules"
    whole = scan_mark.look(root, rules, text)
    parts = [scan_mark.look(root, rules, text, part) for part in range(walk.PARTS)]
    assert scan_mark.join(parts, text) == whole
    assert all(p.digest == scan_mark.part_digest(p.notes, p.attachments) for p in parts)
    assert scan_mark.look(root, rules, "other rules").digest != whole.digest
    for part in range(walk.PARTS):  # a change in any part changes the whole digest
        name = next(iter(parts[part].notes))
        os.utime(tree / name, (1, 1))
        assert scan_mark.look(root, rules, text).digest != whole.digest
        os.utime(tree / name, (whole.notes[name][0],) * 2)
    assert scan_mark.look(root, rules, text) == whole
