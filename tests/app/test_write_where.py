"""Writing where the person wants: `add --folder` (and MCP `remember`'s `folder`) files a note in an
adopted vault's own folders, named by its title, its tier the folder's; MCP and CLI `update` edit
one section of a body (append, prepend, replace) or find and replace an exact text."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import (
    FAKE_CONFIG,
    all_at_once,
    as_json,
    build_obsidian_vault,
    changed_files,
    commit,
    git,
    git_log,
    ok,
    one_error_line,
    write,
)
from mcp import ClientSession
from mcp_client import call, error, serve

from tiered_memory.cli.main import cli
from tiered_memory.errors import BadInput
from tiered_memory.model import envelope, sections
from tiered_memory.storage import crypto
from tiered_memory.storage.vault import Vault

Run = Callable[..., Result]


def tmem(root: Path | None, *args: str) -> Result:
    prefix = ["--vault", str(root)] if root else []
    return CliRunner().invoke(cli, [*prefix, *args], catch_exceptions=False)


@pytest.fixture
def adopted(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """An Obsidian vault adopted in place; `Daily/` notes are short-term by its folder rules."""
    root = tmp_path / "vault"
    written = build_obsidian_vault(root)
    (root / "tmem.yaml").write_text(
        FAKE_CONFIG
        + "folders:\n  exclude: ['**/*.excalidraw.md', Templates]\n  tiers:\n    Daily/**: short\n",
        encoding="utf-8",
    )
    ok(tmem(None, "init", "--adopt", str(root)))
    return root, written


# ---- add --folder ---------------------------------------------------------------------------------


def test_add_folder_files_the_note_in_the_vaults_own_folder_named_by_its_title(
    adopted: tuple[Path, dict[str, bytes]],
) -> None:
    root, written = adopted
    before = len(git_log(root))
    added = as_json(
        tmem(
            root,
            "add",
            "--json",
            "--folder",
            "Projects/Budget",
            "--title",
            "Survey budget: Q3",
            "--",
            "We spend 40k.",
        )
    )
    note = added["note"]
    assert note["path"] == "Projects/Budget/Survey budget Q3.md"  # made, named by its title
    assert note["tier"] == "long"  # the folder's tier: the vault's default_tier
    assert "We spend 40k." in (root / note["path"]).read_text(encoding="utf-8")
    log = git_log(root)
    assert len(log) == before + 1 and log[0] == "remember: Survey budget: Q3 [Projects/Budget/note]"
    assert git(root, "status", "--porcelain") == ""
    assert changed_files(root, written) == []  # nothing the person wrote changed
    listed = as_json(tmem(root, "list", "--json", "--folder", "Projects/Budget"))
    assert [n["path"] for n in listed] == [note["path"]]  # indexed where it is
    # the tier comes from the folder rules (`Daily/**: short`); a title that clashes gets -2
    daily = as_json(tmem(root, "add", "--json", "--folder", "Daily", "--title", "2026-11-20", "--", "Rain."))
    assert daily["note"]["path"] == "Daily/2026-11-20-2.md" and daily["note"]["tier"] == "short"
    assert (root / "Daily/2026-11-20.md").read_bytes() == written["Daily/2026-11-20.md"]
    # inside tmem's own tree a note keeps its id for a name
    tree = as_json(
        tmem(root, "add", "--json", "--folder", "memory/long-term/recipes", "--", "Salt the water.")
    )
    assert tree["note"]["path"] == f"memory/long-term/recipes/{tree['note']['id']}.md"


def test_add_folder_with_a_tier_that_is_not_the_folders_is_refused(
    adopted: tuple[Path, dict[str, bytes]],
) -> None:
    root, _ = adopted
    line = one_error_line(tmem(root, "add", "--folder", "Daily", "--tier", "long", "--", "Rain."), 2)
    assert "Daily" in line and "short-term" in line
    assert as_json(tmem(root, "add", "--json", "--folder", "Daily", "--tier", "short", "--", "Sun."))


@pytest.mark.parametrize(
    ("folder", "says"),
    [
        ("/tmp/elsewhere", "absolute"),
        ("~/notes", "absolute"),
        ("../outside", "(..)"),
        ("Projects/../../outside", "(..)"),
        (".tmem", "hidden"),
        (".tmem/locks", "hidden"),
        (".git/hooks", "hidden"),
        ("Projects/.hidden", "hidden"),
        (".obsidian", "hidden"),
        ("Templates/Weekly", "left out by folders.exclude in tmem.yaml"),
        ("Linked", "symbolic link"),
        ("Linked/deeper", "symbolic link"),
        ("Home.md", "not a folder"),
        ("Nested/Inner", "git repository of its own"),
        ("Bad\nName", "control character"),
        ("", "empty"),
    ],
)
def test_add_folder_refuses_what_is_not_a_folder_of_the_vault_in_one_line(
    adopted: tuple[Path, dict[str, bytes]], tmp_path: Path, folder: str, says: str
) -> None:
    root, written = adopted
    outside = tmp_path / "outside-target"
    outside.mkdir()
    os.symlink(outside, root / "Linked")
    (root / "Nested").mkdir()
    subprocess.run(["git", "init", "-q", str(root / "Nested")], check=True)
    log = git_log(root)
    listing = _files(root)
    line = one_error_line(tmem(root, "add", "--folder", folder, "--", "A note for somewhere."), 2)
    assert says in line
    assert git_log(root) == log
    assert _files(root) == listing
    assert list(outside.iterdir()) == []
    assert changed_files(root, written) == []


@pytest.fixture
def narrowed(tmp_path: Path) -> Path:
    """A vault whose `folders.include` names one folder of the person's, and whose `exclude` leaves
    out the notes of it with a hyphen in their name."""
    root = tmp_path / "narrowed"
    ok(tmem(None, "init", str(root)))
    (root / "tmem.yaml").write_text(
        FAKE_CONFIG + "folders:\n  include: ['Notes/**']\n  exclude: ['Notes/*-*.md']\n", encoding="utf-8"
    )
    git(root, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qam", "folders: Notes only")
    return root


def test_add_folder_outside_what_the_index_includes_is_refused_by_its_setting(narrowed: Path) -> None:
    """A note filed where the `folders:` rules leave it out would never be indexed or found: the
    folder, or the very file the note's title names, is refused in one line naming the setting,
    and nothing is written. A tier folder is always included: a note goes there."""
    root = narrowed
    log, listing = git_log(root), _files(root)
    line = one_error_line(tmem(root, "add", "--folder", "Recipes", "--", "Bread needs flour."), 2)
    assert line == (
        "tmem: folder 'Recipes' is left out by folders.include in tmem.yaml: a note there would never "
        "be indexed or found; nothing written"
    )
    # The folder is in, the file its title names is not (nor the one named by its id).
    line = one_error_line(tmem(root, "add", "--folder", "Notes", "--title", "Pre-flight", "--", "Fuel."), 2)
    assert line.startswith("tmem: folder 'Notes': the note's file Notes/pre-flight-")
    assert line.endswith(
        ".md is left out by folders.exclude in tmem.yaml: it would never be indexed or found; nothing written"
    )
    assert git_log(root) == log and _files(root) == listing

    added = as_json(tmem(root, "add", "--json", "--folder", "Notes", "--title", "Preflight", "--", "Fuel."))
    assert added["note"]["path"] == "Notes/Preflight.md"
    tiered = as_json(
        tmem(root, "add", "--json", "--folder", "memory/long-term/knowledge", "--", "Tea is hot.")
    )
    assert tiered["note"]["path"].startswith("memory/long-term/knowledge/")
    for word, path in (("fuel", added["note"]["path"]), ("tea", tiered["note"]["path"])):
        found = as_json(tmem(root, "search", "--mode", "keyword", "--json", word))
        assert [hit["path"] for hit in found["results"]] == [path]


def test_mcp_remember_in_a_folder_outside_what_the_index_includes_is_refused(narrowed: Path) -> None:
    root = narrowed
    log = git_log(root)

    async def scenario(session: ClientSession) -> None:
        refused = await error(session, "remember", text="Bread needs flour.", folder="Recipes")
        assert "folder 'Recipes' is left out by folders.include in tmem.yaml" in refused
        refused = await error(session, "remember", text="Fuel.", title="Pre-flight", folder="Notes")
        assert "left out by folders.exclude in tmem.yaml" in refused

    serve(root, scenario)
    assert git_log(root) == log


def _files(root: Path) -> list[str]:
    """Every path of the vault but git's and tmem's own state (a command makes .tmem/ on its first run)."""
    return sorted(
        p.relative_to(root).as_posix() for p in root.rglob("*") if not {".git", ".tmem"} & set(p.parts)
    )


# ---- update: a section, or find and replace ---------------------------------------------------------

NOTE = """---
title: Trip
---
# Trip

