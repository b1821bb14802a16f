"""A sealed (encrypted) note is known outside its envelope only by its id: its title never reaches a
commit message, the daemon's log or heartbeat, the maintenance report, the recall log, an export
or an error. The last test runs a whole session through a real daemon and searches every file of
the vault, every git object and `git log -p` for the title."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result
from daemon_process import TMEM, DaemonProc, tmem, wait_for
from helpers import FAKE_CONFIG, FIXED_NOW, as_json, commit, git, git_log, ok, write
from mcp import ClientSession
from mcp_client import error, serve

from tiered_memory.app.maintain import run_maintenance
from tiered_memory.app.memory import Memory
from tiered_memory.daemon import client
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.model import envelope, privacy
from tiered_memory.model import note as notes
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage import access, crypto
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import Vault
from tiered_memory.sync.gitsync import commit_pending

Run = Callable[..., Result]
PASS = "correct horse battery staple"
TITLE = "Olga Secretname"
SECRET = re.compile("secretname", re.IGNORECASE)  # the title's rarest word, in any case
HAND = "memory/long-term/hand.md"
HAND_NOTE = (
    f"---\nid: hand\ntitle: {TITLE}\nsensitive: true\n---\n# {TITLE}\n\nOlga lives at 5 Hidden Lane.\n"
)
SEALED_CONFIG = FAKE_CONFIG + "privacy:\n  encrypt: sensitive\n"


@pytest.fixture(autouse=True)
def _forget_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(crypto.PASSPHRASE_ENV, raising=False)
    monkeypatch.setattr(crypto, "_keys", {})
    monkeypatch.setattr(crypto, "DEFAULT_N", 2**12)  # the tests' cost, not a real vault's


@pytest.fixture
def sealed_vault(vault_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> Path:
    write(vault_path, "tmem.yaml", SEALED_CONFIG)
    commit(Vault(vault_path), ["tmem.yaml"], "config: encryption on")
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, PASS)
    ok(run("unlock", "--new"))
    return vault_path


def messages(root: Path) -> str:
    return git(root, "log", "--all", "--format=%B")


# ---- naming ---------------------------------------------------------------------------------------


def test_a_sealed_note_goes_by_an_id_that_tells_nothing_of_its_title() -> None:
    hand = notes.parse(HAND_NOTE, HAND)
    assert privacy.sealed_name(hand) == "hand" and privacy.public_name(hand, False) == TITLE
    assert privacy.secrets(hand) == {TITLE: "hand"}
    # Without a title key the title is the file's name, which git shows anyway: the first
    # heading is what must stay inside the envelope.
    untitled = notes.parse(HAND_NOTE.replace(f"title: {TITLE}\n", ""), HAND)
    assert privacy.public_name(untitled, False) == "hand" and privacy.secrets(untitled) == {TITLE: "hand"}
    # An id made from the title (notes filed before ids of sealed notes were neutral): the file's
    # name, else a placeholder.
    old = notes.Note("memory/long-term/relationships/n-0a1b2c3d4e5f.md", {"id": "olga-secretname-1f2e"})
    old.body = f"# {TITLE}\n"
    assert privacy.sealed_name(old) == "n-0a1b2c3d4e5f"
    old.path = "memory/long-term/relationships/olga.md"
    assert privacy.sealed_name(old) == privacy.SEALED
    names = privacy.secrets(old)
    assert names == {TITLE: privacy.SEALED, "olga-secretname-1f2e": privacy.SEALED}
    text = "update: olga secretname; archive: Olga-Secretname-1f2e; Olga Secretnames stays"
    assert privacy.scrub(text, names) == (
        "update: [encrypted note]; archive: [encrypted note]; Olga Secretnames stays"
    )


def test_remember_gives_a_sealed_note_a_neutral_id_and_commits_only_that(
    sealed_vault: Path, run: Run
) -> None:
    added = as_json(
        run("add", "Olga Secretname likes tea", "--title", TITLE, "--category", "profile", "--json")
    )
    note = added["note"]
    assert re.fullmatch(r"n-[0-9a-f]{12}", note["id"])
    assert note["path"] == f"memory/long-term/relationships/{note['id']}.md"
    assert envelope.is_envelope((sealed_vault / note["path"]).read_bytes())
    log = messages(sealed_vault)
    assert f"remember: {note['id']} [long-term/profile]" in log and not SECRET.search(log)
    assert not SECRET.search(ok(run("log")).stdout)


# ---- commit messages ------------------------------------------------------------------------------


def test_commit_messages_name_sealed_notes_by_id_whoever_built_them(sealed_vault: Path, run: Run) -> None:
    """The daemon's and sync's auto-commit of a hand edit, update, forget: each builds its message
    from the decrypted title; the commit says the id. The title here is only the note's heading."""
    write(sealed_vault, HAND, HAND_NOTE)
    tx = Transaction(Vault(sealed_vault), f"edit: {TITLE}\n\nedited   {TITLE}  ({HAND})\n")
    tx.include([HAND])
    assert tx.commit() is not None
    assert envelope.is_envelope((sealed_vault / HAND).read_bytes())
    assert git(sealed_vault, "log", "-1", "--format=%B").startswith(f"edit: hand\n\nedited   hand  ({HAND})")

    # A sealed note filed with an id made from its title (as tmem did before): named by its file.
    old = "memory/long-term/relationships/n-0a1b2c3d4e5f.md"
    text = f"---\nid: olga-secretname-1f2e\ntitle: {TITLE} at work\n---\nShe works nights.\n"
    write(sealed_vault, old, text)
    commit(Vault(sealed_vault), [old], f"edit: {TITLE} at work (olga-secretname-1f2e)")
    assert git_log(sealed_vault)[0] == "edit: n-0a1b2c3d4e5f (n-0a1b2c3d4e5f)"

    ok(run("update", HAND, "--append", "She moved to Lisbon."))
    assert git_log(sealed_vault)[0] == "update: hand (body)"
    assert envelope.is_envelope((sealed_vault / HAND).read_bytes())  # rewritten as text, sealed again
    ok(run("forget", old, "--yes"))
    assert git_log(sealed_vault)[0].startswith("forget: n-0a1b2c3d4e5f [long-term]")
    assert not SECRET.search(messages(sealed_vault))


