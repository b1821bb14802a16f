"""The sync, merge-driver, resolve, log, restore, backup and `init --adopt` commands, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from helpers import FAKE_CONFIG, as_json, git, git_log, ok, one_error_line

from tiered_memory.cli.main import cli
from tiered_memory.model.merge3 import OURS_MARKER, THEIRS_MARKER
from tiered_memory.model.sync_result import SyncResult
from tiered_memory.present.sync import sync_text
from tiered_memory.storage.vault import init_vault, merge_driver_command

TMEM = str(Path(sys.executable).parent / "tmem")


def tmem(root: Path | None, *args: str, env: dict[str, str] | None = None) -> Result:
    prefix = ["--vault", str(root)] if root else []
    return CliRunner().invoke(cli, [*prefix, *args], env=env, catch_exceptions=False)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """A laptop vault pushed to a bare remote, and a desktop clone of it adopted with `init --adopt`."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    laptop = tmp_path / "laptop"
    init_vault(laptop, config_text=FAKE_CONFIG)
    git(laptop, "remote", "add", "origin", str(remote))
    first = ok(tmem(laptop, "sync"))
    assert first.stdout.startswith(
        "synced main with origin/main\nin: nothing new\nout: 1 commit(s), 7 note(s)"
    )
    desktop = tmp_path / "desktop"
    subprocess.run(["git", "clone", "-q", str(remote), str(desktop)], check=True)
    adopted = as_json(tmem(None, "init", "--adopt", str(desktop), "--json"))
    assert adopted["vault"] == str(desktop) and adopted["adopted"] is True
    assert adopted["merge_driver"] == merge_driver_command() and adopted["too_large"] == []
    return laptop, desktop


def add(root: Path, text: str, *args: str) -> dict[str, Any]:
    result: dict[str, Any] = as_json(tmem(root, "add", "--json", *args, "--", text))["note"]
    return result


def conflicted(pair: tuple[Path, Path]) -> tuple[str, str]:
    """Both machines change the same line of one note; the desktop's sync keeps both: (id, path)."""
    laptop, desktop = pair
    note = add(laptop, "The release train leaves every second Thursday.", "--title", "Release train")
    ok(tmem(laptop, "sync"))
    ok(tmem(desktop, "sync"))
    for root, day in ((laptop, "Tuesday"), (desktop, "Friday")):
        path = root / note["path"]
        path.write_text(path.read_text().replace("second Thursday", f"second {day}"))
    ok(tmem(laptop, "sync"))
    report = as_json(tmem(desktop, "sync", "--json"))
    assert report["conflicts"] == [note["path"]]
    return note["id"], note["path"]


def test_sync_text_and_json(pair: tuple[Path, Path]) -> None:
    laptop, desktop = pair
    note = add(laptop, "Office plants need water on Mondays.")
    out = ok(tmem(laptop, "sync")).stdout
    assert "out: 1 commit(s), 1 note(s) (1 added)" in out and f"+ {note['path']}" in out
    report = as_json(tmem(desktop, "sync", "--json"))
    assert report["remote"] == "origin" and report["branch"] == "main" and report["pushed"] is False
    assert [c["path"] for c in report["notes_in"]] == [note["path"]]
    assert report["incoming"][0]["subject"].startswith("remember: Office plants")
    hits = as_json(tmem(desktop, "search", "--json", "--mode", "keyword", "plants water"))["results"]
    assert [h["path"] for h in hits] == [note["path"]]
    assert ok(tmem(desktop, "sync")).stdout.strip().endswith("in: nothing new\nout: nothing to push")


def test_sync_failures_are_one_line(pair: tuple[Path, Path], tmp_path: Path) -> None:
    laptop, _ = pair
    line = one_error_line(tmem(laptop, "sync", "--remote", "nowhere"), 2)
    assert (
        line
        == "tmem: no git remote 'nowhere' (add one: `git remote add nowhere URL`); local commits are kept"
    )
    git(laptop, "remote", "set-url", "origin", str(tmp_path / "vanished.git"))
    add(laptop, "Written offline.")
    line = one_error_line(tmem(laptop, "sync"), 2)
    assert line.startswith("tmem: cannot reach remote 'origin'") and line.endswith("local commits are kept")
    assert git_log(laptop)[0] == "remember: Written offline. [long-term/note]"


