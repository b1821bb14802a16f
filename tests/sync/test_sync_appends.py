"""Two machines appending to one note, synced through a bare remote: the additions are merged in
the order they were written (by their commits' author dates), without markers, wherever each side
only added text at the end; any other overlap is merged as before."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import FAKE_CONFIG, FIXED_NOW, git

from tiered_memory.app.api.sync import SyncResult
from tiered_memory.app.memory import Memory
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.model.merge3 import has_markers
from tiered_memory.model.note import parse
from tiered_memory.present.sync import sync_text
from tiered_memory.storage.vault import Vault, init_vault
from tiered_memory.sync.appends import merge_appends
from tiered_memory.sync.gitmerge import adopt_vault
from tiered_memory.sync.gitsync import sync

EARLY, LATE = "2026-11-20T10:00:00+0000", "2026-11-20T11:00:00+0000"

NOTE = """---
id: standup-log
title: Standup log
tags: [team]
updated: 2026-11-19T09:00:00+00:00
---

# Standup log

- Monday: the queue moved to Postgres.
- Tuesday: retention is 30 days.
"""
REL = "memory/long-term/standup-log.md"


@dataclass
class Machine:
    root: Path
    memory: Memory
    monkeypatch: pytest.MonkeyPatch

    def read(self, rel: str) -> str:
        return (self.root / rel).read_bytes().decode("utf-8")

    def write(self, rel: str, text: str) -> None:
        (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (self.root / rel).write_bytes(text.encode("utf-8"))

    def append(self, rel: str, text: str) -> None:
        self.write(rel, self.read(rel) + text)

    def sync(self, when: str = LATE) -> SyncResult:
        """Sync, its pending edits committed as written at `when`."""
        self.monkeypatch.setenv("GIT_AUTHOR_DATE", when)
        try:
            return SyncResult.from_dict(sync(self.memory).to_dict())
        finally:
            self.monkeypatch.delenv("GIT_AUTHOR_DATE")


def _open(root: Path, monkeypatch: pytest.MonkeyPatch) -> Machine:
    memory = Memory(Vault(root), embedder_factory=lambda: FakeEmbedder(64), now=lambda: FIXED_NOW)
    return Machine(root, memory, monkeypatch)


@pytest.fixture
def pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Machine, Machine]]:
    """Two clones (laptop, desktop) of one vault through a bare remote, both holding NOTE."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(remote)], check=True)
    root = tmp_path / "laptop"
    init_vault(root, config_text=FAKE_CONFIG)
    git(root, "remote", "add", "origin", str(remote))
    laptop = _open(root, monkeypatch)
    laptop.write(REL, NOTE)
    assert laptop.sync(EARLY).pushed
    other = tmp_path / "desktop"
    subprocess.run(["git", "clone", "--quiet", str(remote), str(other)], check=True)
    adopt_vault(other)
    desktop = _open(other, monkeypatch)
    yield laptop, desktop
    laptop.memory.close()
    desktop.memory.close()


def converged(first: Machine, second: Machine, rel: str) -> str:
    first.sync()
    second.sync()
    assert first.read(rel) == second.read(rel)
    assert git(first.root, "status", "--porcelain").strip() == ""
    return first.read(rel)


@pytest.mark.parametrize("desktop_first", [True, False])
def test_two_appends_are_merged_in_the_order_written(
    pair: tuple[Machine, Machine], desktop_first: bool
) -> None:
    laptop, desktop = pair
    laptop.append(REL, "- Wednesday: laptop's agent added the alerting runbook.\n")
    desktop.append(REL, "- Wednesday: desktop's agent moved standup to 9:30.\n- Thursday: desktop again.\n")
    laptop.sync(LATE if desktop_first else EARLY)  # pushed first, whichever was written first
    report = desktop.sync(EARLY if desktop_first else LATE)

    text = converged(laptop, desktop, REL)
    additions = [
        "- Wednesday: desktop's agent moved standup to 9:30.\n- Thursday: desktop again.\n",
        "- Wednesday: laptop's agent added the alerting runbook.\n",
    ]
    if not desktop_first:
        additions.reverse()
    assert parse(text, REL).body == parse(NOTE, REL).body + "".join(additions)
    assert not has_markers(text) and "conflict" not in parse(text, REL).meta
    assert report.appends == [REL] and report.conflicts == []
    assert (
        f"appends merged: 1 note(s) both machines appended to, each addition kept in the order written ({REL})"
        in (sync_text(report))
    )


