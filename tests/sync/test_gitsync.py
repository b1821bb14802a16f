"""`tmem sync` between two real clones ("laptop" and "desktop") of a bare remote in tmp_path.

Git runs the real merge driver (the venv's `tmem merge-driver`, registered by absolute path). Every
scenario checks at the end that no text written on either machine is lost.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import FAKE_CONFIG, FIXED_NOW, commit, git, move_file

from tiered_memory.app.api.notes import ForgetRequest
from tiered_memory.app.api.sync import SyncResult
from tiered_memory.app.filing import NewNote, add
from tiered_memory.app.memory import Memory
from tiered_memory.app.notes import forget
from tiered_memory.errors import GitError, RemoteUnavailable, SyncConflict
from tiered_memory.index.catalog import Catalog
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.indexer import content_hash
from tiered_memory.model.merge3 import OURS_MARKER, THEIRS_MARKER
from tiered_memory.model.note import parse
from tiered_memory.model.search import SearchRequest
from tiered_memory.present.sync import sync_text
from tiered_memory.storage.vault import Vault, init_vault, merge_driver_command
from tiered_memory.sync import gitmerge, gitsync
from tiered_memory.sync.conflicts import find_conflicts
from tiered_memory.sync.gitmerge import adopt_vault
from tiered_memory.sync.gitsync import sync


@dataclass
class Machine:
    root: Path
    memory: Memory

    @property
    def vault(self) -> Vault:
        return self.memory.vault

    def add(self, text: str, **kwargs: object) -> str:
        note = add(self.memory, NewNote(text=text, **kwargs))  # type: ignore[arg-type]
        return note.path

    def write(self, rel: str, text: str) -> None:
        (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (self.root / rel).write_text(text, encoding="utf-8")

    def read(self, rel: str) -> str:
        return (self.root / rel).read_text(encoding="utf-8")

    def edit(self, rel: str, old: str, new: str) -> None:
        text = self.read(rel)
        assert old in text, f"{old!r} not in {rel}"
        self.write(rel, text.replace(old, new, 1))

    def sync(self, **kwargs: object) -> gitsync.SyncResult:
        return sync(self.memory, **kwargs)  # type: ignore[arg-type]

    def found(self, query: str) -> list[str]:
        result = self.memory.search(SearchRequest(query=query, mode="keyword"), record_access=False)
        return [hit.path for hit in result.hits]

    def all_text(self) -> str:
        return "\n".join(p.read_text(encoding="utf-8") for p in sorted((self.root / "memory").rglob("*.md")))

    def assert_kept(self, *snippets: str) -> None:
        everything = self.all_text()
        for snippet in snippets:
            assert snippet in everything, f"{snippet!r} was lost on {self.root.name}"


def open_machine(root: Path) -> Machine:
    return Machine(
        root, Memory(Vault(root), embedder_factory=lambda: FakeEmbedder(64), now=lambda: FIXED_NOW)
    )


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(bare)], check=True)
    return bare


@pytest.fixture
def laptop(tmp_path: Path, remote: Path) -> Iterator[Machine]:
    root = tmp_path / "laptop"
    init_vault(root, config_text=FAKE_CONFIG)
    git(root, "remote", "add", "origin", str(remote))
    machine = open_machine(root)
    report = machine.sync()
    assert report.pushed
    yield machine
    machine.memory.close()


@pytest.fixture
def desktop(tmp_path: Path, remote: Path, laptop: Machine) -> Iterator[Machine]:
    root = tmp_path / "desktop"
    subprocess.run(["git", "clone", "--quiet", str(remote), str(root)], check=True)
    adopt_vault(root)
    machine = open_machine(root)
    yield machine
    machine.memory.close()


BODY = """# Use Postgres for the job queue

We compared Redis, SQS and Postgres for the background job queue.

## Decision
Postgres with SKIP LOCKED: one less service to run.

