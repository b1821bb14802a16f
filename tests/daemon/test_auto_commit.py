"""The daemon's auto-commit of hand edits, driven directly: which edited files it commits."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from helpers import FIXED_NOW, commit, git, write

from tiered_memory.app.filing import NewNote, add
from tiered_memory.daemon.jobs import AutoCommitter
from tiered_memory.daemon.loop import Daemon
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.storage.vault import Vault

# As agents write it: a colon inside a plain scalar, which YAML refuses (Obsidian shows the body).
BROKEN = "---\ntitle: ADR-019 — precio: con IVA incluido\ndate: 2026-05-24\n---\n# Precio\n\nDecidido.\n"


def committer(vault: Vault, done: list[list[str]]) -> AutoCommitter:
    def record(paths: list[str], describe: Callable[[], str]) -> str:
        describe()
        done.append(paths)
        return "0" * 40

    return AutoCommitter(vault, record, 1, stability=0.0, wall=lambda: 4e9)


def test_an_edit_of_a_note_whose_yaml_never_parsed_is_committed(vault: Vault) -> None:
    """An agent-written note whose frontmatter was committed broken is how the note is, not a
    half-saved edit: a person's edit of its body is committed. A frontmatter broken by the edit
    itself, or a new file that does not parse, still waits until it is fixed."""
    root = Path(vault.root)
    old, fresh, new = "decisions/ADR-019.md", "decisions/ADR-020.md", "decisions/ADR-021.md"
    write(root, old, BROKEN)
    write(root, fresh, BROKEN.replace("precio: con IVA", "precio con IVA"))
    commit(vault, [old, fresh], "a person's notes")
    write(root, old, BROKEN + "\nAñadido a mano.\n")
    write(root, fresh, BROKEN + "\nAñadido a mano.\n")  # its frontmatter broken now, by this edit
    write(root, new, "---\ntitle: [sin terminar\n")
    done: list[list[str]] = []
    auto = committer(vault, done)
    auto.note({old: "ADR-019", fresh: "ADR-020", new: "ADR-021"})
    auto.commit()
    assert done == [[old]]


def test_a_tmem_commands_own_writes_neither_wait_nor_appear_in_the_message(vault_path: Path) -> None:
    """The watcher reports tmem's own writes (committed by the command) with a person's edits:
    only the hand-edited note waits, and the auto-commit names it alone, as it holds it alone."""
    wall = lambda: time.time() + 60  # noqa: E731 - every file written long enough ago to be complete
    daemon = Daemon(vault_path, now=lambda: FIXED_NOW, embedder_factory=lambda: FakeEmbedder(64), wall=wall)
    memory = daemon.open_memory()
    try:
        kafka = add(memory, NewNote(text="Kafka keeps offsets per group.", title="Kafka")).path
        ours = [add(memory, NewNote(text=f"Otter fact {i}.", title=f"Otter {i}")).path for i in range(3)]
        moved = ours[2].replace(".md", "-moved.md")
        with memory.change("move: Otter 2") as tx:  # a tmem command's move: a path gone, one new
            tx.read_note(ours[2])
            tx.move(ours[2], moved)
        (vault_path / kafka).write_text((vault_path / kafka).read_text(encoding="utf-8") + "Edited.\n")
        daemon.intake.apply_paths(sorted([*ours, moved, kafka]), 6)  # as the watcher reports them
        assert daemon.committer.pending() == 1
        sha = daemon.committer.commit()
        assert sha is not None
        held = git(vault_path, "diff-tree", "--no-commit-id", "--name-only", "-r", sha).split()
        assert held == [kafka]
        message = git(vault_path, "log", "-1", "--format=%B", sha)
        assert message.splitlines()[0] == "edit: Kafka"
        assert "Otter" not in message and "deleted" not in message and "added" not in message
        assert daemon.committer.pending() == 0
    finally:
        memory.close()


def test_a_path_committed_before_the_auto_commit_is_not_named(vault: Vault) -> None:
    """The message is made when the unit of work asks for it, under its lock: a note a tmem
    command committed after the edit was queued is not named."""
    root = Path(vault.root)
    first, second = "decisions/a.md", "decisions/b.md"
    write(root, first, "# A\n")
    write(root, second, "# B\n")
    commit(vault, [first, second], "a person's notes")
    write(root, first, "# A\n\nMore.\n")
    write(root, second, "# B\n\nMore.\n")
    messages: list[str] = []

    def tmem_commits_first(paths: list[str], describe: Callable[[], str]) -> str:
        commit(vault, [first], "a tmem command that read the edit")
        messages.append(describe())
        return "0" * 40

    auto = AutoCommitter(vault, tmem_commits_first, 1, stability=0.0, wall=lambda: 4e9)
    auto.note({first: "A", second: "B"})
    assert auto.pending() == 2
    auto.commit()
    assert second in messages[0]
    assert first not in messages[0]


def test_a_queued_path_git_sees_unchanged_leaves_the_queue(vault: Vault) -> None:
    """A tmem command's write the watcher reported is no edit waiting: the count leaves it out and
    no auto-commit falls due for it; a later save of it is queued again and counted."""
    root = Path(vault.root)
    rel = "decisions/a.md"
    write(root, rel, "# A\n")
    commit(vault, [rel], "a tmem command's write")
    auto = committer(vault, [])
    auto.note({rel: "A"})
    assert auto.pending() == 0
    assert auto.due_at() is None
    write(root, rel, "# A\n\nBy hand.\n")
    auto.note({rel: "A"})
    assert auto.pending() == 1
    assert auto.due_at() is not None
