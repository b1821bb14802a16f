"""Encryption at rest: the envelope, the key, and a vault whose private notes never reach the disk,
git or a backup in plain text (the files, `.tmem/`, every git object and a backup bundle are
searched for the secret words)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import pytest
from click.testing import Result
from helpers import FAKE_CONFIG, as_json, commit, git, git_log, ok, one_error_line, write
from mcp import ClientSession
from mcp_client import ROOT, call, serve

from tiered_memory.app import encryption, sealed
from tiered_memory.app.api import Empty
from tiered_memory.app.memory import Memory
from tiered_memory.index.embeddings import FakeEmbedder, HttpEmbedder
from tiered_memory.index.in_memory import EMBED_BATCH, InMemoryIndex
from tiered_memory.model import envelope
from tiered_memory.model import note as notes
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage import crypto
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import Vault

Run = Callable[..., Result]
PASS = "correct horse battery staple"
SECRET = "Meilin's passport number is X1234567 and she fears thunderstorms"
WORDS = ("passport", "X1234567", "thunderstorms", "Meilin")
KEY = bytes(range(32))


@pytest.fixture(autouse=True)
def _forget_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(crypto.PASSPHRASE_ENV, raising=False)
    monkeypatch.setattr(crypto, "_keys", {})
    monkeypatch.setattr(crypto, "DEFAULT_N", 2**12)  # the tests' cost, not a real vault's


# ---- the envelope ---------------------------------------------------------------------------------


def test_envelope_round_trip_random_nonce_and_path_binding() -> None:
    rel = "memory/long-term/relationships/n-1.md"
    one = envelope.seal(KEY, rel, b"hello")
    two = envelope.seal(KEY, rel, b"hello")
    assert one != two and envelope.decode(one).nonce != envelope.decode(two).nonce
    assert envelope.open_envelope(KEY, rel, one) == b"hello"
    assert b"hello" not in one and one.startswith(envelope.MAGIC)
    with pytest.raises(envelope.Tampered, match="failed authentication"):
        envelope.open_envelope(KEY, "memory/long-term/other.md", one)  # moved
    body = bytearray(one)
    body[-10] = ord("A") if body[-10] != ord("A") else ord("B")
    with pytest.raises((envelope.Tampered, envelope.EnvelopeError)):
        envelope.open_envelope(KEY, rel, bytes(body))
    with pytest.raises(envelope.Tampered, match="another key"):
        envelope.open_envelope(bytes(32), rel, one)


def test_rules_decide_which_notes_are_encrypted() -> None:
    paths = ["long-term/relationships/"]
    assert not envelope.should_encrypt("memory/long-term/relationships/a.md", True, "none", paths)
    assert envelope.should_encrypt("memory/long-term/relationships/a.md", False, "sensitive", paths)
    assert envelope.should_encrypt("memory/long-term/x.md", True, "sensitive", paths)
    assert not envelope.should_encrypt("memory/long-term/x.md", False, "sensitive", paths)
    assert not envelope.should_encrypt(
        "memory/long-term/relationships/a.md", False, "sensitive", paths, False
    )
    assert not envelope.should_encrypt("memory/mid-term/active_contexts.json", True, "sensitive", paths)


# ---- a vault ----------------------------------------------------------------------------------------


@pytest.fixture
def sealed_vault(vault_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> Path:
    write(vault_path, "tmem.yaml", FAKE_CONFIG + "privacy:\n  encrypt: sensitive\n")
    commit(Vault(vault_path), ["tmem.yaml"], "config: encryption on")
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, PASS)
    ok(run("unlock", "--new"))
    return vault_path


def _plaintext_anywhere(root: Path, extra: list[Path] = ()) -> list[str]:
    """Every place under the vault (files, .tmem/, each git object) holding a secret word."""
    found = []
    for path in [*root.rglob("*"), *extra]:
        if path.is_file() and ".git" not in path.parts:
            data = path.read_bytes()
            found += [f"{path}: {w}" for w in WORDS if w.encode() in data]
    objects = git(root, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split()
    for sha in objects:
        data = subprocess.run(["git", "-C", str(root), "cat-file", "-p", sha], capture_output=True).stdout
        found += [f"object {sha}: {w}" for w in WORDS if w.encode() in data]
    return found


def test_private_notes_never_on_disk_in_git_or_backups_in_plain_text(
    sealed_vault: Path, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    added = as_json(run("add", SECRET, "--category", "profile", "--entity", "Meilin", "--json"))
    path = added["note"]["path"]
    assert path.startswith("memory/long-term/relationships/n-")  # the name tells nothing
    assert envelope.is_envelope((sealed_vault / path).read_bytes())
    assert not any(w in git_log(sealed_vault)[0] for w in WORDS)  # nor does the commit message
    ok(run("session", "start", "Chat"))
    ok(run("search", "passport"))  # unlocked: found, from memory
    hits = as_json(run("search", "thunderstorms", "--json"))
    assert hits["results"][0]["path"] == path
    # Hybrid and vector search and the context block see it too, through vectors held in memory;
    # the block only when asked, as an export (sealed because of its path).
    assert as_json(run("search", "thunderstorm", "--mode", "vector", "--json"))["results"][0]["path"] == path
    # Keyword mode judges it by its share of the query, as any note: it is not cut as unsure.
    assert (
        as_json(run("search", "thunderstorms", "--mode", "keyword", "--json"))["results"][0]["path"] == path
    )
    block = as_json(run("context", "--query", "passport", "--format", "json", "--include-sensitive"))
    assert [m["path"] for m in block["memories"]] == [path]
    assert as_json(run("context", "--query", "passport", "--format", "json"))["memories"] == []
    asked = run("context", "--query", "what is her passport number", "--include-sensitive")
    assert "X1234567" in ok(asked).stdout
    ok(run("context"))
    view = as_json(run("show", added["note"]["id"], "--json"))
    assert view["body"].strip() == SECRET
    ok(run("backup", "--to", str(tmp_path / "backups")))
    [bundle] = (tmp_path / "backups").glob("*.bundle")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True)
    assert _plaintext_anywhere(sealed_vault) == []
    assert _plaintext_anywhere(clone) == []

    monkeypatch.delenv(crypto.PASSPHRASE_ENV)
    crypto.forget(sealed_vault)
    assert "locked" in one_error_line(run("show", path), 2)
    assert "locked" in one_error_line(run("show", added["note"]["id"]), 1)
    locked = run("search", "passport", "--json")
    assert all(h["path"] != path for h in as_json(locked)["results"])
    assert "1 encrypted note(s) not searched: the vault is locked" in locked.output
    shut = run("context", "--query", "passport", "--format", "json")
    assert "X1234567" not in shut.stdout and "1 encrypted note(s) left out" in shut.output


def test_git_diff_shows_plaintext_only_while_unlocked(
    sealed_vault: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = as_json(run("add", SECRET, "--category", "profile", "--json"))["note"]["path"]
    assert "memory/**/*.md diff=tmem" in (sealed_vault / ".gitattributes").read_text()
    assert "tmem" in git(sealed_vault, "config", "diff.tmem.textconv")
    shown = git(sealed_vault, "log", "-p", "-1", "--", path)
    assert "thunderstorms" in shown and "tmem-encrypted" not in shown
    monkeypatch.delenv(crypto.PASSPHRASE_ENV)
    crypto.forget(sealed_vault)
    shown = git(sealed_vault, "log", "-p", "-1", "--", path)
    assert "thunderstorms" not in shown and "locked" in shown


def test_git_log_shows_a_version_sealed_before_a_rekey_as_such(
    sealed_vault: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After `tmem rekey`, older commits keep the old key's ciphertext: `git log -p` names such a
    version and goes on, where the textconv failing made git stop at it."""
    path = as_json(run("add", SECRET, "--category", "profile", "--json"))["note"]["path"]
    old_key = envelope.decode((sealed_vault / path).read_bytes()).key_id
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, "a brand new passphrase")
    ok(run("rekey"))
    done = subprocess.run(
        ["git", "log", "-p", "--", path], cwd=sealed_vault, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert f"sealed under an earlier key ({old_key})" in done.stdout and "thunderstorms" in done.stdout


def test_wrong_passphrase_and_tampering_are_one_line(
    sealed_vault: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = as_json(run("add", SECRET, "--category", "profile", "--json"))["note"]["path"]
    crypto.forget(sealed_vault)
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, "not the passphrase")
    assert one_error_line(run("unlock"), 2) == "tmem: wrong passphrase"
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, PASS)
    data = bytearray((sealed_vault / path).read_bytes())
    data[-20] = ord("A") if data[-20] != ord("A") else ord("B")
    (sealed_vault / path).write_bytes(bytes(data))
    line = one_error_line(run("show", path), 2)
    assert "tampered" in line and path in line


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"p": 2**20, "r": 1, "n": 2**14}, "past what tmem derives a key with"),  # hours of scrypt
        ({"p": 2**22, "r": 1}, "past what tmem derives a key with"),  # over scrypt's memory bound
        ({"n": "32768"}, "whole numbers"),
        ({"n": 3}, "power of 2"),
        ({"salt": "not base64!"}, "not base64"),
    ],
)
def test_key_settings_from_another_clone_are_checked_before_scrypt_runs(
    sealed_vault: Path, run: Run, monkeypatch: pytest.MonkeyPatch, change: dict[str, object], named: str
) -> None:
    """`.tmem-crypto.json` comes with a pull: settings no clone of tmem wrote are one line, at once."""
    settings = sealed_vault / crypto.SETTINGS
    settings.write_text(json.dumps({**json.loads(settings.read_text()), **change}), encoding="utf-8")
    crypto.forget(sealed_vault)
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, PASS)
    line = one_error_line(run("unlock"), 2)
    assert line.startswith(f"tmem: {crypto.SETTINGS}: ") and named in line


