"""Every file and folder tmem makes can be checked out on Windows and macOS: no device name (`con`,
`aux`, `com1`... in any case), no name differing only in case from another in its folder, and a
name a person chose for an existing file or folder is left as it is."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import commit, git, write

from tiered_memory.app import longterm, projects
from tiered_memory.app.api.longterm import KnowledgeRequest
from tiered_memory.app.api.projects import NewProjectRequest
from tiered_memory.app.entities import add_entity
from tiered_memory.app.filing import NewNote, add
from tiered_memory.app.memory import Memory
from tiered_memory.errors import BadInput
from tiered_memory.model.file_names import fold, problem


def names_ok(root: Path) -> None:
    """Every path git tracks: each name portable, and no two differing only in case."""
    tracked = [p for p in git(root, "ls-files", "-z").split("\0") if p]
    seen: dict[str, str] = {}
    for path in tracked:
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            assert problem(parts[depth - 1]) is None, path
            here = "/".join(parts[:depth])
            assert seen.setdefault(fold(here), here) == here, f"{here} and {seen[fold(here)]}"


@pytest.mark.parametrize("name", ["COM1", "Con", "aux", "NUL", "lpt3"])
def test_an_entity_named_like_a_device_gets_a_profile_windows_can_check_out(
    memory: Memory, vault_path: Path, name: str
) -> None:
    entity = add_entity(memory, name)
    assert problem(Path(entity.note.path).name) is None, entity.note.path
    assert entity.note.path == f"memory/long-term/relationships/{name.lower()}-note.md"
    assert entity.name == name
    names_ok(vault_path)


@pytest.mark.parametrize("title", ["Con", "aux", "NUL", "Com1"])
def test_a_note_titled_like_a_device_in_a_persons_folder_is_named_apart(
    memory: Memory, vault_path: Path, title: str
) -> None:
    note = add(memory, NewNote(text="what it says", title=title, folder="Recipes"))
    assert note.path == f"Recipes/{title}-note.md"
    assert note.title == title  # its `title:` is unchanged: only the file name differs
    names_ok(vault_path)


def test_titles_differing_only_in_case_never_make_two_names_of_one_folder(
    memory: Memory, vault_path: Path
) -> None:
    first = add(memory, NewNote(text="Rust the language", title="Rust", folder="Notes"))
    second = add(memory, NewNote(text="rust on iron", title="rust", folder="Notes"))
    assert first.path == "Notes/Rust.md"
    assert second.path == "Notes/rust-2.md"
    assert (vault_path / "Notes/Rust.md").read_text(encoding="utf-8").count("Rust the language") == 1
    names_ok(vault_path)


def test_a_folder_named_in_another_case_is_the_existing_one(memory: Memory, vault_path: Path) -> None:
    write(vault_path, "Work/Meetings/standup.md", "# Standup\n")
    commit(memory.vault, ["Work/Meetings/standup.md"], "a person's note")
    note = add(memory, NewNote(text="the retro went well", title="Retro", folder="work/meetings"))
    assert note.path == "Work/Meetings/Retro.md"
    names_ok(vault_path)


def test_a_new_folder_named_like_a_device_is_refused_an_existing_one_is_used(
    memory: Memory, vault_path: Path
) -> None:
    with pytest.raises(BadInput, match="device name"):
        add(memory, NewNote(text="x", title="t", folder="Work/aux"))
    assert not (vault_path / "Work").exists()
    write(vault_path, "Old/aux/kept.md", "# Kept\n")  # a person's own folder: theirs, used as it is
    note = add(memory, NewNote(text="filed beside it", title="Beside", folder="Old/aux"))
    assert note.path == "Old/aux/Beside.md"
    assert (vault_path / "Old/aux/kept.md").read_text(encoding="utf-8") == "# Kept\n"


def test_a_knowledge_domain_named_like_a_device_gets_a_folder_windows_can_check_out(
    memory: Memory, vault_path: Path
) -> None:
    first = longterm.knowledge_add(memory, KnowledgeRequest("Console output is buffered", "Con"))
    second = longterm.knowledge_add(memory, KnowledgeRequest("stderr is not buffered", "con"))
    folder = "memory/long-term/knowledge_base/domains/con-note"
    assert first.path.startswith(folder + "/") and second.path.startswith(folder + "/")
    names_ok(vault_path)


@pytest.mark.parametrize("pid", ["con", "AUX", "com1", "lpt1.v2", "draft."])
def test_a_project_id_windows_cannot_hold_is_refused(memory: Memory, vault_path: Path, pid: str) -> None:
    with pytest.raises(BadInput):
        projects.new(memory, NewProjectRequest(pid))
    with pytest.raises(BadInput):
        add(memory, NewNote(text="x", project=pid))
    assert not (vault_path / "memory/mid-term/projects" / pid).exists()


def test_a_project_id_differing_only_in_case_is_refused_and_add_uses_its_folder(
    memory: Memory, vault_path: Path
) -> None:
    projects.new(memory, NewProjectRequest("survey"))
    with pytest.raises(BadInput, match="only in case"):
        projects.new(memory, NewProjectRequest("Survey"))
    note = add(memory, NewNote(text="the form has 12 questions", project="Survey"))
    assert note.path.startswith("memory/mid-term/projects/survey/")
    assert note.meta["project"] == "survey"
    names_ok(vault_path)
