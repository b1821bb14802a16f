"""`tmem export` of a vault a person adopted, then `tmem import --format tmem` elsewhere: each note
back at its own path (a person's folder note in that folder, tmem's notes in their tier), byte for
byte, with its id and its links; paths the export names that would leave the vault or go through a
link refused; a different note already at a path kept, the import taking the next free name; one
commit and one index pass whatever the number of notes; a killed import leaves a valid vault."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import (
    FAKE_CONFIG,
    as_json,
    build_obsidian_vault,
    commit,
    git,
    git_log,
    ok,
    one_error_line,
    write,
)

from tiered_memory.cli.main import cli
from tiered_memory.index.indexer import Indexer
from tiered_memory.model.file_names import unportable
from tiered_memory.storage.git import Git
from tiered_memory.storage.vault import Vault, init_vault

ROOT = Path(__file__).parents[2]


def tmem(root: Path | None, *args: str) -> Result:
    prefix = ["--vault", str(root)] if root else []
    return CliRunner().invoke(cli, [*prefix, *args], catch_exceptions=False)


@pytest.fixture
def adopted(tmp_path: Path) -> Path:
    """An Obsidian vault adopted in place, with a `knowledge/` folder of the person's own (the name
    of a folder tmem has under `memory/` too), tmem's own notes in its tiers and one tmem filed in
    the person's folders (`add --folder`)."""
    root = tmp_path / "source"
    build_obsidian_vault(root)
    write(
        root, "knowledge/learnings/Un collector.md", "---\ndate: 2026-04-18  # hoy\n---\nVer [[Geodesy]].\n"
    )
    write(root, "knowledge/projects/agentesia/Retell.md", "# Retell\r\n\r\nTicketing. [[Un collector]]\r\n")
    (root / "tmem.yaml").write_text(FAKE_CONFIG, encoding="utf-8")
    ok(tmem(None, "init", "--adopt", str(root)))
    ok(tmem(root, "add", "The tunnel project uses CGCS2000 for control points", "--project", "tunnel"))
    ok(tmem(root, "add", "Prefers short meetings", "--category", "preference"))
    ok(tmem(root, "add", "--folder", "Projects", "Survey kickoff is on Monday"))
    return root


def _export(root: Path, out: Path) -> list[dict[str, object]]:
    ok(tmem(root, "export", "-o", str(out)))
    return [
        e
        for e in (json.loads(line) for line in out.read_text(encoding="utf-8").splitlines())
        if e.get("kind") == "note"
    ]


def _fresh(tmp_path: Path, name: str = "target") -> Path:
    root = tmp_path / name
    init_vault(root, config_text=FAKE_CONFIG)
    return root


def _import(root: Path, export: Path) -> dict[str, object]:
    result: dict[str, object] = as_json(tmem(root, "import", "--format", "tmem", str(export), "--json"))
    return result


def _links(root: Path, ref: str) -> list[tuple[str, str]]:
    found = as_json(tmem(root, "links", ref, "--json"))
    return sorted((str(link.get("target")), str(link.get("path"))) for link in found["outgoing"])


# ---- the round trip -------------------------------------------------------------------------------


def test_round_trip_of_an_adopted_vault_keeps_paths_bytes_ids_and_links(
    adopted: Path, tmp_path: Path
) -> None:
    out = tmp_path / "export.jsonl"
    entries = _export(adopted, out)
    paths = {str(e["path"]) for e in entries}
    assert {"knowledge/learnings/Un collector.md", "Projects/Survey plan.md", "Inbox/quick.md"} <= paths
    assert any(p.startswith("memory/long-term/") for p in paths) and any(
        p.startswith("Projects/") and p != "Projects/Survey plan.md" for p in paths
    )  # tmem's own notes, in its tiers and in the person's folder
    target = _fresh(tmp_path)
    commits = len(git_log(target))
    done = _import(target, out)
    assert len(git_log(target)) == commits + 1 and done["commit"]
    for entry in entries:
        rel = str(entry["path"])
        if rel.startswith("memory/short-term/"):
            continue  # the new vault's own templates are there already (see below)
        assert (target / rel).read_bytes() == (adopted / rel).read_bytes(), rel
    assert not (target / "memory/knowledge/learnings").exists()
    # The same ids at the same paths: what an export of the new vault says of each note.
    again = {(str(e["path"]), str(e["id"])) for e in _export(target, tmp_path / "again.jsonl")}
    assert {(str(e["path"]), str(e["id"])) for e in entries} <= again | {
        (str(e["path"]), str(e["id"])) for e in entries if str(e["path"]).startswith("memory/short-term/")
    }
    for ref in ("Home.md", "knowledge/projects/agentesia/Retell.md", "knowledge/learnings/Un collector.md"):
        assert _links(target, ref) == _links(adopted, ref), ref
    assert git(target, "status", "--porcelain") == ""