def test_encrypt_decrypt_and_rekey(sealed_vault: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = as_json(run("add", "Thunderstorms scare the dog", "--json"))["note"]
    done = as_json(run("encrypt", plain["id"], "--json"))
    [moved] = done["changed"]
    assert moved != plain["path"] and envelope.is_envelope((sealed_vault / moved).read_bytes())
    assert not (sealed_vault / plain["path"]).exists()
    back = as_json(run("decrypt", plain["id"], "--json"))
    assert back["changed"] == [moved] and "Thunderstorms" in (sealed_vault / moved).read_text()
    assert as_json(run("decrypt", plain["id"], "--json"))["changed"] == []

    secret = as_json(run("add", SECRET, "--category", "profile", "--json"))["note"]["path"]
    before = (sealed_vault / secret).read_bytes()
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, "a brand new passphrase")
    result = as_json(run("rekey", "--json"))
    assert result["resealed"] == 1 and (sealed_vault / secret).read_bytes() != before
    crypto.forget(sealed_vault)
    assert SECRET in as_json(run("show", secret, "--json"))["body"]
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, PASS)
    crypto.forget(sealed_vault)
    assert one_error_line(run("unlock"), 2) == "tmem: wrong passphrase"


# A note of the person's own folders, as Obsidian keeps it: titled by its file name, an empty value.
BACKUPS = "Server/Ubuntu Server Backups.md"
BACKUPS_TEXT = (
    "---\ntype: Programming Note\nrelated:\ncreated: 2026-05-14T19:22  # written by hand\n---\n"
    "## Introduction\nThe server is backed up to the second disk every night.\n"
)


def test_encrypt_refuses_a_note_others_link_to_by_its_name(sealed_vault: Path, run: Run) -> None:
    write(sealed_vault, BACKUPS, BACKUPS_TEXT)
    write(sealed_vault, "Server/Ubuntu Server.md", "Nightly job: [[Ubuntu Server Backups]].\n")
    commit(Vault(sealed_vault), [BACKUPS, "Server/Ubuntu Server.md"], "person: two notes")
    head = git(sealed_vault, "rev-parse", "HEAD")
    line = one_error_line(run("encrypt", BACKUPS), 2)
    assert "1 note(s) link to it by its name (Server/Ubuntu Server.md)" in line
    assert "renamed n-<hex>.md" in line
    assert (sealed_vault / BACKUPS).read_text() == BACKUPS_TEXT
    assert git(sealed_vault, "rev-parse", "HEAD") == head and git(sealed_vault, "status", "--porcelain") == ""


def test_encrypt_and_decrypt_keep_a_person_s_frontmatter_and_title(sealed_vault: Path, run: Run) -> None:
    write(sealed_vault, BACKUPS, BACKUPS_TEXT)
    commit(Vault(sealed_vault), [BACKUPS], "person: a note")
    [moved] = as_json(run("encrypt", BACKUPS, "--json"))["changed"]
    assert moved.startswith("Server/n-") and envelope.is_envelope((sealed_vault / moved).read_bytes())
    assert as_json(run("show", moved, "--json"))["title"] == "Ubuntu Server Backups"
    assert as_json(run("decrypt", moved, "--json"))["changed"] == [BACKUPS]
    # Its name back, and every byte the person wrote as it was: the keys `encrypt` set are gone.
    assert (sealed_vault / BACKUPS).read_text() == BACKUPS_TEXT and not (sealed_vault / moved).exists()


INBOX = "inbox/pgtap-tests-triggers-conciliacion.md"


