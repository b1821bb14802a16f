"""Which file events mean which reindexing, and how bursts become batches: pure functions, fixed clocks,
plus one real watchdog observer over a temp folder."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from helpers import FIXED_NOW

from tiered_memory.app.filing import NewNote, add
from tiered_memory.app.memory import Memory
from tiered_memory.daemon.watcher import Debouncer, OwnWrites, RawEvent, Watcher, paths_to_reindex
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.storage.transaction import ABSENT, digest
from tiered_memory.storage.vault import Vault

ROOT = "/vault"
NOTE = "memory/long-term/knowledge_base/domains/kafka.md"


def ev(kind: str, rel: str, dest: str = "", *, folder: bool = False) -> RawEvent:
    return RawEvent(kind, f"{ROOT}/{rel}", f"{ROOT}/{dest}" if dest else "", folder)


def notes_of(*events: RawEvent) -> set[str]:
    return paths_to_reindex(events, ROOT).notes


# ---- the pure batch function ---------------------------------------------------------------------


def test_plain_create_modify_delete() -> None:
    assert notes_of(ev("created", NOTE), ev("modified", NOTE), ev("closed", NOTE)) == {NOTE}
    assert notes_of(ev("deleted", NOTE)) == {NOTE}


def test_reads_and_attribute_changes_are_not_changes() -> None:
    assert notes_of(ev("opened", NOTE), ev("closed_no_write", NOTE), ev("attrib", NOTE)) == set()


def test_rename_counts_for_both_ends() -> None:
    other = "memory/long-term/knowledge_base/domains/kafka-retention.md"
    assert notes_of(ev("moved", NOTE, other)) == {NOTE, other}


@pytest.mark.parametrize(
    "events",
    [
        # VS Code / Obsidian / tmem itself: write a temp file, rename it onto the note.
        [
            ev("created", "memory/long-term/.kafka.md.x1y2.tmp"),
            ev("modified", "memory/long-term/.kafka.md.x1y2.tmp"),
            ev("moved", "memory/long-term/.kafka.md.x1y2.tmp", "memory/long-term/kafka.md"),
        ],
        [ev("moved", "memory/long-term/kafka.md.tmp", "memory/long-term/kafka.md")],
        [ev("moved", "memory/long-term/kafka.md.crswap", "memory/long-term/kafka.md")],
        # vim: probe file 4913, backup by rename to kafka.md~, write the note anew, drop the backup.
        [
            ev("created", "memory/long-term/4913"),
            ev("deleted", "memory/long-term/4913"),
            ev("moved", "memory/long-term/kafka.md", "memory/long-term/kafka.md~"),
            ev("created", "memory/long-term/kafka.md"),
            ev("modified", "memory/long-term/kafka.md"),
            ev("deleted", "memory/long-term/kafka.md~"),
            ev("modified", "memory/long-term/.kafka.md.swp"),
            ev("created", "memory/long-term/.kafka.md.swx"),
        ],
        # emacs: lock link, autosave file, backup.
        [
            ev("created", "memory/long-term/.#kafka.md"),
            ev("modified", "memory/long-term/#kafka.md#"),
            ev("moved", "memory/long-term/kafka.md", "memory/long-term/kafka.md~"),
            ev("created", "memory/long-term/kafka.md"),
            ev("deleted", "memory/long-term/.#kafka.md"),
        ],
        # JetBrains safe write.
        [
            ev("created", "memory/long-term/kafka.md___jb_tmp___"),
            ev("moved", "memory/long-term/kafka.md", "memory/long-term/kafka.md___jb_old___"),
            ev("moved", "memory/long-term/kafka.md___jb_tmp___", "memory/long-term/kafka.md"),
            ev("deleted", "memory/long-term/kafka.md___jb_old___"),
        ],
    ],
    ids=["tempfile-rename", "dot-tmp", "crswap", "vim", "emacs", "jetbrains"],
)
def test_atomic_save_patterns_yield_the_real_name_only(events: list[RawEvent]) -> None:
    assert notes_of(*events) == {"memory/long-term/kafka.md"}


def test_git_tmem_hidden_and_foreign_paths_are_ignored() -> None:
    events = [
        ev("modified", ".git/index"),
        ev("created", ".git/objects/ab/cdef"),
        ev("modified", ".tmem/catalog.sqlite"),
        ev("modified", "memory/.tmem/catalog.md"),
        ev("modified", "memory/.obsidian/workspace.json"),
        ev("modified", "memory/long-term/.hidden.md"),
        ev("modified", ".obsidian/workspace.json"),  # the editor's state, no setting of tmem's
        ev("modified", "memory/tmem.yaml"),  # the vault's settings live at its root only
        ev("modified", "tasks.json"),  # JSON outside the tier folders is some app's data
        RawEvent("modified", "/elsewhere/memory/long-term/x.md"),
        RawEvent("rescan", ""),
    ]
    assert paths_to_reindex(events, ROOT) == paths_to_reindex([], ROOT)
    assert not paths_to_reindex(events, ROOT)


def test_a_changed_setting_of_what_is_a_note_asks_for_new_rules() -> None:
    """tmem.yaml (`folders:`) and the editor's templates settings decide which files are notes:
    the daemon reads them again when they change, whoever changed them (a person, a pull)."""
    for rel in ("tmem.yaml", ".obsidian/templates.json", ".obsidian/plugins/templater-obsidian/data.json"):
        changes = paths_to_reindex([ev("modified", rel)], ROOT)
        assert changes.settings and changes and not changes.notes, rel
    saved = paths_to_reindex([ev("moved", ".obsidian/templates.json.tmp", ".obsidian/templates.json")], ROOT)
    assert saved.settings  # an editor's atomic save: a temp file renamed onto the settings
    assert not paths_to_reindex([ev("modified", NOTE)], ROOT).settings


def test_folder_events_ask_for_a_rescan_of_the_folder() -> None:
    changes = paths_to_reindex(
        [
            ev("deleted", "memory/mid-term/projects/old", folder=True),
            ev("moved", "memory/mid-term/projects/a", "memory/archive/projects/a", folder=True),
            ev("created", "memory/mid-term/projects/new", folder=True),
            ev("modified", "memory/mid-term/projects", folder=True),  # a listing changed: nothing to do
            ev("created", "memory/.obsidian/plugins", folder=True),
        ],
        ROOT,
    )
    assert changes.notes == set()
    assert changes.folders == {
        "memory/mid-term/projects/old",
        "memory/mid-term/projects/a",
        "memory/archive/projects/a",
        "memory/mid-term/projects/new",
    }


def test_a_burst_of_a_thousand_files_is_one_set() -> None:
    events = []
    for i in range(1000):
        rel = f"memory/archive/sessions/2026/11/{i:04d}.md"
        events += [ev("created", rel), ev("modified", rel), ev("closed", rel)]
    assert len(notes_of(*events)) == 1000


# ---- the debouncer --------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_debouncer_waits_for_quiet() -> None:
    clock = FakeClock()
    debouncer = Debouncer(0.3, 2.0, clock)
    assert debouncer.take() == [] and debouncer.due_at() is None
    debouncer.add(ev("modified", NOTE))
    clock.advance(0.2)
    debouncer.add(ev("closed", NOTE))
    assert debouncer.due_at() == pytest.approx(100.5)
    clock.advance(0.29)
    assert debouncer.take() == []
    clock.advance(0.02)
    assert debouncer.take() == [ev("modified", NOTE), ev("closed", NOTE)]
    assert debouncer.take() == [] and len(debouncer) == 0


def test_debouncer_coalesces_a_burst_into_one_batch() -> None:
    clock = FakeClock()
    debouncer = Debouncer(0.3, 2.0, clock)
    batches = []
    for i in range(1000):
        rel = f"memory/archive/sessions/{i:04d}.md"
        debouncer.add(ev("created", rel))
        debouncer.add(ev("modified", rel))
        clock.advance(0.001)  # 1,000 files in one second: a git pull or an unzip
        if batch := debouncer.take():
            batches.append(batch)
    clock.advance(0.3)
    batches.append(debouncer.take())
    assert len(batches) == 1
    assert len(notes_of(*batches[0])) == 1000


def test_debouncer_flushes_a_stream_that_never_pauses() -> None:
    clock = FakeClock()
    debouncer = Debouncer(0.3, 2.0, clock)
    flushed_at = []
    for _ in range(500):  # an event every 0.1 s for 50 s
        debouncer.add(ev("modified", NOTE))
        clock.advance(0.1)
        if debouncer.take():
            flushed_at.append(clock.now)
    gaps = [b - a for a, b in zip(flushed_at, flushed_at[1:], strict=False)]
    assert len(flushed_at) >= 20
    assert max(gaps) <= 2.0 + 0.11


def test_debouncer_repeats_collapse_and_force_takes_early() -> None:
    clock = FakeClock()
    debouncer = Debouncer(0.3, 2.0, clock)
    for _ in range(50):
        debouncer.add(ev("modified", NOTE))
    assert len(debouncer) == 1
    assert debouncer.take(force=True) == [ev("modified", NOTE)]


def test_debouncer_wait_wakes_on_first_event_and_on_close() -> None:
    debouncer = Debouncer(0.05, 1.0)
    woke = threading.Event()

    def waiter() -> None:
        debouncer.wait(10.0)
        woke.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.05)
    debouncer.add(ev("modified", NOTE))
    assert woke.wait(2.0)
    thread.join()
    debouncer.close()
    start = time.monotonic()
    debouncer.wait(10.0)  # closed: returns at once
    assert time.monotonic() - start < 1.0


# ---- a real watchdog observer -----------------------------------------------------------------------


def wait_for(predicate: object, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def test_watcher_records_inotify_events_and_notices_a_replaced_folder(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    folder = root / "memory"
    (folder / "long-term").mkdir(parents=True)
    seen: list[RawEvent] = []
    watcher = Watcher(folder, seen.append)
    watcher.start()
    try:
        assert watcher.problem() is None
        (folder / "long-term" / "a.md").write_text("hello\n")
        tmp = folder / "long-term" / ".b.md.123.tmp"
        tmp.write_text("atomic\n")
        tmp.rename(folder / "long-term" / "b.md")
        expected = {"memory/long-term/a.md", "memory/long-term/b.md"}
        assert wait_for(lambda: paths_to_reindex(list(seen), str(root)).notes == expected)
        # Reading a note is not an event the daemon sees (it would feed on its own reads).
        count = len(seen)
        (folder / "long-term" / "a.md").read_text()
        time.sleep(0.2)
        assert len(seen) == count
        # memory/ moved away and recreated: inotify still watches the old folder.
        folder.rename(root / "memory.old")
        folder.mkdir()
        assert watcher.problem() == "memory/ was replaced by another folder"
        watcher.stop()
        watcher.start()
        assert watcher.problem() is None
        (folder / "c.md").write_text("x")
        assert wait_for(lambda: any(e.src.endswith("/memory/c.md") for e in seen))
    finally:
        watcher.stop()
    assert watcher.problem() == "not started"


def test_notes_anywhere_and_attachments_are_reported() -> None:
    changes = paths_to_reindex(
        [
            ev("modified", "README.md"),
            ev("created", "Projects/Survey plan.md"),
            ev("created", "Projects/map.png"),
            ev("modified", ".obsidian/app.json"),
            ev("created", "Daily", folder=True),
        ],
        ROOT,
    )
    assert changes.notes == {"README.md", "Projects/Survey plan.md"}
    assert changes.attachments == {"Projects/map.png"} and changes.folders == {"Daily"}


def watched_inodes() -> set[int]:
    """The inodes this process's inotify instances watch (Linux: /proc/self/fdinfo)."""
    found: set[int] = set()
    for fd in os.listdir("/proc/self/fdinfo"):
        try:
            text = Path(f"/proc/self/fdinfo/{fd}").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("inotify wd:"):
                found.add(int(line.split(" ino:")[1].split()[0], 16))
    return found


