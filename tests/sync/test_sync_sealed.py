"""Syncing encrypted notes between two clones: merged as plaintext while a key is at hand (sealed
again, markers and `conflict: true` only inside the envelope), and without a key never merged by
lines: ours stays in place, the other version waits beside it until `tmem resolve` once unlocked."""

from __future__ import annotations

import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from click.testing import CliRunner, Result
from helpers import FAKE_CONFIG, as_json, git, git_log, ok, one_error_line

from tiered_memory.cli.main import cli
from tiered_memory.model import envelope, sealed_merge
from tiered_memory.model import note as notes
from tiered_memory.model.merge3 import OURS_MARKER, THEIRS_MARKER
from tiered_memory.storage import crypto
from tiered_memory.storage.vault import init_vault

PASS = "correct horse battery staple"
CONFIG = FAKE_CONFIG + "privacy:\n  encrypt: sensitive\n"
WORDS = ("Laptop", "Desktop", "likes tea", "likes coffee", "zed-person")


def tmem(root: Path | None, *args: str, env: dict[str, str] | None = None) -> Result:
    prefix = ["--vault", str(root)] if root else []
    return CliRunner().invoke(cli, [*prefix, *args], env=env, catch_exceptions=False)


@pytest.fixture(autouse=True)
def _cheap_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crypto, "_keys", {})
    monkeypatch.setattr(crypto, "DEFAULT_N", 2**12)  # the tests' cost, not a real vault's
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, PASS)