def test_decrypt_gives_a_person_s_note_its_name_and_id_back(sealed_vault: Path, run: Run) -> None:
    """A note without frontmatter, named by the person: encrypted it is `inbox/n-<hex>.md`;
    decrypted, it has its name, its bytes and the id it went by before, in one commit whose
    files are the sealed name gone and the old name back."""
    text = "Triggers of the reconciliation tables are tested with pgTAP.\n"
    write(sealed_vault, INBOX, text)
    commit(Vault(sealed_vault), [INBOX], "person: a note")
    before = as_json(run("show", INBOX, "--json"))["id"]
    [moved] = as_json(run("encrypt", before, "--json"))["changed"]
    assert moved.startswith("inbox/n-") and envelope.is_envelope((sealed_vault / moved).read_bytes())
    assert as_json(run("decrypt", moved, "--json"))["changed"] == [INBOX]
    assert (sealed_vault / INBOX).read_text() == text and not (sealed_vault / moved).exists()
    assert as_json(run("show", before, "--json"))["path"] == INBOX
    files = git(sealed_vault, "show", "--name-status", "--format=%s", "HEAD").split("\n")
    assert files[0] == f"decrypt: 1 note(s) ({moved} -> {INBOX})"  # its text is in the commit anyway
    assert sorted(line for line in files[1:] if line) == [f"A\t{INBOX}", f"D\t{moved}"]
    assert git(sealed_vault, "status", "--porcelain") == ""


def test_decrypt_into_a_name_taken_meanwhile_picks_another_and_says_so(sealed_vault: Path, run: Run) -> None:
    write(sealed_vault, INBOX, "---\ntags: [db]\n---\nThe first note.\n")
    commit(Vault(sealed_vault), [INBOX], "person: a note")
    [moved] = as_json(run("encrypt", INBOX, "--json"))["changed"]
    write(sealed_vault, INBOX, "Another note, written since under the same name.\n")
    commit(Vault(sealed_vault), [INBOX], "person: another note")
    done = run("decrypt", moved, "--json")
    taken = INBOX.replace(".md", "-2.md")
    assert as_json(done)["changed"] == [taken]
    assert f"{INBOX} is taken: the decrypted note {moved} is named {taken}" in ok(done).stderr
    # Its title stays: the new name no longer tells it.
    assert (sealed_vault / taken).read_text() == (
        "---\ntags: [db]\ntitle: pgtap-tests-triggers-conciliacion\n---\nThe first note.\n"
    )
    assert (sealed_vault / INBOX).read_text() == "Another note, written since under the same name.\n"


def test_decrypt_of_a_note_the_rules_seal_says_so_in_the_note(sealed_vault: Path, run: Run) -> None:
    """`encrypt: false` is what keeps a note the rules seal (its folder) plain at the next write:
    decrypt writes it there, and only there."""
    rel = "memory/long-term/relationships/Aunt May.md"
    write(sealed_vault, rel, "---\nrelation: aunt\n---\nLikes orchids.\n")
    commit(Vault(sealed_vault), [rel], "person: a note")
    assert envelope.is_envelope((sealed_vault / rel).read_bytes())
    assert as_json(run("decrypt", rel, "--json"))["changed"] == [rel]
    assert (sealed_vault / rel).read_text() == "---\nrelation: aunt\nencrypt: false\n---\nLikes orchids.\n"


def test_encrypt_all_reaches_a_person_s_sensitive_note_their_own_git_committed(
    sealed_vault: Path, run: Run
) -> None:
    """An adopted vault: the person's own git committed notes marked `sensitive: true` in plain
    text, so the catalog keeps them out of its rows. `encrypt --all` encrypts them like `encrypt
    ID`, editing the frontmatter in place; a note others link to by name is left plain and named."""
    clinic = (
        "---\n# private, keep it so\nsensitive: true\ntags: ['health']\ncreated: 2026-05-14T19:22\n---\n"
        "The clinic visit is on Tuesday.\n"
    )
    passport = "---\nsensitive: true\n---\nPassport number X1234567.\n"
    write(sealed_vault, "Journal/Clinic.md", clinic)
    write(sealed_vault, "Journal/Passport.md", passport)
    write(sealed_vault, "Journal/Index.md", "Documents: [[Passport]].\n")
    git(sealed_vault, "add", "Journal")
    git(sealed_vault, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "person: journal")
    done = as_json(run("encrypt", "--all", "--json"))
    [moved] = done["changed"]
    assert moved.startswith("Journal/n-") and envelope.is_envelope((sealed_vault / moved).read_bytes())
    assert not (sealed_vault / "Journal/Clinic.md").exists()
    # Every byte the person wrote is kept; only the title their file name gave goes inside.
    assert Vault(sealed_vault).read_text(moved) == clinic.replace("19:22\n", "19:22\ntitle: Clinic\n")
    [(skipped, why)] = done["skipped"].items()
    assert skipped == "Journal/Passport.md" and "1 note(s) link to it by its name (Journal/Index.md)" in why
    assert (sealed_vault / "Journal/Passport.md").read_text() == passport
    assert git(sealed_vault, "status", "--porcelain") == ""
    # Nothing left that could be encrypted: one line, exit 2, nothing written.
    head = git(sealed_vault, "rev-parse", "HEAD")
    line = one_error_line(run("encrypt", "--all"), 2)
    assert line.startswith("tmem: nothing encrypted: Journal/Passport.md: 1 note(s) link to it by its name")
    assert git(sealed_vault, "rev-parse", "HEAD") == head


def test_decrypt_all_reaches_notes_the_rules_no_longer_seal_and_keeps_their_bytes(
    sealed_vault: Path, run: Run
) -> None:
    """A person's note sealed for its folder (`encrypted_paths`); the folder is taken off the list:
    `decrypt --all` stores it in plain text again as the person wrote it, comment and all."""
    rel = "memory/long-term/relationships/Aunt May.md"
    text = "---\nrelation: aunt  # mother's side\nbirthday: '03-14'\n---\nLikes orchids.\n"
    write(sealed_vault, rel, text)
    commit(Vault(sealed_vault), [rel], "person: a note")
    assert envelope.is_envelope((sealed_vault / rel).read_bytes())
    write(sealed_vault, "tmem.yaml", FAKE_CONFIG + "privacy:\n  encrypt: sensitive\n  encrypted_paths: []\n")
    commit(Vault(sealed_vault), ["tmem.yaml"], "config: no folder sealed")
    assert as_json(run("decrypt", "--all", "--json"))["changed"] == []  # sealed until approved
    run("config", "approve", "privacy.encrypted_paths")  # protection lowered: this machine's user says so
    done = as_json(run("decrypt", "--all", "--json"))
    assert done["changed"] == [rel]
    assert (sealed_vault / rel).read_text() == text


