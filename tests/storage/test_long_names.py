"""A write whose file name the file system refuses (more than 255 bytes: 80 rare Chinese
characters) fails that one unit of work; the journal it left is settled and the next write works."""

from __future__ import annotations

import pytest

from tiered_memory.app.memory import Memory
from tiered_memory.model import note as notes

TOO_LONG = "memory/long-term/" + "𠀀" * 80 + ".md"


def test_a_name_too_long_for_the_file_system_leaves_the_vault_writable(memory: Memory) -> None:
    with pytest.raises(OSError), memory.change("remember: a name too long") as tx:
        tx.create_note(notes.Note(path=TOO_LONG, meta={"id": "rare"}, body="text\n", has_frontmatter=True))
    with memory.change("remember: the next note") as tx:
        tx.write_text("memory/long-term/next.md", "next\n")
    assert memory.vault.abspath("memory/long-term/next.md").read_text(encoding="utf-8") == "next\n"
    assert not list((memory.root / ".tmem" / "journal").iterdir())