def test_sync_commits_pending_hand_edits_naming_sealed_notes_by_id(sealed_vault: Path) -> None:
    write(sealed_vault, HAND, HAND_NOTE)
    tx = Transaction(Vault(sealed_vault), "sync")
    assert commit_pending(tx) == [HAND]
    assert TITLE in tx.message  # built from the decrypted title, as sync does
    tx.commit()
    assert git(sealed_vault, "log", "-1", "--format=%B").startswith(
        f"sync: pending edits to hand\n\n- added: hand ({HAND})"
    )
    assert envelope.is_envelope((sealed_vault / HAND).read_bytes())


def test_saving_unseen_content_before_a_removal_names_the_sealed_note_by_id(sealed_vault: Path) -> None:
    write(sealed_vault, HAND, HAND_NOTE)
    commit(Vault(sealed_vault), [HAND], "edit: hand")
    sealed_bytes = crypto.encrypt(sealed_vault, HAND, HAND_NOTE.replace("Hidden", "Quiet").encode())
    (sealed_vault / HAND).write_bytes(sealed_bytes)  # changed since its commit: saved first
    tx = Transaction(Vault(sealed_vault), f"forget: {TITLE}")
    tx.remove(HAND, title=TITLE)
    tx.commit()
    assert git_log(sealed_vault)[:2] == [
        "forget: hand",
        "edit: save 1 note(s) before removing hand",
    ]


