"""The unit of work: one lock, one commit, nothing half-written after an exception or a kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import all_at_once, git, git_log, write

from tiered_memory.app.memory import Memory
from tiered_memory.errors import LockTimeout, NoteParseError, VaultError
from tiered_memory.model import note as notes
from tiered_memory.storage import locks
from tiered_memory.storage.transaction import Transaction, UnreadRewrite, recover
from tiered_memory.storage.vault import Vault


def test_one_change_is_one_commit_and_reindexed(memory: Memory) -> None:
    before = len(git_log(memory.vault.root))
    with memory.change("test: two notes") as tx:
        tx.create_text("memory/long-term/a.md", "# A\n\nalpha\n")
        tx.create_text("memory/long-term/b.md", "# B\n\nbeta\n")
    assert git_log(memory.vault.root)[0] == "test: two notes"
    assert len(git_log(memory.vault.root)) == before + 1
    assert git(memory.vault.root, "status", "--porcelain") == ""
    assert {r.path for r in memory.indexer.catalog.rows().values()} >= {
        "memory/long-term/a.md",
        "memory/long-term/b.md",
    }


def test_create_never_replaces_a_file_it_takes_the_next_name(vault: Vault) -> None:
    rel = "memory/long-term/user_profile.md"
    before = (vault.root / rel).read_bytes()
    tx = Transaction(vault, "create")
    final = tx.create_note(notes.Note(rel, {"id": "x"}, "overwrite!\n", True))
    tx.commit()
    assert final == "memory/long-term/user_profile-2.md"
    assert (vault.root / rel).read_bytes() == before


def test_move_never_overwrites(vault: Vault) -> None:
    write(vault.root, "memory/short-term/a.md", "moving")
    write(vault.root, "memory/archive/a.md", "already here")
    tx = Transaction(vault, "move")
    final = tx.move("memory/short-term/a.md", "memory/archive/a.md")
    tx.commit()
    assert final == "memory/archive/a-2.md"
    assert (vault.root / final).read_text() == "moving"
    assert (vault.root / "memory/archive/a.md").read_text() == "already here"


def test_a_note_with_broken_frontmatter_is_never_rewritten(vault: Vault) -> None:
    rel = "memory/long-term/broken.md"
    text = "---\ntitle: [oops\n---\nbody\n"
    write(vault.root, rel, text)
    note = vault.read_note(rel)
    tx = Transaction(vault, "edit")
    with pytest.raises(NoteParseError):
        tx.write_note(note.with_meta(importance=0.9))
    tx.rollback()
    assert (vault.root / rel).read_text() == text


def test_rewriting_keeps_unknown_keys_and_the_body(vault: Vault) -> None:
    rel = "memory/long-term/hand.md"
    original = "---\nid: hand\nobsidian-aliases: [one, two]\nrating: '5'\n---\n\n\n# Hand\r\nbody\n---\nend"
    write(vault.root, rel, original)
    tx = Transaction(vault, "edit")
    note = tx.read_note(rel)
    tx.write_note(note.with_meta(importance=0.7))
    tx.commit()
    again = vault.read_note(rel)
    assert again.meta == {"id": "hand", "obsidian-aliases": ["one", "two"], "rating": "5", "importance": 0.7}
    assert again.body == note.body == "\n\n# Hand\r\nbody\n---\nend"


def test_a_file_read_before_the_unit_of_work_cannot_be_rewritten(memory: Memory) -> None:
    # The shape that lost concurrent edits: read, then take the lock, then write what was read.
    rel = "memory/long-term/user_profile.md"
    before = (memory.vault.root / rel).read_bytes()
    head = git(memory.vault.root, "rev-parse", "HEAD")
    note = memory.vault.read_note(rel)
    with pytest.raises(UnreadRewrite, match="without being read in this unit of work"):
        with memory.change("edit: stale") as tx:
            tx.write_note(note.with_meta(importance=0.3))
    with pytest.raises(UnreadRewrite), memory.change("json: stale") as tx:
        tx.write_json(rel, {"blind": True})
    assert (memory.vault.root / rel).read_bytes() == before
    assert git(memory.vault.root, "rev-parse", "HEAD") == head


def test_a_file_read_in_the_unit_of_work_is_rewritten_from_that_read(memory: Memory) -> None:
    rel = "memory/long-term/user_profile.md"
    with memory.change("outer") as tx:
        note = tx.read_note(rel)
        with memory.change("inner joins the outer") as inner:  # one transaction: the read counts
            inner.write_note(note.with_meta(importance=0.3))
        tx.write_text(rel, tx.read_text(rel) + "\nagain\n")  # what it wrote is known to it too
        tx.write_text("memory/long-term/brand-new.md", "new\n")  # nothing there: nothing to read
    text = (memory.vault.root / rel).read_text()
    assert "importance: 0.3" in text and text.endswith("\nagain\n")
    assert git(memory.vault.root, "status", "--porcelain") == ""


def test_a_file_changed_after_it_was_read_is_not_written_over(vault: Vault) -> None:
    # A person's editor takes no lock: what it saved between the read and the write stays.
    rel = "memory/long-term/user_profile.md"
    tx = Transaction(vault, "edit")
    note = tx.read_note(rel)
    (vault.root / rel).write_text("saved by a person\n")
    with pytest.raises(VaultError, match="changed while tmem was changing it"):
        tx.write_note(note.with_meta(importance=0.3))
    tx.rollback()
    assert (vault.root / rel).read_text() == "saved by a person\n"
    # Found absent, then made by someone: not overwritten either.
    tx = Transaction(vault, "create")
    assert not tx.exists("memory/long-term/later.md")
    (vault.root / "memory/long-term/later.md").write_text("a person's\n")
    with pytest.raises(VaultError):
        tx.write_text("memory/long-term/later.md", "tmem's\n")
    tx.rollback()
    assert (vault.root / "memory/long-term/later.md").read_text() == "a person's\n"


@pytest.mark.parametrize("how", ["in place", "by rename"])
def test_a_save_landing_while_the_new_bytes_reach_the_disk_is_not_written_over(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    # The read was checked before the journal and the fsync; a save in that time (an agent's
    # plain write, an editor's rename) must still stay, and the write stop before its rename.
    from tiered_memory.storage import transaction

    rel = "memory/long-term/user_profile.md"
    path = vault.root / rel
    tx = Transaction(vault, "append")
    text = tx.read_text(rel)
    real_fsync = os.fsync

    def fsync_while_a_person_saves(fd: int) -> None:
        real_fsync(fd)
        if path.read_text() == text:
            if how == "in place":
                path.write_text(text + "- a line the person wrote\n")
            else:
                (vault.root / "saved.tmp").write_text(text + "- a line the person wrote\n")
                os.replace(vault.root / "saved.tmp", path)

    monkeypatch.setattr(transaction.os, "fsync", fsync_while_a_person_saves)
    with pytest.raises(VaultError, match="changed while tmem was changing it"):
        tx.write_text(rel, text + "- tmem's line\n")
    monkeypatch.setattr(transaction.os, "fsync", real_fsync)
    tx.rollback()

    assert path.read_text() == text + "- a line the person wrote\n"
    assert not [p for p in vault.root.rglob("*.tmp")], "the new bytes' temp file is removed"


def test_an_overwrite_said_so_needs_no_read(vault: Vault) -> None:
    tx = Transaction(vault, "replace")
    tx.write_text("memory/long-term/user_profile.md", "replaced whole\n", overwrite=True)
    tx.commit()
    assert (vault.root / "memory/long-term/user_profile.md").read_text() == "replaced whole\n"


def test_an_exception_undoes_every_change(memory: Memory) -> None:
    root = memory.vault.root
    profile = root / "memory/long-term/user_profile.md"
    before = profile.read_bytes()
    head = git(root, "rev-parse", "HEAD")
    with pytest.raises(RuntimeError), memory.change("test: fails half way") as tx:
        tx.write_text("memory/long-term/user_profile.md", "replaced\n", overwrite=True)
        tx.create_text("memory/long-term/new.md", "new\n")
        tx.move("memory/long-term/user_profile.md", "memory/archive/user_profile.md")
        raise RuntimeError("boom")
    assert profile.read_bytes() == before
    assert not (root / "memory/long-term/new.md").exists()
    assert not (root / "memory/archive/user_profile.md").exists()
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == ""
    assert not any((memory.vault.state_dir / "journal").iterdir())


def test_removing_a_file_git_has_not_seen_commits_it_first(memory: Memory) -> None:
    root = memory.vault.root
    write(root, "memory/long-term/draft.md", "# Draft\n\nonly on disk\n")
    with memory.change("forget: draft") as tx:
        tx.remove("memory/long-term/draft.md", title="Draft")
    assert git_log(root)[:2] == ["forget: draft", "edit: save 1 note(s) before removing Draft"]
    assert "only on disk" in git(root, "show", "HEAD~1:memory/long-term/draft.md")


def test_a_file_edited_while_it_is_being_removed_is_not_removed(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The person saves the note again after tmem committed what it had and before the removal:
    that last text is in no commit, so removing the file would lose it."""
    root = memory.vault.root
    rel = "memory/long-term/draft.md"
    write(root, rel, "# Draft\n\nfirst words\n")
    saved = memory.vault.git.commit_paths

    def then_the_person_saves(*args: object, **kwargs: object) -> object:
        done = saved(*args, **kwargs)  # type: ignore[arg-type]
        (root / rel).write_text("# Draft\n\nfirst words\nlast words\n")
        return done

    monkeypatch.setattr(memory.vault.git, "commit_paths", then_the_person_saves)
    with (
        pytest.raises(VaultError, match="changed while tmem was removing it"),
        memory.change("forget: draft") as tx,
    ):
        tx.remove(rel, title="Draft")
    assert (root / rel).read_text() == "# Draft\n\nfirst words\nlast words\n"
    assert git_log(root)[0] == "edit: save 1 note(s) before removing Draft"


