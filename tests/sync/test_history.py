"""`tmem log` / `tmem restore` logic over a real vault: history across moves, forgotten notes, new commits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import as_json, commit, git, git_log, move_file, ok, write

from tiered_memory.app import syncing
from tiered_memory.app.api.notes import ForgetRequest, NoteRequest
from tiered_memory.app.api.sync import LogRequest, Restored
from tiered_memory.app.filing import NewNote, add
from tiered_memory.app.memory import Memory
from tiered_memory.app.notes import forget, save_edit
from tiered_memory.errors import BadInput, NoteNotFound
from tiered_memory.model.search import SearchRequest
from tiered_memory.present.sync import log_text, restored_text
from tiered_memory.storage.vault import Vault
from tiered_memory.sync import history


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def found(memory: Memory, query: str) -> list[str]:
    result = memory.search(SearchRequest(query=query, mode="keyword"), record_access=False)
    return [h.path for h in result.hits]


def edit(memory: Memory, rel: str, old: str, new: str) -> str:
    path = memory.vault.abspath(rel)
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    sha = save_edit(memory, NoteRequest(rel)).commit
    assert sha
    return sha


def move(memory: Memory, rel: str, dest: str, verb: str = "promote") -> str:
    final = move_file(memory.vault, rel, dest)
    commit(memory.vault, [rel, final], f"{verb}: {final}")
    memory.indexer.update_paths([rel, final], vectors=False)
    return final


@pytest.fixture
def lived(memory: Memory) -> tuple[str, list[str], str]:
    """A note added in mid-term, edited, promoted to long-term, edited again: (id, paths, first sha)."""
    note = add(memory, NewNote(text="Deploys happen on Tuesdays.", project="web", title="Deploy day"))
    first = head(memory.vault.root)
    edit(memory, note.path, "Tuesdays", "Wednesdays")
    moved = move(memory, note.path, f"memory/long-term/knowledge_base/domains/{note.id}.md")
    edit(memory, moved, "Wednesdays.", "Wednesdays, never on Fridays.")
    return note.id, [note.path, moved], first


def test_log_follows_a_note_across_tiers(memory: Memory, lived: tuple[str, list[str], str]) -> None:
    note_id, (mid, long), first = lived
    found_history = history.note_history(memory, note_id)
    assert found_history.path == long
    assert set(found_history.paths) == {mid, long}
    subjects = [e.subject for e in found_history.events]
    assert subjects == [
        "edit: Deploy day",
        f"promote: {long}",
        "edit: Deploy day",
        "remember: Deploy day [mid-term/note]",
    ]
    moved = found_history.events[1].changes
    assert moved == [{"change": "moved", "path": long, "old_path": mid}]
    assert found_history.events[-1].commit == first
    text = log_text(syncing.log(memory, LogRequest(note_id)))
    assert f"moved {mid} -> {long}" in text and text.startswith(f"{note_id}: {long}")
    # by path, too, and limited
    assert [e.subject for e in history.note_history(memory, long, limit=2).events] == subjects[:2]


def test_log_of_a_forgotten_note_by_id_and_by_path(memory: Memory, lived: tuple[str, list[str], str]) -> None:
    note_id, (mid, long), _ = lived
    forget(memory, ForgetRequest(note_id, "moved to the wiki"))
    by_id = history.note_history(memory, note_id)
    assert by_id.path is None and "forgotten" in log_text(syncing.log(memory, LogRequest(note_id)))
    assert by_id.events[0].subject.startswith("forget: Deploy day")
    assert by_id.events[0].changes == [{"change": "deleted", "path": long}]
    assert len(by_id.events) == 5
    by_path = history.note_history(memory, long)
    assert [e.commit for e in by_path.events] == [e.commit for e in by_id.events]


def test_the_id_search_never_runs_the_vaults_textconv(
    memory: Memory, lived: tuple[str, list[str], str], tmp_path: Path
) -> None:
    """`tmem unlock --new` makes git show notes through `tmem textconv`, which asks the daemon, so
    a daemon searching history for an id line waited on itself once per version (30 s each), and
    a version sealed under an earlier key made git stop: no history at all. The id search reads
    the stored bytes (sealed notes are opened by tmem itself) and runs no textconv."""
    note_id, (mid, long), _ = lived
    forget(memory, ForgetRequest(note_id))
    called = tmp_path / "textconv-called"
    root = memory.vault.root
    (root / ".gitattributes").write_text("memory/**/*.md diff=tmem\n", encoding="utf-8")
    git(root, "config", "diff.tmem.textconv", f"touch {called}; false")
    by_id = history.note_history(memory, note_id)
    assert set(by_id.paths) == {mid, long} and len(by_id.events) == 5
    assert history.restore(memory, note_id).path == long
    assert not called.exists()


def test_restore_a_forgotten_note_as_a_new_commit(memory: Memory, lived: tuple[str, list[str], str]) -> None:
    note_id, (_, long), _ = lived
    forget(memory, ForgetRequest(note_id))
    before = git_log(memory.vault.root)
    assert found(memory, "Fridays") == []
    restored = history.restore(memory, note_id)
    assert restored.was_forgotten and restored.path == long and restored.commit == head(memory.vault.root)
    assert "never on Fridays" in memory.vault.read_text(long)
    after = git_log(memory.vault.root)
    assert after[1:] == before  # one new commit on top; nothing rewritten
    assert after[0] == f"restore: Deploy day (forgotten, from {restored.source[:8]})"
    assert found(memory, "Fridays") == [long]
    with pytest.raises(BadInput, match="exists at .*give --at REV"):
        history.restore(memory, note_id)


def test_restore_an_older_version_keeps_the_current_place(
    memory: Memory, lived: tuple[str, list[str], str]
) -> None:
    note_id, (_, long), first = lived
    restored = history.restore(memory, note_id, first[:10])
    assert not restored.was_forgotten and restored.path == long and restored.source == first
    text = memory.vault.read_text(long)
    assert "Deploys happen on Tuesdays." in text and "Fridays" not in text
    assert git_log(memory.vault.root)[0] == f"restore: Deploy day (as of {first[:8]})"
    assert found(memory, "Tuesdays") == [long]
    again = history.restore(memory, note_id, first)
    assert again.commit is None and "nothing to commit" in restored_text(Restored.from_dict(again.to_dict()))


def test_restore_errors(memory: Memory, lived: tuple[str, list[str], str]) -> None:
    note_id, _, first = lived
    with pytest.raises(BadInput, match="'no-such-rev' is not a commit"):
        history.restore(memory, note_id, "no-such-rev")
    with pytest.raises(NoteNotFound, match="did not exist at"):
        history.restore(memory, note_id, f"{first}~1")
    with pytest.raises(NoteNotFound, match="no note with id 'never-was'"):
        history.restore(memory, "never-was")
    with pytest.raises(NoteNotFound):
        history.note_history(memory, "never-was")


def test_restore_never_overwrites_a_note_now_at_that_path(memory: Memory) -> None:
    note = add(memory, NewNote(text="Old office wifi is guest-5G.", title="Wifi"))
    forget(memory, ForgetRequest(note.id))
    root = memory.vault.root
    (root / note.path).write_text("---\nid: other\n---\nSomething else now lives here.\n", encoding="utf-8")
    save_edit(memory, NoteRequest(note.path))
    restored = history.restore(memory, note.id)
    assert restored.path == note.path.replace(".md", "-2.md")
    assert "Something else now lives here." in (root / note.path).read_text()
    assert "guest-5G" in (root / restored.path).read_text()


def test_notes_without_an_id_are_followed_by_path(memory: Memory) -> None:
    root = memory.vault.root
    rel = "memory/mid-term/hand-written.md"
    (root / rel).write_text("# Hand written\n\nPlain markdown, no frontmatter.\n", encoding="utf-8")
    save_edit(memory, NoteRequest(rel))
    moved = move(memory, rel, "memory/long-term/hand-written.md")
    found_history = history.note_history(memory, moved)
    assert set(found_history.paths) == {rel, moved}
    assert [c["change"] for e in found_history.events for c in e.changes] == ["moved", "added"]


def test_an_id_quoted_in_another_note_is_not_confused_with_it(memory: Memory) -> None:
    note = add(memory, NewNote(text="The real note.", title="Real"))
    other = add(memory, NewNote(text=f"A note that quotes a line:\n\nid: {note.id}\n", title="Quoter"))
    found_history = history.note_history(memory, note.id)
    assert found_history.paths == [note.path]
    assert other.path not in found_history.paths


def test_vault_log_lists_recent_commits_with_their_notes(memory: Memory) -> None:
    note = add(memory, NewNote(text="Recent.", title="Recent"))
    entries = history.vault_log(memory.vault, 5)
    assert entries[0].subject.startswith("remember: Recent")
    assert entries[0].changes == [{"change": "added", "path": note.path}]
    assert entries[-1].subject == "init: new tmem vault from template"
    assert "remember: Recent" in log_text(syncing.log(memory, LogRequest(None, 5)))


def test_a_forgotten_note_of_the_persons_own_folders_is_restored_by_its_path(
    vault_path: Path, run: Callable[..., Result]
) -> None:
    """A path that is not on disk is first read as one under memory/; a forgotten note of an
    adopted vault's own folders is found at the path git knew, and comes back byte for byte."""
    text = "---\naliases: [Allotment]\n---\n# Garden\nPlant #tomatoes near [[Shed]].\n"
    write(vault_path, "Notes/Garden.md", text)
    commit(Vault(vault_path), ["Notes/Garden.md"], "edit: by hand")
    before = (vault_path / "Notes/Garden.md").read_bytes()
    ok(run("forget", "Notes/Garden.md", "--yes"))
    assert git_log(vault_path)[0] == "forget: Garden"
    assert not (vault_path / "Notes/Garden.md").exists()
    assert "Notes/Garden.md" in as_json(run("log", "Notes/Garden.md", "--json"))["paths"]
    done = as_json(run("restore", "Notes/Garden.md", "--json"))
    assert done["path"] == "Notes/Garden.md"
    assert (vault_path / "Notes/Garden.md").read_bytes() == before
    assert not (vault_path / "memory" / "Notes").exists()


