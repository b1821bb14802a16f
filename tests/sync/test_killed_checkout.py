"""A sync killed while git checks out a merge (`read-tree -m -u`, or a fast-forward's checkout):
git unlinks a file before writing its new version, and removes the files the merge deletes, so
the kill leaves files missing (or cut short) that the index still names. The next writer's
recovery puts them back as HEAD has them, so no commit takes them as deleted by a person, and the
next sync merges again."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import FAKE_CONFIG, FIXED_NOW, git

from tiered_memory.app.memory import Memory
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.storage import merging
from tiered_memory.storage.git import Git
from tiered_memory.storage.vault import Vault, init_vault
from tiered_memory.sync.gitmerge import adopt_vault
from tiered_memory.sync.gitsync import sync

KEPT = "memory/long-term/kept.md"  # changed by the laptop: the checkout unlinks, then rewrites it
GONE = "memory/long-term/gone.md"  # deleted by the laptop
CUT = "memory/long-term/cut.md"  # changed by the laptop: the kill cuts its new version short
MINE = "memory/long-term/mine.md"  # changed by the desktop: makes the merge a real one


class Killed(BaseException):
    """kill -9: nothing after it runs (no `except`, as a TmemError would be caught)."""


def _memory(root: Path) -> Memory:
    return Memory(Vault(root), embedder_factory=lambda: FakeEmbedder(64), now=lambda: FIXED_NOW)


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Memory, Memory]]:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(remote)], check=True)
    laptop_root, desktop_root = tmp_path / "laptop", tmp_path / "desktop"
    init_vault(laptop_root, config_text=FAKE_CONFIG)
    git(laptop_root, "remote", "add", "origin", str(remote))
    for rel in (KEPT, GONE, CUT, MINE):
        (laptop_root / rel).parent.mkdir(parents=True, exist_ok=True)
        (laptop_root / rel).write_text(f"# {rel}\n\nThe first version.\n", encoding="utf-8")
    laptop = _memory(laptop_root)
    assert sync(laptop).pushed
    subprocess.run(["git", "clone", "--quiet", str(remote), str(desktop_root)], check=True)
    adopt_vault(desktop_root)
    desktop = _memory(desktop_root)
    (laptop_root / KEPT).write_text(f"# {KEPT}\n\nThe first version.\nThe laptop's line.\n", encoding="utf-8")
    (laptop_root / CUT).write_text(
        f"# {CUT}\n\nThe first version.\nA long line " + "x" * 400 + "\n", encoding="utf-8"
    )
    (laptop_root / GONE).unlink()
    assert sync(laptop).pushed
    yield laptop, desktop
    laptop.close()
    desktop.close()


def _kill_during_checkout(monkeypatch: pytest.MonkeyPatch, checkout: tuple[str, ...]) -> None:
    """The checkout git starts (its first arguments `checkout`) gets as far as unlinking KEPT and
    GONE and writing half of CUT's new version (holding the index lock), then the sync dies."""
    real = Git.run
    monkeypatch.setattr(merging, "ended", lambda vault: None)  # a finally block a kill never reaches

    def run(self: Git, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        if args[: len(checkout)] != checkout:
            return real(self, *args, **kwargs)  # type: ignore[arg-type]
        (self.root / KEPT).unlink()
        (self.root / GONE).unlink()
        new = self.blob(f"origin/main:{CUT}")
        (self.root / CUT).write_bytes(new[: len(new) // 2])
        (self.root / ".git" / "index.lock").write_bytes(b"")
        raise Killed

    monkeypatch.setattr(Git, "run", run)


def _deleted_by_commits(root: Path) -> str:
    return git(root, "log", "--diff-filter=D", "--no-merges", "--name-only", "--format=%s", "--", "memory")


@pytest.mark.parametrize("real_merge", [True, False], ids=["merge", "fast-forward"])
def test_files_a_killed_checkout_unlinked_come_back_and_are_merged_again(
    pair: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch, real_merge: bool
) -> None:
    laptop, desktop = pair
    root = desktop.vault.root
    if real_merge:
        (root / MINE).write_text(f"# {MINE}\n\nThe first version.\nThe desktop's line.\n", encoding="utf-8")
        with desktop.change("edit: mine") as tx:
            tx.include([MINE])
    head = git(root, "rev-parse", "HEAD").strip()
    _kill_during_checkout(monkeypatch, ("read-tree", "-m", "-u") if real_merge else ("merge", "--ff-only"))
    with pytest.raises(Killed):
        sync(desktop)
    monkeypatch.undo()
    assert not (root / KEPT).exists()

    desktop.recover()  # what the next writer does first, under the write lock
    assert git(root, "rev-parse", "HEAD").strip() == head
    assert (root / KEPT).read_text(encoding="utf-8") == f"# {KEPT}\n\nThe first version.\n"
    assert (root / CUT).read_text(encoding="utf-8") == f"# {CUT}\n\nThe first version.\n"
    assert (root / GONE).exists()  # put back: the merge deletes it once it is made again
    assert git(root, "status", "--porcelain", "--", "memory").strip() == ""

    report = sync(desktop)
    assert report.pushed == real_merge and report.kept_edits == [] and report.conflicts == []
    assert (root / KEPT).read_text(encoding="utf-8").endswith("The laptop's line.\n")
    assert (root / CUT).read_bytes() == git(root, "show", f"origin/main:{CUT}").encode()
    assert not (root / GONE).exists()
    deleted = _deleted_by_commits(root)
    assert deleted.count(KEPT) == 0 and deleted.count(CUT) == 0
    assert deleted.count(GONE) == 1  # by the laptop, which deleted it


def test_the_versions_git_hands_a_merge_driver_are_never_committed(pair: tuple[Memory, Memory]) -> None:
    """git writes the three versions for a merge driver to `.merge_file_XXXXXX` at the top of the
    work tree while it merges; a sync killed meanwhile leaves that git running without the lock,
    and the next commit of pending edits took them (and pushed them to every machine: chaos_sync
    seed 21)."""
    _, desktop = pair
    root = desktop.vault.root
    (root / ".merge_file_Ab12Cd").write_text("---\nid: a-note\n---\nits text\n", encoding="utf-8")
    (root / "memory/long-term/hand.md").write_text("# By hand\n", encoding="utf-8")
    report = sync(desktop)
    assert report.pushed
    tracked = git(root, "ls-files").split()
    assert "memory/long-term/hand.md" in tracked and ".merge_file_Ab12Cd" not in tracked