def test_merge_driver_command_merges_into_ours(tmp_path: Path) -> None:
    base, ours, theirs = (tmp_path / n for n in ("O", "A", "B"))
    base.write_text("---\ntags:\n  - a\n---\none\ntwo\nthree\n")
    ours.write_text("---\ntags:\n  - a\n  - mine\n---\nONE\ntwo\nthree\n")
    theirs.write_text("---\ntags:\n  - a\n  - yours\n---\none\ntwo\nTHREE\n")
    result = ok(tmem(None, "merge-driver", str(base), str(ours), str(theirs), "memory/long-term/x.md"))
    assert result.stderr == ""
    assert ours.read_text() == "---\ntags:\n  - a\n  - mine\n  - yours\n---\nONE\ntwo\nTHREE\n"
    # a real conflict still exits 0 (the pull goes on) and says so on stderr
    ours.write_text("---\ntags:\n  - a\n---\none\nTWO (mine)\nthree\n")
    theirs.write_text("---\ntags:\n  - a\n---\none\nTWO (yours)\nthree\n")
    result = ok(tmem(None, "merge-driver", "--json", str(base), str(ours), str(theirs), "memory/x.md"))
    assert json.loads(result.stdout)["conflict"] is True
    assert "memory/x.md: both sides changed the same lines" in result.stderr
    merged = ours.read_text()
    assert "conflict: true" in merged and "TWO (mine)" in merged and "TWO (yours)" in merged
    assert OURS_MARKER in merged and THEIRS_MARKER in merged


def test_merge_driver_unreadable_input_exits_1(tmp_path: Path) -> None:
    base, ours, theirs = (tmp_path / n for n in ("O", "A", "B"))
    base.write_text("x\n")
    ours.write_bytes(b"\xff\xfe binary")
    theirs.write_text("y\n")
    result = tmem(None, "merge-driver", str(base), str(ours), str(theirs), "memory/x.md")
    assert result.exit_code == 1 and "cannot merge as text" in result.stderr
    assert ours.read_bytes() == b"\xff\xfe binary"