def lock_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key anywhere: not in this process, not in the environment git's merge driver inherits."""
    monkeypatch.delenv(crypto.PASSPHRASE_ENV, raising=False)
    crypto._keys.clear()


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path, str]:
    """Two clones of one encrypted vault (one passphrase), each with the sealed profile of
    zed-person and its two notes: (laptop, desktop, the profile's path)."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    laptop = tmp_path / "laptop"
    init_vault(laptop, config_text=CONFIG)
    git(laptop, "remote", "add", "origin", str(remote))
    ok(tmem(laptop, "unlock", "--new"))
    rel = as_json(tmem(laptop, "entity", "add", "zed-person", "--kind", "person", "--json"))["path"]
    ok(tmem(laptop, "entity", "update", "zed-person", "--note", "first line"))
    ok(tmem(laptop, "entity", "update", "zed-person", "--note", "second line"))
    ok(tmem(laptop, "sync"))
    desktop = tmp_path / "desktop"
    subprocess.run(["git", "clone", "-q", str(remote), str(desktop)], check=True)
    ok(tmem(None, "init", "--adopt", str(desktop)))
    assert envelope.is_envelope((desktop / rel).read_bytes())
    return laptop, desktop, rel


def editor(tmp_path: Path, name: str, script: str) -> str:
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


def plain(root: Path, rel: str) -> str:
    return crypto.decrypt(root, rel, (root / rel).read_bytes()).decode("utf-8")


def leaks(root: Path, *, markers: bool = True) -> list[str]:
    """Secret words (or conflict markers) in any file of the vault or any git object."""
    needles = [*WORDS, OURS_MARKER[:7]] if markers else list(WORDS)
    found = []
    for path in root.rglob("*"):
        if path.is_file() and ".git" not in path.parts and ".tmem" not in path.parts:
            if path.name in ("tmem.yaml",):
                continue
            found += [f"{path}: {w}" for w in needles if w.encode() in path.read_bytes()]
    objects = git(root, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)")
    for line in objects.splitlines():
        sha, kind = line.split()
        if kind != "blob":
            continue
        data = subprocess.run(["git", "-C", str(root), "cat-file", "-p", sha], capture_output=True).stdout
        found += [f"object {sha}: {w}" for w in needles if w.encode() in data]
    return found


def test_sealed_note_edited_on_both_clones_merges_as_plaintext(
    pair: tuple[Path, Path, str], tmp_path: Path
) -> None:
    laptop, desktop, rel = pair
    ok(
        tmem(
            laptop,
            "edit",
            "zed-person",
            env={"EDITOR": editor(tmp_path, "a.sh", "sed -i 's/first line/Laptop first/' \"$1\"")},
        )
    )
    ok(
        tmem(
            desktop,
            "edit",
            "zed-person",
            env={"EDITOR": editor(tmp_path, "b.sh", "sed -i 's/second line/Desktop second/' \"$1\"")},
        )
    )
    ok(tmem(desktop, "sync"))
    report = as_json(tmem(laptop, "sync", "--json"))
    assert report["conflicts"] == [] and report["waiting"] == [] and report["pushed"]
    data = (laptop / rel).read_bytes()
    assert envelope.is_envelope(data) and envelope.decode(data).path == rel
    text = plain(laptop, rel)
    assert "Laptop first" in text and "Desktop second" in text
    assert OURS_MARKER not in text and "conflict" not in notes.parse(text, rel).meta
    assert not (laptop / sealed_merge.conflict_path(rel)).exists()
    assert leaks(laptop) == []
    ok(tmem(desktop, "sync"))
    assert plain(desktop, rel) == text


def test_appends_to_a_sealed_note_on_both_clones_are_merged_inside_the_envelope(
    pair: tuple[Path, Path, str],
) -> None:
    """Appends on both clones to an encrypted note are never joined as bytes (two envelopes one
    after the other): the merge opens them with the key and seals the merged text again."""
    laptop, desktop, rel = pair
    ok(tmem(laptop, "entity", "update", "zed-person", "--note", "Laptop likes tea"))
    ok(tmem(desktop, "entity", "update", "zed-person", "--note", "Desktop likes coffee"))
    ok(tmem(desktop, "sync"))
    report = as_json(tmem(laptop, "sync", "--json"))
    assert report["appends"] == [] and report["conflicts"] == [] and report["pushed"]
    data = (laptop / rel).read_bytes()
    assert envelope.is_envelope(data) and data.count(b"tmem-encrypted") == 1
    text = plain(laptop, rel)
    assert "Laptop likes tea" in text and "Desktop likes coffee" in text and OURS_MARKER not in text
    assert leaks(laptop) == []


def test_same_line_changed_on_both_clones_stays_a_sealed_conflict(
    pair: tuple[Path, Path, str], tmp_path: Path
) -> None:
    laptop, desktop, rel = pair
    # The same line changed two ways (lines only added at one spot on both sides merge cleanly).
    ok(tmem(laptop, "update", "zed-person", "--find", "second line", "--replace", "Laptop: likes tea"))
    ok(tmem(desktop, "update", "zed-person", "--find", "second line", "--replace", "Desktop: likes coffee"))
    ok(tmem(desktop, "sync"))
    report = as_json(tmem(laptop, "sync", "--json"))
    assert report["conflicts"] == [rel] and report["waiting"] == []
    data = (laptop / rel).read_bytes()
    assert envelope.is_envelope(data) and b"<<<<<<<" not in data and b"conflict" not in data
    text = plain(laptop, rel)
    assert OURS_MARKER in text and THEIRS_MARKER in text
    assert "likes tea" in text and "likes coffee" in text
    assert notes.parse(text, rel).meta["conflict"] is True
    assert leaks(laptop) == []
    # the note is still found, shown and listed as a conflict
    assert as_json(tmem(laptop, "show", "zed-person", "--json"))["path"] == rel
    assert rel in [h["path"] for h in as_json(tmem(laptop, "search", "coffee", "--json"))["results"]]
    assert as_json(tmem(laptop, "status", "--json"))["conflicts"] == [rel]
    # resolved as plaintext outside the vault, saved sealed
    drop_markers = "sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' \"$1\""
    done = as_json(
        tmem(
            laptop, "resolve", "zed-person", "--json", env={"EDITOR": editor(tmp_path, "r.sh", drop_markers)}
        )
    )
    assert done["path"] == rel and done["commit"]
    assert git_log(laptop)[0] == "resolve: [encrypted note]"
    data = (laptop / rel).read_bytes()
    assert envelope.is_envelope(data)
    text = plain(laptop, rel)
    assert "likes tea" in text and "likes coffee" in text and OURS_MARKER not in text
    assert "conflict" not in notes.parse(text, rel).meta
    assert as_json(tmem(laptop, "status", "--json"))["conflicts"] == []
    assert leaks(laptop) == []


def test_without_a_key_the_other_version_waits_beside_ours_until_resolved(
    pair: tuple[Path, Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop, desktop, rel = pair
    # The same line changed two ways (lines only added at one spot on both sides merge cleanly).
    ok(tmem(laptop, "update", "zed-person", "--find", "second line", "--replace", "Laptop: likes tea"))
    ok(tmem(desktop, "update", "zed-person", "--find", "second line", "--replace", "Desktop: likes coffee"))
    ok(tmem(desktop, "sync"))
    ours = (laptop / rel).read_bytes()
    lock_everything(monkeypatch)
    result = tmem(laptop, "sync")
    assert result.exit_code == 0, result.output
    assert "encrypted, no key here" in result.stdout and "`tmem resolve` it once unlocked" in result.stdout
    # ours untouched and valid, theirs (and the common version) in the record, nothing line-merged
    assert (laptop / rel).read_bytes() == ours
    record = laptop / sealed_merge.conflict_path(rel)
    pending = sealed_merge.unpack(record.read_bytes())
    assert len(pending) == 1 and envelope.is_envelope(pending[0].theirs)
    assert git(laptop, "status", "--porcelain") == ""
    assert sealed_merge.conflict_path(rel) in git(laptop, "ls-files")
    assert leaks(laptop) == []
    assert as_json(tmem(laptop, "status", "--json"))["conflicts"] == [rel]
    # locked: one clear line, no traceback
    assert "locked" in one_error_line(tmem(laptop, "resolve", "zed-person", "--no-edit"), 1)
    assert "locked" in one_error_line(tmem(laptop, "resolve", rel, "--no-edit"), 2)
    assert record.exists()
    # the record reaches the other clone too, which lists the conflict as well
    ok(tmem(desktop, "sync"))
    assert (desktop / sealed_merge.conflict_path(rel)).is_file()
    assert as_json(tmem(desktop, "status", "--json"))["conflicts"] == [rel]
    # unlocked: resolve brings the other version in, as an ordinary note conflict
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, PASS)
    assert "likes tea" in as_json(tmem(laptop, "show", "zed-person", "--json"))["body"]
    refused = tmem(laptop, "resolve", "zed-person", env={"EDITOR": "true"})
    assert refused.exit_code == 2 and "still has conflict markers" in refused.stderr
    assert not record.exists()  # merged in (committed), the mark kept
    text = plain(laptop, rel)
    assert OURS_MARKER in text and "likes tea" in text and "likes coffee" in text
    assert notes.parse(text, rel).meta["conflict"] is True
    drop_markers = "sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' \"$1\""
    ok(tmem(laptop, "resolve", "zed-person", env={"EDITOR": editor(tmp_path, "r.sh", drop_markers)}))
    text = plain(laptop, rel)
    assert "likes tea" in text and "likes coffee" in text and OURS_MARKER not in text
    assert "conflict" not in notes.parse(text, rel).meta
    assert as_json(tmem(laptop, "status", "--json"))["conflicts"] == []
    assert envelope.is_envelope((laptop / rel).read_bytes())
    assert leaks(laptop) == []


def test_key_held_by_the_syncing_process_only_merges_in_that_process(
    pair: tuple[Path, Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's case: unlocked in memory, while git's merge driver (a child) has no key."""
    laptop, desktop, rel = pair
    ok(
        tmem(
            laptop,
            "edit",
            "zed-person",
            env={"EDITOR": editor(tmp_path, "a.sh", "sed -i 's/first line/Laptop first/' \"$1\"")},
        )
    )
    ok(
        tmem(
            desktop,
            "edit",
            "zed-person",
            env={"EDITOR": editor(tmp_path, "b.sh", "sed -i 's/second line/Desktop second/' \"$1\"")},
        )
    )
    ok(tmem(desktop, "sync"))
    key = crypto.key_for(laptop)
    assert key is not None
    lock_everything(monkeypatch)
    crypto.remember(laptop, key)
    report = as_json(tmem(laptop, "sync", "--json"))
    assert report["conflicts"] == [] and report["waiting"] == []
    text = plain(laptop, rel)
    assert "Laptop first" in text and "Desktop second" in text and OURS_MARKER not in text
    assert not (laptop / sealed_merge.conflict_path(rel)).exists()
    assert leaks(laptop) == []