def test_an_append_and_an_edit_of_a_line_the_other_also_changed_still_conflict(
    pair: tuple[Machine, Machine],
) -> None:
    laptop, desktop = pair
    laptop.write(REL, NOTE.replace("30 days", "60 days") + "- laptop's line\n")
    desktop.write(REL, NOTE.replace("30 days", "90 days") + "- desktop's line\n")
    laptop.sync(EARLY)
    report = desktop.sync(LATE)
    text = desktop.read(REL)
    assert report.conflicts == [REL] and report.appends == []
    assert has_markers(text) and parse(text, REL).meta.get("conflict") is True
    for kept in ("60 days", "90 days", "- laptop's line", "- desktop's line"):
        assert kept in text


def test_an_append_and_an_edit_in_the_middle_merge_by_lines_as_before(pair: tuple[Machine, Machine]) -> None:
    laptop, desktop = pair
    laptop.append(REL, "- laptop's line\n")
    desktop.write(REL, NOTE.replace("30 days", "90 days"))
    laptop.sync(LATE)
    report = desktop.sync(EARLY)
    assert report.appends == [] and report.conflicts == []
    assert parse(desktop.read(REL), REL).body == parse(NOTE, REL).body.replace("30 days", "90 days") + (
        "- laptop's line\n"
    )


def test_appends_where_one_side_also_changed_the_frontmatter(pair: tuple[Machine, Machine]) -> None:
    laptop, desktop = pair
    laptop.write(REL, NOTE.replace("tags: [team]", "tags: [team, ops]") + "- laptop's line\n")
    desktop.write(
        REL, NOTE.replace("2026-11-19T09:00:00+00:00", "2026-11-21T09:00:00+00:00") + "- desktop's line\n"
    )
    laptop.sync(EARLY)
    report = desktop.sync(LATE)
    text = converged(laptop, desktop, REL)
    note = parse(text, REL)
    assert report.appends == [REL] and report.conflicts == []
    assert note.meta["tags"] == ["team", "ops"]
    assert str(note.meta["updated"]).startswith("2026-11-21")
    assert note.body == parse(NOTE, REL).body + "- laptop's line\n- desktop's line\n"


def test_a_frontmatter_value_both_changed_with_no_later_side_keeps_the_usual_merge(
    pair: tuple[Machine, Machine],
) -> None:
    laptop, desktop = pair
    laptop.write(REL, NOTE.replace("title: Standup log", "title: Laptop's log") + "- laptop's line\n")
    desktop.write(REL, NOTE.replace("title: Standup log", "title: Desktop's log") + "- desktop's line\n")
    laptop.sync(EARLY)
    report = desktop.sync(LATE)
    assert report.appends == [] and report.conflicts == [REL]
    text = desktop.read(REL)
    assert "- laptop's line" in text and "- desktop's line" in text and "Laptop's log" in text


PERSON = "notes/journal.md"  # a person's note, outside memory/, without frontmatter


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_a_persons_note_without_a_final_newline_gets_both_appends(
    pair: tuple[Machine, Machine], eol: str
) -> None:
    laptop, desktop = pair
    base = f"# Journal{eol}{eol}First entry."  # no final line ending
    laptop.write(PERSON, base)
    laptop.sync(EARLY)
    desktop.sync(EARLY)
    assert desktop.read(PERSON) == base
    desktop.append(PERSON, f"{eol}- desktop wrote this{eol}")
    laptop.append(PERSON, f"{eol}- laptop wrote this{eol}")
    desktop.sync(LATE)
    report = laptop.sync(EARLY)
    assert report.appends == [PERSON] and report.conflicts == []
    text = converged(laptop, desktop, PERSON)
    assert text == f"# Journal{eol}{eol}First entry.{eol}- laptop wrote this{eol}- desktop wrote this{eol}"


def test_a_line_ending_left_open_is_closed_before_the_other_addition(pair: tuple[Machine, Machine]) -> None:
    laptop, desktop = pair
    base = "# Journal\r\n\r\nFirst entry.\r\n"
    laptop.write(PERSON, base)
    laptop.sync(EARLY)
    desktop.sync(EARLY)
    laptop.append(PERSON, "- laptop, no line ending")
    desktop.append(PERSON, "- desktop\r\n")
    laptop.sync(EARLY)
    report = desktop.sync(LATE)
    assert report.appends == [PERSON]
    assert converged(laptop, desktop, PERSON) == base + "- laptop, no line ending\r\n- desktop\r\n"


def test_text_added_to_the_last_line_itself_is_not_an_append() -> None:
    base = "# Journal\n\nFirst entry."
    assert merge_appends(base, base + " And more.", base + "\n- a line\n", "notes/j.md", True) is None
    assert merge_appends(base, base + "\n- one\n", base + "\n- two\n", "notes/j.md", True) == (
        base + "\n- one\n- two\n"
    )
    # lines both got from a third machine: left to the usual merge, which keeps them once
    assert merge_appends(base, base + "\n- c\n- a\n", base + "\n- c\n- b\n", "notes/j.md", True) is None