def test_nested_changes_join_the_outer_one(memory: Memory) -> None:
    before = len(git_log(memory.vault.root))
    with memory.change("outer") as outer:
        outer.create_text("memory/long-term/one.md", "one\n")
        with memory.change("inner") as inner:
            assert inner is outer
            inner.create_text("memory/long-term/two.md", "two\n")
    assert git_log(memory.vault.root)[0] == "outer"
    assert len(git_log(memory.vault.root)) == before + 1


def test_file_names_of_any_shape_are_committed(vault: Vault) -> None:
    names = [
        "memory/long-term/new\nline.md",
        "memory/long-term/tab\there.md",
        'memory/long-term/"quoted".md',
        "memory/long-term/-leading-dash.md",
        "memory/long-term/控制点 坐标系.md",
        "memory/long-term/*glob?.md",
    ]
    tx = Transaction(vault, "odd names")
    for name in names:  # a path a person's file has (a new one tmem names is made portable)
        tx.write_text(name, "x\n")
    assert tx.commit()
    tracked = set(git(vault.root, "ls-files", "-z").split("\0"))
    assert set(names) <= tracked
    assert git(vault.root, "status", "--porcelain") == ""


def test_files_follow_the_umask(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import os, stat
        from pathlib import Path
        os.umask(0o077)
        from tiered_memory.storage.vault import init_vault, Vault
        from tiered_memory.storage.transaction import Transaction
        vault = init_vault(Path({str(tmp_path / "v")!r}), config_text="embeddings:\\n  provider: fake\\n")
        tx = Transaction(vault, "x")
        rel = tx.create_text("memory/long-term/sub/secret.md", "x\\n")
        tx.commit()
        print(oct(stat.S_IMODE((vault.root / rel).stat().st_mode)))
        print(oct(stat.S_IMODE((vault.root / "memory/long-term/sub").stat().st_mode)))
        print(oct(stat.S_IMODE((vault.root / "tmem.yaml").stat().st_mode)))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0o600", "0o700", "0o600"]


def test_writing_through_a_symlink_is_refused(vault: Vault, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("not yours")
    link = vault.root / "memory/long-term/link.md"
    link.symlink_to(outside)
    tx = Transaction(vault, "x")
    with pytest.raises(VaultError):
        tx.write_text("memory/long-term/link.md", "changed")
    tx.rollback()
    assert outside.read_text() == "not yours"


def test_a_stale_index_lock_is_removed_before_committing(memory: Memory) -> None:
    root = memory.vault.root
    (root / ".git" / "index.lock").write_text("")  # a crashed git left it; nobody holds it
    warnings: list[str] = []
    memory.warn = warnings.append
    with memory.change("remember: after a crash") as tx:
        tx.create_text("memory/long-term/after.md", "x\n")
    assert tx.sha
    assert not (root / ".git" / "index.lock").exists()
    assert any("stale" in w and "index.lock" in w for w in warnings)


def test_the_write_lock_times_out_with_one_clear_line(vault: Vault) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pathlib import Path\n"
            "from tiered_memory.storage import locks\n"
            "with locks.hold(Path(sys.argv[1]), 'write'):\n"
            "    print('held', flush=True)\n"
            "    time.sleep(30)\n",
            str(vault.state_dir),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(LockTimeout) as info, locks.hold(vault.state_dir, "write", wait=0.3):
            pass
        assert f"pid {holder.pid}" in str(info.value)
    finally:
        holder.kill()
        holder.wait()


def test_a_waiter_behind_a_queue_of_writers_keeps_waiting_while_the_lock_changes_hands(
    vault: Vault,
) -> None:
    # One flock handed down a chain of processes (a fork shares it), each writing its pid as the
    # holder: 2.4 s held in all, 0.3 s by each. A waiter allowed 1.2 s per holder must get it.
    chain = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import fcntl, os, sys, time
                fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
                fcntl.flock(fd, fcntl.LOCK_EX)
                for hop in range(8):
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, f"{os.getpid()}\\n".encode(), 0)
                    if hop == 0:
                        print("held", flush=True)
                    time.sleep(0.3)
                    if hop < 7 and os.fork():
                        os._exit(0)  # the child holds it now; exiting without unlocking
                """
            ),
            str(locks.lock_path(vault.state_dir, "write")),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert chain.stdout is not None and chain.stdout.readline().strip() == "held"
        with locks.hold(vault.state_dir, "write", wait=1.2):
            assert locks.holds(vault.state_dir, "write")
    finally:
        chain.kill()
        chain.wait()


def test_locks_refuse_the_wrong_order(vault: Vault) -> None:
    with locks.hold(vault.state_dir, "write"), pytest.raises(RuntimeError, match="lock order"):
        with locks.hold(vault.state_dir, "maintain"):
            pass


# ---- kill -9 ---------------------------------------------------------------------------------------

_KILLED_WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tiered_memory.app.memory import Memory
    from tiered_memory.storage.vault import Vault
    memory = Memory(Vault(Path(sys.argv[1])))
    with memory.change("maintain: many moves") as tx:
        for i in range(5):
            tx.create_text(f"memory/long-term/n{i}.md", f"note {i}\\n")
        tx.write_text("memory/long-term/user_profile.md", "rewritten\\n", overwrite=True)
        tx.move("memory/long-term/n0.md", "memory/archive/n0.md")
        print("written", flush=True)
        time.sleep(60)
    """
)