def test_merge_driver_never_merges_ciphertext_without_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock_everything(monkeypatch)
    key = bytes(range(32))
    rel = "memory/long-term/relationships/n-1.md"
    for name, body in (("O", "a\n"), ("A", "a\nours\n"), ("B", "a\ntheirs\n")):
        (tmp_path / name).write_bytes(envelope.seal(key, rel, f"---\nid: x\n---\n{body}".encode()))
    before = (tmp_path / "A").read_bytes()
    monkeypatch.chdir(tmp_path)
    result = tmem(None, "merge-driver", "O", "A", "B", rel)
    assert result.exit_code == 1 and "no key here" in result.stderr
    assert (tmp_path / "A").read_bytes() == before


def test_versions_waiting_on_both_clones_for_one_note_are_all_kept(pair: tuple[Path, Path, str]) -> None:
    laptop, desktop, rel = pair
    ok(tmem(desktop, "sync"))
    record = sealed_merge.conflict_path(rel)
    shared = sealed_merge.Pending(None, b"tmem-encrypted: 1\nshared\n")
    for root, word in ((laptop, b"laptop"), (desktop, b"desktop")):
        mine = sealed_merge.Pending(b"tmem-encrypted: 1\nbase\n", b"tmem-encrypted: 1\n" + word + b"\n")
        (root / record).write_bytes(sealed_merge.pack(rel, [shared, mine]))
        git(root, "add", record)
        git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "waiting")
    ok(tmem(laptop, "sync"))
    report = as_json(tmem(desktop, "sync", "--json"))
    assert report["kept_both"] == []
    kept = sealed_merge.unpack((desktop / record).read_bytes())
    assert [v.theirs.split(b"\n")[1] for v in kept] == [b"shared", b"desktop", b"laptop"]