Plan for the trip.

## Packing

- boots
- map

### Later

- tent

## Notes

```
## Packing
not a heading: code
```
"""


def _note(vault_path: Path) -> str:
    write(vault_path, "memory/long-term/trip.md", NOTE)
    commit(Vault(vault_path), ["memory/long-term/trip.md"], "test: a trip note")
    return "memory/long-term/trip.md"


def test_cli_update_edits_one_section_and_find_replace(vault_path: Path, run: Run) -> None:
    rel = _note(vault_path)
    appended = as_json(run("update", rel, "--section", "packing", "--append", "- rain jacket", "--json"))
    assert appended["changed"] == ["body"] and appended["commit"]
    text = (vault_path / rel).read_text(encoding="utf-8")
    assert "- boots\n- map\n- rain jacket\n\n### Later\n\n- tent\n" in text  # before its subheading
    assert text.endswith("```\n## Packing\nnot a heading: code\n```\n")  # code untouched
    ok(run("update", rel, "--section", "## Packing", "--prepend", "Pack the night before."))
    assert "## Packing\n\nPack the night before.\n\n- boots\n" in (vault_path / rel).read_text(
        encoding="utf-8"
    )
    ok(run("update", rel, "--section", "Later", "--body", "- stove"))
    text = (vault_path / rel).read_text(encoding="utf-8")
    assert "### Later\n\n- stove\n\n## Notes" in text and "tent" not in text
    ok(run("update", rel, "--find", "boots", "--replace", "hiking boots"))
    assert "- hiking boots\n" in (vault_path / rel).read_text(encoding="utf-8")
    assert git_log(vault_path)[0].startswith("update: Trip (body)")
    # each edit is one commit of the note alone
    assert git(vault_path, "show", "--name-only", "--format=", "HEAD").split() == [rel]
    assert git(vault_path, "status", "--porcelain") == ""


def test_cli_update_refuses_a_find_that_does_not_occur_as_often_as_said(vault_path: Path, run: Run) -> None:
    rel = _note(vault_path)
    before = (vault_path / rel).read_bytes()
    log = git_log(vault_path)
    line = one_error_line(run("update", rel, "--find", "Packing", "--replace", "Gear"), 2)
    assert "occurs 2 time(s)" in line and "not 1" in line  # the heading and the code block's line
    one_error_line(run("update", rel, "--find", "nowhere", "--replace", "x"), 2)
    assert "no heading 'Tent'" in one_error_line(run("update", rel, "--section", "Tent", "--append", "x"), 2)
    one_error_line(run("update", rel, "--section", "Packing", "--append", "x", "--prepend", "y"), 2)
    one_error_line(run("update", rel, "--prepend", "y"), 2)
    one_error_line(run("update", rel, "--replace", "y"), 2)
    assert (vault_path / rel).read_bytes() == before and git_log(vault_path) == log
    ok(run("update", rel, "--find", "Packing", "--replace", "Gear", "--count", "2"))
    assert "Packing" not in (vault_path / rel).read_text(encoding="utf-8")


def test_a_sealed_note_is_edited_by_section_while_unlocked(
    vault_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(vault_path, "tmem.yaml", FAKE_CONFIG + "privacy:\n  encrypt: sensitive\n")
    commit(Vault(vault_path), ["tmem.yaml"], "config: encryption on")
    monkeypatch.setenv(crypto.PASSPHRASE_ENV, "correct horse battery staple")
    ok(run("unlock", "--new"))
    text = "# Meilin\n\n## Fears\n\n- thunderstorms\n\n## Likes\n\n- tea\n"
    added = as_json(run("add", "--json", "--category", "profile", "--", text))["note"]
    ok(run("update", added["id"], "--section", "Fears", "--append", "- deep water"))
    data = (vault_path / added["path"]).read_bytes()
    assert envelope.is_envelope(data) and b"deep water" not in data
    shown = as_json(run("show", added["id"], "--json"))["body"]
    assert "- thunderstorms\n- deep water\n\n## Likes\n" in shown
    assert not any("deep water" in line for line in git_log(vault_path))


def test_mcp_remember_folder_and_update_sections(adopted: tuple[Path, dict[str, bytes]]) -> None:
    root, written = adopted

    async def scenario(session: ClientSession) -> None:
        added = await call(
            session,
            "remember",
            text="## Steps\n\n- boil water\n",
            title="Pasta",
            folder="Recipes",
            category="note",
        )
        assert added["path"] == "Recipes/Pasta.md" and added["tier"] == "long"
        assert "hidden" in await error(session, "remember", text="x y z", folder=".tmem")
        assert "(..)" in await error(session, "remember", text="x y z", folder="../up")
        done = await call(session, "update", id=added["id"], section="Steps", text="- salt it")
        assert done["changed"] == ["body"]
        await call(
            session, "update", id=added["id"], section="Steps", operation="prepend", text="Serves two."
        )
        body = (await call(session, "read", id=added["id"]))["body"]
        assert "## Steps\n\nServes two.\n\n- boil water\n- salt it\n" in body
        await call(
            session, "update", id=added["id"], section="steps", operation="replace", text="- order pizza"
        )
        body = (await call(session, "read", id=added["id"]))["body"]
        assert "- order pizza" in body and "boil" not in body and "Serves" not in body
        await call(session, "update", id=added["id"], find="pizza", replace="pasta")
        assert "- order pasta" in (await call(session, "read", id=added["id"]))["body"]
        refused = await error(session, "update", id=added["id"], find="a", replace="4", count=1)
        assert "not 1" in refused and "nothing was changed" in refused
        assert "no heading" in await error(session, "update", id=added["id"], section="Nope", text="x")
        assert "give its text as text" in await error(
            session, "update", id=added["id"], append="x", section="Steps"
        )
        assert "one change of the body" in await error(session, "update", id=added["id"], body="x", find="a")

    serve(root, scenario)
    text = (root / "Recipes/Pasta.md").read_text(encoding="utf-8")
    assert "- order pasta" in text
    log = git_log(root)
    assert log[0].startswith("update: Pasta (body)")
    assert any(line == "remember: Pasta [Recipes/note]" for line in log)
    assert changed_files(root, written) == []


# ---- the pure rules ---------------------------------------------------------------------------------


def test_headings_skip_code_and_sections_keep_line_endings() -> None:
    body = "# A\r\n\r\ntext\r\n~~~\r\n## B\r\n~~~\r\n## C\r\n"
    assert [(h.level, h.text) for h in sections.headings(body)] == [(1, "A"), (2, "C")]
    assert sections.edit_section(body, "A", "append", "more\nlines") == (
        "# A\r\n\r\ntext\r\n~~~\r\n## B\r\n~~~\r\n\r\nmore\r\nlines\r\n## C\r\n"
    )
    assert sections.edit_section("# A\n## C", "C", "append", "x") == "# A\n## C\n\nx\n"
    assert sections.edit_section("# A\n\n## C\n\nold\n", "C", "replace", "") == "# A\n\n## C\n"
    assert sections.headings("## C# ##\n#nottag\n") == [sections.Heading(2, "C#", 0)]
    marked = "## **Tasks**\n\n- a\n"
    assert sections.edit_section(marked, "tasks", "append", "- b") == "## **Tasks**\n\n- a\n- b\n"


def test_ambiguous_or_missing_headings_are_refused() -> None:
    body = "# Log\n\n## Day\n\na\n\n### Day\n\nb\n\n## Day\n\nc\n"
    with pytest.raises(BadInput, match="3 headings 'Day'.*'## Day'"):
        sections.edit_section(body, "Day", "append", "x")
    assert "b\n\nx\n\n## Day" in sections.edit_section(body, "### Day", "append", "x")
    with pytest.raises(BadInput, match="2 headings '## Day'"):
        sections.edit_section(body, "## Day", "append", "x")
    with pytest.raises(BadInput, match="no heading 'Night'.*'Log', 'Day'"):
        sections.edit_section(body, "Night", "append", "x")
    with pytest.raises(BadInput, match="occurs 0 time"):
        sections.replace_text(body, "zzz", "y", 1)


def test_a_section_edit_of_a_hand_written_note_changes_only_that_section(
    adopted: tuple[Path, dict[str, bytes]],
) -> None:
    """CRLF, frontmatter and every other byte stay; no key is added to a person's frontmatter."""
    root, written = adopted
    rel = "Projects/Survey plan.md"
    ok(tmem(root, "update", rel, "--section", "Survey plan", "--append", "Budget:: 40k"))
    assert (root / rel).read_bytes() == written[rel] + b"\r\nBudget:: 40k\r\n"
    ok(tmem(root, "update", rel, "--find", "Alice", "--replace", "Bob"))
    assert (root / rel).read_bytes() == written[rel].replace(b"Alice", b"Bob") + b"\r\nBudget:: 40k\r\n"
    assert changed_files(root, written) == [rel]
    assert git(root, "status", "--porcelain") == ""


def test_parallel_section_appends_each_keep_their_line(vault_path: Path) -> None:
    """Real processes at once: each edit is made from the note as the last writer left it."""
    rel = _note(vault_path)
    lines = [f"- item{i:02d}zq" for i in range(6)]
    all_at_once(vault_path, [["update", rel, "--section", "Packing", "--append", line] for line in lines])
    packing = git(vault_path, "show", f"HEAD:{rel}").split("## Packing\n", 1)[1].split("### Later", 1)[0]
    assert sorted(line for line in packing.splitlines() if "zq" in line) == lines
