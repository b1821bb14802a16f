"""Conflict markers name each version for good: the merged note travels, so what its markers say
must hold on the machine that merged and on every machine that pulls the merge afterwards."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import FAKE_CONFIG, as_json, git, ok, one_error_line

from tiered_memory.cli.main import cli
from tiered_memory.model.merge3 import UNLABELLED, Sides, has_markers, merge_note
from tiered_memory.storage.vault import init_vault
from tiered_memory.sync import gitsync
from tiered_memory.sync.merge_labels import driver_sides, machine_name

REL_LINE = "The release train leaves every second {day}."
DATE = r"\d{4}-\d\d-\d\d \d\d:\d\d [+-]\d{4}"
OPENING = re.compile(rf"^<<<<<<< (?P<host>.+)'s version \((?P<sha>[0-9a-f]+), {DATE}\)$", re.M)
CLOSING = re.compile(rf"^>>>>>>> version (?P<host>.+) merged in \((?P<sha>[0-9a-f]+), {DATE}\)$", re.M)


def tmem(root: Path | None, *args: str, env: dict[str, str] | None = None) -> Result:
    prefix = ["--vault", str(root)] if root else []
    return CliRunner().invoke(cli, [*prefix, *args], env=env, catch_exceptions=False)


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """Machine A (a vault pushed to a bare remote) and machine B (a clone of it, adopted)."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    a = tmp_path / "a"
    init_vault(a, config_text=FAKE_CONFIG)
    git(a, "remote", "add", "origin", str(remote))
    ok(tmem(a, "sync"))
    b = tmp_path / "b"
    subprocess.run(["git", "clone", "-q", str(remote), str(b)], check=True)
    ok(tmem(None, "init", "--adopt", str(b)))
    return a, b


def both_edit(pair: tuple[Path, Path]) -> tuple[str, str, str]:
    """A note both machines have; A changes its line to Tuesday and syncs, B to Friday (uncommitted).
    Returns (id, path, A's commit of Tuesday)."""
    a, b = pair
    note = as_json(
        tmem(a, "add", "--json", "--title", "Release train", "--", REL_LINE.format(day="Thursday"))
    )
    rel = note["note"]["path"]
    ok(tmem(a, "sync"))
    ok(tmem(b, "sync"))
    for root, day in ((a, "Tuesday"), (b, "Friday")):
        path = root / rel
        path.write_text(path.read_text().replace("second Thursday", f"second {day}"))
    ok(tmem(a, "sync"))
    a_commit = git(a, "rev-parse", "HEAD").strip()
    assert "Tuesday" in git(a, "show", f"{a_commit}:{rel}")
    return note["note"]["id"], rel, a_commit


def assert_labelled(root: Path, rel: str, a_commit: str, b_commit: str) -> None:
    """B merged: B's text stands under B's name and commit, A's under "merged in" and A's commit,
    and each label's commit holds exactly the text it stands over."""
    text = (root / rel).read_text()
    assert "this machine" not in text and "incoming" not in text
    opening, closing = OPENING.search(text), CLOSING.search(text)
    assert opening and closing, text
    assert opening["host"] == closing["host"] == machine_name()
    ours_block = text[opening.end() : text.index("\n=======\n")].strip()
    theirs_block = text[text.index("\n=======\n") + 9 : closing.start()].strip()
    assert ours_block == REL_LINE.format(day="Friday")
    assert theirs_block == REL_LINE.format(day="Tuesday")
    assert git(root, "rev-parse", opening["sha"]).strip() == b_commit
    assert git(root, "rev-parse", closing["sha"]).strip() == a_commit
    assert ours_block in git(root, "show", f"{b_commit}:{rel}")
    assert theirs_block in git(root, "show", f"{a_commit}:{rel}")


def keep_a(tmp_path: Path) -> str:
    """An editor that keeps the lines under the closing label (A's) and drops the markers."""
    editor = tmp_path / "keep-merged-in.sh"
    editor.write_text("#!/bin/sh\nsed -i -e '/^<<<<<<< /,/^=======$/d' -e '/^>>>>>>> /d' \"$1\"\n")
    editor.chmod(0o755)
    return str(editor)