def test_a_name_a_person_chose_comes_back_as_it_was(adopted: Path, tmp_path: Path) -> None:
    # Names tmem makes are ones Windows can check out; a person's own "What?.md" is theirs, and
    # an import of their export brings it back under it, not as a clash with itself.
    rel, text = "Inbox/What now?.md", "---\ntitle: What now?\n---\nA question to myself.\n"
    write(adopted, rel, text)
    commit(Vault(adopted), [rel], "person: a note")
    out = tmp_path / "export.jsonl"
    _export(adopted, out)
    target = _fresh(tmp_path)
    done = _import(target, out)
    assert (target / rel).read_text(encoding="utf-8") == text
    assert not any(item["why"] for item in done["items"] if item["path"] == rel)  # type: ignore[union-attr]


def test_the_same_export_imported_again_changes_nothing(adopted: Path, tmp_path: Path) -> None:
    out = tmp_path / "export.jsonl"
    _export(adopted, out)
    target = _fresh(tmp_path)
    _import(target, out)
    assert (target / "knowledge/learnings/Un collector.md").is_file()
    head, files = git_log(target), {p: p.read_bytes() for p in target.rglob("*.md")}
    second = _import(target, out)
    assert second["added"] == second["merged"] == second["updated"] == 0 and second["commit"] is None
    assert git_log(target) == head and {p: p.read_bytes() for p in target.rglob("*.md")} == files
    # Without the ledger too: every note is found where it is, as it is.
    (target / ".tmem-imports.jsonl").unlink()
    third = _import(target, out)
    assert third["added"] == 0, [i for i in third["items"] if i["action"] == "added"]  # type: ignore[attr-defined]
    assert {p: p.read_bytes() for p in target.rglob("*.md")} == files


def test_a_note_whose_ledger_line_reads_like_a_secret_is_still_imported_once(tmp_path: Path) -> None:
    """A real vault's note (an agent's learning about n8n) whose path and id, beside the ledger's
    `source` key, read like a credential to redaction: the second import changes nothing."""
    rel = "knowledge/learnings/n8n-webhook-sin-auth-frontea-service-role-key.md"
    entry = {"kind": "note", "id": "knowledge-learnings-n8n-webhook-sin-auth-frontea-service-role-key"}
    entry |= {"path": rel, "head": "---\ntitle: Webhook sin auth\n---\n", "body": "La service role key.\n"}
    out = tmp_path / "crafted.jsonl"
    out.write_text(json.dumps({"format": "tmem-export", "version": 1}) + "\n" + json.dumps(entry) + "\n")
    target = _fresh(tmp_path)
    assert _import(target, out)["added"] == 1 and (target / rel).is_file()
    head = git_log(target)
    again = _import(target, out)
    assert again["commit"] is None and git_log(target) == head
    [item] = again["items"]  # type: ignore[misc]
    assert item["action"] == "skipped" and item["path"] == rel


def test_an_export_changed_since_an_earlier_import_leaves_the_imported_note_as_it_is(
    tmp_path: Path,
) -> None:
    out = tmp_path / "crafted.jsonl"
    header = json.dumps({"format": "tmem-export", "version": 1}) + "\n"
    entry = {"kind": "note", "id": "notes-plan", "path": "Notes/plan.md", "head": "", "body": "First.\n"}
    out.write_text(header + json.dumps(entry) + "\n", encoding="utf-8")
    target = _fresh(tmp_path)
    _import(target, out)
    assert (target / "Notes/plan.md").read_text(encoding="utf-8") == "First.\n"
    write(target, "Notes/plan.md", "First, and my own line.\n")
    commit(Vault(target), ["Notes/plan.md"], "person: an edit")
    entry["body"] = "Second.\n"
    out.write_text(header + json.dumps(entry) + "\n", encoding="utf-8")
    [item] = _import(target, out)["items"]  # type: ignore[misc]
    assert item["action"] == "skipped" and item["why"] == "exists with other content (left as it is)"
    assert (target / "Notes/plan.md").read_text(encoding="utf-8") == "First, and my own line.\n"
    assert not (target / "Notes/plan-2.md").exists()