def test_merge_driver_imports_only_the_merge_logic(tmp_path: Path) -> None:
    for name, text in (("O", "a\n"), ("A", "b\n"), ("B", "a\nc\n")):
        (tmp_path / name).write_text(text)
    code = (
        "import sys\n"
        "from tiered_memory.cli.main import cli\n"
        "try:\n"
        "    cli(['merge-driver', 'O', 'A', 'B', 'memory/x.md'])\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        "heavy = [m for m in ('git', 'tiered_memory.app.memory', 'tiered_memory.index.indexer', 'whoosh', 'numpy',"
        " 'pydantic', 'tiered_memory.storage.vault') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "A").read_text() == "b\nc\n"


def test_merge_driver_is_hidden_and_commands_have_help() -> None:
    top = ok(tmem(None, "--help")).stdout
    assert "merge-driver" not in top and "post-merge" not in top
    for command in ("sync", "resolve", "log", "restore", "backup", "merge-driver"):
        text = ok(tmem(None, command, "--help")).stdout
        assert "--json" in text, command
    assert "--adopt" in ok(tmem(None, "init", "--help")).stdout


def test_status_lists_conflicts_and_resolve_clears_them(pair: tuple[Path, Path], tmp_path: Path) -> None:
    _, desktop = pair
    note_id, rel = conflicted(pair)
    status = as_json(tmem(desktop, "status", "--json"))
    assert status["conflicts"] == [rel]
    assert f"conflict:   {rel}" in ok(tmem(desktop, "status")).stdout
    # the editor left the markers in: refused, the mark stays
    line = one_error_line(tmem(desktop, "resolve", note_id, env={"EDITOR": "true"}), 2)
    assert "still has conflict markers" in line
    assert "conflict: true" in (desktop / rel).read_text()
    # an editor that keeps the laptop's line and drops the markers
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i -e '/^<<<<<<< /,/^=======$/d' -e '/^>>>>>>> /d' \"$1\"\n")
    editor.chmod(0o755)
    result = as_json(tmem(desktop, "resolve", note_id, "--json", env={"EDITOR": str(editor)}))
    assert result["path"] == rel and result["commit"]
    text = (desktop / rel).read_text()
    assert "conflict" not in text and "every second Tuesday" in text and "Friday" not in text
    assert git_log(desktop)[0] == "resolve: Release train"
    assert as_json(tmem(desktop, "status", "--json"))["conflicts"] == []
    assert "conflict:" not in ok(tmem(desktop, "status")).stdout


def test_resolve_force_without_editor(pair: tuple[Path, Path]) -> None:
    _, desktop = pair
    note_id, rel = conflicted(pair)
    out = ok(tmem(desktop, "resolve", note_id, "--no-edit", "--force")).stdout
    assert out.startswith(f"resolved {rel} (")
    text = (desktop / rel).read_text()
    assert "conflict: true" not in text and OURS_MARKER in text  # both versions still there
    assert one_error_line(tmem(desktop, "resolve", "no-such-note", "--no-edit"), 1)


def test_log_restore_and_backup_commands(pair: tuple[Path, Path], tmp_path: Path) -> None:
    laptop, _ = pair
    note = add(laptop, "Parking is on level -2.", "--title", "Parking")
    path = laptop / note["path"]
    path.write_text(path.read_text().replace("level -2", "level -3"))
    ok(tmem(laptop, "edit", note["id"], env={"EDITOR": "true"}))  # no change: nothing committed
    git(laptop, "-c", "user.name=me", "-c", "user.email=me@x", "commit", "-qam", "edit: parking moved")
    ok(tmem(laptop, "forget", "--yes", note["id"]))

    text = ok(tmem(laptop, "log", note["id"])).stdout
    assert text.startswith(f"{note['id']}: forgotten")
    assert "edit: parking moved" in text and "remember: Parking" in text
    events = as_json(tmem(laptop, "log", note["id"], "--json"))["events"]
    first = events[-1]["commit"]
    assert [c["change"] for c in events[0]["changes"]] == ["deleted"]
    recent = as_json(tmem(laptop, "log", "-n", "2", "--json"))
    assert recent[0]["subject"].startswith("forget: Parking") and len(recent) == 2

    restored = as_json(tmem(laptop, "restore", note["id"], "--json"))
    assert restored["path"] == note["path"] and restored["was_forgotten"] is True
    assert "level -3" in path.read_text()
    out = ok(tmem(laptop, "restore", note["id"], "--at", first[:8])).stdout
    assert out.startswith(f"restored the version of {note['id']} from {first[:8]}")
    assert "level -2" in path.read_text()
    assert one_error_line(tmem(laptop, "restore", note["id"]), 2).endswith(f"(see `tmem log {note['id']}`)")
    assert one_error_line(tmem(laptop, "log", "nothing-like-this"), 1)

    dest = tmp_path / "bk"
    made = as_json(tmem(laptop, "backup", "--to", str(dest), "--keep", "2", "--json"))
    assert Path(made["bundle"]).parent == dest and made["uncommitted"] == 0
    ok(tmem(laptop, "backup", "--to", str(dest), "--keep", "2"))
    third = ok(tmem(laptop, "backup", "--to", str(dest), "--keep", "2")).stdout
    assert third.startswith(f"backed up to {dest}/tmem-laptop-") and third.strip().endswith("(2 kept)")
    kept = sorted(dest.glob("*.bundle"))
    assert len(kept) == 2
    assert not Path(made["bundle"]).exists()  # the oldest of three was pruned (--keep 2)
    newest = max(kept, key=lambda p: p.stat().st_mtime)
    target = tmp_path / "from-backup"
    restored_vault = as_json(tmem(None, "backup", "--restore", str(newest), str(target), "--json"))
    assert restored_vault == {"vault": str(target)}
    assert "level -2" in (target / note["path"]).read_text()
    assert one_error_line(tmem(None, "backup", "--restore", str(newest), str(target)), 2)


def test_init_adopt_makes_a_plain_folder_a_vault(tmp_path: Path) -> None:
    (tmp_path / "idea.md").write_text("# Idea\n")
    ok(tmem(None, "init", "--adopt", str(tmp_path)))
    assert (tmp_path / "tmem.yaml").is_file() and "idea.md" in git(tmp_path, "ls-files")
    assert (tmp_path / "idea.md").read_text() == "# Idea\n"


def _site_repo(root: Path, ignore: str) -> None:
    """A published site's repository (Quartz): the site's code, and the Obsidian vault in
    `content/`, all tracked; `ignore` is its .gitignore."""
    (root / "content" / "CS").mkdir(parents=True)
    (root / "quartz").mkdir()
    (root / "content" / "CS" / "Docker vs. VM.md").write_bytes(b"---\ntitle: Docker vs. VM\n---\nKernels.\n")
    (root / "quartz" / "build.ts").write_text("export {}\n")
    (root / ".gitignore").write_text(ignore)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.name=p", "-c", "user.email=p@example.org", "commit", "-qm", "site")


def test_init_adopt_refuses_a_folder_whose_files_an_enclosing_repository_tracks(tmp_path: Path) -> None:
    _site_repo(tmp_path, "node_modules\n")
    content = tmp_path / "content"
    line = one_error_line(tmem(None, "init", "--adopt", str(content)), 2)
    assert f"part of the git repository at {tmp_path}" in line and "folders: exclude:" in line
    assert sorted(p.name for p in content.iterdir()) == ["CS"]  # no .git, tmem.yaml, .gitignore
    assert git(tmp_path, "status", "--porcelain") == ""
    # a folder the enclosing repository does not track (a home kept in git) is adopted as before
    (tmp_path / "node_modules" / "notes").mkdir(parents=True)
    (tmp_path / "node_modules" / "notes" / "idea.md").write_text("# Idea\n")
    ok(tmem(None, "init", "--adopt", str(tmp_path / "node_modules" / "notes")))
    assert (tmp_path / "node_modules" / "notes" / ".git").is_dir()


def test_init_adopt_of_a_repository_that_ignores_its_own_gitignore(tmp_path: Path) -> None:
    """Quartz's .gitignore names `.gitignore`: the lines tmem appends stay on this machine, the
    adoption is still one commit, and tmem's state is ignored on a clone too."""
    _site_repo(tmp_path / "site", ".gitignore\nnode_modules\n")
    site = tmp_path / "site"
    ok(tmem(None, "init", "--adopt", str(site)))
    assert git(site, "status", "--porcelain") == ""
    assert git(site, "show", "--name-only", "--format=", "HEAD").split() == [".gitattributes", "tmem.yaml"]
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    git(site, "remote", "add", "origin", str(remote))
    ok(tmem(site, "sync"))
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True)
    ok(tmem(None, "init", "--adopt", str(clone)))
    assert "content/CS/Docker vs. VM.md" in ok(tmem(clone, "search", "--mode", "keyword", "kernels")).stdout
    assert (clone / ".tmem").is_dir() and git(clone, "status", "--porcelain") == ""


def test_real_tmem_executable_syncs(pair: tuple[Path, Path]) -> None:
    """The installed console script end to end (what the daemon and people run)."""
    laptop, desktop = pair
    add(laptop, "Subprocess sync works.")
    env = {**os.environ, "TMEM_VAULT": str(laptop)}
    proc = subprocess.run([TMEM, "sync"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and "out: 1 commit(s)" in proc.stdout, proc.stderr
    proc = subprocess.run([TMEM, "--vault", str(desktop), "sync"], capture_output=True, text=True)
    assert proc.returncode == 0 and "in: 1 commit(s)" in proc.stdout, proc.stderr


def test_tasks_added_on_both_clones_both_survive_sync(pair: tuple[Path, Path]) -> None:
    laptop, desktop = pair
    ok(tmem(laptop, "project", "new", "survey"))
    ok(tmem(laptop, "task", "add", "-p", "survey", "Calibrate the tablets"))
    ok(tmem(laptop, "sync"))
    ok(tmem(desktop, "sync"))
    ok(tmem(laptop, "task", "add", "-p", "survey", "Laptop: order batteries"))
    ok(tmem(desktop, "task", "add", "-p", "survey", "Desktop: book the van"))
    ok(tmem(laptop, "sync"))
    ok(tmem(desktop, "sync"))
    ok(tmem(laptop, "sync"))
    for root in (laptop, desktop):
        listed = tmem(root, "task", "list", "-p", "survey").stdout
        assert "Calibrate the tablets" in listed
        assert "Laptop: order batteries" in listed
        assert "Desktop: book the van" in listed


def test_task_numbers_are_unique_after_both_clones_add_the_same_one(pair: tuple[Path, Path]) -> None:
    laptop, desktop = pair
    ok(tmem(laptop, "project", "new", "survey"))
    ok(tmem(laptop, "task", "add", "-p", "survey", "Calibrate the tablets"))
    ok(tmem(laptop, "sync"))
    ok(tmem(desktop, "sync"))
    assert (
        as_json(tmem(laptop, "task", "add", "-p", "survey", "Laptop: order batteries", "--json"))["id"] == 2
    )
    assert as_json(tmem(desktop, "task", "add", "-p", "survey", "Desktop: book the van", "--json"))["id"] == 2
    ok(tmem(laptop, "sync"))
    out = ok(tmem(desktop, "sync")).stdout
    ok(tmem(laptop, "sync"))
    for root in (laptop, desktop):
        tasks = as_json(tmem(root, "task", "list", "-p", "survey", "--json"))
        assert sorted(t["id"] for t in tasks) == [1, 2, 3]
    moved = next(t for t in tasks if t["id"] == 3)
    rel = "memory/mid-term/projects/survey/tasks.json"
    assert f"renumbered task: {rel}: #2 {moved['text']!r} is now #3" in out
    # a task is reached by its number or by its uid (or the start of it)
    done = as_json(tmem(laptop, "task", "done", "-p", "survey", moved["uid"], "--json"))
    assert (done["id"], done["status"]) == (3, "done")
    other = next(t for t in tasks if t["id"] == 2)
    assert ok(tmem(laptop, "task", "done", "-p", "survey", other["uid"][:6])).stdout.startswith("done: #2 ")


def _profile_facts(root: Path) -> tuple[str, list[str]]:
    """(the value `profile show` gives for editor, the file's editor lines)."""
    shown = as_json(tmem(root, "profile", "show", "--json"))
    text = (root / "memory/long-term/user_profile.md").read_text()
    return shown["facts"]["editor"], [ln for ln in text.splitlines() if ln.startswith("- editor:")]


@pytest.mark.parametrize("had_key", [False, True])
def test_profile_fact_set_on_two_machines_keeps_the_later(pair: tuple[Path, Path], had_key: bool) -> None:
    laptop, desktop = pair
    if had_key:  # both machines change a fact they share, rather than both adding it
        ok(tmem(laptop, "profile", "set", "editor", "nano"))
        ok(tmem(laptop, "sync"))
        ok(tmem(desktop, "sync"))
        time.sleep(1.1)  # the sets are recorded to the second
    ok(tmem(desktop, "profile", "set", "editor", "vim"))
    time.sleep(1.1)  # the sets are recorded to the second
    ok(tmem(laptop, "profile", "set", "editor", "emacs"))
    ok(tmem(laptop, "sync"))
    report = as_json(tmem(desktop, "sync", "--json"))
    assert report["conflicts"] == [] and report["profile_overridden"] == ["editor: 'emacs' replaced 'vim'"]
    assert "profile: editor: 'emacs' replaced 'vim' (both machines set it" in sync_text(
        SyncResult.from_dict(report)
    )
    ok(tmem(laptop, "sync"))
    for root in (laptop, desktop):
        assert _profile_facts(root) == ("emacs", ["- editor: emacs"])
        assert "<<<<<<<" not in (root / "memory/long-term/user_profile.md").read_text()


def test_profile_fact_edited_by_hand_on_both_machines_is_a_conflict(pair: tuple[Path, Path]) -> None:
    laptop, desktop = pair
    ok(tmem(laptop, "profile", "set", "editor", "nano"))
    ok(tmem(laptop, "sync"))
    ok(tmem(desktop, "sync"))
    for root, value in ((desktop, "vim"), (laptop, "emacs")):
        path = root / "memory/long-term/user_profile.md"
        path.write_text(path.read_text().replace("- editor: nano", f"- editor: {value}"))
    ok(tmem(laptop, "sync"))
    report = as_json(tmem(desktop, "sync", "--json"))
    assert report["conflicts"] == ["memory/long-term/user_profile.md"] and report["profile_overridden"] == []
    text = (desktop / "memory/long-term/user_profile.md").read_text()
    assert OURS_MARKER in text and "- editor: vim" in text and "- editor: emacs" in text


def test_a_pulled_profile_fact_set_in_the_future_does_not_win(pair: tuple[Path, Path]) -> None:
    """A pushed commit may say its fact was set in 2999: were that believed, it would win every
    merge against the fact set here. It is taken as a hand edit: both values kept for a person."""
    laptop, desktop = pair
    ok(tmem(laptop, "profile", "set", "editor", "nano"))
    ok(tmem(laptop, "sync"))
    ok(tmem(desktop, "sync"))
    time.sleep(1.1)  # the sets are recorded to the second
    ok(tmem(desktop, "profile", "set", "editor", "vim"))
    ok(tmem(laptop, "profile", "set", "editor", "emacs"))
    path = laptop / "memory/long-term/user_profile.md"
    text = path.read_text()
    stamp = next(ln for ln in text.splitlines() if ln.strip().startswith("editor: '"))
    path.write_text(text.replace(stamp, "  editor: '2999-01-01T00:00:00Z'"))
    git(laptop, "-c", "user.name=Mallory", "-c", "user.email=m@example.org", "commit", "-qam", "2999")
    ok(tmem(laptop, "sync"))
    report = as_json(tmem(desktop, "sync", "--json"))
    assert report["conflicts"] == ["memory/long-term/user_profile.md"] and report["profile_overridden"] == []
    merged = (desktop / "memory/long-term/user_profile.md").read_text()
    assert OURS_MARKER in merged and "- editor: vim" in merged and "- editor: emacs" in merged
    assert "2999" not in merged