## Consequences
- Jobs live in the `jobs` table.
- Workers poll every 2 seconds.
- Retention is 30 days.
"""


def shared_note(laptop: Machine, desktop: Machine, **kwargs: object) -> str:
    """A note on both machines (added on the laptop, synced), its path returned."""
    rel = laptop.add(BODY, title="Use Postgres for the job queue", tags=["postgres", "queue"], **kwargs)
    laptop.sync()
    desktop.sync()
    assert desktop.read(rel) == laptop.read(rel)
    return rel


def converge(first: Machine, second: Machine) -> None:
    """Sync both ways until both machines hold the same commit."""
    first.sync()
    second.sync()
    first.sync()
    assert git(first.root, "rev-parse", "HEAD") == git(second.root, "rev-parse", "HEAD")
    assert first.all_text() == second.all_text()


# ---- the basics -------------------------------------------------------------------------------


def test_driver_registered_by_absolute_path(laptop: Machine, desktop: Machine) -> None:
    for machine in (laptop, desktop):
        driver = git(machine.root, "config", "merge.tmem.driver").strip()
        assert driver == merge_driver_command()
        assert driver.startswith(str(Path(sys.executable).parent / "tmem"))
    assert "merge=tmem" in (desktop.root / ".gitattributes").read_text()


def test_note_added_on_one_machine_is_searchable_on_the_other(laptop: Machine, desktop: Machine) -> None:
    rel = laptop.add("The zebracorn migration finished on Tuesday.", tags=["ops"])
    out = laptop.sync()
    assert out.pushed and [c.subject for c in out.outgoing][0].startswith("remember: The zebracorn")
    assert [(c.status, c.path) for c in out.notes_out] == [("added", rel)]

    report = desktop.sync()
    assert [c.subject for c in report.incoming] == [c.subject for c in out.outgoing]
    assert [(c.status, c.path) for c in report.notes_in] == [("added", rel)]
    assert report.reindexed == 1
    assert desktop.found("zebracorn") == [rel]
    assert "in: 1 commit(s), 1 note(s) (1 added)" in sync_text(SyncResult.from_dict(report.to_dict()))
    desktop.assert_kept("The zebracorn migration finished on Tuesday.")


def test_pending_hand_edits_are_committed_with_their_titles(laptop: Machine, desktop: Machine) -> None:
    laptop.write(
        "memory/long-term/knowledge_base/domains/hand.md", "# Hand-written tip\n\nUse rg, not grep.\n"
    )
    laptop.write("memory/long-term/.hand.md.swp", "editor junk")
    report = laptop.sync()
    assert report.committed
    message = git(laptop.root, "log", "-1", "--format=%B", report.committed)
    assert message.startswith("sync: pending edits to hand")  # its title: the file's name
    assert "- added: hand (memory/long-term/knowledge_base/domains/hand.md)" in message
    assert git(laptop.root, "status", "--porcelain").strip() == "?? memory/long-term/.hand.md.swp"
    desktop.sync()
    desktop.assert_kept("Use rg, not grep.")


def test_different_notes_edited_on_both_merge_cleanly(laptop: Machine, desktop: Machine) -> None:
    one = laptop.add("Standup moved to 9:30 on Mondays.")
    two = laptop.add("The staging cluster runs on three nodes.")
    laptop.sync()
    desktop.sync()
    laptop.edit(one, "9:30", "10:00")
    desktop.edit(two, "three nodes", "five nodes")
    laptop.sync()
    report = desktop.sync()
    assert report.conflicts == [] and report.pushed
    converge(laptop, desktop)
    for machine in (laptop, desktop):
        machine.assert_kept("Standup moved to 10:00 on Mondays.", "The staging cluster runs on five nodes.")
        assert "conflict" not in machine.all_text()
    assert desktop.found("five nodes") == [two]


def test_same_note_frontmatter_merges_field_by_field(laptop: Machine, desktop: Machine) -> None:
    rel = shared_note(laptop, desktop, importance=0.5, confidence=0.9)
    for machine, tag, field, value, count in (
        (laptop, "skip-locked", "importance", "0.8", "3"),
        (desktop, "infra", "confidence", "0.6", "2"),
    ):
        text = machine.read(rel)
        text = text.replace("  - queue\n", f"  - queue\n  - {tag}\n")
        text = text.replace(f"{field}: ", f"{field}: {value} # was ", 1)
        text = text.replace("status: active\n", f"status: active\naccess_count: {count}\n")
        machine.write(rel, text)
    laptop.sync()
    report = desktop.sync()
    assert report.conflicts == []
    meta = parse(desktop.read(rel), rel).meta
    assert meta["tags"] == ["postgres", "queue", "infra", "skip-locked"]
    assert (meta["importance"], meta["confidence"]) == (0.8, 0.6)
    assert meta["access_count"] == 5  # both sides' accesses added
    assert "conflict" not in meta
    converge(laptop, desktop)
    assert parse(laptop.read(rel), rel).meta == meta


def test_conflicting_body_edits_keep_both_versions(
    laptop: Machine, desktop: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    rel = shared_note(laptop, desktop)
    laptop.edit(rel, "Workers poll every 2 seconds.", "Workers poll every second.")
    desktop.edit(rel, "Workers poll every 2 seconds.", "Workers use LISTEN/NOTIFY instead of polling.")
    laptop.sync()

    def not_needed(*args: object) -> None:
        raise AssertionError("git's merge driver should have merged the note")

    # The real driver (a subprocess git starts) merges the note; sync's own fallback stays unused.
    monkeypatch.setattr(gitmerge, "settle_unmerged", not_needed)
    report = desktop.sync()
    assert report.conflicts == [rel] and report.pushed
    text = desktop.read(rel)
    note = parse(text, rel)
    assert note.meta["conflict"] is True
    # each marker names its version (see test_conflict_labels.py)
    assert re.search(f"^{OURS_MARKER} .+\n- Workers use LISTEN/NOTIFY instead of polling.\n", note.body, re.M)
    assert re.search(f"- Workers poll every second.\n{THEIRS_MARKER} .+\n", note.body)
    # still indexed and searchable by either version's words, and listed as conflicted
    assert desktop.found("LISTEN NOTIFY") == [rel]
    assert desktop.found("poll every second") == [rel]
    assert find_conflicts(desktop.vault) == [rel]
    assert "conflict: " + rel in sync_text(SyncResult.from_dict(report.to_dict()))
    converge(laptop, desktop)
    for machine in (laptop, desktop):
        machine.assert_kept(
            "Workers poll every second.", "LISTEN/NOTIFY instead of polling", "Retention is 30 days."
        )


def test_json_state_files_merge_by_key(laptop: Machine, desktop: Machine) -> None:
    rel = "memory/mid-term/projects/billing/tasks.json"
    laptop.write(rel, json.dumps({"tasks": [{"id": "t1", "title": "Write ADR", "status": "open"}]}, indent=2))
    laptop.sync()
    desktop.sync()
    laptop.write(rel, json.dumps({"tasks": [{"id": "t1", "title": "Write ADR", "status": "done"}]}, indent=2))
    desktop.write(
        rel,
        json.dumps(
            {
                "tasks": [
                    {"id": "t1", "title": "Write ADR", "status": "open"},
                    {"id": "t2", "title": "Benchmark"},
                ]
            },
            indent=2,
        ),
    )
    laptop.sync()
    desktop.sync()
    merged = json.loads(desktop.read(rel))
    assert merged == {
        "tasks": [{"id": "t1", "title": "Write ADR", "status": "done"}, {"id": "t2", "title": "Benchmark"}]
    }
    converge(laptop, desktop)


# ---- moves and deletes ------------------------------------------------------------------------------


def promote(machine: Machine, rel: str, dest: str, rewrite: str | None = None) -> str:
    """What the lifecycle's promote does to git: move the file (plus a frontmatter stamp), one commit."""
    final = move_file(machine.vault, rel, dest)
    text = machine.read(final).replace("status: active\n", "status: active\nmoved_at: 2026-11-22\n")
    if rewrite is not None:
        text = text.split("---\n# ", 1)[0] + "---\n" + rewrite
    machine.write(final, text)
    commit(machine.vault, [rel, final], f"promote: {final}")
    return final


