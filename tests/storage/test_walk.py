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


def in_order(found: tuple[list[walk.Stats], list[walk.Stats]]) -> list[list[tuple[str, tuple[float, int]]]]:
    """The walk's dicts as lists: the order of a listing is part of the digest."""
    return [list(d.items()) for d in (*found[0], *found[1])]


def test_listing_by_descriptor_and_by_path_agree(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tree.resolve()
    by_descriptor = in_order(walk.stat_walk(root, FolderRules()))
    monkeypatch.setattr(walk, "_BY_DESCRIPTOR", False)
    assert in_order(walk.stat_walk(root, FolderRules())) == by_descriptor
    assert sum(len(d) for d in by_descriptor) == 42


@pytest.mark.parametrize("by_descriptor", [True, False])
def test_a_vault_root_that_cannot_be_listed_is_an_error_not_an_empty_vault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_descriptor: bool
) -> None:
    if by_descriptor and not walk._BY_DESCRIPTOR:
        pytest.skip("folders are listed by path here")
    monkeypatch.setattr(walk, "_BY_DESCRIPTOR", by_descriptor)
    with pytest.raises(OSError):
        walk.stat_walk(tmp_path / "gone", FolderRules())


@pytest.mark.skipif(not walk._BY_DESCRIPTOR, reason="folders are listed by path here")
def test_a_folder_swapped_for_a_link_mid_walk_is_never_listed(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memory/` is replaced by a link to a folder outside the vault just before the walk opens
    `memory/long-term`: the walk goes on in the folder it had opened, never in the link's target."""
    root = tree.resolve()
    outside = tree.parent / "elsewhere"
    (outside / "long-term").mkdir(parents=True)
    (outside / "long-term" / "stolen.md").write_text("outside the vault\n")
    real_open = os.open
    swapped: list[str] = []

    def swapping_open(path: str, flags: int, *args: object, **kwargs: object) -> int:
        if str(path).endswith("long-term") and not swapped:
            (root / "memory").rename(root / "memory-old")
            (root / "memory").symlink_to(outside, target_is_directory=True)
            swapped.append(path)
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    fds = set(os.listdir("/proc/self/fd")) if Path("/proc/self/fd").is_dir() else None
    monkeypatch.setattr(os, "open", swapping_open)
    notes, _ = walk.stat_walk(root, FolderRules())
    monkeypatch.undo()
    assert swapped
    paths = set(every(notes))
    assert "memory/long-term/stolen.md" not in paths
    assert "memory/long-term/note-1.md" in paths  # listed in the folder it had opened, now memory-old
    if fds is not None:
        assert set(os.listdir("/proc/self/fd")) == fds  # every descriptor of the walk closed


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
    assert scan_mark.look(root, rules, "other rules").digest != whole.digest
    for part in range(walk.PARTS):  # a change in any part changes the whole digest
        name = next(iter(parts[part].notes))
        os.utime(tree / name, (1, 1))
        assert scan_mark.look(root, rules, text).digest != whole.digest
        os.utime(tree / name, (whole.notes[name][0],) * 2)
    assert scan_mark.look(root, rules, text) == whole
