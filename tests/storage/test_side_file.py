"""Derived side files: written whole, and a failed write leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

from tiered_memory.storage import side_file


def test_a_side_file_is_replaced_whole(tmp_path: Path) -> None:
    target = tmp_path / "mark"
    assert side_file.replace(target, "old\n") and side_file.replace(target, "new\n")
    assert target.read_text(encoding="utf-8") == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mark"]


def test_a_side_file_that_cannot_be_written_leaves_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    (folder / "mark").mkdir()  # the name is taken by a folder: the rename fails
    assert not side_file.replace(folder / "mark", "text")
    assert not side_file.replace(tmp_path / "missing" / "mark", "text")
    assert sorted(p.name for p in folder.iterdir()) == ["mark"] and (folder / "mark").is_dir()