def test_a_plain_git_pull_merges_a_sealed_note_through_the_driver_with_the_key(
    pair: tuple[Path, Path, str], tmp_path: Path
) -> None:
    """git runs `tmem merge-driver` itself (no tmem sync around it): the key comes from the
    environment, as for every command, and the merged note is sealed again."""
    laptop, desktop, rel = pair
    ok(tmem(desktop, "sync"))
    ok(
        tmem(
            laptop,
            "edit",
            "zed-person",
            env={"EDITOR": editor(tmp_path, "a.sh", "sed -i 's/first line/Laptop first/' \"$1\"")},
        )
    )
    ok(
        tmem(
            desktop,
            "edit",
            "zed-person",
            env={"EDITOR": editor(tmp_path, "b.sh", "sed -i 's/second line/Desktop second/' \"$1\"")},
        )
    )
    ok(tmem(laptop, "sync"))
    git(desktop, "-c", "user.name=t", "-c", "user.email=t@t", "pull", "-q", "--no-rebase", "origin", "main")
    data = (desktop / rel).read_bytes()
    assert envelope.is_envelope(data)
    text = plain(desktop, rel)
    assert "Laptop first" in text and "Desktop second" in text and OURS_MARKER not in text


def test_an_envelope_merged_by_lines_before_is_recovered_by_resolve(
    pair: tuple[Path, Path, str], tmp_path: Path
) -> None:
    """What an older tmem left: the envelope's base64 merged by lines, markers and all, committed.
    The two envelopes it came from are still in the merge's parents: resolve merges them."""
    laptop, desktop, rel = pair
    ok(tmem(desktop, "sync"))
    # The same line changed two ways (lines only added at one spot on both sides merge cleanly).
    ok(tmem(laptop, "update", "zed-person", "--find", "second line", "--replace", "Laptop: likes tea"))
    ok(tmem(desktop, "update", "zed-person", "--find", "second line", "--replace", "Desktop: likes coffee"))
    ok(tmem(laptop, "sync"))
    git(desktop, "config", "--remove-section", "merge.tmem")  # git's own line merge, as the old driver did
    pulled = subprocess.run(
        [
            "git",
            "-C",
            str(desktop),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "pull",
            "-q",
            "--no-rebase",
            "origin",
            "main",
        ],
        capture_output=True,
    )
    assert pulled.returncode != 0
    git(desktop, "add", "-A")
    git(desktop, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "sync: merge origin/main")
    assert sealed_merge.line_merged((desktop / rel).read_bytes())
    assert as_json(tmem(desktop, "status", "--json"))["conflicts"] == [rel]
    drop_markers = "sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' \"$1\""
    ok(tmem(desktop, "resolve", rel, env={"EDITOR": editor(tmp_path, "r.sh", drop_markers)}))
    data = (desktop / rel).read_bytes()
    assert envelope.is_envelope(data) and not sealed_merge.line_merged(data)
    text = plain(desktop, rel)
    assert "likes tea" in text and "likes coffee" in text and OURS_MARKER not in text
    assert "likes coffee" in as_json(tmem(desktop, "show", "zed-person", "--json"))["body"]
    assert as_json(tmem(desktop, "status", "--json"))["conflicts"] == []
    assert leaks(desktop, markers=False) == []  # the damaged envelope stays in history, as it was


