"""`tmem import --format <tool>` over the fixtures in tests/fixtures/imports (each written in its
tool's documented format): what lands where, one commit per import, idempotence, dedup, redaction."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import FAKE_CONFIG, as_json, commit, git, git_log, ok, one_error_line

from tiered_memory.cli.main import cli
from tiered_memory.model import note as notes
from tiered_memory.storage.vault import Vault, init_vault

Run = Callable[..., Result]
FIXTURES = Path(__file__).parents[1] / "fixtures" / "imports"
AWS_KEY = "AKIA" + "QX7RZ2MPL4TN6VBC"

CASES = [
    # format, path under FIXTURES, items added, a phrase that must land in the vault
    ("claude", "claude/conversations.json", 2, "7-parameter Helmert transformation"),
    ("chatgpt", "chatgpt", 1, "Cache them in the CI workspace"),
    ("mcp-memory", "mcp-memory/memory.json", 3, "leads [[Tunnel Project]]"),
    ("basic-memory", "basic-memory", 2, "- [decision] We use SQLite FTS5"),
    ("claude-code", "claude-code/project", 4, "never mock the EPSG database"),
    ("claude-code", "claude-code/automemory", 3, "**Why:** mocked tests passed"),
    ("mem0", "mem0/memories.json", 3, "Is a vegetarian and allergic to nuts"),
    ("claude-mem", "claude-mem/export.json", 3, "the grids now live under data/grids"),
]


def _vault_text(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((root / "memory").rglob("*.md")))


@pytest.mark.parametrize(("fmt", "rel", "added", "phrase"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_import_once_then_nothing_changes(
    run: Run, vault_path: Path, fmt: str, rel: str, added: int, phrase: str
) -> None:
    commits = len(git_log(vault_path))
    result = as_json(run("import", "--format", fmt, str(FIXTURES / rel), "--json"))
    assert result["added"] == added and result["skipped"] == 0, result["items"]
    assert len(git_log(vault_path)) == commits + 1
    assert git_log(vault_path)[0].startswith(f"import: {fmt} ")
    assert phrase in _vault_text(vault_path)
    assert all(i["source"].startswith(f"{fmt}:") for i in result["items"])

    again = as_json(run("import", "--format", fmt, str(FIXTURES / rel), "--json"))
    assert again["added"] == again["merged"] == again["updated"] == 0
    assert again["skipped"] == added and again["commit"] is None
    assert len(git_log(vault_path)) == commits + 1


def _note_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / "memory").rglob("*.md"))


def _forget_imports(root: Path) -> None:
    """What tells an import it ran before, gone: the ledger (a clone made before it, a line a
    merge mangled) and `.tmem/` (derived, deleted by a person or a fresh clone)."""
    shutil.rmtree(root / ".tmem")
    (root / ".tmem-imports.jsonl").unlink()
    commit(Vault(root), [".tmem-imports.jsonl"], "person: the ledger removed")


@pytest.mark.parametrize(("fmt", "rel"), [c[:2] for c in CASES], ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_an_import_that_finds_everything_there_makes_no_commit(
    run: Run, vault_path: Path, fmt: str, rel: str
) -> None:
    """Without the ledger and without `.tmem/`, each item is found in the notes themselves as the
    note (or session) it was filed as: not filed again, not merged into itself again (a confidence
    raised on no new evidence), its memories not extracted again; with nothing written the ledger
    is left alone too: no commit at all."""
    ok(run("import", "--format", fmt, str(FIXTURES / rel)))
    files = _note_files(vault_path)
    _forget_imports(vault_path)
    head = git_log(vault_path)
    again = run("import", "--format", fmt, str(FIXTURES / rel))
    assert again.stdout.rstrip().endswith("nothing new"), again.stdout
    assert _note_files(vault_path) == files
    assert git_log(vault_path) == head and not (vault_path / ".tmem-imports.jsonl").exists()


def test_a_tmem_export_imported_again_without_ledger_or_index_makes_no_commit(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    ok(run("add", "--category", "decision", "Use CGCS2000 for control points"))
    ok(run("import", "--format", "chatgpt", str(FIXTURES / "chatgpt")))
    out = tmp_path / "own.jsonl"
    ok(run("export", "-o", str(out)))
    other = tmp_path / "other"
    init_vault(other, config_text=FAKE_CONFIG)

    def into_other(*args: str) -> Result:
        return CliRunner().invoke(cli, ["--vault", str(other), *args], catch_exceptions=False)

    ok(into_other("import", "--format", "tmem", str(out)))
    files = _note_files(other)
    _forget_imports(other)
    head = git_log(other)
    again = into_other("import", "--format", "tmem", str(out))
    assert again.stdout.rstrip().endswith("nothing new"), again.stdout
    assert _note_files(other) == files and git_log(other) == head


def test_the_vault_s_own_export_imported_back_makes_no_commit(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    ok(run("add", "--category", "decision", "Use CGCS2000 for control points"))
    ok(run("import", "--format", "chatgpt", str(FIXTURES / "chatgpt")))
    out = tmp_path / "own.jsonl"
    ok(run("export", "-o", str(out)))
    head = git_log(vault_path)
    done = run("import", "--format", "tmem", str(out))
    ok(done)
    assert git_log(vault_path) == head, git(vault_path, "show", "--stat", "HEAD")
    assert done.stdout.rstrip().endswith("nothing new")
    assert git(vault_path, "status", "--porcelain") == ""


def test_conversations_become_archived_sessions(run: Run, vault_path: Path) -> None:
    ok(run("import", "--format", "chatgpt", str(FIXTURES / "chatgpt/conversations.json")))
    [session] = (vault_path / "memory/archive/sessions").rglob("*.md")
    note = notes.parse(session.read_text(encoding="utf-8"), "x.md")
    assert note.meta["origin"] == "67e0c1a2-93b4-8005-a1b2-c3d4e5f60718"
    assert note.meta["messages"] == 3  # the hidden system message and the regenerated answer are left out
    assert "regenerated" not in note.body and "## Summary" in note.body
    listed = as_json(run("session", "list", "--json"))
    assert any(s["title"] == "Flaky CI job on the geodesy repo" for s in listed)


def test_mcp_people_are_profiles_about_the_entity(run: Run, vault_path: Path) -> None:
    ok(run("import", "--format", "mcp-memory", str(FIXTURES / "mcp-memory/memory.json")))
    [alice] = (vault_path / "memory/long-term/relationships").glob("alice-chen-*.md")
    note = notes.parse(alice.read_text(encoding="utf-8"), "x.md")
    assert note.category == "profile" and note.entities == ["Alice Chen"]
    assert "- Prefers pyproj over vendor software" in note.body


def test_import_goes_through_dedup_and_redaction(run: Run, vault_path: Path, tmp_path: Path) -> None:
    ok(run("add", "Prefers morning meetings and async communication"))
    data = json.loads((FIXTURES / "mem0/memories.json").read_text())
    data["results"][2]["memory"] = f"Deploys with the key {AWS_KEY}"
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = as_json(run("import", "--format", "mem0", str(path), "--json"))
    assert result["merged"] == 1 and result["added"] == 2
    assert AWS_KEY not in _vault_text(vault_path)
    assert AWS_KEY not in (vault_path / ".tmem-imports.jsonl").read_text()


def test_changed_item_is_imported_again(run: Run, vault_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "bm"
    shutil.copytree(FIXTURES / "basic-memory", folder)
    ok(run("import", "--format", "basic-memory", str(folder)))
    page = folder / "decisions.md"
    page.write_text(page.read_text() + "- [decision] Vectors are stored with hnswlib\n", encoding="utf-8")
    result = as_json(run("import", "--format", "basic-memory", str(folder), "--json"))
    assert result["skipped"] == 1 and result["added"] + result["updated"] + result["merged"] == 1


def test_dry_run_changes_nothing(run: Run, vault_path: Path) -> None:
    head = git_log(vault_path)
    result = as_json(
        run("import", "--format", "mem0", str(FIXTURES / "mem0/memories.json"), "--dry-run", "--json")
    )
    assert result["dry_run"] and result["added"] == 3 and result["commit"] is None
    assert git_log(vault_path) == head and not (vault_path / ".tmem-imports.jsonl").exists()
    assert "Is a vegetarian" not in _vault_text(vault_path)


def test_wrong_format_is_one_line(run: Run) -> None:
    result = run("import", "--format", "chatgpt", str(FIXTURES / "claude/conversations.json"))
    assert result.exit_code == 2 and "not a ChatGPT conversations export" in result.stderr


NESTED = "[" * 100_000  # deeper than Python's recursion limit
ODD_SHAPES = [
    (fmt, name, text)
    for fmt in ("tmem", "claude", "chatgpt", "mcp-memory", "mem0", "claude-mem")
    for name, text in (("nested.json", NESTED), ("nested-object.json", '{"notes": ' + NESTED))
] + [
    (
        "chatgpt",
        "nodes-without-ids.json",
        '[{"mapping": {"a": {"message": {"content": {"parts": ["hi"]}}}}}]',
    ),
    ("chatgpt", "mapping-as-list.json", '[{"mapping": [1, 2]}]'),
    (
        "mcp-memory",
        "relation-without-type.json",
        '{"type": "entity", "name": "A"}\n{"type": "relation", "from": "A", "to": "B"}',
    ),
    ("tmem", "entries-not-objects.json", '{"format": "tmem-export", "notes": [1, 2]}'),
]


@pytest.mark.parametrize(("fmt", "name", "text"), ODD_SHAPES, ids=[f"{c[0]}:{c[1]}" for c in ODD_SHAPES])
def test_an_export_of_an_unexpected_shape_is_one_line_and_changes_nothing(
    run: Run, vault_path: Path, tmp_path: Path, fmt: str, name: str, text: str
) -> None:
    source = tmp_path / name
    source.write_text(text, encoding="utf-8")
    head = git_log(vault_path)
    one_error_line(run("import", "--format", fmt, str(source)), 2)
    assert git_log(vault_path) == head


@pytest.mark.parametrize("fmt", ["mcp-memory", "basic-memory", "claude-code"])
def test_a_pipe_is_never_waited_on(run: Run, vault_path: Path, tmp_path: Path, fmt: str) -> None:
    """A pipe given as the export, or lying in an exported folder, is not read: it would block."""
    pipe = tmp_path / "memory.json"
    os.mkfifo(pipe)
    assert "not a file or folder" in one_error_line(run("import", "--format", fmt, str(pipe)), 2)
    folder = tmp_path / "export"
    shutil.copytree(FIXTURES / ("basic-memory" if fmt != "claude-code" else "claude-code/automemory"), folder)
    os.mkfifo(folder / "stuck.md")
    if fmt != "mcp-memory":
        ok(run("import", "--format", fmt, str(folder)))


# ---- a tmem export is untrusted: it writes note files and nothing else ---------------------------

BAD_PATHS = [
    "memory/x.py",
    "memory/.github/workflows/ci.yml",
    "memory/.tmem-crypto.json",
    ".git/hooks/pre-commit",
    "../escape.md",
    "memory/long-term/../../.git/hooks/post-merge.md",
    "/etc/cron.d/x.md",
    "memory/long-term/other.json",
]


def _export(tmp_path: Path, paths: list[str], sessions: list[str] = ()) -> Path:  # type: ignore[assignment]
    lines: list[dict[str, object]] = [{"format": "tmem-export", "version": 1}]
    for i, rel in enumerate(paths):
        body = f"#!/bin/sh\necho owned {i}\n"
        lines.append(
            {"kind": "note", "id": f"n{i}", "path": rel, "frontmatter": {"id": f"n{i}"}, "body": body}
        )
    for i, rel in enumerate(sessions):
        message = {"role": "user", "content": f"hello {i}", "timestamp": "2026-01-01T10:00:00Z"}
        lines.append({"kind": "session", "id": f"ses-{i}", "path": rel, "messages": [message]})
    out = tmp_path / "crafted.jsonl"
    out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return out


def _files(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix() for p in root.rglob("*") if ".tmem" not in p.parts[len(root.parts) :]
    }


def test_crafted_export_is_refused_whole_and_leaves_nothing(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    head, before = git_log(vault_path), _files(vault_path)
    good = "memory/long-term/knowledge_base/domains/fine.md"
    line = one_error_line(run("import", "--format", "tmem", str(_export(tmp_path, [good, *BAD_PATHS]))), 2)
    assert "nothing imported" in line and "memory/x.py" in line and "and 5 more" in line
    assert git_log(vault_path) == head and _files(vault_path) == before
    assert git(vault_path, "status", "--porcelain", "--ignored").strip() == "!! .tmem/"
    assert not (tmp_path / "escape.md").exists()


@pytest.mark.parametrize("bad", BAD_PATHS)
def test_each_path_that_is_not_a_note_is_refused(
    run: Run, vault_path: Path, tmp_path: Path, bad: str
) -> None:
    head, before = git_log(vault_path), _files(vault_path)
    line = one_error_line(run("import", "--format", "tmem", str(_export(tmp_path, [bad]))), 2)
    assert repr(bad) in line
    assert git_log(vault_path) == head and _files(vault_path) == before


def test_a_session_path_out_of_place_is_refused(run: Run, vault_path: Path, tmp_path: Path) -> None:
    head = git_log(vault_path)
    bad = "memory/archive/sessions/../../.git/hooks/x.md"
    one_error_line(run("import", "--format", "tmem", str(_export(tmp_path, [], [bad]))), 2)
    assert git_log(vault_path) == head and not (vault_path / ".git/hooks/x.md").exists()


def test_note_and_state_paths_are_imported(run: Run, vault_path: Path, tmp_path: Path) -> None:
    paths = ["memory/long-term/knowledge_base/domains/fine.md", "memory/mid-term/projects/p1/tasks.json"]
    result = as_json(run("import", "--format", "tmem", str(_export(tmp_path, paths)), "--json"))
    assert result["added"] == 2 and {i["path"] for i in result["items"]} == set(paths)
    assert (vault_path / paths[1]).read_text(encoding="utf-8") == "#!/bin/sh\necho owned 1\n"


def test_a_link_in_an_imported_folder_is_not_read(run: Run, vault_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "bm"
    shutil.copytree(FIXTURES / "basic-memory", folder)
    secret = tmp_path / "private.md"
    secret.write_text("---\ntitle: Private\n---\nThe door code is 4711 and nowhere else.\n", encoding="utf-8")
    (folder / "linked.md").symlink_to(secret)
    ok(run("import", "--format", "basic-memory", str(folder)))
    assert "door code is 4711" not in _vault_text(vault_path)


def test_a_broken_json_export_says_where_it_breaks(run: Run, vault_path: Path, tmp_path: Path) -> None:
    source = tmp_path / "memories.json"
    source.write_text('[\n  {"memory": "likes tea"},\n  {"memory": "likes coffee",}\n]\n', encoding="utf-8")
    head = git_log(vault_path)
    line = one_error_line(run("import", "--format", "mem0", str(source)), 2)
    assert "not JSON (line 3, column" in line
    assert git_log(vault_path) == head


# ---- a format told from the file; an archive is untrusted ----------------------------------------


def test_a_tmem_export_is_imported_without_naming_its_format(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    paths = ["memory/long-term/knowledge_base/domains/fine.md"]
    result = as_json(run("import", str(_export(tmp_path, paths)), "--json"))
    assert result["format"] == "tmem" and result["added"] == 1


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("conversations.json", (FIXTURES / "claude/conversations.json").read_bytes()),
        ("memory.json", (FIXTURES / "mcp-memory/memory.json").read_bytes()),
        ("notes.txt", b"just some words\n"),
        ("other.json", b'{"format": "something-else", "notes": []}\n'),
        ("empty.json", b""),
        ("binary.json", b"\xff\xfe\x00\x01" * 100),
    ],
)
def test_a_file_that_does_not_say_what_wrote_it_asks_for_format(
    run: Run, vault_path: Path, tmp_path: Path, name: str, data: bytes
) -> None:
    source = tmp_path / name
    source.write_bytes(data)
    head = git_log(vault_path)
    line = one_error_line(run("import", str(source)), 2)
    assert "cannot tell what wrote it; name it with --format (one of: tmem, claude" in line
    assert git_log(vault_path) == head
    folder = FIXTURES / "basic-memory"
    assert "name it with --format" in one_error_line(run("import", str(folder)), 2)


def test_a_crafted_export_is_refused_whole_without_format_too(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    head, before = git_log(vault_path), _files(vault_path)
    line = one_error_line(run("import", str(_export(tmp_path, ["memory/long-term/ok.md", *BAD_PATHS]))), 2)
    assert "nothing imported" in line and "and 5 more" in line
    assert git_log(vault_path) == head and _files(vault_path) == before


def test_an_export_whose_bytes_are_not_utf8_is_one_line(run: Run, vault_path: Path, tmp_path: Path) -> None:
    source = _export(tmp_path, ["memory/long-term/ok.md"])
    source.write_bytes(source.read_bytes().replace(b"echo owned", b"echo \xff\xfe owned"))
    head = git_log(vault_path)
    assert "cannot read it (UnicodeDecodeError)" in one_error_line(run("import", str(source)), 2)
    assert git_log(vault_path) == head


def test_an_export_entry_larger_than_a_note_may_be_is_one_line(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    line = {"kind": "note", "id": "big", "path": "memory/long-term/big.md", "body": "word " * 600_000}
    source = tmp_path / "big.jsonl"
    source.write_text(
        json.dumps({"format": "tmem-export"}) + "\n" + json.dumps(line) + "\n", encoding="utf-8"
    )
    head = git_log(vault_path)
    assert "larger than index.max_file_mb" in one_error_line(run("import", str(source)), 2)
    assert git_log(vault_path) == head and not (vault_path / "memory/long-term/big.md").exists()


def _zip(tmp_path: Path, name: str, data: bytes, *, link: bool = False) -> Path:
    import stat
    import zipfile

    out = tmp_path / "export.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        if link:
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(info, data)
    return out


CONVERSATIONS = (FIXTURES / "claude/conversations.json").read_bytes()
BAD_ARCHIVES = [
    ("../conversations.json", CONVERSATIONS, False, "a path outside it"),
    ("/tmp/conversations.json", CONVERSATIONS, False, "a path outside it"),
    ("x/../../conversations.json", CONVERSATIONS, False, "a path outside it"),
    ("conversations.json", b"/home/someone/.ssh/id_rsa", True, "is a symbolic link"),
    ("conversations.json", CONVERSATIONS.replace(b"Helmert", b"Helm\xe9rt"), False, "is not UTF-8 text"),
    ("conversations.json", b"[" + b" " * (3 * 1024 * 1024) + b"]", False, "inflates to 3 MB, past the 2 MB"),
]


@pytest.mark.parametrize(("name", "data", "link", "why"), BAD_ARCHIVES, ids=[c[3] for c in BAD_ARCHIVES])
def test_an_archive_member_that_is_no_plain_file_is_refused_in_one_line(
    run: Run,
    vault_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    data: bytes,
    link: bool,
    why: str,
) -> None:
    from tiered_memory.app.importers import items

    monkeypatch.setattr(items, "MAX_MEMBER_MB", 2)
    head = git_log(vault_path)
    line = one_error_line(run("import", "--format", "claude", str(_zip(tmp_path, name, data, link=link))), 2)
    assert why in line
    assert git_log(vault_path) == head


def test_a_plain_archive_is_imported(run: Run, vault_path: Path, tmp_path: Path) -> None:
    source = _zip(tmp_path, "data-2026/conversations.json", CONVERSATIONS)
    assert as_json(run("import", "--format", "claude", str(source), "--json"))["added"] >= 2