def test_import_into_an_adopted_vault_keeps_its_notes_and_names_the_new_one(
    adopted: Path, tmp_path: Path
) -> None:
    out = tmp_path / "export.jsonl"
    _export(adopted, out)
    target = tmp_path / "other"
    write(target, "Geodesy.md", "# Geodesy\n\nThe other person's own geodesy note.\n")
    home = (adopted / "Home.md").read_bytes()
    (target / "Home.md").write_bytes(home)
    (target / "tmem.yaml").write_text(FAKE_CONFIG, encoding="utf-8")
    ok(tmem(None, "init", "--adopt", str(target)))
    result = _import(target, out)
    items = {i["source"].split(":", 2)[2]: i for i in result["items"]}  # type: ignore[attr-defined]
    assert (target / "Geodesy.md").read_text(encoding="utf-8").endswith("own geodesy note.\n")
    assert (target / "Geodesy-2.md").read_bytes() == (adopted / "Geodesy.md").read_bytes()
    assert items["geodesy"]["path"] == "Geodesy-2.md" and items["geodesy"]["action"] == "added"
    assert "Geodesy.md: the vault has another note there; imported as Geodesy-2.md" in result["warnings"]  # type: ignore[operator]
    assert items["home"]["action"] == "skipped" and items["home"]["why"] == "exists, unchanged"
    assert (target / "Home.md").read_bytes() == home and not (target / "Home-2.md").exists()


GITHUB_TOKEN = "ghp_" + "x9Qm2Lr7Tz4Kp1Vb8Nc3Hd6Fj0Sw5Ya2Ue7R"


def test_the_vault_s_own_export_brought_back_writes_no_note_even_where_redaction_changed_it(
    adopted: Path, tmp_path: Path
) -> None:
    """The export of a note holding a secret holds a marker instead: still that note, not another
    one to import beside it under the next free name."""
    write(adopted, "Notes/Deploy.md", f"---\ntags: [ops]\n---\nDeploy with {GITHUB_TOKEN} today.\n")
    write(adopted, "Notes/Token.md", f"---\ntoken: {GITHUB_TOKEN}\n---\nThe CI token.\n")
    commit(Vault(adopted), ["Notes/Deploy.md", "Notes/Token.md"], "person: notes")
    out = tmp_path / "export.jsonl"
    entries = {str(e["path"]): e for e in _export(adopted, out)}
    assert "head" in entries["Notes/Deploy.md"] and "head" not in entries["Notes/Token.md"]
    before = {p: p.read_bytes() for p in adopted.rglob("*.md")}
    done = _import(adopted, out)
    assert done["added"] == done["merged"] == done["updated"] == 0
    whys = {i["path"]: i["why"] for i in done["items"]}  # type: ignore[attr-defined]
    assert whys["Notes/Deploy.md"] == whys["Notes/Token.md"] == "exists, unchanged"
    assert {p: p.read_bytes() for p in adopted.rglob("*.md")} == before


def test_two_notes_of_one_export_at_one_path_both_arrive(tmp_path: Path) -> None:
    lines = [{"format": "tmem-export", "version": 1}]
    for i in (1, 2):
        lines.append(
            {"kind": "note", "id": f"a{i}", "path": "Notes/same.md", "head": "", "body": f"Version {i}\n"}
        )
    out = tmp_path / "crafted.jsonl"
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    target = _fresh(tmp_path)
    done = _import(target, out)
    assert [i["path"] for i in done["items"]] == ["Notes/same.md", "Notes/same-2.md"]  # type: ignore[attr-defined]
    assert (target / "Notes/same-2.md").read_text(encoding="utf-8") == "Version 2\n"


def test_an_older_export_without_heads_still_lands_at_its_paths(adopted: Path, tmp_path: Path) -> None:
    """An export written before `head` existed: same paths, bodies byte for byte, frontmatter
    rendered from its values."""
    out = tmp_path / "export.jsonl"
    _export(adopted, out)
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        line.pop("head", None)
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    target = _fresh(tmp_path)
    _import(target, out)
    assert (target / "Home.md").read_bytes() == (adopted / "Home.md").read_bytes()
    text = (target / "knowledge/learnings/Un collector.md").read_text(encoding="utf-8")
    # Rendered from JSON values: the comment is gone and the date is text now.
    assert text == "---\ndate: '2026-04-18'\n---\nVer [[Geodesy]].\n"