@pytest.mark.skipif(not Path("/proc/self/fdinfo").is_dir(), reason="reads inotify's watches in /proc")
def test_git_and_tmem_are_not_watched_and_new_top_folders_are(vault_path: Path) -> None:
    """The daemon's commits, index files and log bring it no events at all: .git/ and .tmem/
    hold no watch. A folder made at the top later is watched as soon as it is made."""
    root = vault_path.resolve()
    (root / ".tmem").mkdir(exist_ok=True)
    seen: list[RawEvent] = []
    watcher = Watcher(root, seen.append)
    watcher.start()
    try:
        watched = watched_inodes()
        for hidden in (".git", ".git/objects", ".tmem"):
            assert (root / hidden).stat().st_ino not in watched, hidden
        assert {root.stat().st_ino, (root / "memory").stat().st_ino} <= watched
        (root / "Projects").mkdir()  # reported as a folder to walk: what is in it before its watch too
        assert wait_for(lambda: "Projects" in paths_to_reindex(list(seen), str(root)).folders)
        assert wait_for(lambda: (root / "Projects").stat().st_ino in watched_inodes())
        (root / "Projects" / "plan.md").write_text("# Plan\n")
        assert wait_for(lambda: "Projects/plan.md" in paths_to_reindex(list(seen), str(root)).notes)
        # Removed and made again: the new folder is watched, not the old one.
        (root / "Projects" / "plan.md").unlink()
        (root / "Projects").rmdir()
        (root / "Projects").mkdir()
        assert wait_for(lambda: (root / "Projects").stat().st_ino in watched_inodes())
        (root / "Projects" / "later.md").write_text("# Later\n")
        assert wait_for(lambda: "Projects/later.md" in paths_to_reindex(list(seen), str(root)).notes)
        # A hidden folder made with its settings file at once: the file, written before the
        # folder's watch began, is reported all the same.
        (root / ".obsidian").mkdir()
        (root / ".obsidian" / "templates.json").write_text('{"folder": "Templates"}')
        assert wait_for(lambda: paths_to_reindex(list(seen), str(root)).settings)
        assert watcher.problem() is None
    finally:
        watcher.stop()


