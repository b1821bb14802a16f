"""The unit of work names what it creates so that Windows and macOS can check it out, whatever the
caller asked for: a device name gets a suffix, a name differing only in case from one beside it takes
the next free name, a folder spelled in another case is the existing one. A moved file keeps its name."""

from __future__ import annotations

from helpers import write

from tiered_memory.model import note as notes
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import Vault


def test_a_new_file_or_folder_named_like_a_device_gets_a_suffix(vault: Vault) -> None:
    tx = Transaction(vault, "create")
    first = tx.create_note(notes.Note("Inbox/con.md", {"id": "a"}, "a\n", True))
    second = tx.create_text("prn/aux.tar.md", "b\n")
    tx.commit()
    assert first == "Inbox/con-note.md"
    assert second == "prn-note/aux-note.tar.md"
    assert not (vault.root / "Inbox/con.md").exists()


def test_a_name_differing_only_in_case_from_one_beside_it_takes_the_next_name(vault: Vault) -> None:
    write(vault.root, "Inbox/Rust.md", "a person's note")
    tx = Transaction(vault, "create")
    made = tx.create_text("Inbox/rust.md", "tmem's\n")
    again = tx.create_text("Inbox/RUST-2.md", "tmem's too\n")
    tx.commit()
    assert made == "Inbox/rust-2.md"
    assert again == "Inbox/RUST-2-2.md"
    assert (vault.root / "Inbox/Rust.md").read_text() == "a person's note"


def test_a_folder_spelled_in_another_case_is_the_existing_one(vault: Vault) -> None:
    write(vault.root, "Work/Meetings/a.md", "a")
    tx = Transaction(vault, "create")
    made = tx.create_text("work/meetings/b.md", "b\n")
    tx.commit()
    assert made == "Work/Meetings/b.md"
    assert not (vault.root / "work").exists()


def test_a_moved_file_keeps_its_name_unless_its_case_twin_is_there(vault: Vault) -> None:
    write(vault.root, "memory/short-term/con.md", "a person's con")
    write(vault.root, "memory/short-term/Plan.md", "moving")
    write(vault.root, "memory/archive/plan.md", "already here")
    tx = Transaction(vault, "move")
    kept = tx.move("memory/short-term/con.md", "memory/archive/con.md")
    twin = tx.move("memory/short-term/Plan.md", "memory/archive/Plan.md")
    tx.commit()
    assert kept == "memory/archive/con.md"  # never renamed: the name is the person's
    assert twin == "memory/archive/Plan-2.md"
    assert (vault.root / "memory/archive/plan.md").read_text() == "already here"