def _encrypted_after_both_synced(laptop: Path, desktop: Path) -> tuple[dict[str, Any], str]:
    """A note both clones have, then encrypted (and so moved) on the laptop and pushed: the note
    as added, and the path it moved to."""
    added = as_json(tmem(laptop, "add", "The boiler code is kept here", "--json"))["note"]
    ok(tmem(laptop, "sync"))
    ok(tmem(desktop, "sync"))
    moved = as_json(tmem(laptop, "encrypt", added["id"], "--json"))["changed"][0]
    ok(tmem(laptop, "sync"))
    return added, moved


def test_a_note_encrypted_on_one_clone_and_edited_in_plain_on_the_other_stays_sealed(
    pair: tuple[Path, Path, str],
) -> None:
    # `tmem encrypt` moves a plain note to a neutral name; the other clone, not yet pulled, edits
    # the old file. The sync that merges the edit into the moved copy must seal it again: the note
    # says `encrypt: true`, and its plaintext must not be what the merge commits and pushes.
    laptop, desktop, _ = pair
    added, moved = _encrypted_after_both_synced(laptop, desktop)
    assert moved != added["path"]
    with (desktop / added["path"]).open("a", encoding="utf-8") as handle:
        handle.write("Desktop added line\n")
    report = as_json(tmem(desktop, "sync", "--json"))
    assert report["pushed"]
    assert not (desktop / added["path"]).exists()
    for root in (desktop, laptop):
        if root is laptop:
            ok(tmem(laptop, "sync"))
        data = (root / moved).read_bytes()
        assert envelope.is_envelope(data) and envelope.decode(data).path == moved
        assert "Desktop added line" in plain(root, moved)
        committed = subprocess.run(
            ["git", "-C", str(root), "show", f"HEAD:{moved}"], capture_output=True, check=True
        ).stdout
        assert envelope.is_envelope(committed)
        assert as_json(tmem(root, "show", added["id"], "--json"))["path"] == moved
        assert git(root, "status", "--porcelain") == ""


def test_a_note_edited_under_the_old_key_while_the_other_clone_rekeyed_stays_readable(
    pair: tuple[Path, Path, str],
) -> None:
    # The laptop seals every note again under a new key; the desktop, not yet pulled, edits one
    # under the old key. Neither key opens both versions, so nothing is merged; the version the
    # vault's (new) key opens stays in place and the desktop's waits beside it, so the note is
    # still readable with the new passphrase on both clones instead of with none.
    laptop, desktop, rel = pair
    ok(tmem(desktop, "show", "zed-person"))  # the desktop holds the old key
    ok(tmem(laptop, "rekey"))
    new_key = crypto.load_settings(laptop)
    assert new_key is not None
    ok(tmem(laptop, "sync"))
    ok(tmem(desktop, "update", "zed-person", "--append", "Desktop line"))
    report = as_json(tmem(desktop, "sync", "--json"))
    assert report["waiting"] == [rel] and report["pushed"]
    ok(tmem(laptop, "sync"))
    for root in (desktop, laptop):
        data = (root / rel).read_bytes()
        assert envelope.decode(data).key_id == new_key.key_id
        assert (root / sealed_merge.conflict_path(rel)).is_file()
        assert git(root, "status", "--porcelain") == ""
    crypto._keys.clear()  # the new passphrase from now on, on both clones
    assert "second line" in as_json(tmem(laptop, "show", "zed-person", "--json"))["body"]
    assert "second line" in plain(desktop, rel)
    assert leaks(desktop) == [] and leaks(laptop) == []