def test_a_forgotten_note_comes_back_under_the_name_its_person_gave_it(
    vault_path: Path, run: Callable[..., Result]
) -> None:
    """Names tmem makes are ones Windows can check out; "What now?.md" is the person's own."""
    write(vault_path, "Notes/What now?.md", "A question to myself.\n")
    commit(Vault(vault_path), ["Notes/What now?.md"], "edit: by hand")
    ok(run("forget", "Notes/What now?.md", "--yes"))
    done = as_json(run("restore", "Notes/What now?.md", "--json"))
    assert done["path"] == "Notes/What now?.md"
    assert (vault_path / "Notes/What now?.md").read_text(encoding="utf-8") == "A question to myself.\n"


def test_a_forgotten_note_comes_back_with_the_mode_git_had(
    vault_path: Path, run: Callable[..., Result]
) -> None:
    """A note the person committed as 100755 (copied from a USB stick, say) is restored with its
    executable bit: the same bytes and the same mode, so git sees no change but the restore."""
    write(vault_path, "Notes/Run book.md", "# Run book\nRestart the service, then the proxy.\n")
    (vault_path / "Notes/Run book.md").chmod(0o755)
    git(vault_path, "add", "Notes/Run book.md")
    git(vault_path, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "person: a note")
    ok(run("forget", "Notes/Run book.md", "--yes"))
    done = as_json(run("restore", "Notes/Run book.md", "--json"))
    assert done["path"] == "Notes/Run book.md"
    assert (vault_path / "Notes/Run book.md").stat().st_mode & 0o111
    assert git(vault_path, "ls-tree", "HEAD", "--", "Notes/Run book.md").startswith("100755 ")
    assert git(vault_path, "status", "--porcelain") == ""