def test_promote_on_one_side_edit_on_the_other(laptop: Machine, desktop: Machine) -> None:
    rel = shared_note(laptop, desktop, project="billing", tier="mid")
    assert rel.startswith("memory/mid-term/projects/billing/")
    moved = promote(laptop, rel, rel.replace("mid-term/projects/billing", "long-term/decisions"))
    desktop.edit(rel, "Retention is 30 days.", "Retention is 90 days (legal asked).")
    laptop.sync()
    report = desktop.sync()
    assert not (desktop.root / rel).exists()
    text = desktop.read(moved)
    assert "Retention is 90 days (legal asked)." in text and "moved_at: 2026-11-22" in text
    assert "conflict" not in text
    assert desktop.found("legal asked") == [moved]
    assert desktop.memory.indexer.catalog.get(rel) is None
    assert report.conflicts == []
    converge(laptop, desktop)
    assert not (laptop.root / rel).exists()
    laptop.assert_kept("Retention is 90 days (legal asked).", "one less service to run")


def test_move_git_cannot_pair_is_matched_by_id(laptop: Machine, desktop: Machine) -> None:
    """Promote rewrote most of the note, so git sees a delete and an add: the id pairs them."""
    rel = shared_note(laptop, desktop, project="billing", tier="mid")
    summary = "# Job queue: Postgres\n\nSummary: SKIP LOCKED queue, workers poll, 30-day retention.\n"
    moved = promote(laptop, rel, rel.replace("mid-term/projects/billing", "long-term/decisions"), summary)
    renames = git(laptop.root, "diff", "-M", "--name-status", "HEAD~1", "HEAD")
    assert not renames.startswith("R"), renames  # git does not pair them itself
    desktop.edit(rel, "- Jobs live in the `jobs` table.", "- Jobs live in the `job_queue` table.")
    laptop.sync()
    report = desktop.sync()
    assert report.moved_and_edited == [moved]
    assert not (desktop.root / rel).exists()
    desktop.assert_kept("Summary: SKIP LOCKED queue", "`job_queue` table")
    assert desktop.found("job_queue") == [moved]
    converge(laptop, desktop)
    laptop.assert_kept("Summary: SKIP LOCKED queue", "`job_queue` table")


def test_forget_on_one_side_edit_on_the_other_keeps_the_edit(laptop: Machine, desktop: Machine) -> None:
    rel = shared_note(laptop, desktop)
    forget(laptop.memory, ForgetRequest(rel, "obsolete"))
    desktop.edit(rel, "Retention is 30 days.", "Retention is 45 days.")
    laptop.sync()
    report = desktop.sync()
    assert report.kept_edits == [rel]
    assert "kept edit: " + rel in sync_text(SyncResult.from_dict(report.to_dict()))
    assert "Retention is 45 days." in desktop.read(rel)
    assert desktop.found("Retention 45") == [rel]
    converge(laptop, desktop)
    laptop.assert_kept("Retention is 45 days.")
    assert laptop.found("Retention 45") == [rel]


def test_edit_pushed_first_then_forget_pulled_keeps_the_edit(laptop: Machine, desktop: Machine) -> None:
    rel = shared_note(laptop, desktop)
    desktop.edit(rel, "one less service", "one service fewer")
    desktop.sync()
    forget(laptop.memory, ForgetRequest(rel))
    report = laptop.sync()  # ours deleted, theirs edited
    assert report.kept_edits == [rel]
    assert "one service fewer" in laptop.read(rel)
    converge(laptop, desktop)


def test_untouched_forget_syncs_as_a_delete(laptop: Machine, desktop: Machine) -> None:
    rel = shared_note(laptop, desktop)
    assert desktop.found("SKIP LOCKED") == [rel]
    forget(laptop.memory, ForgetRequest(rel))
    laptop.sync()
    report = desktop.sync()
    assert [(c.status, c.path) for c in report.notes_in] == [("deleted", rel)]
    assert not (desktop.root / rel).exists()
    assert desktop.found("SKIP LOCKED") == []


# ---- the remote ----------------------------------------------------------------------------------