def test_a_tier_relative_path_is_in_memory(tmp_path: Path) -> None:
    out = tmp_path / "crafted.jsonl"
    header = {"format": "tmem-export", "version": 1}
    entry = {
        "kind": "note",
        "id": "t1",
        "path": "long-term/t1.md",
        "frontmatter": {"id": "t1"},
        "body": "x\n",
    }
    out.write_text(json.dumps(header) + "\n" + json.dumps(entry) + "\n", encoding="utf-8")
    target = _fresh(tmp_path)
    [item] = _import(target, out)["items"]  # type: ignore[misc]
    assert item["path"] == "memory/long-term/t1.md" and (target / "memory/long-term/t1.md").is_file()


# ---- paths an export names: untrusted ------------------------------------------------------------


def _crafted(tmp_path: Path, rel: str) -> Path:
    out = tmp_path / "crafted.jsonl"
    lines = [
        {"format": "tmem-export", "version": 1},
        {"kind": "note", "id": "n1", "path": rel, "head": "", "body": "x\n"},
    ]
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return out


@pytest.mark.parametrize(
    ("rel", "why"),
    [
        ("Notes/bad\nname.md", "a control character"),
        ("Notes/" + "n" * 240 + ".md", "a name longer than a file system takes"),
        # Each name short, the whole past what Linux (4,096 bytes) and macOS (1,024) take for a
        # path: written through descriptors it lands, and then no command could read it again.
        ("/".join(["d" * 200] * 25) + "/x.md", "a path longer than 1024 bytes"),
        ("Inside/x.md", "Inside is a symbolic link"),
        ("Outside/x.md", "Outside is a symbolic link"),
        ("Plain/x.md", "Plain is a file, not a folder"),
        (".tmem/catalog.md", "a hidden component"),
        (".git/hooks/x.md", "a hidden component"),
        ("../x.md", "'..'"),
        ("/tmp/x.md", "an absolute path"),
    ],
)
def test_a_path_that_would_leave_the_vault_or_follow_a_link_is_refused(
    tmp_path: Path, rel: str, why: str
) -> None:
    target = _fresh(tmp_path)
    (target / "Real").mkdir()
    (target / "Inside").symlink_to(target / "Real")
    (target / "Outside").symlink_to(tmp_path)
    (target / "Plain").write_text("a file\n", encoding="utf-8")
    head = git_log(target)
    line = one_error_line(tmem(target, "import", "--format", "tmem", str(_crafted(tmp_path, rel))), 2)
    assert "nothing imported" in line and why in line
    assert git_log(target) == head
    assert not any((target / "Real").iterdir()) and not (tmp_path / "x.md").exists()


# ---- speed: one commit, one index pass ----------------------------------------------------------


def test_many_notes_are_one_commit_and_one_index_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = 150
    lines: list[dict[str, object]] = [{"format": "tmem-export", "version": 1}]
    for i in range(count):
        text = f"Note {i} about the survey, see [[note {i + 1}]].\n"
        lines.append(
            {
                "kind": "note",
                "id": f"folder-note-{i}",
                "path": f"Folder/note {i}.md",
                "head": "",
                "body": text,
            }
        )
    for i in range(20):
        message = {"role": "user", "content": f"Reproject survey {i}", "timestamp": "2026-01-01T10:00:00Z"}
        lines.append(
            {"kind": "session", "id": f"ses-20260101-{i:06x}", "title": f"Survey {i}", "messages": [message]}
        )
    out = tmp_path / "many.jsonl"
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    target = _fresh(tmp_path)
    ok(tmem(target, "reindex", "--keyword-only"))
    passes: list[int] = []
    update = Indexer.update_paths

    def counted(self: Indexer, paths: object, **kwargs: object) -> object:
        listed = list(paths)  # type: ignore[call-overload]
        passes.append(len(listed))
        return update(self, listed, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Indexer, "update_paths", counted)
    commits = len(git_log(target))
    done = _import(target, out)
    assert done["added"] == count + 20 and len(git_log(target)) == commits + 1
    assert len(passes) == 1 and passes[0] >= count + 20, passes
    assert len(list((target / "Folder").iterdir())) == count


