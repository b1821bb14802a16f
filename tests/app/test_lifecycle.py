"""Moves through the vault: promote, archive, restore-from-archive (one commit each, id kept, reason
recorded, never overwriting), and bad input through the CLI (one error line, nothing changed)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import FIXED_NOW, git_log, one_error_line, remember, tracked, write

from tiered_memory.app import filing, lifecycle, projects
from tiered_memory.app.api.lifecycle import ArchiveRequest, PromoteRequest
from tiered_memory.app.api.notes import NoteRequest
from tiered_memory.app.api.projects import NewProjectRequest
from tiered_memory.app.filing import NewNote
from tiered_memory.app.memory import Memory
from tiered_memory.errors import BadInput, NoteNotFound
from tiered_memory.model.tiers import Move

Run = Callable[..., Result]


def test_promote_short_to_mid_to_long_keeps_id_and_records_why(memory: Memory, vault_path: Path) -> None:
    note = filing.add(
        memory, NewNote(text="Tablets drift two metres near pylons", tier="short", category="discovery")
    )
    raw = (vault_path / note.path).read_text()
    write(vault_path, note.path, raw.replace("status: active", "status: active\nmy_key: kept"))
    first = lifecycle.promote(memory, PromoteRequest(note.id))
    assert first.dst == f"memory/mid-term/{note.id}.md"
    assert git_log(vault_path)[0] == "promote: Tablets drift two metres near pylons (short-term -> mid-term)"
    second = lifecycle.promote(memory, PromoteRequest(note.id))
    assert second.dst == f"memory/long-term/knowledge_base/domains/{note.id}.md"
    moved = memory.vault.read_note(second.dst)
    assert moved.id == note.id
    assert moved.meta["my_key"] == "kept"
    assert moved.meta["promoted_from"] == first.dst
    assert moved.meta["moved_at"] == FIXED_NOW
    assert moved.meta["move_reason"] == "promoted by hand to long-term"
    assert moved.body == note.body
    assert memory.resolve(note.id) == second.dst  # the index follows the move
    assert not (vault_path / first.dst).exists()
    assert second.dst in tracked(vault_path) and first.dst not in tracked(vault_path)


def test_promote_into_the_notes_project_folder(memory: Memory) -> None:
    projects.new(memory, NewProjectRequest("survey"))
    note = filing.add(memory, NewNote(text="Survey idea", tier="short", project="survey"))
    assert (
        lifecycle.promote(memory, PromoteRequest(note.id)).dst
        == f"memory/mid-term/projects/survey/{note.id}.md"
    )


def test_promote_straight_to_long_uses_the_category_home(memory: Memory) -> None:
    note = filing.add(
        memory, NewNote(text="Use Postgres", title="Use Postgres", tier="short", category="decision")
    )
    done = lifecycle.promote(memory, PromoteRequest(note.id, "long"))
    assert done.dst == "memory/long-term/decisions/2026-11-22_use-postgres.md"


def test_a_hand_written_note_keeps_its_old_id_after_a_move(memory: Memory, vault_path: Path) -> None:
    write(vault_path, "memory/short-term/plain.md", "# Plain\n\nno frontmatter here\n")
    done = lifecycle.promote(memory, PromoteRequest("plain"))
    moved = memory.vault.read_note(done.dst or "")
    assert moved.id == "plain" and moved.meta["id"] == "plain"
    assert moved.body == "# Plain\n\nno frontmatter here\n"
    assert memory.resolve("plain") == done.dst


def test_moves_never_overwrite(memory: Memory, vault_path: Path) -> None:
    note = filing.add(memory, NewNote(text="Same name", tier="mid", id="same"))
    write(vault_path, "memory/long-term/knowledge_base/domains/same.md", "# other\n")
    done = lifecycle.promote(memory, PromoteRequest(note.path))
    assert done.dst == "memory/long-term/knowledge_base/domains/same-2.md"
    assert (vault_path / "memory/long-term/knowledge_base/domains/same.md").read_text() == "# other\n"


def test_archive_and_restore_round_trip(memory: Memory, vault_path: Path) -> None:
    old = filing.add(memory, NewNote(text="Old fact about datums", tier="long", category="fact"))
    new = filing.add(memory, NewNote(text="New fact about datums", tier="long", category="fact"))
    done = lifecycle.archive(memory, ArchiveRequest(old.id, superseded_by=new.id))
    assert done.dst == f"memory/archive/long-term/knowledge_base/domains/{old.id}.md"
    archived = memory.vault.read_note(done.dst)
    assert archived.meta["superseded_by"] == new.id and archived.status == "superseded"
    assert git_log(vault_path)[0].startswith(
        f"archive: Old fact about datums (long-term -> archive): superseded by {new.id}"
    )
    back = lifecycle.restore_from_archive(memory, NoteRequest(old.id))
    assert back.dst == old.path
    restored = memory.vault.read_note(old.path)
    assert restored.status == "active" and "superseded_by" not in restored.meta
    assert restored.meta["promoted_from"] == done.dst
    assert git_log(vault_path)[0].startswith(
        "restore-from-archive: Old fact about datums (archive -> long-term)"
    )


def test_archive_places_by_tier(memory: Memory) -> None:
    projects.new(memory, NewProjectRequest("survey"))
    short = filing.add(memory, NewNote(text="chat bit", tier="short"))
    mid = filing.add(memory, NewNote(text="project bit", project="survey"))
    assert (
        lifecycle.archive(memory, ArchiveRequest(short.id, "done")).dst
        == f"memory/archive/sessions/2026/11/22/{short.id}.md"
    )
    assert (
        lifecycle.archive(memory, ArchiveRequest(mid.id)).dst == f"memory/archive/projects/survey/{mid.id}.md"
    )


def test_restore_without_a_record_infers_the_place(memory: Memory, vault_path: Path) -> None:
    write(vault_path, "memory/archive/projects/survey/x.md", "---\nid: x-1\n---\n# x\n")
    write(vault_path, "memory/archive/long-term/decisions/y.md", "---\nid: y-1\n---\n# y\n")
    assert (
        lifecycle.restore_from_archive(memory, NoteRequest("x-1")).dst
        == "memory/mid-term/projects/survey/x.md"
    )
    assert lifecycle.restore_from_archive(memory, NoteRequest("y-1")).dst == "memory/long-term/decisions/y.md"


def test_bad_moves(memory: Memory, vault_path: Path) -> None:
    long_note = filing.add(memory, NewNote(text="durable", tier="long"))
    short = filing.add(memory, NewNote(text="brief", tier="short"))
    with pytest.raises(BadInput, match="already long-term"):
        lifecycle.promote(memory, PromoteRequest(long_note.id))
    with pytest.raises(BadInput, match="only moves up"):
        lifecycle.promote(memory, PromoteRequest(short.id, "short"))
    with pytest.raises(BadInput, match="unknown tier"):
        lifecycle.promote(memory, PromoteRequest(short.id, "sky"))
    with pytest.raises(BadInput, match="tmem archive"):
        lifecycle.promote(memory, PromoteRequest(short.id, "archive"))
    with pytest.raises(BadInput, match="fixed layout"):
        lifecycle.archive(memory, ArchiveRequest("memory/short-term/current_session.md"))
    with pytest.raises(BadInput, match="not archived"):
        lifecycle.restore_from_archive(memory, NoteRequest(short.id))
    with pytest.raises(BadInput, match="superseded by itself"):
        lifecycle.archive(memory, ArchiveRequest(short.id, superseded_by=short.id))
    with pytest.raises(NoteNotFound):
        lifecycle.archive(memory, ArchiveRequest("no-such-id"))
    done = lifecycle.archive(memory, ArchiveRequest(short.id))
    with pytest.raises(BadInput, match="already archived"):
        lifecycle.archive(memory, ArchiveRequest(short.id))
    with pytest.raises(BadInput, match="is archived"):
        lifecycle.promote(memory, PromoteRequest(short.id))
    write(vault_path, short.path, "---\nid: someone-else\n---\n# someone else now\n")
    with pytest.raises(BadInput, match="already exists"):
        lifecycle.restore_from_archive(memory, NoteRequest(short.id))
    assert (vault_path / (done.dst or "")).is_file()


def test_apply_moves_skips_files_that_changed_and_whole_groups(memory: Memory, vault_path: Path) -> None:
    a = write(vault_path, "memory/mid-term/projects/p/a.md", "# a\n")
    write(vault_path, "memory/mid-term/projects/p/b.md", "# b\n")
    expected = {
        "memory/mid-term/projects/p/a.md": lifecycle.digest(b"# a\n"),
        "memory/mid-term/projects/p/b.md": lifecycle.digest(b"# b\n"),
    }
    a.write_text("# a, edited by hand\n", encoding="utf-8")
    moves = [
        Move(
            p,
            p.replace("mid-term/projects", "archive/projects"),
            "idle",
            "project-idle",
            "x",
            group="project:p",
        )
        for p in expected
    ]
    with memory.change("test") as tx:
        result = lifecycle.apply_moves(tx, moves, FIXED_NOW, expected=expected)
    assert result.applied == []
    assert dict(result.skipped) == {
        "memory/mid-term/projects/p/a.md": "changed while maintenance ran; left as it is",
        "memory/mid-term/projects/p/b.md": "moves with its project",
    }
    assert a.read_text() == "# a, edited by hand\n"


def test_json_and_unparsable_notes_move_unchanged(memory: Memory, vault_path: Path) -> None:
    write(vault_path, "memory/mid-term/projects/p/tasks.json", '{"tasks": []}\n')
    write(vault_path, "memory/short-term/broken.md", "---\nid: [oops\n---\nbody\n")
    moves = [
        Move("memory/mid-term/projects/p/tasks.json", "memory/archive/projects/p/tasks.json", "r", "k", "t"),
        Move("memory/short-term/broken.md", "memory/archive/sessions/2026/11/22/broken.md", "r", "k", "b"),
    ]
    with memory.change("test") as tx:
        result = lifecycle.apply_moves(tx, moves, FIXED_NOW)
    assert len(result.applied) == 2
    assert (vault_path / "memory/archive/projects/p/tasks.json").read_text() == '{"tasks": []}\n'
    assert (
        vault_path / "memory/archive/sessions/2026/11/22/broken.md"
    ).read_text() == "---\nid: [oops\n---\nbody\n"
    assert not (vault_path / "memory/mid-term/projects/p").exists()  # no ghost project folder


# ---- bad input, through the CLI -----------------------------------------------------------------------


@pytest.mark.parametrize("command", [["promote"], ["archive"], ["restore-from-archive"]])
def test_cli_unknown_id(run: Run, command: list[str]) -> None:
    assert one_error_line(run(*command, "no-such-note"), 1) == "tmem: no note with id 'no-such-note'"


def test_cli_promoting_past_long_term(run: Run, vault_path: Path) -> None:
    note = remember(run, "durable knowledge", "--tier", "long")
    before = git_log(vault_path)
    line = one_error_line(run("promote", note["id"]), 2)
    assert "already long-term" in line
    assert "already long-term" in one_error_line(run("promote", note["id"], "--to", "mid"), 2)
    short = remember(run, "a project thought", "--tier", "mid")
    assert "only moves up" in one_error_line(run("promote", short["id"], "--to", "short"), 2)
    assert git_log(vault_path)[1:] == before


def test_cli_archiving_an_archived_note(run: Run, vault_path: Path) -> None:
    note = remember(run, "a passing thought", "--tier", "short")
    moved = json.loads(run("archive", note["id"], "--reason", "done with it", "--json").stdout)
    assert moved["src"] == note["path"] and moved["kind"] == "archive" and moved["commit"]
    assert moved["dst"].startswith("memory/archive/sessions/") and moved["dst"].endswith(f"/{note['id']}.md")
    assert git_log(vault_path)[0].endswith("done with it")
    assert "already archived" in one_error_line(run("archive", note["id"]), 2)


def test_cli_a_target_file_that_already_exists(run: Run, vault_path: Path) -> None:
    note = remember(run, "to be archived", "--tier", "long")
    assert run("archive", note["id"]).exit_code == 0
    write(vault_path, note["path"], "# a new file took its place\n")
    line = one_error_line(run("restore-from-archive", note["id"]), 2)
    assert f"{note['path']} already exists" in line
    assert (vault_path / note["path"]).read_text() == "# a new file took its place\n"
    assert run("project", "new", "survey").exit_code == 0
    assert "already exists" in one_error_line(run("project", "new", "survey"), 2)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            "decay_factor: 2",
            "tmem: tmem.yaml: lifecycle.decay_factor must be less than or equal to 1 (got 2)",
        ),
        (
            "project_idle_days: 0",
            "tmem: tmem.yaml: lifecycle.project_idle_days must be greater than or equal to 1 (got 0)",
        ),
        ("promote_importance: high", "tmem: tmem.yaml: lifecycle.promote_importance must be a valid number"),
        (
            "maintenance_time: '25:00'",
            "tmem: tmem.yaml: lifecycle.maintenance_time must be HH:MM between 00:00 and 23:59",
        ),
        ("speed: fast", "tmem: tmem.yaml: unknown setting 'lifecycle.speed'"),
    ],
)
def test_cli_an_invalid_rule_in_the_config(run: Run, vault_path: Path, setting: str, message: str) -> None:
    (vault_path / "tmem.yaml").write_text(
        f"embeddings:\n  provider: fake\nlifecycle:\n  {setting}\n", encoding="utf-8"
    )
    line = one_error_line(run("maintain", "--dry-run"), 2)
    assert line.startswith(message)


@pytest.mark.parametrize("bad", ["../escape", "a/b", "..", ".git", "x y"])
def test_cli_a_project_id_with_path_characters(run: Run, vault_path: Path, bad: str) -> None:
    line = one_error_line(run("project", "new", bad), 2)
    assert line.startswith(f"tmem: invalid project id '{bad}'")
    assert one_error_line(run("task", "add", "-p", bad, "x"), 2).startswith("tmem: invalid project id")
    assert (
        not (vault_path / "memory/mid-term/escape").exists() and not (vault_path / "memory/escape").exists()
    )


def test_a_note_of_the_persons_own_folders_is_not_promoted_or_archived_by_tmem(
    vault_path: Path, run: Callable[..., Result]
) -> None:
    """An adopted vault's notes outside memory/ take their tier from their folder: promote and
    archive refuse them in one line (they used to end in a traceback) and leave the file alone."""
    text = "---\naliases: [Allotment]\n---\n# Garden\nPlant #tomatoes near [[Shed]].\n"
    write(vault_path, "Notes/Garden.md", text)
    before = (vault_path / "Notes/Garden.md").read_bytes()
    for command in ("promote", "archive"):
        line = one_error_line(run(command, "Notes/Garden.md"), 2)
        assert "outside memory/" in line and "folders.tiers" in line
    assert (vault_path / "Notes/Garden.md").read_bytes() == before
    assert not [p for p in (vault_path / "memory").rglob("Garden*")]