@pytest.mark.parametrize(
    ("rel", "taken_by", "comes_back_as", "why"),
    [
        ("memory/mid-term/con.md", None, "memory/mid-term/con-note.md", "'con' is a device name on Windows"),
        ("memory/mid-term/Plan.md", "memory/mid-term/plan.md", "memory/mid-term/Plan-2.md", "only in case"),
    ],
)
def test_a_forgotten_note_comes_back_under_a_name_every_clone_can_hold(
    memory: Memory, rel: str, taken_by: str | None, comes_back_as: str, why: str
) -> None:
    """A name a person gave on Linux that Windows or macOS cannot hold beside what the vault has
    now: the note comes back beside it under a suffix, told in one line, the other file untouched."""
    root = memory.vault.root
    write(root, rel, "# Plan\n\nThe person's own words.\n")
    commit(memory.vault, [rel], "person: a note")
    forget(memory, ForgetRequest(rel))
    if taken_by is not None:
        write(root, taken_by, "# plan\n\nAnother note since.\n")
        commit(memory.vault, [taken_by], "person: another note")
    told: list[str] = []
    with memory.reporting_to(told.append):
        restored = history.restore(memory, rel)
    assert restored.path == comes_back_as
    assert (root / comes_back_as).read_text(encoding="utf-8") == "# Plan\n\nThe person's own words.\n"
    assert not (root / rel).exists()
    if taken_by is not None:
        assert (root / taken_by).read_text(encoding="utf-8") == "# plan\n\nAnother note since.\n"
    assert len(told) == 1 and why in told[0] and told[0].endswith(f"; restored as {comes_back_as}")


def test_a_note_a_sync_brought_back_meanwhile_is_not_restored_a_second_time(
    memory: Memory, lived: tuple[str, list[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another machine edited the note this one forgot: the sync that merges that edit brings the
    note back while `restore` runs, after it looked and before it took the write lock. The
    restore must see it there, not write a second copy with the same id beside it."""
    note_id, (_, long), _ = lived
    forget(memory, ForgetRequest(note_id))
    root = memory.vault.root
    looked = history._locate

    def merged_meanwhile(workspace: Memory, ref: str) -> tuple[str, str | None, str | None]:
        answer = looked(workspace, ref)
        git(root, "checkout", "HEAD~1", "--", long)
        commit(workspace.vault, [long], "sync: merge origin/main")
        return answer

    monkeypatch.setattr(history, "_locate", merged_meanwhile)
    with pytest.raises(BadInput, match=f"{note_id} exists at {long}"):
        history.restore(memory, note_id)
    assert git_log(root)[0] == "sync: merge origin/main"
    assert sorted(p.name for p in (root / long).parent.glob("*.md")) == [Path(long).name]
