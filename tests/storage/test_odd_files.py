"""Files under memory/ that are not plain notes: a pipe named like a note, a name whose bytes are
not UTF-8, a hard link to a file elsewhere. Each is left out (with one line saying so where it is
a person's file) and every command keeps working on the rest of the vault."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import as_json, commit, ok, remember

from tiered_memory.app.memory import Memory
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import Vault

TMEM = [sys.executable, "-m", "tiered_memory"]
NOTE = "---\ntitle: Lighthouse keeping\n---\n# Lighthouse keeping\n\nThe lamp is trimmed at dusk.\n"


def tmem(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own: a command that blocks fails the test instead of hanging it."""
    return subprocess.run([*TMEM, "--vault", str(root), *args], capture_output=True, text=True, timeout=60)


@pytest.fixture
def fifo(vault_path: Path) -> Path:
    (vault_path / "memory/long-term/lighthouse.md").write_text(NOTE, encoding="utf-8")
    path = vault_path / "memory/long-term/x.md"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "command",
    [
        ("search", "--mode", "keyword", "lamp"),
        ("list",),
        ("context",),
        ("maintain", "--dry-run"),
        ("reindex",),
    ],
)
def test_a_pipe_named_like_a_note_never_blocks_a_command(
    vault_path: Path, fifo: Path, command: tuple[str, ...]
) -> None:
    proc = tmem(vault_path, *command)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_pipe_given_as_a_path_is_refused_in_one_line(vault_path: Path, fifo: Path) -> None:
    proc = tmem(vault_path, "show", "memory/long-term/x.md")
    assert proc.returncode != 0
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("tmem: ")


def test_a_search_still_finds_the_notes_beside_a_pipe(vault_path: Path, fifo: Path) -> None:
    proc = tmem(vault_path, "search", "--json", "--mode", "keyword", "lamp trimmed")
    assert proc.returncode == 0, proc.stderr
    assert "lighthouse" in proc.stdout and "x.md" not in proc.stdout


def test_reading_a_pipe_is_refused_at_once(vault: Vault, fifo: Path) -> None:
    """A file swapped for a pipe after the listing: the read neither blocks nor reads it."""
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from tiered_memory.errors import NoteParseError
        from tiered_memory.storage.vault import Vault
        try:
            Vault(Path({str(vault.root)!r})).read_text("memory/long-term/x.md")
        except NoteParseError as exc:
            print(exc)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert "memory/long-term/x.md: not a regular file" in proc.stdout, proc.stderr


def test_an_update_naming_a_pipe_leaves_it_out_without_blocking(vault: Vault, fifo: Path) -> None:
    """What the daemon's watcher does with the paths of a batch of events."""
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from tiered_memory.index.indexer import Indexer
        from tiered_memory.storage.vault import Vault
        indexer = Indexer(Vault(Path({str(vault.root)!r})))
        report = indexer.update_paths(["memory/long-term/x.md", "memory/long-term/lighthouse.md"], vectors=False)
        print(sorted(indexer.catalog.stats()))
        indexer.close()
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "lighthouse.md" in proc.stdout and "x.md" not in proc.stdout


# ---- names that are not UTF-8 ---------------------------------------------------------------------

LATIN1 = b"memory/long-term/caf\xe9.md"


@pytest.fixture
def latin1_name(vault_path: Path) -> Path:
    (vault_path / "memory/long-term/lighthouse.md").write_text(NOTE, encoding="utf-8")
    path = Path(os.fsdecode(os.path.join(os.fsencode(vault_path), LATIN1)))
    path.write_bytes(b"# Cafe\n\nThe espresso machine is descaled monthly.\n")
    return path


def test_a_name_that_is_not_utf8_is_skipped_with_one_warning(run: object, latin1_name: Path) -> None:
    found = run("search", "--json", "--mode", "keyword", "lamp trimmed")  # type: ignore[operator]
    assert [r["path"] for r in as_json(found)["results"]] == ["memory/long-term/lighthouse.md"]
    assert "skipped memory/long-term/caf\\xe9.md: its name is not UTF-8" in found.stderr
    assert "UnicodeEncodeError" not in found.stderr
    again = ok(run("search", "--mode", "keyword", "espresso"))  # type: ignore[operator]
    assert "not UTF-8" not in again.stderr  # said once, not on every search
    ok(run("reindex"))  # type: ignore[operator]
    ok(run("list"))  # type: ignore[operator]
    status = as_json(run("status", "--json"))  # type: ignore[operator]
    assert status["index"]["fresh"] is True
    ok(run("maintain", "--dry-run"))  # type: ignore[operator]