def test_an_encrypted_note_is_saved_as_the_person_typed_it(
    sealed_vault: Path, run: Run, tmp_path: Path
) -> None:
    write(sealed_vault, BACKUPS, BACKUPS_TEXT)
    commit(Vault(sealed_vault), [BACKUPS], "person: a note")
    [moved] = as_json(run("encrypt", BACKUPS, "--json"))["changed"]
    before = Vault(sealed_vault).read_text(moved)
    editor = tmp_path / "editor.sh"
    # The person changes a word, and writes a comment and an empty value into the frontmatter.
    script = (
        "s/every night/every week/; s/^type: Programming Note$/type: Programming Note  # mine\\nreviewed:/"
    )
    editor.write_text(f"#!/bin/sh\nsed -i '{script}' \"$1\"\n", encoding="utf-8")
    editor.chmod(0o755)
    ok(run("edit", moved, env={"EDITOR": str(editor)}))
    assert envelope.is_envelope((sealed_vault / moved).read_bytes())
    assert Vault(sealed_vault).read_text(moved) == before.replace("every night", "every week").replace(
        "type: Programming Note\n", "type: Programming Note  # mine\nreviewed:\n"
    )


def test_export_leaves_encrypted_notes_out_unless_asked(sealed_vault: Path, run: Run, tmp_path: Path) -> None:
    ok(run("add", SECRET, "--category", "profile"))
    out = tmp_path / "e.json"
    # The untouched contacts.md template is in no index, so not exported (nor counted) at all.
    assert as_json(run("export", "-o", str(out), "--json"))["left_out"] == 1
    assert "passport" not in out.read_text()
    ok(run("export", "-o", str(out), "--include-sensitive"))
    assert "passport" in out.read_text()


def test_encrypt_keeps_the_name_of_a_note_whose_title_key_is_empty(sealed_vault: Path, run: Run) -> None:
    """A template's empty `title:` names nothing: the file name did, and the new name would not."""
    rel = "memory/long-term/Tax 2025.md"
    write(sealed_vault, rel, "---\ntitle:\ntags:\n---\nThe return's details.\n")
    commit(Vault(sealed_vault), [rel], "person: a note from a template")
    [moved] = as_json(run("encrypt", rel, "--json"))["changed"]
    assert as_json(run("show", moved, "--json"))["title"] == "Tax 2025"


def test_encrypt_refuses_a_json_note_and_leaves_it_as_it_is(sealed_vault: Path, run: Run) -> None:
    """JSON is never stored encrypted and has no frontmatter to say it should be: `encrypt` says
    so rather than renaming it, or writing a `---` block into it, and reporting it encrypted."""
    rel = "memory/long-term/settings.json"
    text = '{"theme": "dark", "pin": "4711"}\n'
    write(sealed_vault, rel, text)
    commit(Vault(sealed_vault), [rel], "person: a JSON file")
    head = git(sealed_vault, "rev-parse", "HEAD")
    assert "a JSON file is not stored encrypted" in one_error_line(run("encrypt", rel), 2)
    assert (sealed_vault / rel).read_text() == text
    assert git(sealed_vault, "rev-parse", "HEAD") == head and git(sealed_vault, "status", "--porcelain") == ""
    assert as_json(run("decrypt", rel, "--json"))["changed"] == []


def test_encryption_off_by_default(vault_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, PASS)
    assert "privacy.encrypt" in one_error_line(run("unlock", "--new"), 2)
    path = as_json(run("add", SECRET, "--category", "profile", "--json"))["note"]["path"]
    assert "passport" in (vault_path / path).read_text()


def test_hand_written_private_note_is_sealed_before_commit(
    sealed_vault: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    rel = "memory/long-term/people-notes.md"
    write(sealed_vault, rel, f"---\nid: hand\nsensitive: true\n---\n{SECRET}\n")
    monkeypatch.delenv(crypto.PASSPHRASE_ENV)
    crypto.forget(sealed_vault)
    warnings: list[str] = []
    tx = Transaction(Vault(sealed_vault), "edit: by hand", warn=warnings.append)
    tx.include([rel])
    assert tx.commit() is None and "locked" in warnings[0]  # locked: not committed at all
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, PASS)
    commit(Vault(sealed_vault), [rel], "edit: by hand")
    assert envelope.is_envelope((sealed_vault / rel).read_bytes())
    assert _plaintext_anywhere(sealed_vault) == []


def test_edit_of_an_encrypted_note_stays_encrypted(sealed_vault: Path, run: Run, tmp_path: Path) -> None:
    added = as_json(run("add", SECRET, "--category", "profile", "--json"))["note"]
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/thunderstorms/lightning/' \"$1\"\n", encoding="utf-8")
    editor.chmod(0o755)
    out = ok(run("edit", added["id"], env={"EDITOR": str(editor)})).stdout
    assert "(encrypted)" in out
    data = (sealed_vault / added["path"]).read_bytes()
    assert envelope.is_envelope(data) and b"lightning" not in data
    assert "lightning" in as_json(run("show", added["id"], "--json"))["body"]
    assert _plaintext_anywhere(sealed_vault) == []


def test_edit_of_an_encrypted_note_keeps_what_an_agent_wrote_while_the_editor_was_open(
    sealed_vault: Path, run: Run, tmp_path: Path
) -> None:
    """`tmem edit` opens a sealed note's plaintext outside the vault; an agent's update of the same
    note meanwhile (another process) is merged with the person's edit, not replaced by it."""
    added = as_json(run("add", SECRET, "--category", "profile", "--json"))["note"]
    agent = [sys.executable, "-m", "tiered_memory", "--vault", str(sealed_vault), "update", added["id"]]
    editor = tmp_path / "editor.sh"
    editor.write_text(
        "#!/bin/sh\n"
        f"{' '.join(agent)} --append 'Agent line: lightning too' >/dev/null || exit 1\n"
        "echo 'Person line: hail as well' >> \"$1\"\n",
        encoding="utf-8",
    )
    editor.chmod(0o755)
    out = ok(run("edit", added["id"], env={"EDITOR": str(editor), "PYTHONPATH": str(ROOT)})).stdout
    assert "(encrypted)" in out and "meanwhile" not in out
    assert git_log(sealed_vault)[1].startswith("update: ")  # the agent's commit came first
    body = as_json(run("show", added["id"], "--json"))["body"]
    assert "Agent line: lightning too" in body and "Person line: hail as well" in body
    assert envelope.is_envelope((sealed_vault / added["path"]).read_bytes())
    assert _plaintext_anywhere(sealed_vault) == []