def test_own_writes_hold_what_was_told_until_someone_else_writes(tmp_path: Path) -> None:
    now = [0.0]
    own = OwnWrites(keep=60.0, clock=lambda: now[0])
    note = tmp_path / "a.md"
    note.write_bytes(b"tmem wrote this\n")
    own.told("a.md", digest(b"tmem wrote this\n"))
    own.told("gone.md", ABSENT)
    assert own.holds("a.md", note) and own.holds("gone.md", tmp_path / "gone.md")
    assert not own.holds("b.md", tmp_path / "b.md")  # never told
    note.write_bytes(b"a person's save, a moment later\n")
    assert not own.holds("a.md", note)
    note.write_bytes(b"tmem wrote this\n")
    now[0] = 61.0
    assert not own.holds("a.md", note)  # told too long ago: an event this late is no echo of it


def test_the_daemons_own_writes_are_dropped_and_a_persons_edit_is_not(vault_path: Path) -> None:
    root = vault_path.resolve()
    vault = Vault(root)
    own = OwnWrites()
    vault.will_write = own.told
    seen: list[RawEvent] = []
    watcher = Watcher(root, seen.append, own)
    memory = Memory(vault, embedder_factory=lambda: FakeEmbedder(64), now=lambda: FIXED_NOW)
    watcher.start()
    try:
        memory.refresh()
        rels = [add(memory, NewNote(text=f"Otter fact {i}.", title=f"Otter {i}")).path for i in range(5)]
        with memory.change("move: Otter 4") as tx:
            tx.read_note(rels[4])
            moved = tx.move(rels[4], rels[4].replace(".md", "-moved.md"))
        assert wait_for(lambda: watcher.dropped >= 6)
        time.sleep(0.2)
        assert paths_to_reindex(list(seen), str(root)).notes == set()
        (root / rels[0]).write_text((root / rels[0]).read_text() + "Edited by hand.\n")
        (root / moved).unlink()
        assert wait_for(lambda: paths_to_reindex(list(seen), str(root)).notes == {rels[0], moved})
    finally:
        watcher.stop()
        memory.close()