def test_rejected_push_is_merged_and_retried(laptop: Machine, desktop: Machine) -> None:
    laptop.add("Laptop: renew the TLS certificate before Friday.")
    attempts: list[int] = []

    def someone_pushes(attempt: int) -> None:
        attempts.append(attempt)
        if attempt == 1:  # between our fetch and our push, the desktop pushes
            desktop.add("Desktop: the VPN config moved to the wiki.")
            assert desktop.sync().pushed

    report = laptop.sync(before_push=someone_pushes)
    assert attempts == [1, 2]
    assert report.pushed and report.push_attempts == 2
    assert any(c.subject.startswith("remember: Desktop: the VPN") for c in report.incoming)
    assert "push retried" in sync_text(SyncResult.from_dict(report.to_dict()))
    remote_log = git(laptop.root, "log", "--format=%s", "origin/main")
    assert "remember: Laptop: renew the TLS" in remote_log and "remember: Desktop: the VPN" in remote_log
    assert "forced" not in git(laptop.root, "reflog", "show", "origin/main")
    desktop.sync()
    for machine in (laptop, desktop):
        machine.assert_kept("renew the TLS certificate", "VPN config moved to the wiki")


def test_push_rejected_every_time_gives_up_cleanly(laptop: Machine, desktop: Machine) -> None:
    laptop.add("Keep trying.")

    def always(attempt: int) -> None:
        desktop.add(f"Desktop note {attempt}.")
        desktop.sync()

    with pytest.raises(SyncConflict, match="rejected 5 times"):
        laptop.sync(before_push=always)
    laptop.assert_kept("Keep trying.", "Desktop note 4.")