def _editor_encrypting_meanwhile(tmp_path: Path, vault: Path, rel: str, person: str) -> str:
    """A fake $EDITOR: the note is encrypted (another process) while it is open, then the person
    adds a line to their copy."""
    encrypt = (
        f"{crypto.PASSPHRASE_ENV}='{PASS}' {sys.executable} -m tiered_memory --vault {vault} encrypt '{rel}'"
        " >/dev/null || exit 1"
    )
    editor = tmp_path / "editor.sh"
    editor.write_text(f"#!/bin/sh\n{encrypt}\necho '{person}' >> \"$1\"\n", encoding="utf-8")
    editor.chmod(0o755)
    return str(editor)


def test_edit_of_a_note_encrypted_meanwhile_is_saved_into_it_never_in_plain_text(
    sealed_vault: Path, run: Run, tmp_path: Path
) -> None:
    """Saved at the path the edit began at, the text would come back in plain text, in git, under
    the very name encrypting it hid: it is merged into the encrypted note instead."""
    rel = "memory/long-term/Therapy.md"
    write(sealed_vault, rel, "# Therapy\n\nThunderstorms scare me.\n")
    commit(Vault(sealed_vault), [rel], "person: a note")
    editor = _editor_encrypting_meanwhile(tmp_path, sealed_vault, rel, "Person line: hail as well")
    out = ok(run("edit", rel, env={"EDITOR": editor, "PYTHONPATH": str(ROOT)})).stdout
    assert "(encrypted)" in out
    assert not (sealed_vault / rel).exists()
    [hidden] = [p for p in (sealed_vault / "memory/long-term").glob("n-*.md")]
    assert envelope.is_envelope(hidden.read_bytes())
    body = as_json(run("show", hidden.relative_to(sealed_vault).as_posix(), "--json"))["body"]
    assert "Thunderstorms scare me." in body and "Person line: hail as well" in body
    assert _plaintext_anywhere(sealed_vault) == []
    assert git(sealed_vault, "status", "--porcelain") == ""