def test_a_name_that_is_not_utf8_does_not_stop_commits_or_updates(
    memory: Memory, vault_path: Path, latin1_name: Path
) -> None:
    """A person's file is still committed by its raw name; the reindex after the commit skips it."""
    rel = os.fsdecode(LATIN1)
    warnings: list[str] = []
    memory.warn = warnings.append
    memory.refresh()
    with memory.change("edit: include a hand-written file") as tx:
        tx.include([rel, "memory/long-term/lighthouse.md"])
    assert (
        os.fsencode(rel)
        in subprocess.run(
            ["git", "-C", str(vault_path), "ls-files", "-z"], capture_output=True, check=True
        ).stdout
    )
    report = memory.indexer.update_paths([rel, "memory/long-term/lighthouse.md"], vectors=False)
    assert any("caf\\xe9.md: its name is not UTF-8" in w for w in report.warnings)
    assert "memory/long-term/lighthouse.md" in memory.indexer.catalog.stats()


def test_a_name_that_is_not_utf8_does_not_stop_adding_notes(run: object, latin1_name: Path) -> None:
    added = remember(run, "The ferry leaves at nine every morning")  # type: ignore[arg-type]
    assert added["path"].startswith("memory/")


# ---- hard links -----------------------------------------------------------------------------------


def test_a_note_hard_linked_to_a_file_elsewhere_is_reported_and_not_indexed(
    run: object, vault_path: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("# Shadow\n\nthe-outside-file-must-never-leak\n", encoding="utf-8")
    os.link(outside, vault_path / "memory/long-term/shadow.md")
    found = run("search", "--json", "--mode", "keyword", "outside leak shadow")  # type: ignore[operator]
    assert as_json(found)["results"] == []
    assert "the-outside-file" not in found.stdout
    assert "skipped memory/long-term/shadow.md: a hard link (1 other name(s)" in found.stderr
    status = as_json(run("status", "--json"))  # type: ignore[operator]
    assert [s["path"] for s in status["index"]["skipped"]] == ["memory/long-term/shadow.md"]


def test_the_journals_own_hard_link_does_not_count(vault: Vault, vault_path: Path) -> None:
    """While a unit of work runs (or after a kill, until the next one undoes it) the journal keeps
    a hard link of the old bytes: the note is still the vault's own and is indexed."""
    rel = "memory/long-term/lighthouse.md"
    (vault_path / rel).write_text(NOTE, encoding="utf-8")
    commit(vault, [rel], "add a note")
    tx = Transaction(vault, "edit: a move in progress")
    try:
        moved = tx.move(rel, "memory/long-term/lamp.md")
        assert (vault_path / moved).stat().st_nlink == 2  # the journal's link of the old bytes
        assert "lamp is trimmed" in vault.read_text(moved, other_names=False)
    finally:
        tx.rollback()
    assert vault.extra_links((vault_path / rel).stat()) == 0


def test_sync_commits_and_pushes_a_file_whose_name_is_not_utf8(
    run: object, vault_path: Path, latin1_name: Path, tmp_path: Path
) -> None:
    """The file is the person's: it travels by its raw name; the commit message shows its bytes."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    subprocess.run(["git", "-C", str(vault_path), "remote", "add", "origin", str(remote)], check=True)
    ok(run("sync"))  # type: ignore[operator]
    listed = subprocess.run(
        ["git", "-C", str(remote), "ls-tree", "-r", "-z", "--name-only", "main"],
        capture_output=True,
        check=True,
    ).stdout
    assert LATIN1 in listed.split(b"\0")
    message = subprocess.run(
        ["git", "-C", str(remote), "log", "-1", "--format=%B", "main"], capture_output=True, check=True
    ).stdout
    assert b"memory/long-term/caf\\xe9.md" in message
