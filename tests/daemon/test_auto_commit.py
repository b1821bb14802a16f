"""The daemon's auto-commit of hand edits, driven directly: which edited files it commits."""

from __future__ import annotations

from pathlib import Path

from helpers import commit, write

from tiered_memory.daemon.jobs import AutoCommitter
from tiered_memory.storage.vault import Vault

# As agents write it: a colon inside a plain scalar, which YAML refuses (Obsidian shows the body).
BROKEN = "---\ntitle: ADR-019 — precio: con IVA incluido\ndate: 2026-05-24\n---\n# Precio\n\nDecidido.\n"


def committer(vault: Vault, done: list[list[str]]) -> AutoCommitter:
    def record(paths: list[str], message: str) -> str:
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