# ---- a killed import ------------------------------------------------------------------------------

_DIES_AFTER = """
import os, signal, sys
from tiered_memory.storage import transaction
from tiered_memory.cli.main import cli

created = 0
create = transaction.Transaction._create

def dying(self, *args, **kwargs):
    global created
    created += 1
    if created > int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)
    return create(self, *args, **kwargs)

transaction.Transaction._create = dying
cli(["--vault", sys.argv[1], "import", "--format", "tmem", sys.argv[2]])
"""


def test_an_import_killed_midway_leaves_a_valid_vault_and_the_next_one_completes(
    adopted: Path, tmp_path: Path
) -> None:
    out = tmp_path / "export.jsonl"
    entries = _export(adopted, out)
    target = _fresh(tmp_path)
    head = git_log(target)
    script = tmp_path / "dies.py"
    script.write_text(_DIES_AFTER, encoding="utf-8")
    killed = subprocess.run(
        [sys.executable, str(script), str(target), str(out), "5"], cwd=ROOT, capture_output=True, text=True
    )
    assert killed.returncode == -9, killed.stderr
    assert git_log(target) == head  # nothing committed; the notes written so far are on disk
    ok(tmem(target, "status"))  # a valid vault meanwhile: it reads
    done = _import(target, out)  # recovery first, then the whole import
    assert done["commit"] and len(git_log(target)) == len(head) + 1
    for entry in entries:
        rel = str(entry["path"])
        if not rel.startswith("memory/short-term/"):
            assert (target / rel).read_bytes() == (adopted / rel).read_bytes(), rel
    assert not list(target.rglob("*-2.md"))
    assert git(target, "status", "--porcelain") == ""


def test_a_second_entry_with_the_same_id_is_named_not_dropped_without_a_word(tmp_path: Path) -> None:
    out = tmp_path / "twice.jsonl"
    lines = [
        {"format": "tmem-export", "version": 1},
        {"kind": "note", "id": "n1", "path": "Notes/one.md", "head": "", "body": "one\n"},
        {"kind": "note", "id": "n1", "path": "Notes/two.md", "head": "", "body": "two\n"},
        {"kind": "note", "id": "n1", "path": "Notes/two.md", "head": "", "body": "two\n"},
    ]
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    target = _fresh(tmp_path)
    result = _import(target, out)
    assert [(i["action"], i["why"]) for i in result["items"]] == [  # type: ignore[attr-defined]
        ("added", ""),
        ("skipped", "another entry of this file has its id"),
    ]
    assert result["added"] == 1 and result["skipped"] == 1
    assert not (target / "Notes/two.md").exists()


# ---- made durable together, before the commit ------------------------------------------------------


def _many(tmp_path: Path, count: int, folders: int) -> Path:
    lines: list[dict[str, object]] = [{"format": "tmem-export", "version": 1}]
    for i in range(count):
        rel = f"Folder {i % folders}/note {i}.md"
        lines.append({"kind": "note", "id": f"note-{i}", "path": rel, "head": "", "body": f"Note {i}.\n"})
    out = tmp_path / "many.jsonl"
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return out


def test_an_import_flushes_its_notes_then_each_folder_once_before_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every note written is on the disk for sure before the commit that names it, and each
    folder's entries with one fsync of that folder, not one per note."""
    out = _many(tmp_path, 60, 3)
    target = _fresh(tmp_path)
    events: list[tuple[str, str]] = []
    real_fsync = os.fsync

    def recorded(fd: int) -> None:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            events.append(("folder", os.readlink(f"/proc/self/fd/{fd}")))
        else:  # by inode: the bytes a note has, whatever name they had when flushed
            events.append(("file", str(info.st_ino)))
        real_fsync(fd)

    commit_paths = Git.commit_paths

    def committing(self: Git, *args: object, **kwargs: object) -> object:
        events.append(("commit", ""))
        return commit_paths(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "fsync", recorded)
    monkeypatch.setattr(Git, "commit_paths", committing)
    done = _import(target, out)
    assert done["added"] == 60 and done["commit"]
    at_commit = events.index(("commit", ""))
    flushed = {path for kind, path in events[:at_commit] if kind == "file"}
    notes = {str((target / f"Folder {i % 3}/note {i}.md").stat().st_ino) for i in range(60)}
    assert notes <= flushed, sorted(notes - flushed)[:3]
    folders = [path for kind, path in events[:at_commit] if kind == "folder"]
    for i in range(3):
        assert folders.count(str((target / f"Folder {i}").resolve())) == 1, folders