def test_sync_a_b_a_labels_hold_on_both_machines_and_both_resolve(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = pair
    note_id, rel, a_commit = both_edit(pair)
    report = as_json(tmem(b, "sync", "--json"))  # B merges, keeps both, pushes the merge
    assert report["conflicts"] == [rel]
    b_commit = git(b, "rev-parse", "HEAD^1").strip()
    assert "Friday" in git(b, "show", f"{b_commit}:{rel}")
    ok(tmem(a, "sync"))  # A fast-forwards to B's merge: the same file, read on the other machine
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    for root in (b, a):
        assert_labelled(root, rel, a_commit, b_commit)
    # resolve works on both: refused while markers stand, then each keeps A's line
    for root in (a, b):
        line = one_error_line(tmem(root, "resolve", note_id, env={"EDITOR": "true"}), 2)
        assert "still has conflict markers" in line
        ok(tmem(root, "resolve", note_id, env={"EDITOR": keep_a(tmp_path)}))
        text = (root / rel).read_text()
        assert not has_markers(text) and "conflict" not in text
        assert REL_LINE.format(day="Tuesday") in text and "Friday" not in text
    for root in (a, b, a):
        assert as_json(tmem(root, "sync", "--json"))["conflicts"] == []
    assert (a / rel).read_text() == (b / rel).read_text()
    assert as_json(tmem(a, "status", "--json"))["conflicts"] == []


def test_labels_when_sync_merges_the_note_itself(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the driver (git merged by lines and left the note unmerged), sync's own merge names
    the versions the same way."""
    a, b = pair
    _, rel, a_commit = both_edit(pair)
    git(b, "config", "--remove-section", "merge.tmem")
    monkeypatch.setattr(gitsync, "ensure_merge_driver", lambda vault: False)
    assert as_json(tmem(b, "sync", "--json"))["conflicts"] == [rel]
    assert "merge.tmem.driver" not in git(b, "config", "--list")
    b_commit = git(b, "rev-parse", "HEAD^1").strip()
    ok(tmem(a, "sync"))
    for root in (b, a):
        assert_labelled(root, rel, a_commit, b_commit)


def test_labels_when_a_person_runs_git_pull(pair: tuple[Path, Path]) -> None:
    a, b = pair
    _, rel, a_commit = both_edit(pair)
    git(b, "config", "user.name", "Person B")
    git(b, "config", "user.email", "b@example.com")
    git(b, "commit", "-q", "-am", "my edit")
    b_commit = git(b, "rev-parse", "HEAD").strip()
    git(b, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")  # tmem's driver merges
    assert_labelled(b, rel, a_commit, b_commit)


def test_resolve_recognises_every_kind_of_marker(pair: tuple[Path, Path]) -> None:
    a, _ = pair
    for opening, closing in (
        ("<<<<<<< ours (this machine)", ">>>>>>> theirs (incoming)"),  # an older tmem's
        ("<<<<<<< HEAD", ">>>>>>> origin/main"),  # git's own
        ("<<<<<<<", ">>>>>>>"),  # bare
        ("<<<<<<< laptop's version (a1b2c3d, 2026-11-27 10:02 +0100)", ">>>>>>> version laptop merged in"),
    ):
        note = as_json(tmem(a, "add", "--json", "--", f"Kept both versions under {opening!r}."))["note"]
        path = a / note["path"]
        body = f"{opening}\nmine\n=======\ntheirs\n{closing}\n"
        path.write_text(
            path.read_text().replace("---\n", "---\nconflict: true\n", 1).rstrip("\n") + "\n" + body
        )
        line = one_error_line(tmem(a, "resolve", note["id"], "--no-edit"), 2)
        assert "still has conflict markers" in line, opening
        assert ok(tmem(a, "resolve", note["id"], "--no-edit", "--force"))


def test_driver_names_versions_only_in_a_merge(tmp_path: Path) -> None:
    """git merge names the commit it merges in (GITHEAD_<sha>); a rebase or cherry-pick names none
    (its "ours" is not this machine's work), an octopus several: no names then. A variable a
    process inherited from an earlier merge names a commit HEAD already has: it is passed over."""
    repo = tmp_path / "r"
    env = {**os.environ, "GIT_AUTHOR_NAME": "p", "GIT_AUTHOR_EMAIL": "p@x", "GIT_COMMITTER_NAME": "p"}
    env["GIT_COMMITTER_EMAIL"] = "p@x"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    (repo / "n.md").write_text("one\n")
    git(repo, "add", "n.md")
    git(repo, "commit", "-q", "-m", "first", env=env)
    merged_before = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "n.md").write_text("two\n")
    git(repo, "commit", "-q", "-am", "theirs", env=env)
    incoming = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    (repo / "n.md").write_text("three\n")
    git(repo, "commit", "-q", "-am", "ours", env=env)
    ours = git(repo, "rev-parse", "--short", "HEAD").strip()
    assert driver_sides(repo, "n.md", {}) == UNLABELLED
    assert driver_sides(repo, "n.md", {"GITHEAD_not-a-sha": "x"}) == UNLABELLED
    octopus = {f"GITHEAD_{incoming}": "other", f"GITHEAD_{'b' * 40}": "more"}
    assert driver_sides(repo, "n.md", octopus) == UNLABELLED
    named = driver_sides(repo, "n.md", {f"GITHEAD_{merged_before}": "old", f"GITHEAD_{incoming}": "other"})
    assert named.ours.startswith(f"{machine_name()}'s version ({ours}, ")
    assert named.theirs.startswith(f"version {machine_name()} merged in ({incoming[: len(ours)]}, ")


def test_labels_stay_on_one_line_and_unnamed_versions_claim_nothing() -> None:
    base, ours, theirs = "a\nb\nc\n", "a\nB1\nc\n", "a\nB2\nc\n"
    bare = merge_note(base, ours, theirs).text
    assert "<<<<<<< one version\nB1\n=======\nB2\n>>>>>>> the other version\n" in bare
    named = merge_note(base, ours, theirs, sides=Sides("laptop's\nversion", "the\r\nother")).text
    assert "<<<<<<< laptop's version\nB1\n=======\nB2\n>>>>>>> the other\n" in named
    assert has_markers(bare) and has_markers(named) and not has_markers("<<<<<<<< eight\n>>>>>>>x\n")
