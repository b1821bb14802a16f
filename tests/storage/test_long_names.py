"""A write whose file name the file system refuses (more than 255 bytes: 80 rare Chinese
characters) fails that one unit of work; the journal it left is settled and the next write works.
A new note named so is cut to a name every system takes instead."""

from __future__ import annotations

import pytest

from tiered_memory.app.memory import Memory
from tiered_memory.model import note as notes

TOO_LONG = "memory/long-term/" + "𠀀" * 80 + ".md"


def test_a_name_too_long_for_the_file_system_leaves_the_vault_writable(memory: Memory) -> None:
    with pytest.raises(OSError), memory.change("remember: a name too long") as tx:
        tx.write_note(notes.Note(path=TOO_LONG, meta={"id": "rare"}, body="text\n", has_frontmatter=True))
    with memory.change("remember: the next note") as tx:
        tx.write_text("memory/long-term/next.md", "next\n")
    assert memory.vault.abspath("memory/long-term/next.md").read_text(encoding="utf-8") == "next\n"
    assert not list((memory.root / ".tmem" / "journal").iterdir())


def test_a_new_note_named_too_long_is_cut_to_a_name_every_system_takes(memory: Memory) -> None:
    with memory.change("remember: two notes named too long") as tx:
        made = [
            tx.create_note(
                notes.Note(path=TOO_LONG, meta={"id": f"rare{i}"}, body="text\n", has_frontmatter=True)
            )
            for i in range(2)
        ]
    names = [m.rsplit("/", 1)[1] for m in made]
    assert all(len(n.encode("utf-8")) <= 255 and n.endswith(".md") for n in names)
    assert names[1] == names[0].removesuffix(".md") + "-2.md"