def test_the_waiting_version_moves_with_a_sealed_note_archived_before_it_is_resolved(
    pair: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop, desktop, rel = pair
    ok(tmem(laptop, "update", "zed-person", "--find", "second line", "--replace", "Laptop: likes tea"))
    ok(tmem(desktop, "update", "zed-person", "--find", "second line", "--replace", "Desktop: likes coffee"))
    ok(tmem(desktop, "sync"))
    lock_everything(monkeypatch)
    assert as_json(tmem(laptop, "sync", "--json"))["waiting"] == [rel]
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, PASS)
    moved = as_json(tmem(laptop, "archive", rel, "--json"))["dst"]
    assert moved != rel and git(laptop, "status", "--porcelain") == ""
    assert not (laptop / sealed_merge.conflict_path(rel)).exists()
    assert sealed_merge.unpack((laptop / sealed_merge.conflict_path(moved)).read_bytes())
    assert as_json(tmem(laptop, "status", "--json"))["conflicts"] == [moved]
    refused = tmem(laptop, "resolve", moved, env={"EDITOR": "true"})
    assert refused.exit_code == 2 and "still has conflict markers" in refused.stderr
    text = plain(laptop, moved)
    assert "likes tea" in text and "likes coffee" in text
    assert leaks(laptop) == []