def test_a_sealed_note_moved_under_a_name_made_from_its_title_gets_a_neutral_one(sealed_vault: Path) -> None:
    """Promoting a decision names its file after its title (`2026-11-27_<title>.md`): not a sealed one."""
    write(sealed_vault, HAND, HAND_NOTE)
    commit(Vault(sealed_vault), [HAND], "edit: hand")
    tx = Transaction(Vault(sealed_vault), f"promote: {TITLE}")
    final = tx.move(HAND, "memory/long-term/decisions/2026-11-27_olga-secretname.md")
    tx.commit()
    assert re.fullmatch(r"memory/long-term/decisions/n-[0-9a-f]{12}\.md", final)
    assert envelope.is_envelope((sealed_vault / final).read_bytes())
    assert not SECRET.search(git(sealed_vault, "log", "--all", "--name-only", "--format=%B"))
    again = Transaction(Vault(sealed_vault), "promote: hand")
    kept = again.move(final, "memory/long-term/relationships/" + final.rsplit("/", 1)[1])
    again.commit()
    assert kept.endswith(final.rsplit("/", 1)[1])  # a move that keeps the name keeps it


def test_the_journal_of_an_interrupted_change_names_a_sealed_note_by_id(sealed_vault: Path) -> None:
    """The journal a kill -9 leaves (and the warning that undoes it) carry the message too."""
    write(sealed_vault, HAND, HAND_NOTE)
    commit(Vault(sealed_vault), [HAND], "edit: hand")
    vault = Vault(sealed_vault)
    tx = Transaction(vault, f"update: {TITLE} (body)")
    tx.read_text(HAND)
    tx.write_text(HAND, HAND_NOTE + "More.\n", seal=True)
    [journal] = (vault.state_dir / "journal").glob("*/journal.jsonl")
    assert "update: hand (body)" in journal.read_text() and not SECRET.search(journal.read_text())
    tx.rollback()


# ---- the maintenance report -----------------------------------------------------------------------