def test_a_unit_of_work_killed_before_its_commit_is_undone_by_the_next_one(memory: Memory) -> None:
    root = memory.vault.root
    profile = (root / "memory/long-term/user_profile.md").read_bytes()
    head = git(root, "rev-parse", "HEAD")
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(root)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "written"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (root / "memory/long-term/n1.md").exists()  # the half-done state is on disk

    warnings: list[str] = []
    memory.warn = warnings.append
    with memory.change("remember: next") as tx:
        tx.create_text("memory/long-term/next.md", "next\n")
    assert any("interrupted 'maintain: many moves' was undone" in w for w in warnings)
    assert (root / "memory/long-term/user_profile.md").read_bytes() == profile
    assert not any((root / f"memory/long-term/n{i}.md").exists() for i in range(5))
    assert not (root / "memory/archive/n0.md").exists()
    assert git(root, "rev-parse", "HEAD~1") == head
    assert git(root, "status", "--porcelain") == ""


def test_recovery_leaves_a_file_edited_after_the_crash(vault: Vault) -> None:
    tx = Transaction(vault, "interrupted")
    tx.write_text("memory/long-term/user_profile.md", "tmem wrote this\n", overwrite=True)
    tx._journal.close()  # the process "dies" here: journal left, no commit
    (vault.root / "memory/long-term/user_profile.md").write_text("then a person wrote this\n")
    warnings: list[str] = []
    assert recover(vault, warnings.append) == []
    assert (vault.root / "memory/long-term/user_profile.md").read_text() == "then a person wrote this\n"
    assert any("changed after the interrupted operation" in w for w in warnings)


