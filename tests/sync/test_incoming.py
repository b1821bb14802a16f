"""What comes through git is data: a pulled commit never writes tmem's private state (`.tmem/`,
the recall log, local backups, `.git`), a gitlink or a link out of the vault; a repository that
already tracks such files is named by `status` and `doctor`, and its journal is never replayed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import FAKE_CONFIG, as_json, git, git_log, ok, one_error_line

from tiered_memory.cli.main import cli
from tiered_memory.model.local_state import link_escapes, private_reason, unsafe_path
from tiered_memory.storage.vault import init_vault
from tiered_memory.sync.incoming import shown

VICTIM = "memory/long-term/user_profile.md"
PLANTED = b"---\ntitle: planted\n---\nwritten by whoever pushed the journal\n"


def tmem(root: Path | None, *args: str) -> Result:
    prefix = ["--vault", str(root)] if root else []
    return CliRunner().invoke(cli, [*prefix, *args], catch_exceptions=False)


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
    for root in (a, b):
        git(root, "config", "user.name", "tester")
        git(root, "config", "user.email", "tester@example.com")
    return a, b


def plant_journal(root: Path, folder: str = "20260101T000000-1-abcdef") -> list[str]:
    """A journal that, if `recover` replayed it, would overwrite the profile note with PLANTED."""
    journal = root / ".tmem" / "journal" / folder
    journal.mkdir(parents=True, exist_ok=True)
    (journal / "b0").write_bytes(PLANTED)
    lines = [{"message": "planted", "head": ""}, {"path": VICTIM, "before": "b0"}]
    (journal / "journal.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return [f".tmem/journal/{folder}/b0", f".tmem/journal/{folder}/journal.jsonl"]


def push_forced(root: Path, paths: list[str], message: str) -> str:
    """Commit `paths` with plain git (even ignored ones, as a hostile clone can) and push."""
    git(root, "add", "-f", "--", *paths)
    git(root, "commit", "-q", "-m", message)
    git(root, "push", "-q", "origin", "main")
    return git(root, "rev-parse", "--short", "HEAD").strip()


def snapshot(root: Path) -> dict[str, bytes]:
    """The working tree's files (path -> bytes), with .tmem/'s config cache and journal but not its
    indexes and locks, which any command may rewrite."""
    found: dict[str, bytes] = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        kept = not rel.startswith((".git/", ".tmem/")) or rel.startswith(
            (".tmem/config.json", ".tmem/journal/")
        )
        if kept and path.is_file():
            found[rel] = path.read_bytes()
    return found


def test_a_pulled_journal_and_config_are_refused_and_nothing_changes(pair: tuple[Path, Path]) -> None:
    a, b = pair
    ok(tmem(a, "add", "A keeps its own notes."))  # A has a commit of its own: a real merge
    ok(tmem(a, "status"))  # A's .tmem/config.json exists
    (b / ".tmem").mkdir(exist_ok=True)
    (b / ".tmem" / "config.json").write_text('{"planted": true}\n')
    planted = plant_journal(b)
    sha = push_forced(b, [".tmem/config.json", *planted], "an innocent-looking commit")

    head, before = git(a, "rev-parse", "HEAD"), snapshot(a)
    line = one_error_line(tmem(a, "sync"), 2)
    assert line == (
        f"tmem: refused to merge origin/main: commit {sha} adds .tmem/config.json (tmem's private "
        "state, which only this machine may write); nothing was merged, take it out on the remote "
        "and sync again"
    )
    assert git(a, "rev-parse", "HEAD") == head
    assert git(a, "status", "--porcelain") == ""
    assert snapshot(a) == before
    assert not (a / ".tmem" / "journal" / "20260101T000000-1-abcdef").exists()

    ok(tmem(a, "add", "A still works after the refusal."))
    assert (a / VICTIM).read_bytes() != PLANTED
    assert git_log(a)[0].startswith("remember: A still works")


def test_each_kind_of_private_path_is_refused(pair: tuple[Path, Path]) -> None:
    a, b = pair
    for rel in (".tmem-access.jsonl", ".tmem-backups/vault.bundle", ".TMEM/journal/x/journal.jsonl"):
        target = b / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("planted\n")
        push_forced(b, [rel], f"plant {rel}")
        line = one_error_line(tmem(a, "sync"), 2)
        assert f" adds {rel} (" in line, line
        git(b, "rm", "-q", "-r", "--cached", "--", rel)
        git(b, "commit", "-q", "-m", f"take {rel} out again")
        git(b, "push", "-q", "origin", "main")
        target.unlink()
    # the planted files came and went on the remote: what is left to merge is data
    ok(tmem(a, "sync"))
    assert not (a / ".tmem-access.jsonl").exists() and not (a / ".tmem-backups").exists()


def test_a_rename_out_of_private_state_is_refused(pair: tuple[Path, Path]) -> None:
    """Renames count by both names: moving a tracked `.tmem/` file into the notes would delete
    this machine's copy of it."""
    a, b = pair
    (a / ".tmem" / "config.json").write_text('{"local": true}\n')
    push_forced(a, [".tmem/config.json"], "tracked by mistake")
    git(b, "pull", "-q", "origin", "main")
    git(b, "mv", ".tmem/config.json", "memory/long-term/config.md")
    git(b, "commit", "-q", "-m", "rename")
    git(b, "push", "-q", "origin", "main")
    line = one_error_line(tmem(a, "sync"), 2)
    assert " removes .tmem/config.json (tmem's private state," in line
    assert (a / ".tmem" / "config.json").exists()