def test_edit_of_a_note_gone_meanwhile_in_a_locked_vault_is_refused_and_kept(
    sealed_vault: Path, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the key nothing tells an encrypted note from a forgotten one: nothing is saved, and
    the person's text is kept beside the vault."""
    rel = "memory/long-term/Therapy.md"
    write(sealed_vault, rel, "# Therapy\n\nThunderstorms scare me.\n")
    commit(Vault(sealed_vault), [rel], "person: a note")
    editor = _editor_encrypting_meanwhile(tmp_path, sealed_vault, rel, "Person line: hail as well")
    monkeypatch.delenv(crypto.PASSPHRASE_ENV)
    crypto.forget(sealed_vault)
    head = git(sealed_vault, "rev-parse", "HEAD")
    result = run("edit", rel, env={"EDITOR": editor, "PYTHONPATH": str(ROOT)})
    assert result.exit_code != 0 and "locked" in result.stderr
    assert not (sealed_vault / rel).exists()
    assert git(sealed_vault, "rev-parse", "HEAD") != head  # the agent's encrypt, and nothing after it
    assert git_log(sealed_vault)[0].startswith("encrypt: ")
    kept = Path(result.stderr.split("it is kept in ", 1)[1].split()[0])
    assert kept.read_text(encoding="utf-8").endswith("Person line: hail as well\n")


def test_edit_of_a_plain_note_moved_meanwhile_in_a_locked_vault_is_saved_where_it_is_now(
    sealed_vault: Path, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A note found where a move took it needs no key: only one gone without a trace does."""
    added = as_json(run("add", "Retro notes\n\nKeep the demo short.", "--json"))["note"]
    monkeypatch.delenv(crypto.PASSPHRASE_ENV)
    crypto.forget(sealed_vault)
    archive = (
        f"{sys.executable} -m tiered_memory --vault {sealed_vault} archive {added['id']} >/dev/null || exit 1"
    )
    editor = tmp_path / "editor.sh"
    editor.write_text(f"#!/bin/sh\n{archive}\necho 'Person line.' >> \"$1\"\n", encoding="utf-8")
    editor.chmod(0o755)
    ok(run("edit", added["id"], env={"EDITOR": str(editor), "PYTHONPATH": str(ROOT)}))
    shown = as_json(run("show", added["id"], "--json"))
    assert shown["path"].startswith("memory/archive/") and "Person line." in shown["body"]
    assert not (sealed_vault / added["path"]).exists()


def test_forget_entity_takes_the_encrypted_notes_about_it_and_refuses_while_they_are_locked(
    sealed_vault: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`forget --entity` removes everything about someone: encrypted notes about them (by their
    `entities`, or mentioning them with --mentions) too, which the catalog knows by path only."""
    plain = as_json(run("add", "Lunch with Meilin on Friday", "--json"))["note"]["path"]
    about = as_json(run("add", "Gift ideas", "--entity", "Meilin", "--json"))["note"]
    mention = as_json(run("add", "Meilin's passport is in the drawer", "--json"))["note"]
    sealed_paths = [as_json(run("encrypt", note["id"], "--json"))["changed"][0] for note in (about, mention)]
    kept = as_json(run("add", "Rivers flow to the sea", "--json"))["note"]["path"]
    head = git(sealed_vault, "rev-parse", "HEAD")
    monkeypatch.delenv(crypto.PASSPHRASE_ENV)
    crypto.forget(sealed_vault)
    assert "tmem unlock" in one_error_line(run("forget", "--entity", "Meilin", "--mentions", "--yes"), 2)
    assert git(sealed_vault, "rev-parse", "HEAD") == head and (sealed_vault / plain).is_file()
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, PASS)
    done = as_json(run("forget", "--entity", "Meilin", "--mentions", "--yes", "--json"))
    assert sorted(r["path"] for r in done["removed"]) == sorted([plain, *sealed_paths])
    assert all(not (sealed_vault / p).exists() for p in [plain, *sealed_paths])
    assert (sealed_vault / kept).is_file()
    assert git(sealed_vault, "status", "--porcelain") == ""


def test_import_of_notes_stored_encrypted_keeps_their_source_ids_out_of_the_ledger(
    sealed_vault: Path, run: Run, tmp_path: Path
) -> None:
    """The import ledger is committed in plain text: a note the import stores encrypted is named
    there by a digest of its source id (a tmem export's id tells the note's title), and importing
    the same file again still skips it."""
    note = {
        "kind": "note",
        "id": "meilin-passport",
        "path": "memory/long-term/knowledge_base/domains/meilin-passport.md",
        "tier": "long",
        "title": "Meilin passport",
        "category": "note",
        "frontmatter": {"id": "meilin-passport", "title": "Meilin passport", "sensitive": True},
        "body": f"{SECRET}\n",
    }
    export = tmp_path / "export.json"
    export.write_text(json.dumps({"format": "tmem-export", "version": 1, "notes": [note], "sessions": []}))
    [item] = as_json(run("import", str(export), "--format", "tmem", "--json"))["items"]
    assert item["action"] == "added" and envelope.is_envelope((sealed_vault / item["path"]).read_bytes())
    ledger = (sealed_vault / ".tmem-imports.jsonl").read_text(encoding="utf-8")
    assert "meilin" not in ledger.lower() and item["path"] in ledger
    assert _plaintext_anywhere(sealed_vault) == []
    [again] = as_json(run("import", str(export), "--format", "tmem", "--json"))["items"]
    assert again["action"] == "skipped" and again["why"] == "already imported"


def test_import_of_an_export_made_before_a_note_was_encrypted_does_not_bring_it_back_in_plain(
    sealed_vault: Path, run: Run, tmp_path: Path
) -> None:
    added = as_json(run("add", SECRET, "--json"))["note"]
    export = tmp_path / "before.json"
    ok(run("export", "-o", str(export)))
    moved = as_json(run("encrypt", added["id"], "--json"))["changed"][0]
    [item] = as_json(run("import", str(export), "--format", "tmem", "--json"))["items"]
    assert item["action"] == "skipped" and item["path"] == moved
    assert not (sealed_vault / added["path"]).exists()
    assert envelope.is_envelope((sealed_vault / moved).read_bytes())
    assert git(sealed_vault, "status", "--porcelain") == ""


def test_unlock_keyring_keeps_the_key_for_later_commands(
    sealed_vault: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    class FakeKeyring:
        store: dict[tuple[str, str], str] = {}

        def set_password(self, service: str, user: str, value: str) -> None:
            self.store[(service, user)] = value

        def get_password(self, service: str, user: str) -> str | None:
            return self.store.get((service, user))

    monkeypatch.setattr(crypto, "_keyring", lambda: FakeKeyring())
    assert as_json(run("unlock", "--keyring", "--json"))["keyring"] is True
    path = as_json(run("add", SECRET, "--category", "profile", "--json"))["note"]["path"]
    monkeypatch.delenv(crypto.PASSPHRASE_ENV)
    crypto.forget(sealed_vault)
    assert SECRET in as_json(run("show", path, "--json"))["body"]  # from the keyring
    [stored] = FakeKeyring.store.values()
    assert not [p for p in sealed_vault.rglob("*") if p.is_file() and stored.encode() in p.read_bytes()]


def test_remote_embedder_never_sees_an_encrypted_note(sealed_vault: Path, run: Run) -> None:
    """Hybrid search with an embedding API: the encrypted note is found by keyword, and not one of
    its words was sent to the API (the query itself is, as for any search)."""
    path = as_json(run("add", SECRET, "--category", "profile", "--json"))["note"]["path"]
    ok(run("add", "The dog sleeps under the stairs during storms"))
    sent: list[str] = []
    fake = FakeEmbedder(32)

    def transport(url: str, body: bytes, headers: dict[str, str], timeout: float) -> bytes:
        texts = json.loads(body)["input"]
        sent.extend(texts)
        vectors = fake.embed(texts)
        return json.dumps(
            {"data": [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]}
        ).encode()

    api = HttpEmbedder("https://api.example.invalid/v1", "m", api_key_env=None, transport=transport)
    memory = Memory(Vault(sealed_vault), embedder_factory=lambda: api)
    try:
        found = sealed.search(memory, SearchRequest(query="thunderstorms", mode="hybrid"))
    finally:
        memory.close()
    assert [h.path for h in found.hits][:1] == [path]
    assert found.hits[0].components["keyword"] > 0 and found.hits[0].components["vector"] == 0
    assert any("dog" in t for t in sent)  # the plain note was embedded through the API
    assert not [t for t in sent if any(w in t for w in ("passport", "X1234567", "Meilin"))]


def test_lock_drops_the_decrypted_notes_and_their_vectors(
    sealed_vault: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = as_json(run("add", SECRET, "--category", "profile", "--json"))["note"]["path"]
    monkeypatch.delenv(crypto.PASSPHRASE_ENV)  # the key is the one `unlock` left in this process
    memory = Memory(Vault(sealed_vault), embedder_factory=lambda: FakeEmbedder(32))
    try:
        held = sealed.prepared(memory)
        assert held is not None and set(held.rows()) == {path} and held.has_vector(path)
        assert encryption.lock(memory, Empty()).forgotten
        assert len(held) == 0 and sealed.prepared(memory) is None
    finally:
        memory.close()


def test_sensitive_encrypted_note_stays_out_of_context_unless_asked(sealed_vault: Path, run: Run) -> None:
    rel = "memory/long-term/shutters.md"
    write(
        sealed_vault,
        rel,
        "---\nid: shutters\nsensitive: true\n---\nIn thunderstorms she keeps the shutters closed.\n",
    )
    commit(Vault(sealed_vault), [rel], "edit: by hand")
    assert envelope.is_envelope((sealed_vault / rel).read_bytes())
    query = ("context", "--query", "thunderstorms shutters", "--format", "json")
    assert as_json(run(*query))["memories"] == []
    assert [m["path"] for m in as_json(run(*query, "--include-sensitive"))["memories"]] == [rel]


@pytest.mark.slow
def test_agents_recall_and_read_encrypted_notes_through_the_unlocked_daemon(
    sealed_vault: Path, run: Run
) -> None:
    """The key `tmem unlock` gave the daemon serves an MCP session that has no passphrase of its
    own: recall (hybrid), read by id and context find the encrypted note; afterwards nothing of it
    is on disk (the daemon's log and `.tmem/` included)."""
    path = as_json(run("add", SECRET, "--category", "profile", "--json"))["note"]["path"]
    env = {k: v for k, v in os.environ.items() if k != crypto.PASSPHRASE_ENV}
    env.update(PYTHONPATH=str(ROOT), TMEM_AUTOSTART="1")
    tmem = [sys.executable, "-m", "tiered_memory", "--vault", str(sealed_vault)]

    async def scenario(session: ClientSession) -> None:
        found = await call(session, "recall", query="who fears thunderstorms", mode="hybrid")
        [hit] = [r for r in found["results"] if r["path"] == path]
        assert "thunderstorms" in hit["passage"]
        assert SECRET in (await call(session, "read", id=hit["id"]))["body"]
        assert "X1234567" in await call(session, "context", query="passport number", include_sensitive=True)

    try:
        subprocess.run([*tmem, "daemon", "start"], env=env, check=True, capture_output=True, timeout=120)
        unlock = [*tmem, "unlock"]  # the passphrase on stdin; the key stays in the daemon
        subprocess.run(
            unlock, env=env, input=PASS + "\n", check=True, capture_output=True, text=True, timeout=120
        )
        serve(sealed_vault, scenario, TMEM_AUTOSTART="1")  # no passphrase in the MCP server's env
    finally:
        subprocess.run([*tmem, "daemon", "stop"], env=env, capture_output=True, timeout=60)
    assert _plaintext_anywhere(sealed_vault) == []


def test_embedding_held_notes_stops_at_the_deadline_and_resumes() -> None:
    index = InMemoryIndex()
    for i in range(EMBED_BATCH + 3):
        note = notes.Note(
            f"memory/long-term/n-{i}.md", {"id": f"n{i}", "title": f"Storm {i}"}, f"storm {i}", True
        )
        index.put(note, (float(i), 10))
    embedder = FakeEmbedder(16)
    assert index.embed(embedder, 180, 40, deadline=0.0) == 3  # one batch, then the clock said stop
    assert sum(index.has_vector(p) for p in index.rows()) == EMBED_BATCH
    assert index.embed(embedder, 180, 40) == 0 and all(index.has_vector(p) for p in index.rows())
    hits = index.vector(embedder.embed(["storm 2"])[0], embedder.model_id, lambda row: True)
    assert hits[0][0] == "memory/long-term/n-2.md"


@pytest.mark.slow
def test_lock_holds_against_a_daemon_started_with_the_passphrase(sealed_vault: Path, run: Run) -> None:
    """A daemon whose environment holds $TMEM_PASSPHRASE re-derived the key after `tmem lock`
    printed "locked". Locked means no process of the vault uses the key until `tmem unlock`."""
    added = as_json(run("add", SECRET, "--category", "profile", "--json"))["note"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the passphrase too: the daemon may derive the key
    bare = {k: v for k, v in env.items() if k != crypto.PASSPHRASE_ENV}
    tmem = [sys.executable, "-m", "tiered_memory", "--vault", str(sealed_vault)]

    def cli(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*tmem, *args], env=bare, input=input, capture_output=True, text=True, timeout=120
        )

    try:
        subprocess.run([*tmem, "daemon", "start"], env=env, check=True, capture_output=True, timeout=120)
        shown = cli("show", added["id"])
        assert shown.returncode == 0 and "X1234567" in shown.stdout  # the daemon derived the key
        assert cli("lock").stdout.strip() == "locked"
        refused = cli("show", added["id"])
        assert refused.returncode != 0 and "X1234567" not in refused.stdout
        assert "locked" in refused.stderr and len(refused.stderr.splitlines()) == 1
        found = cli("search", "--json", "passport thunderstorms")
        assert found.returncode == 0 and "X1234567" not in found.stdout
        assert cli("lock").stdout.strip() == "was not unlocked"
        ok_unlock = cli("unlock", input=PASS + "\n")
        assert ok_unlock.returncode == 0, ok_unlock.stderr
        assert "X1234567" in cli("show", added["id"]).stdout
    finally:
        subprocess.run([*tmem, "daemon", "stop"], env=env, capture_output=True, timeout=60)


def test_lock_holds_against_the_passphrase_in_this_process(sealed_vault: Path, run: Run) -> None:
    """$TMEM_PASSPHRASE (still set here) and a key held in memory both give way to `tmem lock`."""
    added = as_json(run("add", SECRET, "--category", "profile", "--json"))["note"]
    assert ok(run("lock")).stdout.strip() == "locked"
    assert crypto.key_for(sealed_vault) is None and crypto.cached(sealed_vault) is None
    refused = run("show", added["id"])
    assert refused.exit_code != 0 and "tmem unlock" in refused.stderr
    textconv = sealed_vault / added["path"]
    assert "X1234567" not in ok(run("textconv", str(textconv))).stdout
    ok(run("unlock"))  # the passphrase from the environment, given by a person this time
    assert "X1234567" in ok(run("show", added["id"])).stdout


def test_sealed_notes_go_into_no_prompt_unasked(
    sealed_vault: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A note the person sealed reaches an agent's model only when someone asked for it (a search,
    MCP recall, `--include-sensitive`): the prompt hook's memories and the session-start block
    leave it out, as an export does, unless `privacy.sealed_in_prompts` (approved) lets it in."""
    added = as_json(run("add", SECRET, "--category", "profile", "--entity", "Meilin", "--json"))
    path = added["note"]["path"]
    assert envelope.is_envelope((sealed_vault / path).read_bytes())
    prompt = json.dumps(
        {"prompt": "What passport number does Meilin have?", "session_id": "s1", "cwd": "/tmp"}
    )

    def prompt_block() -> str:
        done = run("hook", "user-prompt-submit", input=prompt)
        assert done.exit_code == 0, done.stderr
        return done.stdout

    def start_block() -> str:  # the block a session starts with, about the person named
        return ok(run("context", "--entity", "Meilin")).stdout

    assert "X1234567" not in prompt_block() and "X1234567" not in start_block()
    assert as_json(run("search", "passport Meilin", "--json"))["results"][0]["path"] == path  # asked
    # The person lets sealed notes into prompts: a value a pull brings counts once approved.
    write(
        sealed_vault, "tmem.yaml", FAKE_CONFIG + "privacy:\n  encrypt: sensitive\n  sealed_in_prompts: true\n"
    )
    assert "X1234567" not in prompt_block() and "X1234567" not in start_block()
    ok(run("config", "approve", "privacy.sealed_in_prompts"))
    assert "X1234567" in prompt_block() and "X1234567" in start_block()


def _envelope_naming(vault: Path, folder: str, title: str) -> str:
    """What a collaborator holding the key can push: a note sealed at the name the key makes from
    the path `title` gives, with that `title:` inside its envelope, so `decrypt` takes it for a
    note `encrypt` renamed and gives it that name back."""
    key = crypto.require_key(vault, "the test")
    wanted = f"{folder}/{title}.md"
    rel = f"{folder}/{PurePosixPath(encryption._sealed_name(wanted, key, notes.default_id(wanted))).name}"
    text = f"---\ntitle: {json.dumps(title)}\n---\nA crafted note.\n"
    (vault / rel).parent.mkdir(parents=True, exist_ok=True)
    (vault / rel).write_bytes(crypto.encrypt(vault, rel, text.encode("utf-8")))
    commit(Vault(vault), [rel], "collaborator: a crafted envelope")
    return rel


@pytest.mark.parametrize(
    "title",
    [
        "x" * 300,  # longer than a file name may be
        "a" * 250,  # fits with `.md`, not with the `-<n>` of a taken name
        "bell\x07and\x1b[31mred",  # control characters: a name no terminal shows as it is
        "tab\there",
        "del\x7f",
        "line\u2028sep",
    ],
)
def test_decrypt_never_gives_a_crafted_note_a_name_no_file_may_have(
    sealed_vault: Path, run: Run, title: str
) -> None:
    rel = _envelope_naming(sealed_vault, "inbox", title)
    done = run("decrypt", rel, "--json")
    assert as_json(done)["changed"] == [rel]  # decrypted where it is, under its sealed name
    assert os.listdir(sealed_vault / "inbox") == [PurePosixPath(rel).name]
    assert (sealed_vault / rel).read_text(encoding="utf-8").endswith("A crafted note.\n")
    assert git(sealed_vault, "status", "--porcelain") == ""


@pytest.mark.parametrize(
    "title", ["../escaped", "/tmp/abs", ".git", ".tmem", "..", "sub/../../x", "a\\b", "a\0b"]
)
def test_decrypt_never_takes_a_crafted_name_out_of_the_folder(
    sealed_vault: Path, run: Run, title: str
) -> None:
    rel = _envelope_naming(sealed_vault, "inbox", title)
    assert as_json(run("decrypt", rel, "--json"))["changed"] == [rel]
    assert os.listdir(sealed_vault / "inbox") == [PurePosixPath(rel).name]
    assert not (sealed_vault / "escaped.md").exists() and not (sealed_vault / ".git.md").exists()


def test_decrypt_into_a_name_held_by_a_link_or_a_note_writes_through_neither(
    sealed_vault: Path, run: Run, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("outside\n")
    rel = _envelope_naming(sealed_vault, "inbox", "linked")
    os.symlink(outside, sealed_vault / "inbox" / "linked.md")
    os.symlink(tmp_path / "nowhere.md", sealed_vault / "inbox" / "dangling.md")
    dangling = _envelope_naming(sealed_vault, "inbox", "dangling")
    write(sealed_vault, "inbox/taken.md", "A person's note.\n")
    commit(Vault(sealed_vault), ["inbox/taken.md"], "person: a note")
    taken = _envelope_naming(sealed_vault, "inbox", "taken")
    for one in (rel, dangling, taken):
        ok(run("decrypt", one))
    assert outside.read_text() == "outside\n" and not (tmp_path / "nowhere.md").exists()
    assert (sealed_vault / "inbox" / "taken.md").read_text() == "A person's note.\n"
    assert sorted(os.listdir(sealed_vault / "inbox")) == [
        "dangling-2.md",
        "dangling.md",
        "linked-2.md",
        "linked.md",
        "taken-2.md",
        "taken.md",
    ]


def test_decrypt_in_a_folder_that_is_a_link_writes_nothing_outside(
    sealed_vault: Path, run: Run, tmp_path: Path
) -> None:
    rel = _envelope_naming(sealed_vault, "inbox", "moved away")
    outside = tmp_path / "elsewhere"
    (sealed_vault / "inbox").rename(outside)
    os.symlink(outside, sealed_vault / "inbox")
    assert "outside the vault" in one_error_line(run("decrypt", rel), 2)
    assert sorted(os.listdir(outside)) == [PurePosixPath(rel).name]
    assert envelope.is_envelope((outside / PurePosixPath(rel).name).read_bytes())


def test_a_pulled_envelope_naming_a_file_of_the_vault_never_writes_over_it(
    sealed_vault: Path, run: Run, tmp_path: Path
) -> None:
    """A collaborator holding the key pushes an envelope crafted to be given back as `tmem.yaml`'s
    neighbour in `memory/`, as a note another note already has the name of, and as a name no file
    may have; the person pulls it with `tmem sync` and decrypts everything. Each is decrypted
    where it is or beside the name it asks for; no file of the vault changes."""
    remote, other = tmp_path / "remote.git", tmp_path / "other"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    write(sealed_vault, "memory/long-term/taken.md", "A note of the person's.\n")
    commit(Vault(sealed_vault), ["memory/long-term/taken.md"], "person: a note")
    git(sealed_vault, "remote", "add", "origin", str(remote))
    ok(run("sync"))
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    crafted = [
        _envelope_naming(other, "memory/long-term", title)
        for title in ("taken", "x" * 300, "esc\x1b]0;hi\x07")
    ]
    git(other, "push", "-q", "origin", "main")
    tracked = git(sealed_vault, "ls-files", "-z").split("\0")
    before = {rel: (sealed_vault / rel).read_bytes() for rel in tracked if rel}
    ok(run("sync"))
    assert all((sealed_vault / rel).is_file() for rel in crafted)
    done = as_json(run("decrypt", "--all", "--json"))
    assert sorted(done["changed"]) == sorted(["memory/long-term/taken-2.md", *crafted[1:]])
    assert {rel: (sealed_vault / rel).read_bytes() for rel in before} == before
    assert git(sealed_vault, "status", "--porcelain") == ""


def test_a_folder_sealed_or_unsealed_by_the_settings_leaves_or_rejoins_the_indexes(
    sealed_vault: Path, run: Run
) -> None:
    """A hand-written note in plain text, then its folder added to `privacy.encrypted_paths`: the
    next incremental `tmem reindex` takes it out of the indexes (its text is sealed at its commit,
    never kept in .tmem/), in one line; the folder removed again (approved), it is read again."""
    from tiered_memory import config
    from tiered_memory.index.catalog import Catalog
    from tiered_memory.storage.vault import ENCRYPTED

    day = "memory/long-term/diary/day.md"
    write(sealed_vault, day, "# Day\n\nWalked the quokka trail at dawn.\n")
    ok(run("reindex"))
    other = "long-term/relationships/"

    def skipped() -> list[tuple[str, str]]:
        catalog = Catalog(sealed_vault / ".tmem" / "catalog.sqlite")
        try:
            return catalog.skipped()
        finally:
            catalog.close()

    assert (day, ENCRYPTED) not in skipped()
    settings = FAKE_CONFIG + "privacy:\n  encrypt: sensitive\n  encrypted_paths: [{}]\n"
    (sealed_vault / "tmem.yaml").write_text(settings.format(f"{other}, long-term/diary/"), encoding="utf-8")
    sealed = ok(run("reindex")).output
    assert "1 note under privacy.encrypted_paths now: out of the indexes" in sealed
    assert (day, ENCRYPTED) in skipped()

    (sealed_vault / "tmem.yaml").write_text(settings.format(other), encoding="utf-8")
    config.approve(sealed_vault, {"privacy.encrypted_paths": [other]})
    unsealed = ok(run("reindex")).output
    assert "1 note no longer under privacy.encrypted_paths: indexed again" in unsealed
    assert (day, ENCRYPTED) not in skipped()
    assert day in [
        r["path"] for r in as_json(run("search", "--json", "--mode", "keyword", "quokka"))["results"]
    ]