def test_a_crash_after_the_commit_keeps_the_commit(vault: Vault) -> None:
    tx = Transaction(vault, "remember: kept")
    tx.create_text("memory/long-term/kept.md", "kept\n")
    assert vault.git.commit_paths(tx.touched, tx.message, vault.state_dir / "tmp", lambda m: None)
    tx._journal.close()  # died between the commit and the journal's last line
    assert recover(vault, lambda m: None) == []
    assert (vault.root / "memory/long-term/kept.md").read_text() == "kept\n"
    assert git_log(vault.root)[0] == "remember: kept"


def test_a_crash_after_the_commit_keeps_it_when_the_message_was_set_after_the_writes(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    tx = Transaction(vault, "maintain")
    tx.create_text("memory/long-term/moved.md", "moved\n")
    tx.message = "maintain: 1 moved"  # operations say what they did once they have done it
    # Dies between the commit and the journal's last line.
    monkeypatch.setattr(tx, "_close", lambda committed: tx._journal.close())
    assert tx.commit()
    assert recover(vault, lambda m: None) == []
    assert (vault.root / "memory/long-term/moved.md").read_text() == "moved\n"
    assert git_log(vault.root)[0] == "maintain: 1 moved"
    assert git(vault.root, "status", "--porcelain") == ""


def test_a_commit_message_shows_control_characters_rather_than_sending_them(vault: Vault) -> None:
    """A title an agent gave (or a transcript's first line) ends up in the commit message, which
    `git log` prints to a terminal as it is: an escape sequence there would drive the terminal."""
    tx = Transaction(vault, "remember: evil \x1b]0;pwned\x07 \x1b[31mred\x9b\nAgent: x\tfine")
    tx.create_text("memory/long-term/evil.md", "evil\n")
    assert tx.commit()
    shown = git(vault.root, "log", "-1", "--format=%B")
    assert shown.startswith("remember: evil \\x1b]0;pwned\\x07 \\x1b[31mred\\x9b\nAgent: x\tfine")
    assert not any(c in shown for c in "\x1b\x07\x9b")


def test_a_commit_message_shows_bidirectional_overrides_as_escapes(vault: Vault) -> None:
    """An override makes the rest of a line read backwards where the log is shown."""
    tx = Transaction(vault, "remember: invoice \u202efdp.exe\u202c and \u2066x\u2069 \u05e2\u05d1")
    tx.create_text("memory/long-term/invoice.md", "invoice\n")
    assert tx.commit()
    shown = git(vault.root, "log", "-1", "--format=%B")
    assert shown.startswith("remember: invoice \\u202efdp.exe\\u202c and \\u2066x\\u2069 \u05e2\u05d1\n")


def test_a_crash_while_rewriting_a_path_already_written_undoes_it(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    # maintain moves a note, then rewrites its frontmatter: killed after the rewrite reached the
    # disk but before the journal said so, the file is still this transaction's, not a person's.
    tx = Transaction(vault, "maintain")
    tx.create_text("memory/archive/moved.md", "moved\n")
    monkeypatch.setattr(tx, "_after", lambda rel: None)
    tx.write_text("memory/archive/moved.md", "moved, then stamped\n")
    tx._journal.close()
    assert recover(vault, lambda m: None) == ["memory/archive/moved.md"]
    assert not (vault.root / "memory/archive/moved.md").exists()
    assert git(vault.root, "status", "--porcelain") == ""


# Killed between an atomic write's temp file and its rename: the rename is made to hang.
_KILLED_MID_WRITE = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from tiered_memory.app.memory import Memory
    from tiered_memory.storage.vault import Vault

    def hanging(real):
        def call(src, dst, **kwargs):
            if str(src).endswith(".tmp"):
                print("temp written", flush=True)
                time.sleep(60)
            return real(src, dst, **kwargs)
        return call

    memory = Memory(Vault(Path(sys.argv[1])))
    with memory.change("maintain: rewrite") as tx:
        os.replace, os.link = hanging(os.replace), hanging(os.link)
        tx.write_text(sys.argv[2], "half written\\n", overwrite=True)
    """
)


def _stray_temp_files(root: Path) -> list[str]:
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*.tmp")
        if not p.relative_to(root).as_posix().startswith((".git/", ".tmem/"))
    )


@pytest.mark.parametrize("rel", ["memory/long-term/user_profile.md", "memory/long-term/brand-new.md"])
def test_a_write_killed_before_its_rename_leaves_no_file_behind(memory: Memory, rel: str) -> None:
    root = memory.vault.root
    before = (root / rel).read_bytes() if (root / rel).exists() else None
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_MID_WRITE, str(root), rel], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "temp written"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # Whatever the kill left is out of sight: no file a person, the scanner or git would see.
    assert _stray_temp_files(root) == []
    assert git(root, "status", "--porcelain") == ""

    with memory.change("remember: next") as tx:
        tx.create_text("memory/long-term/next.md", "next\n")
    assert git(root, "status", "--porcelain") == ""
    assert list(memory.vault.writing_dir.glob("*.tmp")) == []  # the dead writer's temp file is gone
    assert ((root / rel).read_bytes() if (root / rel).exists() else None) == before


_KILLED_MID_COMMIT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tiered_memory.app.memory import Memory
    from tiered_memory.storage.git import Git
    from tiered_memory.storage.vault import Vault
    real_run = Git.run

    def hanging_add(self, *args, **kwargs):
        if args and args[0] == "add":  # the commit's path list and message are written by now
            print("committing", flush=True)
            time.sleep(60)
        return real_run(self, *args, **kwargs)

    Git.run = hanging_add
    memory = Memory(Vault(Path(sys.argv[1])))
    with memory.change("remember: killed while committing") as tx:
        tx.create_text("memory/long-term/killed.md", "never committed\\n")
    """
)


def test_a_commit_killed_midway_leaves_no_scratch_folder_behind(memory: Memory) -> None:
    root = memory.vault.root
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_MID_COMMIT, str(root)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "committing"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    scratch = root / ".tmem/tmp"
    assert list(scratch.iterdir())  # what the killed commit was writing from

    with memory.change("remember: next") as tx:
        tx.create_text("memory/long-term/next.md", "next\n")
    assert list(scratch.iterdir()) == []  # the dead writer's folder is gone, this commit's too
    assert not (root / "memory/long-term/killed.md").exists()
    assert git(root, "status", "--porcelain") == ""


def test_recovery_removes_temp_files_left_beside_a_journalled_path(vault: Vault) -> None:
    # Where .tmem/ is on another file system (or an older tmem wrote them), temp files sit beside
    # the target; the interrupted journal names the path, so recovery knows where to look.
    tx = Transaction(vault, "interrupted")
    tx.write_text("memory/long-term/user_profile.md", "tmem wrote this\n", overwrite=True)
    tx._journal.close()
    stray = vault.root / "memory/long-term/.user_profile.md.k3x9q.tmp"
    stray.write_text("half written\n")
    editor = vault.root / "memory/long-term/.other.md.swp.tmp"  # not ours to remove
    editor.write_text("someone else's\n")
    recover(vault, lambda m: None)
    assert not stray.exists()
    assert editor.exists()


def test_a_live_writers_temp_files_are_kept(vault: Vault) -> None:
    mine = vault.writing_dir / f"{os.getpid()}-abc.tmp"
    mine.write_text("being written\n")
    recover(vault, lambda m: None)
    assert mine.exists()


# ---- many writers at once ---------------------------------------------------------------------------


@pytest.mark.parametrize("writers", [20])
def test_parallel_writers_never_lose_a_note(vault_path: Path, writers: int) -> None:
    # Each writer exits 0 with its own commit and leaves the tree clean (what all_at_once checks).
    all_at_once(vault_path, [["decide", "Adopt the same policy", "--why", "everyone agreed"]] * writers)
    files = sorted((vault_path / "memory/long-term/decisions").glob("*.md"))
    assert len(files) == writers
    assert git(vault_path, "status", "--porcelain") == ""
    assert sum(1 for s in git_log(vault_path) if s.startswith("remember: Adopt the same policy")) == writers