def test_a_gitlink_and_a_link_out_of_the_vault_are_refused(pair: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = pair
    head = git(b, "rev-parse", "HEAD").strip()
    git(b, "update-index", "--add", "--cacheinfo", f"160000,{head},memory/long-term/sub")
    git(b, "commit", "-q", "-m", "a submodule")
    git(b, "push", "-q", "origin", "main")
    line = one_error_line(tmem(a, "sync"), 2)
    assert " adds memory/long-term/sub (a gitlink: a vault has no submodules)" in line
    git(b, "rm", "-q", "--cached", "memory/long-term/sub")
    git(b, "commit", "-q", "-m", "no submodule")

    # a folder whose type changes to a link that leaves the vault
    git(b, "rm", "-q", "-r", "memory/long-term/system")
    os.symlink("../../../../outside", b / "memory/long-term/system")
    sha = push_forced(b, ["memory/long-term/system"], "a folder becomes a link")
    line = one_error_line(tmem(a, "sync"), 2)
    assert line.startswith(f"tmem: refused to merge origin/main: commit {sha} adds memory/long-term/system (")
    assert "a symbolic link that points outside the vault" in line
    assert (a / "memory/long-term/system").is_dir() and not (a / "memory/long-term/system").is_symlink()

    # a link into .tmem/ is refused too; one that stays among the notes is data
    (b / "memory/long-term/system").unlink()
    os.symlink("../../.tmem/config.json", b / "memory/long-term/system")
    push_forced(b, ["memory/long-term/system"], "a link into .tmem")
    assert "a symbolic link into tmem's private state" in one_error_line(tmem(a, "sync"), 2)
    (b / "memory/long-term/system").unlink()
    os.symlink("../short-term", b / "memory/long-term/system")
    push_forced(b, ["memory/long-term/system"], "a link among the notes")
    ok(tmem(a, "sync"))
    assert os.readlink(a / "memory/long-term/system") == "../short-term"


def test_a_link_is_judged_where_it_leads_not_by_its_text(pair: tuple[Path, Path]) -> None:
    a, b = pair
    os.symlink("..", b / "memory/long-term/up")  # memory/: a link among the notes, merged
    push_forced(b, ["memory/long-term/up"], "a link to memory/")
    ok(tmem(a, "sync"))
    assert os.readlink(a / "memory/long-term/up") == ".."
    # Read as text this target is memory/outside; through the link above it is beside the vault.
    os.symlink("up/../../outside", b / "memory/long-term/esc")
    sha = push_forced(b, ["memory/long-term/esc"], "a link through a link")
    line = one_error_line(tmem(a, "sync"), 2)
    assert line.startswith(f"tmem: refused to merge origin/main: commit {sha} adds memory/long-term/esc (")
    assert "a symbolic link through another link (memory/long-term/up)" in line
    assert not os.path.lexists(a / "memory/long-term/esc")
    git(b, "rm", "-q", "memory/long-term/esc")
    git(b, "commit", "-q", "-m", "no link through a link")
    # The vault's root holds .git and .tmem: a link to it is a link into private state.
    os.symlink("../..", b / "memory/long-term/root")
    push_forced(b, ["memory/long-term/root"], "a link to the root")
    assert "a symbolic link to the vault's root" in one_error_line(tmem(a, "sync"), 2)
    assert not os.path.lexists(a / "memory/long-term/root")


def test_a_pulled_gitignore_that_names_the_notes_stops_no_change(pair: tuple[Path, Path]) -> None:
    """.gitignore is shared data: one that leaves every note out of git keeps new notes out of the
    commits (said in a line), but tmem still commits its changes of the notes git tracks."""
    a, b = pair
    with (b / ".gitignore").open("a", encoding="utf-8") as handle:
        handle.write("memory/**\n*.md\n")
    push_forced(b, [".gitignore"], "ignore every note")
    ok(tmem(a, "sync"))
    added = tmem(a, "add", "A note written after the pull.")
    assert added.exit_code == 0, added.output
    assert "not committed, as .gitignore leaves them out of git" in added.stderr
    changed = tmem(a, "update", VICTIM, "--append", "Edited after the pull.")
    assert changed.exit_code == 0, changed.output
    assert git_log(a)[0] == "update: User profile (body)"
    assert "Edited after the pull." in git(a, "show", f"HEAD:{VICTIM}")
    ok(tmem(a, "sync"))


def test_a_legitimate_pull_still_merges(pair: tuple[Path, Path]) -> None:
    a, b = pair
    ok(tmem(a, "add", "A writes this on its own."))
    note = as_json(tmem(b, "add", "--json", "B writes about the harbour crane."))["note"]
    (b / ".tmem-stats.json").write_text('{"x": {"recalls": 3}}\n')
    git(b, "add", ".tmem-stats.json")
    git(b, "commit", "-q", "-m", "stats")
    git(b, "mv", note["path"], "memory/long-term/harbour.md")  # a rename comes in as two names
    git(b, "commit", "-q", "-m", "rename")
    ok(tmem(b, "sync"))
    report = as_json(tmem(a, "sync", "--json"))
    assert report["pushed"] is True
    assert (a / "memory/long-term/harbour.md").exists() and not (a / note["path"]).exists()
    assert json.loads((a / ".tmem-stats.json").read_text()) == {"x": {"recalls": 3}}


def test_private_paths_never_go_out(pair: tuple[Path, Path]) -> None:
    """A vault whose .gitignore lost its `.tmem/` line still never commits tmem's own state."""
    a, _b = pair
    ignore = a / ".gitignore"
    ignore.write_text("".join(ln for ln in ignore.read_text().splitlines(True) if not ln.startswith(".tmem")))
    ok(tmem(a, "add", "Something to index."))
    ok(tmem(a, "search", "--mode", "keyword", "index"))
    ok(tmem(a, "sync"))
    committed = git(a, "ls-files").splitlines()
    assert ".gitignore" in committed
    assert [p for p in committed if p.startswith(".tmem/") or p.startswith(".tmem-access")] == []


# ---- a repository that already tracks private files -------------------------------------------------


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A vault whose history tracks a crafted `.tmem/journal` and `.tmem/config.json`, cloned and
    adopted by a person who did not look inside."""
    origin = tmp_path / "origin"
    init_vault(origin, config_text=FAKE_CONFIG)
    (origin / ".tmem").mkdir(exist_ok=True)
    (origin / ".tmem" / "config.json").write_text('{"planted": true}\n')
    planted = plant_journal(origin)
    git(origin, "add", "-f", "--", ".tmem/config.json", *planted)
    git(origin, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "vault")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
    ok(tmem(None, "init", "--adopt", str(clone)))
    return clone


def test_a_tracked_journal_is_never_replayed(hostile: Path) -> None:
    assert (hostile / ".tmem/journal/20260101T000000-1-abcdef/journal.jsonl").exists()
    result = ok(tmem(hostile, "add", "The first note on this machine."))
    assert (hostile / VICTIM).read_bytes() != PLANTED
    assert "came through git" in result.stderr and "not replayed" in result.stderr
    assert not (hostile / ".tmem/journal/20260101T000000-1-abcdef").exists()


def test_a_tracked_journal_link_out_of_the_vault_is_neither_replayed_nor_emptied(
    vault_path: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    plant_journal(outside, "20260101T000000-1-abcdef")
    journals = outside / ".tmem" / "journal"
    (vault_path / ".tmem").mkdir(exist_ok=True)
    os.symlink(journals, vault_path / ".tmem" / "journal")
    git(vault_path, "add", "-f", ".tmem/journal")
    git(vault_path, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "a link")
    result = ok(tmem(vault_path, "add", "Anything."))
    assert "not replayed" in result.stderr
    assert (vault_path / VICTIM).read_bytes() != PLANTED
    assert (journals / "20260101T000000-1-abcdef" / "journal.jsonl").exists()


def test_status_and_doctor_name_tracked_private_files(hostile: Path) -> None:
    status = as_json(tmem(hostile, "status", "--json"))
    assert status["private_tracked"][:1] == [".tmem/config.json"]
    text = ok(tmem(hostile, "status")).stdout
    assert "private:    .tmem/config.json is tracked by git" in text
    found = tmem(hostile, "doctor")
    assert found.exit_code == 1
    assert "PROBLEM  git      git tracks 3 file(s) only this machine may write (.tmem/config.json, ...)" in (
        found.stdout
    )
    assert "git rm -r --cached .tmem" in found.stdout


def test_a_journal_naming_paths_outside_the_vault_is_not_replayed(vault_path: Path, tmp_path: Path) -> None:
    """Even a journal git does not track (an unpacked archive): its paths and scratch copies must
    be ones tmem makes, or nothing of it is replayed."""
    outside = tmp_path / "outside.txt"
    outside.write_text("a file of the person's, outside the vault\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("a private key\n")
    folder = vault_path / ".tmem" / "journal" / "20260101T000000-1-abcdef"
    folder.mkdir(parents=True)
    lines = [
        {"message": "planted", "head": ""},
        {"path": "../outside.txt", "before": "absent"},
        {"path": VICTIM, "before": str(secret)},
    ]
    (folder / "journal.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    profile = (vault_path / VICTIM).read_bytes()
    result = ok(tmem(vault_path, "add", "Anything."))
    assert outside.exists() and (vault_path / VICTIM).read_bytes() == profile
    assert "not replayed" in result.stderr
    assert not folder.exists()


@pytest.mark.parametrize(
    ("path", "private"),
    [
        (".tmem/journal/x/journal.jsonl", True),
        (".tmem", True),
        (".TMEM/config.json", True),
        (".t\u200cmem/config.json", True),
        (".tmem./config.json", True),
        (".tmem-access.jsonl", True),
        (".tmem-backups/a.bundle", True),
        ("memory/.git/config", True),
        ("memory/.GIT/hooks/post-merge", True),
        (".tmem-stats.json", False),
        (".tmem-crypto.json", False),
        ("memory/.tmem/notes.md", False),
        ("memory/long-term/a.md", False),
    ],
)
def test_private_paths(path: str, private: bool) -> None:
    assert (private_reason(path) is not None) is private


def test_links_and_unsafe_paths() -> None:
    assert link_escapes("memory/a.md", "/etc/passwd") is not None
    assert link_escapes("memory/a.md", "../../x") is not None
    assert link_escapes("memory/a.md", "../.tmem/catalog.sqlite") is not None
    assert link_escapes("memory/a.md", "../.git/hooks") is not None
    assert link_escapes("memory/a/b.md", "../c.md") is None
    assert link_escapes("memory/a.md", "..") is not None  # the vault's root
    for bad in ("/etc/passwd", "../x", "memory/../../x", "memory//a.md", ".tmem/x", "", "a\0b"):
        assert unsafe_path(bad) is not None, bad
    assert unsafe_path("memory/long-term/a.md") is None


def test_a_refused_path_is_shown_on_one_line() -> None:
    assert shown(".tmem/a\nb\udcff") == ".tmem/a\\x0ab\\xff"


@pytest.mark.parametrize("name", [".tmem", ".tmem-access.jsonl"])
def test_a_cloned_link_for_private_state_is_refused_before_anything_is_written_through_it(
    tmp_path: Path, name: str
) -> None:
    """A repository can carry `.tmem` or the recall log as a link: adopted and searched, tmem
    wrote its indexes and checked settings (`config.json`) into the folder the link named, or
    appended its recalls to the file (~/.bashrc)."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    victim = outside / "bashrc"
    victim.write_text("export KEEP=1\n")
    origin = tmp_path / "origin"
    init_vault(origin, config_text=FAKE_CONFIG)
    if (origin / name).is_dir():
        shutil.rmtree(origin / name)
    (origin / name).symlink_to(outside if name == ".tmem" else victim)
    git(origin, "add", "-f", "--", name)
    git(origin, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "vault")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
    assert "is a symbolic link" in one_error_line(tmem(None, "init", "--adopt", str(clone)), 2)
    assert "is a symbolic link" in one_error_line(tmem(clone, "search", "anything"), 2)
    assert sorted(p.name for p in outside.iterdir()) == ["bashrc"]
    assert victim.read_text() == "export KEEP=1\n"