def test_tmem_update_append_on_both_machines_reads_as_one_after_the_other(
    pair: tuple[Machine, Machine],
) -> None:
    from tiered_memory.app.api.notes import UpdateRequest
    from tiered_memory.app.notes import update

    laptop, desktop = pair
    desktop.sync()
    laptop.monkeypatch.setenv("GIT_AUTHOR_DATE", LATE)
    update(laptop.memory, UpdateRequest(id="standup-log", append="laptop: shipped the runbook"))
    laptop.monkeypatch.setenv("GIT_AUTHOR_DATE", EARLY)
    update(desktop.memory, UpdateRequest(id="standup-log", append="desktop: retro on Friday"))
    laptop.monkeypatch.delenv("GIT_AUTHOR_DATE")
    laptop.sync()
    report = desktop.sync()
    assert report.appends == [REL]
    body = parse(converged(laptop, desktop, REL), REL).body
    assert body == parse(NOTE, REL).body + "\ndesktop: retro on Friday\n\nlaptop: shipped the runbook\n"


def test_appends_to_a_short_note_both_machines_archived_are_merged(pair: tuple[Machine, Machine]) -> None:
    """Archived on both machines, a short note moves to one path while its frontmatter grows by
    the move's keys: git misses the rename and sees one note added twice (no base). By its id the
    base is the note both removed, and the two appends merge as anywhere else."""
    from tiered_memory.app.api.lifecycle import ArchiveRequest
    from tiered_memory.app.filing import NewNote, add
    from tiered_memory.app.lifecycle import archive

    laptop, desktop = pair
    rel = add(laptop.memory, NewNote(text="velvet ripple xenon", tier="mid")).path
    laptop.sync(EARLY)
    desktop.sync(EARLY)
    note_id = parse(laptop.read(rel), rel).meta["id"]
    laptop.append(rel, "- laptop's line\n")
    desktop.append(rel, "- desktop's line one\n- desktop's line two\n")
    laptop.sync(EARLY)
    desktop.sync(LATE)  # merged: no conflict either way, the other side has not moved it yet
    laptop.sync(EARLY)
    laptop.append(rel, "\n- laptop again\n")
    desktop.append(rel, "- desktop again\n")
    for machine, when in zip(pair, (EARLY, LATE), strict=True):
        machine.monkeypatch.setenv("GIT_AUTHOR_DATE", when)  # the archive commits the append too
        moved = str(archive(machine.memory, ArchiveRequest(ref=note_id, reason="chaos")).dst)
    laptop.monkeypatch.delenv("GIT_AUTHOR_DATE")
    laptop.sync(EARLY)
    report = desktop.sync(LATE)
    assert report.appends == [moved] and report.conflicts == []
    text = converged(laptop, desktop, moved)
    assert not has_markers(text) and "conflict" not in parse(text, moved).meta
    assert text.endswith(
        "- laptop's line\n- desktop's line one\n- desktop's line two\n\n- laptop again\n- desktop again\n"
    )


def test_a_short_note_both_machines_moved_merges_with_its_base(pair: tuple[Machine, Machine]) -> None:
    """Archived on both machines, edited in the middle on one: not two appends, but merged with
    the note both removed as its base it needs no choice, where git, with no base, kept both
    versions of the whole note between markers."""
    from tiered_memory.app.api.lifecycle import ArchiveRequest
    from tiered_memory.app.filing import NewNote, add
    from tiered_memory.app.lifecycle import archive

    laptop, desktop = pair
    rel = add(laptop.memory, NewNote(text="tn\n- 1\n- 2\n", tier="mid")).path
    laptop.sync()
    desktop.sync()
    note_id = parse(laptop.read(rel), rel).meta["id"]
    middle = "".join(f"- 1.{n} a line added by hand in the middle\n" for n in range(1, 10))
    laptop.write(rel, laptop.read(rel).replace("- 1\n", "- 1\n" + middle) + "- 3\n")
    moved = ""
    for machine in pair:
        moved = str(archive(machine.memory, ArchiveRequest(ref=note_id, reason="chaos")).dst)
    laptop.sync()
    report = desktop.sync()
    assert report.conflicts == [] and report.appends == []
    text = converged(laptop, desktop, moved)
    assert not has_markers(text) and "conflict" not in parse(text, moved).meta
    assert parse(text, moved).body.endswith("- 1\n" + middle + "- 2\n- 3\n")