def test_an_encrypted_note_is_forgotten_archived_and_restored_by_its_id_as_it_last_was(
    pair: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Encrypted notes are known to the catalog by path only; while unlocked, the commands that
    # take an id find them too. A restore must bring back the last (sealed) version, not the
    # plain text the note had before `tmem encrypt`, and keep it sealed.
    laptop, _, _ = pair
    added = as_json(tmem(laptop, "add", "The boiler code is kept here", "--json"))["note"]
    plain_commit = git(laptop, "rev-parse", "HEAD").strip()
    rel = as_json(tmem(laptop, "encrypt", added["id"], "--json"))["changed"][0]
    ok(tmem(laptop, "update", added["id"], "--append", "Laptop line after sealing"))
    moved = as_json(tmem(laptop, "archive", added["id"], "--json"))["dst"]
    ok(tmem(laptop, "restore-from-archive", added["id"]))
    assert moved != rel and (laptop / rel).is_file()
    assert as_json(tmem(laptop, "forget", added["id"], "--yes", "--json"))["path"] == rel
    assert "Laptop line after sealing" not in git(laptop, "log", "-p", "--all", "--no-textconv")
    done = as_json(tmem(laptop, "restore", added["id"], "--json"))
    assert done["path"] == rel and not (laptop / added["path"]).exists()
    assert envelope.is_envelope((laptop / rel).read_bytes())
    assert "Laptop line after sealing" in plain(laptop, rel)
    assert "The boiler code" not in git(laptop, "log", "-1", "--format=%s")
    assert rel in as_json(tmem(laptop, "log", added["id"], "--json"))["paths"]
    assert git(laptop, "status", "--porcelain") == ""
    # the version from before it was encrypted comes back sealed, in place
    assert as_json(tmem(laptop, "restore", added["id"], "--at", plain_commit, "--json"))["path"] == rel
    assert envelope.is_envelope((laptop / rel).read_bytes())
    assert "Laptop line after sealing" not in plain(laptop, rel)
    # Locked, its sealed versions are out of sight: the plain one from before is not taken for
    # the last, nothing is brought back.
    ok(tmem(laptop, "forget", added["id"], "--yes"))
    head = git(laptop, "rev-parse", "HEAD")
    lock_everything(monkeypatch)
    assert "tmem unlock" in one_error_line(tmem(laptop, "restore", added["id"]), 2)
    assert git(laptop, "rev-parse", "HEAD") == head and not (laptop / added["path"]).exists()


def test_without_a_key_an_edit_of_a_note_the_other_clone_encrypted_waits_beside_the_envelope(
    pair: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # No key here tells the envelope's id, but the commit that removed the edited note added that
    # one envelope alone: the edit waits beside it for `tmem resolve`, instead of coming back as a
    # second, plain note with the same id.
    laptop, desktop, _ = pair
    added, moved = _encrypted_after_both_synced(laptop, desktop)
    lock_everything(monkeypatch)
    with (desktop / added["path"]).open("a", encoding="utf-8") as handle:
        handle.write("Desktop added line\n")
    report = as_json(tmem(desktop, "sync", "--json"))
    assert report["waiting"] == [moved] and report["kept_edits"] == [] and report["pushed"]
    assert not (desktop / added["path"]).exists()
    assert (desktop / sealed_merge.conflict_path(moved)).is_file()
    assert git(desktop, "status", "--porcelain") == ""
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, PASS)
    ok(tmem(desktop, "resolve", added["id"], "--no-edit"))
    assert "Desktop added line" in plain(desktop, moved)
    assert not (desktop / sealed_merge.conflict_path(moved)).exists()
    ok(tmem(desktop, "sync"))
    ok(tmem(laptop, "sync"))
    assert "Desktop added line" in plain(laptop, moved) and not (laptop / added["path"]).exists()


def test_a_note_both_clones_encrypt_stays_one_note_after_a_sync(pair: tuple[Path, Path, str]) -> None:
    # Each `tmem encrypt` moves the note to a neutral name; made from its id with the key, both
    # clones pick the same one, so the sync merges the two envelopes instead of keeping both.
    laptop, desktop, _ = pair
    added = as_json(tmem(laptop, "add", "The boiler code is kept here", "--json"))["note"]
    ok(tmem(laptop, "sync"))
    ok(tmem(desktop, "sync"))
    on_laptop = as_json(tmem(laptop, "encrypt", added["id"], "--json"))["changed"]
    on_desktop = as_json(tmem(desktop, "encrypt", added["id"], "--json"))["changed"]
    assert on_laptop == on_desktop
    ok(tmem(desktop, "update", added["id"], "--append", "Desktop line"))
    ok(tmem(laptop, "sync"))
    ok(tmem(desktop, "sync"))
    ok(tmem(laptop, "sync"))
    folder = PurePosixPath(added["path"]).parent.as_posix()
    for root in (laptop, desktop):
        assert [p.name for p in (root / folder).glob("*.md")] == [PurePosixPath(on_laptop[0]).name]
        assert "Desktop line" in plain(root, on_laptop[0])
        assert git(root, "status", "--porcelain") == ""


def test_a_rekey_seals_the_versions_waiting_beside_a_note_again_so_resolve_still_merges_them(
    pair: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop, desktop, rel = pair
    ok(tmem(laptop, "update", "zed-person", "--append", "Laptop: likes tea"))
    ok(tmem(desktop, "update", "zed-person", "--append", "Desktop: likes coffee"))
    ok(tmem(desktop, "sync"))
    lock_everything(monkeypatch)
    assert as_json(tmem(laptop, "sync", "--json"))["waiting"] == [rel]
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, PASS)
    old_key = envelope.decode((laptop / rel).read_bytes()).key_id
    ok(tmem(laptop, "rekey"))
    record = sealed_merge.unpack((laptop / sealed_merge.conflict_path(rel)).read_bytes())
    assert record and all(envelope.decode(v.theirs).key_id != old_key for v in record)
    assert git(laptop, "status", "--porcelain") == ""
    ok(tmem(laptop, "resolve", "zed-person", "--no-edit"))
    text = plain(laptop, rel)
    assert "likes tea" in text and "likes coffee" in text
    assert not (laptop / sealed_merge.conflict_path(rel)).exists()
    assert leaks(laptop) == []


def test_a_clone_without_git_textconv_restores_a_forgotten_encrypted_note_as_it_last_was(
    pair: tuple[Path, Path, str],
) -> None:
    # The clone that set the key up has git's textconv, whose `log -G` sees inside envelopes; a
    # clone made later does not, and must still find the note's sealed versions by opening them.
    laptop, desktop, _ = pair
    assert "diff.tmem.textconv" not in git(desktop, "config", "--list")
    added = as_json(tmem(laptop, "add", "The boiler code is kept here", "--json"))["note"]
    moved = as_json(tmem(laptop, "encrypt", added["id"], "--json"))["changed"][0]
    ok(tmem(laptop, "update", added["id"], "--append", "Laptop line after sealing"))
    ok(tmem(laptop, "sync"))
    ok(tmem(desktop, "sync"))
    ok(tmem(desktop, "forget", added["id"], "--yes"))
    done = as_json(tmem(desktop, "restore", added["id"], "--json"))
    assert done["path"] == moved and not (desktop / added["path"]).exists()
    assert envelope.is_envelope((desktop / moved).read_bytes())
    assert "Laptop line after sealing" in plain(desktop, moved)