_DIES_FLUSHING = """
import os, signal, sys
from tiered_memory.storage import transaction
from tiered_memory.cli.main import cli

flushed = 0
flush = transaction._fsync_file

def dying(*args):
    global flushed
    flushed += 1
    if flushed > int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)
    return flush(*args)

transaction._fsync_file = dying
cli(["--vault", sys.argv[1], "import", "--format", "tmem", sys.argv[2]])
"""


def test_an_import_killed_while_flushing_leaves_a_valid_vault_and_the_next_one_completes(
    tmp_path: Path,
) -> None:
    out = _many(tmp_path, 30, 2)
    target = _fresh(tmp_path)
    head = git_log(target)
    script = tmp_path / "dies.py"
    script.write_text(_DIES_FLUSHING, encoding="utf-8")
    killed = subprocess.run(
        [sys.executable, str(script), str(target), str(out), "10"], cwd=ROOT, capture_output=True, text=True
    )
    assert killed.returncode == -9, killed.stderr
    assert git_log(target) == head  # every note written, none committed
    ok(tmem(target, "status"))
    done = _import(target, out)  # the killed unit of work put back first, then the whole import
    assert done["added"] == 30 and len(git_log(target)) == len(head) + 1
    for i in range(30):
        assert (target / f"Folder {i % 2}/note {i}.md").read_text(encoding="utf-8") == f"Note {i}.\n"
    assert not list(target.rglob("*-2.md")) and git(target, "status", "--porcelain") == ""


# ---- names every clone can hold -------------------------------------------------------------------

NFD_CAFE = "Cafe\u0301.md"
LONG = "Deep/" + "a" * 100 + "/" + "b" * 100 + "/" + "c" * 80 + ".md"  # 290 characters


def test_a_name_no_clone_on_windows_or_macos_could_hold_gets_a_suffix_and_a_line(tmp_path: Path) -> None:
    """A device name, a folder ending in a dot, a case twin and a Unicode-form twin of a file of the
    vault, and a path past Windows' 260 characters: each lands under a name every clone can check
    out, told in one line; the vault's own files keep their bytes."""
    target = _fresh(tmp_path)
    write(target, "Notes/Rust.md", "# Rust\n\nmine\n")
    write(target, "Notes/Caf\u00e9.md", "# Cafe\n\nmine\n")
    commit(Vault(target), ["Notes/Rust.md", "Notes/Caf\u00e9.md"], "person: notes")
    wanted = ["Notes/CON.md", "Ideas./x.md", "Notes/rust.md", f"Notes/{NFD_CAFE}", LONG]
    lines: list[dict[str, object]] = [{"format": "tmem-export", "version": 1}]
    lines += [
        {"kind": "note", "id": f"n{i}", "path": rel, "head": "", "body": f"imported {i}\n"}
        for i, rel in enumerate(wanted)
    ]
    out = tmp_path / "crafted.jsonl"
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    done = _import(target, out)
    landed = [str(i["path"]) for i in done["items"]]  # type: ignore[attr-defined]
    assert landed[:4] == ["Notes/CON-note.md", "Ideas/x.md", "Notes/rust-2.md", "Notes/Cafe\u0301-2.md"]
    assert landed[4].startswith("Deep/") and landed[4].endswith(".md") and len(landed[4]) <= 250
    for i, rel in enumerate(landed):
        assert (target / rel).read_text(encoding="utf-8") == f"imported {i}\n"
    assert (target / "Notes/Rust.md").read_text(encoding="utf-8") == "# Rust\n\nmine\n"
    assert (target / "Notes/Caf\u00e9.md").read_text(encoding="utf-8") == "# Cafe\n\nmine\n"
    warnings = done["warnings"]
    assert isinstance(warnings, list)
    for rel, final in zip(wanted, landed, strict=True):
        assert (
            sum(1 for w in warnings if w.startswith(f"{rel}: ") and w.endswith(f"; imported as {final}")) == 1
        )
    assert any("'CON' is a device name on Windows" in w for w in warnings)
    assert any("differs only in case" in w and w.startswith("Notes/rust.md") for w in warnings)
    listed = git(target, "ls-files", "-z").split("\0")
    assert unportable(p for p in listed if p) == []