def test_maintenance_report_names_a_sealed_note_by_id(
    sealed_vault: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the vault is locked a private note written by hand stays plain and uncommitted; the
    daily report that lists its recalls (made before the rules sealed it), committed and pushed,
    says its id. Nothing of it reaches the indexes either."""
    monkeypatch.delenv(crypto.PASSPHRASE_ENV)
    crypto.forget(sealed_vault)
    write(sealed_vault, HAND, HAND_NOTE)
    access.record(sealed_vault, ["hand"], FIXED_NOW)
    memory = Memory(Vault(sealed_vault), embedder_factory=lambda: FakeEmbedder(32))
    try:
        assert memory.search(SearchRequest(query="Hidden Lane", mode="keyword")).hits == []
        result = run_maintenance(memory)
    finally:
        memory.close()
    assert result.report is not None and result.commit is not None
    report = (sealed_vault / result.report).read_text()
    assert "1. hand (`hand`): 1 recall(s)" in report and not SECRET.search(report)
    assert not SECRET.search(messages(sealed_vault))
    assert HAND not in git(sealed_vault, "ls-files")  # still locked: never committed in plain text
    assert [
        p for p in (sealed_vault / ".tmem").rglob("*") if p.is_file() and b"Hidden" in p.read_bytes()
    ] == []


# ---- a whole session through the daemon -----------------------------------------------------------


@pytest.fixture
def sealed_daemon(
    tmp_path: Path, run: Run, vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[DaemonProc]:
    """A sealed vault whose daemon holds the key `tmem unlock` gave it (nobody else has it)."""
    write(vault_path, "tmem.yaml", SEALED_CONFIG + "daemon:\n  autocommit_seconds: 1\n")
    commit(Vault(vault_path), ["tmem.yaml"], "config: encryption on")
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, PASS)
    ok(run("unlock", "--new"))
    monkeypatch.delenv(crypto.PASSPHRASE_ENV)
    crypto.forget(vault_path)
    daemon = DaemonProc(vault_path, tmp_path / "daemon.out")
    try:
        unlock = subprocess.run(
            [TMEM, "--vault", str(vault_path), "unlock"], input=PASS + "\n", capture_output=True, text=True
        )
        assert unlock.returncode == 0, unlock.stderr
        yield daemon
    finally:
        daemon.stop()


def test_a_session_through_the_daemon_leaves_the_title_only_in_envelopes(
    sealed_daemon: DaemonProc, tmp_path: Path
) -> None:
    root = sealed_daemon.root
    start = len(git_log(root))
    write(root, HAND, HAND_NOTE)  # a person writes a private note by hand
    wait_for(lambda: len(git_log(root)) == start + 1, what="the auto-commit")
    assert envelope.is_envelope((root / HAND).read_bytes())
    assert git_log(root)[0] == "edit: hand"
    assert f"hand  ({HAND})" in git(root, "log", "-1", "--format=%b")
    beat = wait_for(lambda: (client.read_heartbeat(root) or {}).get("last_commit"), what="the heartbeat")
    assert beat["message"] == "edit: hand"
    assert re.search(r"auto-commit [0-9a-f]+: edit: hand\n", (root / ".tmem" / "daemon.log").read_text())

    added = json.loads(
        ok_run(
            root,
            "add",
            "Olga's birthday is in May",
            "--title",
            f"{TITLE} birthday",
            "--category",
            "profile",
            "--json",
        )
    )["note"]
    assert git_log(root)[0] == f"remember: {added['id']} [long-term/profile]"
    found = json.loads(ok_run(root, "search", "Hidden Lane", "--json"))
    assert HAND in [h["path"] for h in found["results"]]  # unlocked in the daemon: found
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/Hidden/Quiet/' \"$1\"\n", encoding="utf-8")
    editor.chmod(0o755)
    edited = subprocess.run(
        [TMEM, "--vault", str(root), "edit", "hand"],
        capture_output=True,
        text=True,
        env={**os.environ, "EDITOR": str(editor)},
        timeout=90,
    )
    assert edited.returncode == 0, edited.stderr
    assert git_log(root)[0] == "edit: hand"
    ok_run(root, "update", HAND, "--append", "She moved to Lisbon.")
    assert git_log(root)[0] == "update: hand (body)"
    export = tmp_path / "export.json"
    ok_run(root, "export", "-o", str(export))
    ok_run(root, "maintain")

    async def scenario(session: ClientSession) -> None:
        text = await error(session, "read", id="hand", start=99)
        assert HAND in text and not SECRET.search(text)

    serve(root, scenario, TMEM_AUTOSTART="1")
    wait_for(
        lambda: (
            not subprocess.run(
                ["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True
            ).stdout.strip()
        ),
        what="every edit committed",
    )

    assert not SECRET.search(messages(root))
    assert not SECRET.search(ok_run(root, "log"))
    assert _title_anywhere(root, [export, sealed_daemon.log]) == []


def ok_run(root: Path, *args: str) -> str:
    done = tmem(root, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _title_anywhere(root: Path, extra: list[Path]) -> list[str]:
    """Every file under the vault (but .git's own, compressed) and in `extra`, every git object,
    and `git log -p` without textconv, that holds the title's rarest word."""
    files = [p for p in root.rglob("*") if ".git" not in p.relative_to(root).parts] + extra
    found = [
        str(p) for p in files if p.is_file() and SECRET.search(p.read_bytes().decode("utf-8", "replace"))
    ]
    for sha in git(root, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split():
        data = subprocess.run(["git", "-C", str(root), "cat-file", "-p", sha], capture_output=True).stdout
        if SECRET.search(data.decode("utf-8", "replace")):
            found.append(f"object {sha}")
    if SECRET.search(git(root, "log", "-p", "--all", "--no-textconv")):
        found.append("git log -p")
    return found