def test_unreachable_remote_keeps_local_commits(laptop: Machine, tmp_path: Path) -> None:
    git(laptop.root, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    laptop.write("memory/long-term/offline.md", "# Offline\n\nWritten on the train.\n")
    before = git(laptop.root, "rev-parse", "HEAD")
    with pytest.raises(RemoteUnavailable, match="cannot reach remote 'origin'.*local commits are kept"):
        laptop.sync()
    assert git(laptop.root, "rev-parse", "HEAD") != before
    assert git(laptop.root, "log", "-1", "--format=%s").startswith("sync: pending edits to offline")
    assert git(laptop.root, "status", "--porcelain") == ""
    assert laptop.found("train") == ["memory/long-term/offline.md"]


def test_a_remote_that_never_answers_is_reported_as_unreachable(
    laptop: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fetch is bounded in time: the remote's side hangs here, and the sync says the remote did
    not answer (not that git failed), with the local commits kept."""
    monkeypatch.setattr(gitsync, "NETWORK_TIMEOUT", 1)
    hang = "sleep 10 </dev/null >/dev/null 2>&1; git-upload-pack"
    git(laptop.root, "config", "remote.origin.uploadpack", hang)
    laptop.write("memory/long-term/offline.md", "# Offline\n\nWritten in a tunnel.\n")
    with pytest.raises(RemoteUnavailable, match="did not answer within 1 s; local commits are kept"):
        laptop.sync()
    assert git(laptop.root, "log", "-1", "--format=%s").startswith("sync: pending edits to offline")


def test_no_remote_configured(tmp_path: Path) -> None:
    root = tmp_path / "solo"
    init_vault(root, config_text=FAKE_CONFIG)
    machine = open_machine(root)
    try:
        with pytest.raises(
            RemoteUnavailable, match=r"no git remote 'origin' \(add one: `git remote add origin URL`\)"
        ):
            machine.sync()
        with pytest.raises(RemoteUnavailable, match="no git remote 'backup'"):
            machine.sync(remote="backup")
    finally:
        machine.memory.close()


def test_other_remote_and_branch_from_git_config(laptop: Machine, tmp_path: Path) -> None:
    other = tmp_path / "other.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(other)], check=True)
    git(laptop.root, "remote", "add", "server", str(other))
    report = laptop.sync(remote="server")
    assert report.pushed and report.remote == "server"
    assert git(other, "rev-parse", "main") == git(laptop.root, "rev-parse", "HEAD")
    # the first sync set the upstream: origin/main stays main's upstream, untouched
    assert git(laptop.root, "config", "branch.main.remote").strip() == "origin"


def test_non_note_conflict_keeps_both_versions_and_goes_on(laptop: Machine, desktop: Machine) -> None:
    laptop.edit("tmem.yaml", "provider: fake", "provider: fake\n  batch_size: 8")
    desktop.edit("tmem.yaml", "provider: fake", "provider: fake\n  batch_size: 16")
    laptop.sync()
    report = desktop.sync()
    assert report.kept_both == ["tmem.yaml -> tmem (other machine).yaml"] and report.pushed
    assert "kept both: tmem.yaml -> tmem (other machine).yaml" in sync_text(
        SyncResult.from_dict(report.to_dict())
    )
    assert not (desktop.root / ".git" / "MERGE_HEAD").exists()
    assert "batch_size: 16" in desktop.read("tmem.yaml")
    assert "batch_size: 8" in desktop.read("tmem (other machine).yaml")
    assert git(desktop.root, "status", "--porcelain") == ""


def test_non_note_json_changed_on_both_sides_merges_by_key(laptop: Machine, desktop: Machine) -> None:
    for machine in (laptop, desktop):
        (machine.root / ".obsidian").mkdir(exist_ok=True)
    (laptop.root / ".obsidian/app.json").write_text('{"a": 1}\n')
    laptop.sync()
    desktop.sync()
    (laptop.root / ".obsidian/app.json").write_text('{"a": 1, "b": 2}\n')
    (desktop.root / ".obsidian/app.json").write_text('{"a": 1, "c": 3}\n')
    laptop.sync()
    report = desktop.sync()
    assert report.kept_both == []
    assert json.loads(desktop.read(".obsidian/app.json")) == {"a": 1, "b": 2, "c": 3}


def test_settings_in_a_folder_the_person_s_gitignore_leaves_out_still_merge(
    laptop: Machine, desktop: Machine
) -> None:
    """An Obsidian vault that tracks .obsidian/ files while its .gitignore names `.obsidian`:
    git refuses a plain `git add` of a conflicted path there, which stopped every sync."""
    for machine in (laptop, desktop):
        (machine.root / ".obsidian").mkdir(exist_ok=True)
    (laptop.root / ".obsidian/app.json").write_text('{"a": 1, "theme": "dark"}\n')
    (laptop.root / ".obsidian/hotkeys.json").write_text('{"k": 1}\n')
    laptop.sync()
    with (laptop.root / ".gitignore").open("a") as ignore:
        ignore.write(".obsidian\n")
    laptop.sync()
    desktop.sync()
    (laptop.root / ".obsidian/app.json").write_text('{"a": 1, "theme": "dark", "b": 2}\n')
    (desktop.root / ".obsidian/app.json").write_text('{"a": 1, "theme": "dark", "c": 3}\n')
    (laptop.root / ".obsidian/hotkeys.json").write_text('{"k": 2}\n')
    (desktop.root / ".obsidian/hotkeys.json").write_text('{"k": 3}\n')
    laptop.sync()
    report = desktop.sync()
    assert report.pushed
    assert json.loads(desktop.read(".obsidian/app.json")) == {"a": 1, "theme": "dark", "b": 2, "c": 3}
    assert report.kept_both == [".obsidian/hotkeys.json -> .obsidian/hotkeys (other machine).json"]
    assert git(desktop.root, "status", "--porcelain") == ""


def test_obsidian_ui_state_a_vault_tracks_keeps_this_machine_s_panes(
    laptop: Machine, desktop: Machine
) -> None:
    """A vault adopted with .obsidian/workspace.json tracked: both machines click, both sync."""
    for machine in (laptop, desktop):
        (machine.root / ".obsidian").mkdir(exist_ok=True)
    (laptop.root / ".obsidian/workspace.json").write_text('{"active": "a", "left": {"w": 300}}\n')
    git(laptop.root, "add", "--force", ".obsidian/workspace.json")  # tracked before tmem came
    laptop.sync()
    desktop.sync()
    (laptop.root / ".obsidian/workspace.json").write_text('{"active": "laptop", "left": {"w": 300}}\n')
    (desktop.root / ".obsidian/workspace.json").write_text('{"active": "desktop", "left": {"w": 300}}\n')
    laptop.sync()
    report = desktop.sync()
    assert report.pushed and report.kept_both == []
    assert json.loads(desktop.read(".obsidian/workspace.json"))["active"] == "desktop"
    assert sorted(p.name for p in (desktop.root / ".obsidian").iterdir()) == ["workspace.json"]
    assert git(desktop.root, "status", "--porcelain") == ""


def test_detached_head_is_refused(laptop: Machine) -> None:
    git(laptop.root, "checkout", "--quiet", "--detach")
    with pytest.raises(Exception, match="HEAD is detached"):
        laptop.sync()


# ---- plain git pull ---------------------------------------------------------------------------------


def test_plain_git_pull_uses_the_driver_and_updates_the_index(laptop: Machine, desktop: Machine) -> None:
    rel = shared_note(laptop, desktop)
    desktop.found("anything")  # desktop's indexes exist and are current
    laptop.edit(rel, "Retention is 30 days.", "Retention is 60 days.")
    laptop.edit(rel, "  - queue\n", "  - queue\n  - retention\n")
    laptop.sync()
    desktop.edit(rel, "Retention is 30 days.", "Retention is 14 days.")
    desktop.edit(rel, "  - queue\n", "  - queue\n  - ops\n")
    ident = {
        f"GIT_{who}_{what}": value
        for who in ("AUTHOR", "COMMITTER")
        for what, value in (("NAME", "d"), ("EMAIL", "d@x"))
    }
    git(desktop.root, "commit", "-qam", "desktop edit", env={**os.environ, **ident})
    # A PATH without the venv: git must find tmem through the absolute path in .git/config.
    env = {**os.environ, **ident, "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        ["git", "-C", str(desktop.root), "pull", "--no-rebase", "--no-edit", "origin", "main"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "kept both, marked conflict: true" in proc.stderr
    text = desktop.read(rel)
    meta = parse(text, rel).meta
    assert meta["conflict"] is True and meta["tags"] == ["postgres", "queue", "ops", "retention"]
    assert "Retention is 60 days." in text and "Retention is 14 days." in text
    # the post-merge hook updated the index from the diff (no search or refresh ran since)
    catalog = Catalog(desktop.root / ".tmem" / "catalog.sqlite")
    try:
        assert catalog.stats()[rel][2] == content_hash(text)
    finally:
        catalog.close()


def test_moved_to_different_tiers_on_both_sides_keeps_one_note(laptop: Machine, desktop: Machine) -> None:
    rel = shared_note(laptop, desktop, project="billing", tier="mid")
    to_long = promote(laptop, rel, rel.replace("mid-term/projects/billing", "long-term/decisions"))
    desktop.edit(rel, "Workers poll every 2 seconds.", "Workers poll every 3 seconds.")
    to_archive = promote(desktop, rel, rel.replace("mid-term/projects/", "archive/projects/"))
    laptop.sync()
    report = desktop.sync()
    on_disk = [p for p in (to_long, to_archive) if (desktop.root / p).exists()]
    assert len(on_disk) == 1, report
    assert not (desktop.root / rel).exists()
    desktop.assert_kept("Workers poll every 3 seconds.", "one less service to run")
    converge(laptop, desktop)


def test_forget_on_one_side_promote_on_the_other_keeps_the_note(laptop: Machine, desktop: Machine) -> None:
    rel = shared_note(laptop, desktop, project="billing", tier="mid")
    forget(laptop.memory, ForgetRequest(rel))
    moved = promote(desktop, rel, rel.replace("mid-term/projects/billing", "long-term/decisions"))
    laptop.sync()
    desktop.sync()
    assert (desktop.root / moved).exists()
    converge(laptop, desktop)
    assert (laptop.root / moved).exists()


def test_same_new_file_added_on_both_sides_keeps_both_texts(laptop: Machine, desktop: Machine) -> None:
    rel = "memory/archive/daily/2026-11-22.md"
    laptop.write(
        rel,
        "---\ntitle: Daily 2026-11-22\ntags:\n  - daily\n---\n# 2026-11-22\n\n- laptop: fixed the CI cache\n",
    )
    desktop.write(
        rel, "---\ntitle: Daily 2026-11-22\ntags:\n  - log\n---\n# 2026-11-22\n\n- desktop: wrote the ADR\n"
    )
    laptop.sync()
    report = desktop.sync()
    assert report.conflicts == [rel]
    meta = parse(desktop.read(rel), rel).meta
    assert meta["tags"] == ["log", "daily"]
    desktop.assert_kept("laptop: fixed the CI cache", "desktop: wrote the ADR", "# 2026-11-22")
    converge(laptop, desktop)


def test_remote_errors_never_show_a_token(laptop: Machine) -> None:
    git(laptop.root, "remote", "set-url", "origin", "https://me:s3cret-token@127.0.0.1:1/memory.git")
    with pytest.raises(RemoteUnavailable) as caught:
        laptop.sync()
    message = str(caught.value)
    assert message.startswith("cannot reach remote 'origin' (https://127.0.0.1:1/memory.git)")
    assert "s3cret" not in message and "\n" not in message


def test_unrelated_histories_are_refused_with_advice(laptop: Machine, tmp_path: Path, remote: Path) -> None:
    other = tmp_path / "other"
    init_vault(other, config_text=FAKE_CONFIG + "# another machine's own vault\n")
    git(other, "remote", "add", "origin", str(remote))
    machine = open_machine(other)
    try:
        with pytest.raises(SyncConflict, match="unrelated.*git clone URL.*tmem init --adopt"):
            machine.sync()
        assert git(other, "log", "--format=%s").strip() == "init: new tmem vault from template"
    finally:
        machine.memory.close()


def test_a_merge_left_unfinished_by_hand_is_refused(laptop: Machine, desktop: Machine) -> None:
    laptop.edit("tmem.yaml", "provider: fake", "provider: fake\n  batch_size: 8")
    laptop.sync()
    desktop.edit("tmem.yaml", "provider: fake", "provider: fake\n  batch_size: 16")
    git(desktop.root, "-c", "user.name=d", "-c", "user.email=d@x", "commit", "-qam", "mine")
    git(desktop.root, "fetch", "-q")
    subprocess.run(
        ["git", "-C", str(desktop.root), "-c", "user.name=d", "-c", "user.email=d@x", "merge", "origin/main"],
        capture_output=True,
    )
    assert (desktop.root / ".git" / "MERGE_HEAD").exists()
    with pytest.raises(Exception, match="a merge is in progress"):
        desktop.sync()


def test_a_broken_driver_still_loses_nothing(
    laptop: Machine, desktop: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A driver command that fails (a moved venv): git leaves the note unmerged, sync merges it itself."""
    import tiered_memory.storage.vault as vault_module

    rel = shared_note(laptop, desktop)
    laptop.edit(rel, "Retention is 30 days.", "Retention is 7 days.")
    laptop.edit(rel, "  - queue\n", "  - queue\n  - gdpr\n")
    laptop.sync()
    desktop.edit(rel, "Retention is 30 days.", "Retention is 365 days.")
    broken = "false %O %A %B %P"
    monkeypatch.setattr(vault_module, "merge_driver_command", lambda: broken)
    monkeypatch.setattr(gitmerge, "merge_driver_command", lambda: broken)
    report = desktop.sync()
    assert git(desktop.root, "config", "merge.tmem.driver").strip() == broken
    assert report.conflicts == [rel]
    meta = parse(desktop.read(rel), rel).meta
    assert meta["conflict"] is True and "gdpr" in meta["tags"]
    desktop.assert_kept("Retention is 7 days.", "Retention is 365 days.")
    assert len(git(desktop.root, "rev-list", "--parents", "-n", "1", "HEAD").split()) == 3  # a merge commit
    assert git(desktop.root, "status", "--porcelain") == ""


def killed_while_merging(machine: Machine) -> None:
    """`sync` in a process of its own, SIGKILLed once git's merge has stopped on a file for tmem
    to settle (MERGE_HEAD written, nothing committed): what a kill -9 at that instant leaves."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            gitmerge.settle_unmerged = lambda *a, **k: os.kill(os.getpid(), 9)  # type: ignore[assignment]
            sync(open_machine(machine.root).memory)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9
    assert (machine.root / ".git" / "MERGE_HEAD").exists()


def test_a_sync_killed_mid_merge_leaves_nothing_the_next_commands_trip_on(
    laptop: Machine, desktop: Machine
) -> None:
    rel = shared_note(laptop, desktop)
    forget(laptop.memory, ForgetRequest(rel, "obsolete"))
    laptop.sync()
    desktop.edit(rel, "Retention is 30 days.", "Retention is 45 days.")
    killed_while_merging(desktop)
    added = desktop.add("Backups run nightly at two.", title="Backups")  # a writer meanwhile
    assert git(desktop.root, "log", "-1", "--format=%P").count(" ") == 0  # not a merge half-made
    report = desktop.sync()
    assert report.kept_edits == [rel]
    assert not (desktop.root / ".git" / "MERGE_HEAD").exists()
    converge(laptop, desktop)
    laptop.assert_kept("Retention is 45 days.", "Backups run nightly at two.")
    assert (laptop.root / added).exists()
    assert git(desktop.root, "status", "--porcelain") == ""


def test_the_next_sync_after_one_killed_mid_merge_merges_again(laptop: Machine, desktop: Machine) -> None:
    rel = shared_note(laptop, desktop)
    forget(laptop.memory, ForgetRequest(rel, "obsolete"))
    laptop.sync()
    desktop.edit(rel, "Retention is 30 days.", "Retention is 45 days.")
    killed_while_merging(desktop)
    told: list[str] = []
    with desktop.memory.reporting_to(told.append):
        report = desktop.sync()
    assert report.kept_edits == [rel] and report.pushed
    assert any("a sync killed while merging" in line for line in told)
    assert not (desktop.root / ".tmem" / "merging").exists()
    converge(laptop, desktop)
    laptop.assert_kept("Retention is 45 days.")


def test_a_sync_killed_mid_merge_with_gits_index_lock_left_is_undone(
    laptop: Machine, desktop: Machine
) -> None:
    """The kill took a git command of the merge too: its `.git/index.lock` stays, `git merge
    --abort` refused on it, and every writer stopped on the merge left in progress."""
    rel = shared_note(laptop, desktop)
    forget(laptop.memory, ForgetRequest(rel, "obsolete"))
    laptop.sync()
    desktop.edit(rel, "Retention is 30 days.", "Retention is 45 days.")
    killed_while_merging(desktop)
    (desktop.root / ".git" / "index.lock").write_text("")
    added = desktop.add("Backups run nightly at two.", title="Backups")
    assert not (desktop.root / ".git" / "MERGE_HEAD").exists()
    converge(laptop, desktop)
    laptop.assert_kept("Retention is 45 days.", "Backups run nightly at two.")
    assert (laptop.root / added).exists()


def test_a_sync_killed_while_checking_the_merge_out_leaves_no_edit_by_hand(
    laptop: Machine, desktop: Machine
) -> None:
    """Killed after the merged files were written and before the index named them: the abort
    keeps such files as edits by hand, which the next commit would take as the person's."""
    from tiered_memory.storage.git import Git

    rel = shared_note(laptop, desktop)
    laptop.edit(rel, "Retention is 30 days.", "Retention is 45 days.")
    laptop.sync()
    desktop.add("Backups run nightly at two.", title="Backups")
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            run = Git.run

            def killed_after_checkout(self: Git, *args: str, **kwargs: object) -> object:
                proc = run(self, *args, **kwargs)  # type: ignore[arg-type]
                if args[:1] == ("read-tree",):
                    run(self, "read-tree", "HEAD")  # the index as it was: its write is what the kill cut
                    os.kill(os.getpid(), 9)
                return proc

            Git.run = killed_after_checkout  # type: ignore[assignment,method-assign]
            sync(open_machine(desktop.root).memory)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status)
    assert "45 days" in desktop.read(rel)  # the merged bytes, in no index entry

    desktop.add("Deploys go out on Tuesdays.", title="Deploys")  # a writer: its recovery undoes the merge
    assert git(desktop.root, "status", "--porcelain") == ""
    assert "30 days" in desktop.read(rel)
    converge(laptop, desktop)
    laptop.assert_kept("Retention is 45 days.", "Backups run nightly at two.", "Deploys go out on Tuesdays.")


def test_a_hand_edit_saved_while_sync_merges_is_kept(
    laptop: Machine, desktop: Machine, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A person saves one note just after sync committed the pending edits (the merge must write
    that note: git refuses), and another file while git merges (its driver runs). `git merge`,
    when its strategy fails, puts every tracked file back as HEAD has it and re-applies only the
    edits it saw when it began: the second save went back to its committed bytes."""
    import shlex

    import tiered_memory.storage.vault as vault_module
    from tiered_memory.storage import merging

    queue = shared_note(laptop, desktop)
    deploy = laptop.add("Deploys go out on Tuesdays.\n\nRollbacks need a second reviewer.\n", title="Deploys")
    hand = "memory/long-term/hand.md"
    laptop.write(hand, "# Mine\n\nwritten by hand\n")
    laptop.sync()
    desktop.sync()
    desktop.edit(queue, "Retention is 30 days.", "Retention is 60 days.")
    desktop.edit(deploy, "Tuesdays", "Wednesdays")
    desktop.sync()
    laptop.edit(queue, "Workers poll every 2 seconds.", "Workers poll every 5 seconds.")
    commit(laptop.vault, [queue], "edit: poll less often")

    program = merge_driver_command().removesuffix(" merge-driver %O %A %B %P")
    wrapper = tmp_path / "person-saves-during-the-merge.sh"
    wrapper.write_text(
        "#!/bin/sh\n"
        f"printf 'saved while sync merged\\n' >> {shlex.quote(str(laptop.root / hand))}\n"
        f'exec {program} merge-driver "$@"\n'
    )
    wrapper.chmod(0o755)
    driver = f"{shlex.quote(str(wrapper))} %O %A %B %P"
    monkeypatch.setattr(vault_module, "merge_driver_command", lambda: driver)
    monkeypatch.setattr(gitmerge, "merge_driver_command", lambda: driver)
    started = merging.started
    saves: list[str] = []

    def person_saves_first(vault: Vault, theirs: str, tree: str = "") -> None:
        started(vault, theirs, tree)
        if not saves:
            laptop.edit(deploy, "second reviewer.", "second reviewer, said by hand.")
            saves.append(deploy)

    monkeypatch.setattr(merging, "started", person_saves_first)
    with contextlib.suppress(GitError):
        laptop.sync()
    monkeypatch.undo()

    assert "saved while sync merged" in laptop.read(hand)
    assert "said by hand" in laptop.read(deploy)
    converge(laptop, desktop)
    for machine in (laptop, desktop):
        machine.assert_kept("saved while sync merged", "said by hand", "Wednesdays", "60 days", "5 seconds")


def note_files(machine: Machine, note_id: str) -> list[str]:
    """Every note file of the machine whose frontmatter gives `note_id`."""
    found = []
    for path in sorted((machine.root / "memory").rglob("*.md")):
        rel = path.relative_to(machine.root).as_posix()
        if parse(path.read_text(encoding="utf-8"), rel).meta.get("id") == note_id:
            found.append(rel)
    return found


def test_a_note_archived_on_one_machine_and_restored_on_the_other_ends_in_one_file(
    laptop: Machine, desktop: Machine
) -> None:
    """Forgotten on the desktop (pushed), archived on the laptop (its merge keeps the archived
    copy: an edit wins over a delete), then restored on the desktop before it pulled: the merge
    brought the note back in two files, one id, which every command by id refused."""
    from tiered_memory.app.api.lifecycle import ArchiveRequest
    from tiered_memory.app.lifecycle import archive
    from tiered_memory.sync.history import restore

    rel = shared_note(laptop, desktop)
    note_id = str(parse(laptop.read(rel), rel).meta["id"])
    forget(desktop.memory, ForgetRequest(rel))
    desktop.sync()
    archive(laptop.memory, ArchiveRequest(note_id, reason="done"))
    laptop.sync()
    restore(desktop.memory, note_id)
    report = desktop.sync()

    assert note_files(desktop, note_id) == [rel]  # the later action, the restore, wins
    assert report.twins and report.twins[0].startswith(f"{note_id}: in two files")
    assert "one note, two files:" in sync_text(report)
    converge(laptop, desktop)
    assert note_files(laptop, note_id) == [rel]
    laptop.assert_kept("Retention is 30 days.")


def test_twins_whose_texts_differ_are_both_kept_under_two_ids(laptop: Machine, desktop: Machine) -> None:
    from tiered_memory.app.api.lifecycle import ArchiveRequest
    from tiered_memory.app.lifecycle import archive
    from tiered_memory.sync.history import restore

    rel = shared_note(laptop, desktop)
    note_id = str(parse(laptop.read(rel), rel).meta["id"])
    forget(desktop.memory, ForgetRequest(rel))
    desktop.sync()
    laptop.edit(rel, "Retention is 30 days.", "Retention is 90 days.")
    archive(laptop.memory, ArchiveRequest(note_id, reason="done"))
    laptop.sync()
    restore(desktop.memory, note_id)
    report = desktop.sync()

    assert note_files(desktop, note_id) == [rel]
    [archived] = note_files(desktop, f"{note_id}-archived")
    assert "Retention is 90 days." in desktop.read(archived)
    assert "Retention is 30 days." in desktop.read(rel)
    assert report.twins
    converge(laptop, desktop)


def test_a_git_without_merge_tree_write_tree_merges_with_git_merge(
    laptop: Machine, desktop: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Git before 2.38 has no `merge-tree --write-tree` (its merge-tree takes three trees and
    prints a usage line for anything else); its `git merge` is used, and nothing is lost."""
    from tiered_memory.storage.git import Git

    rel = shared_note(laptop, desktop)
    laptop.edit(rel, "Retention is 30 days.", "Retention is 7 days.")
    laptop.sync()
    desktop.edit(rel, "Workers poll every 2 seconds.", "Workers poll every 5 seconds.")
    desktop.add("Backups run nightly at two.", title="Backups")
    run = Git.run
    asked: list[str] = []

    def old_git(self: Git, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        if args[:1] == ("merge-tree",):
            asked.append("merge-tree")
            usage = "usage: git merge-tree <base-tree> <branch1> <branch2>\n"
            return subprocess.CompletedProcess(["git", *args], 129, "", usage)
        return run(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Git, "run", old_git)
    report = desktop.sync()
    monkeypatch.undo()
    assert asked and report.pushed and not report.conflicts
    assert len(git(desktop.root, "rev-list", "--parents", "-n", "1", "HEAD").split()) == 3
    converge(laptop, desktop)
    laptop.assert_kept("Retention is 7 days.", "Workers poll every 5 seconds.", "Backups run nightly at two.")
