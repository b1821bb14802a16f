"""The `tmem` command line over real temporary vaults with real git: exit codes, output lines, files, log."""

from __future__ import annotations

import importlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result
from helpers import ROOT, as_json, git, git_log, ok, one_error_line, write

from tiered_memory.cli import cli

Run = Callable[..., Result]


def remember(run: Run, text: str, *args: str) -> dict[str, Any]:
    data: dict[str, Any] = as_json(run("add", "--json", *args, "--", text))["note"]
    return data


def search_paths(run: Run, *args: str) -> list[str]:
    return [r["path"] for r in as_json(run("search", "--json", *args))["results"]]


def snapshot(root: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for path in (root / "memory").rglob("*"):
        if path.is_file():
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    out["tmem.yaml"] = (root / "tmem.yaml").read_bytes()
    return out


# ---- init -------------------------------------------------------------------------------------


def test_init_creates_a_vault(tmp_path: Path) -> None:
    target = tmp_path / "my-vault"
    result = ok(CliRunner().invoke(cli, ["init", str(target)]))
    first, where = result.stdout.strip().splitlines()
    assert first == f"created vault at {target.resolve()}"
    assert where.startswith(f"what tmem remembers goes in {target.resolve() / 'memory'}/<tier>/")
    assert (target / "memory" / "long-term" / "user_profile.md").is_file()
    assert len(git_log(target)) == 1


def test_init_json(tmp_path: Path) -> None:
    target = tmp_path / "v"
    data = as_json(CliRunner().invoke(cli, ["init", "--json", str(target)]))
    assert data["vault"] == str(target.resolve()) and data["adopted"] is False
    assert data["merge_driver"].endswith("merge-driver %O %A %B %P")


def test_init_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    target = tmp_path / "docs"
    write(target, "thesis.tex", "precious")
    line = one_error_line(CliRunner().invoke(cli, ["init", str(target)]), 2)
    assert "not empty" in line
    assert [p.name for p in target.iterdir()] == ["thesis.tex"]


def test_init_refuses_an_existing_vault(run: Run, vault_path: Path) -> None:
    line = one_error_line(CliRunner().invoke(cli, ["init", str(vault_path)]), 2)
    assert "already a tmem vault" in line
    assert len(git_log(vault_path)) == 1


# ---- add --------------------------------------------------------------------------------------


TEXT = "Deploy with blue green\n\nSwitch the router only after the health checks pass.\n"


@pytest.mark.parametrize("how", ["argument", "stdin", "file", "file-dash"])
def test_add_from_argument_stdin_or_file(run: Run, vault_path: Path, tmp_path: Path, how: str) -> None:
    if how == "argument":
        result = run("add", "--json", "--tags", "deploy,ops", TEXT)
    elif how == "stdin":
        result = run("add", "--json", "--tags", "deploy,ops", input=TEXT)
    elif how == "file":
        source = write(tmp_path, "input.md", TEXT)
        result = run("add", "--json", "--tags", "deploy,ops", "--file", str(source))
    else:
        result = run("add", "--json", "--tags", "deploy,ops", "--file", "-", input=TEXT)
    data = json.loads(ok(result).stdout)["note"]
    assert data["title"] == "Deploy with blue green"
    assert data["tier"] == "long"
    assert data["category"] == "note"
    assert data["tags"] == ["deploy", "ops"]
    assert data["id"].startswith("deploy-with-blue-green-")
    assert data["id"].isascii()
    assert data["frontmatter"]["id"] == data["id"]
    assert data["path"].startswith("memory/long-term/")
    assert data["body"] == TEXT
    text = (vault_path / data["path"]).read_text(encoding="utf-8")
    assert text.startswith("---\n")
    assert text.endswith(TEXT)
    assert git_log(vault_path)[0] == "remember: Deploy with blue green [long-term/note]"
    assert git(vault_path, "status", "--porcelain") == ""
    # It is searchable at once.
    assert search_paths(run, "--mode", "keyword", "health checks router") == [data["path"]]


def test_add_text_output_names_id_and_path(run: Run) -> None:
    result = ok(run("add", "Prefers short answers"))
    line = result.stdout.strip()
    assert line.startswith("remembered prefers-short-answers-")
    assert line.endswith(".md)")


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["--category", "decision"], "long-term/decision"),
        (["--category", "error"], "long-term/error"),
        (["--project", "falcon"], "mid-term/note"),
        (["--tier", "short"], "short-term/note"),
        (["--tier", "archive", "--category", "session"], "archive/session"),
    ],
)
def test_commit_message_names_title_tier_and_category(
    run: Run, vault_path: Path, args: list[str], where: str
) -> None:
    data = remember(run, "Use Postgres for the job queue", *args)
    assert git_log(vault_path)[0] == f"remember: Use Postgres for the job queue [{where}]"
    assert data["path"].startswith(f"memory/{where.split('/')[0]}/")
    assert git(vault_path, "show", "--name-only", "--format=", "HEAD").split() == [data["path"]]


def test_add_with_every_field(run: Run, vault_path: Path) -> None:
    data = remember(
        run,
        "Kafka retention is seven days",
        "--title",
        "Kafka retention",
        "--project",
        "falcon",
        "--category",
        "fact",
        "--entity",
        "Kafka",
        "--importance",
        "0.9",
        "--confidence",
        "0.7",
        "--source",
        "session-42",
    )
    assert data["path"].startswith("memory/mid-term/projects/falcon/")
    meta = data["frontmatter"]
    assert (meta["title"], meta["project"], meta["category"]) == ("Kafka retention", "falcon", "fact")
    assert (meta["importance"], meta["confidence"], meta["source"]) == (0.9, 0.7, "session-42")
    assert meta["entities"] == ["Kafka"]
    assert data["body"].startswith("# Kafka retention\n\n")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["   "], "empty"),
        (["--category", "gossip", "x"], "unknown category 'gossip'"),
        (["--tier", "forever", "x"], "unknown tier 'forever'"),
        (["--importance", "7", "x"], "importance must be between 0 and 1"),
        (["--project", "../escape", "x"], "invalid project id"),
    ],
)
def test_add_bad_input(run: Run, vault_path: Path, args: list[str], fragment: str) -> None:
    before = snapshot(vault_path)
    line = one_error_line(run("add", *args), 2)
    assert fragment in line
    assert snapshot(vault_path) == before
    assert len(git_log(vault_path)) == 1


def test_add_refuses_a_binary_file(run: Run, vault_path: Path, tmp_path: Path) -> None:
    blob = tmp_path / "photo.png"
    blob.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    assert "binary" in one_error_line(run("add", "--file", str(blob)), 2)
    assert len(git_log(vault_path)) == 1


def test_add_refuses_text_over_the_size_limit(run: Run, vault_path: Path) -> None:
    (vault_path / "tmem.yaml").write_text("embeddings:\n  provider: fake\nindex:\n  max_file_mb: 0.001\n")
    assert "max_file_mb" in one_error_line(run("add", input="x" * 5000), 2)


def test_add_redacts_secrets(run: Run, vault_path: Path) -> None:
    key = "AKIA" + "Q7ZP2MX4LVN3KT8R"  # assembled: a scanner reading this file sees no key
    data = remember(run, f"The deploy key is {key} for the staging bucket")
    text = (vault_path / data["path"]).read_text()
    assert key not in text
    assert "REDACTED" in text


def test_an_id_made_from_redacted_text_carries_no_marker_words(run: Run, vault_path: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # assembled: no scanner sees a token here
    data = remember(run, f"the deploy token is {token}")
    assert token not in (vault_path / data["path"]).read_text()
    assert data["id"].startswith("the-deploy-token-is-")
    assert "redacted" not in data["id"] and "github" not in data["id"]
    assert "redacted" not in data["path"].rsplit("/", 1)[1]
    assert as_json(run("show", "--json", data["id"]))["path"] == data["path"]


def test_add_cjk_text(run: Run, vault_path: Path) -> None:
    data = remember(run, "数据库选型：我们决定使用 Postgres 作为任务队列", "--category", "decision")
    assert data["id"].startswith("数据库选型-我们决定使用-postgres-作为任务队列-")  # its words, in its script
    assert data["title"] == "数据库选型：我们决定使用 Postgres 作为任务队列"
    assert (
        git_log(vault_path)[0]
        == "remember: 数据库选型：我们决定使用 Postgres 作为任务队列 [long-term/decision]"
    )
    assert search_paths(run, "--mode", "keyword", "任务队列") == [data["path"]]
    assert as_json(run("show", "--json", data["id"]))["title"] == data["title"]


def test_add_title_cannot_escape_the_vault(run: Run, vault_path: Path, tmp_path: Path) -> None:
    data = remember(run, "body", "--title", "../../../outside", "--category", "decision")
    assert data["path"].startswith("memory/long-term/decisions/")
    assert ".." not in data["path"]
    assert not (tmp_path / "outside.md").exists()


def test_remember_is_an_alias_of_add(run: Run, vault_path: Path) -> None:
    ok(run("remember", "Aliases work too"))
    assert git_log(vault_path)[0] == "remember: Aliases work too [long-term/note]"


# ---- show -------------------------------------------------------------------------------------


def test_show_by_id_and_by_path(run: Run) -> None:
    data = remember(run, "Show me later", "--tags", "t1")
    by_id = ok(run("show", data["id"])).stdout
    assert by_id.splitlines()[0] == f"# {data['path']}  (id: {data['id']})"
    assert "Show me later" in by_id
    assert ok(run("show", data["path"])).stdout == by_id
    assert ok(run("show", data["path"].removeprefix("memory/"))).stdout == by_id
    shown = as_json(run("show", "--json", data["id"]))
    assert (shown["id"], shown["path"], shown["tags"]) == (data["id"], data["path"], ["t1"])


def test_show_a_hand_written_note_by_its_default_id(run: Run, vault_path: Path) -> None:
    write(vault_path, "memory/long-term/knowledge_base/domains/tea.md", "# Tea\n\nOolong, no sugar.\n")
    shown = as_json(run("show", "--json", "knowledge-base-domains-tea"))
    assert shown["title"] == "tea"  # its file name, as Obsidian shows it
    assert shown["tier"] == "long"


def test_show_unknown_id_exits_1(run: Run) -> None:
    assert one_error_line(run("show", "no-such-note"), 1) == "tmem: no note with id 'no-such-note'"
    assert "no note at" in one_error_line(run("show", "memory/long-term/missing.md"), 1)


@pytest.mark.parametrize(
    "ref", ["../../etc/passwd", "/etc/passwd", "memory/../../../etc/passwd", "../tmem.yaml"]
)
def test_show_refuses_paths_outside_the_vault(run: Run, ref: str) -> None:
    line = one_error_line(run("show", ref), 2)
    assert "root:" not in line


def test_show_a_binary_file_is_bad_input(run: Run, vault_path: Path) -> None:
    (vault_path / "memory/long-term/photo.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    assert "binary file" in one_error_line(run("show", "memory/long-term/photo.md"), 2)


def test_show_warns_about_malformed_frontmatter(run: Run, vault_path: Path) -> None:
    text = "---\ntitle: [oops\n---\n# Broken\n"
    path = write(vault_path, "memory/long-term/broken.md", text)
    result = ok(run("show", "memory/long-term/broken.md"))
    assert "malformed YAML frontmatter" in result.stderr
    assert "# Broken" in result.stdout
    assert path.read_text() == text


def test_show_json_with_a_binary_yaml_value(run: Run, vault_path: Path) -> None:
    write(vault_path, "memory/long-term/bin.md", "---\nid: bin\nblob: !!binary aGVsbG8=\n---\nbody\n")
    result = run("show", "--json", "bin")
    assert as_json(result)["id"] == "bin"


# ---- list -------------------------------------------------------------------------------------


@pytest.fixture
def listed(run: Run, vault_path: Path) -> dict[str, str]:
    ids = {
        "kafka": remember(run, "Kafka retention is seven days", "--project", "falcon", "--tags", "kafka,ops")[
            "id"
        ],
        "postgres": remember(run, "Use Postgres for the queue", "--category", "decision", "--tags", "db")[
            "id"
        ],
        "tea": remember(run, "Prefers oolong tea", "--tier", "short", "--category", "preference")["id"],
    }
    write(
        vault_path,
        "memory/long-term/old.md",
        "---\nid: old-note\ntitle: Old note\ncreated: 2020-01-01\nupdated: 2020-01-02\n---\nancient\n",
    )
    ids["old"] = "old-note"
    return ids


def list_ids(run: Run, *args: str) -> list[str]:
    return [row["id"] for row in as_json(run("list", "--json", *args))]


def test_list_everything_in_tier_order(run: Run, listed: dict[str, str]) -> None:
    rows = as_json(run("list", "--json"))
    ids = [r["id"] for r in rows]
    assert set(listed.values()) <= set(ids)
    assert len(ids) == 4  # the vault's template notes wait until someone writes in them
    order = {"short": 0, "mid": 1, "long": 2, "archive": 3}
    assert [order[r["tier"]] for r in rows] == sorted(order[r["tier"]] for r in rows)


LIST_CASES: list[tuple[list[str], list[str]]] = [
    (["--tier", "mid"], ["kafka"]),
    (["--tier", "mid", "--tier", "short"], ["tea", "kafka"]),
    (["--category", "decision"], ["postgres"]),
    (["--tag", "kafka"], ["kafka"]),
    (["--tag", "ops,db"], ["kafka", "postgres"]),
    (["--project", "falcon"], ["kafka"]),
    (["--until", "2021-01-01"], ["old"]),
    (["--since", "2021-01-01", "--category", "decision"], ["postgres"]),
    (["--since", "2999-01-01"], []),
    (["--tier", "long", "--category", "preference"], []),
]


def test_list_filters(run: Run, listed: dict[str, str]) -> None:
    mine = set(listed.values())
    for args, expected in LIST_CASES:
        got = [i for i in list_ids(run, *args) if i in mine]
        assert got == [listed[name] for name in expected], args


def test_list_tier_filter_includes_hand_written_seed_notes_but_not_json_state(
    run: Run, listed: dict[str, str], vault_path: Path
) -> None:
    write(vault_path, "memory/mid-term/active_contexts.json", '{"projects": {"falcon": {}}}\n')
    write(vault_path, "memory/short-term/context_stack.json", '{"stack": ["kafka"]}\n')
    session = vault_path / "memory/short-term/current_session.md"
    session.write_text(session.read_text(encoding="utf-8") + "Talking about kafka.\n", encoding="utf-8")
    # JSON state has its own commands (st list, task list): a listing of notes leaves it out.
    assert set(list_ids(run, "--tier", "mid")) == {listed["kafka"]}
    assert set(list_ids(run, "--tier", "short")) == {listed["tea"], "current-session"}
    assert "context-stack" in [h["id"] for h in as_json(run("search", "--json", "kafka"))["results"]]
    assert list_ids(run, "--until", "2021-01-01") == [listed["old"]]
    assert list_ids(run, "--since", "2999-01-01") == []


def test_list_since_excludes_old_notes(run: Run, listed: dict[str, str]) -> None:
    recent = list_ids(run, "--since", "7d")
    assert listed["old"] not in recent
    assert {listed["kafka"], listed["postgres"], listed["tea"]} <= set(recent)


def test_list_text_output_and_limit(run: Run, listed: dict[str, str]) -> None:
    lines = ok(run("list", "--tier", "short", "--limit", "1")).stdout.splitlines()
    assert len(lines) == 1
    assert "short" in lines[0]
    assert ok(run("list", "--since", "2999-01-01")).stdout.strip() == "no notes"


def test_a_title_with_line_breaks_is_written_on_one_line(run: Run, vault_path: Path) -> None:
    """A title is a heading, a frontmatter line and a commit's subject: line breaks in the one given
    (an agent's argument, a pasted text) must not add lines to any of them (an `Agent:` trailer)."""
    added = as_json(run("add", "--json", "--title", "Release plan\n\nAgent: claude-code", "Ship on Friday."))
    note = (vault_path / added["note"]["path"]).read_text(encoding="utf-8")
    assert "title: 'Release plan Agent: claude-code'" in note
    assert "# Release plan Agent: claude-code\n\nShip on Friday." in note
    message = git(vault_path, "log", "-1", "--format=%B").strip()
    assert message == "remember: Release plan Agent: claude-code [long-term/note]"
    ok(run("project", "new", "apollo", "--title", "Moon\nlanding"))
    status = (vault_path / "memory/mid-term/projects/apollo/status.md").read_text(encoding="utf-8")
    assert "title: Moon landing\n" in status and "# Moon landing\n" in status
    assert git_log(vault_path)[0] == "project new: apollo (Moon landing)"


def test_list_bad_date_is_usage_error(run: Run) -> None:
    result = run("list", "--since", "last tuesday")
    assert result.exit_code == 2
    assert "is not a date" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", [["list"], ["search", "tea"], ["export"]])
@pytest.mark.parametrize("age", ["3000000d", "99999999999w"])
def test_an_age_past_the_calendar_is_a_usage_error(run: Run, command: list[str], age: str) -> None:
    result = run(*command, "--since", age)
    assert result.exit_code == 2
    assert "before the year 1" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("option", "value", "named"),
    [("--category", "bogus", "category"), ("--tier", "shrot", "tier"), ("--status", "done", "status")],
)
def test_a_filter_value_no_note_can_have_is_refused_with_the_known_ones(
    run: Run, listed: dict[str, str], option: str, value: str, named: str
) -> None:
    """A typo in a filter is an error naming the values that exist, not an empty answer."""
    for command in (["list"], ["search", "--mode", "keyword", "anything"]):
        line = one_error_line(run(*command, option, value), 2)
        assert f"unknown {named} '{value}'" in line
    assert "decision" in one_error_line(run("list", "--category", "bogus"), 2)
    ok(run("list", "--category", "attachment"))  # what a search calls a file found by name


# ---- forget -----------------------------------------------------------------------------------


def test_forget_removes_the_file_in_a_revertible_commit(run: Run, vault_path: Path) -> None:
    data = remember(run, "Temporary thought about zebras")
    path = vault_path / data["path"]
    original = path.read_bytes()
    result = ok(run("forget", "--yes", "--reason", "obsolete", data["id"]))
    assert result.stdout.strip() == f"forgot {data['id']} ({data['path']})"
    assert not path.exists()
    assert git_log(vault_path)[0] == "forget: Temporary thought about zebras [long-term] (obsolete)"
    assert git(vault_path, "status", "--porcelain") == ""
    assert search_paths(run, "--mode", "keyword", "zebras") == []
    assert one_error_line(run("show", data["id"]), 1)
    # git can bring it back exactly.
    git(vault_path, "checkout", "HEAD~1", "--", data["path"])
    assert path.read_bytes() == original
    assert search_paths(run, "--mode", "keyword", "zebras") == [data["path"]]


def test_forget_a_hand_written_uncommitted_note_keeps_it_in_history(run: Run, vault_path: Path) -> None:
    rel = "memory/long-term/draft.md"
    original = write(vault_path, rel, "# Draft\n\nprecious words, never committed\n").read_bytes()
    ok(run("forget", "--yes", rel))
    assert not (vault_path / rel).exists()
    assert git_log(vault_path)[0].startswith("forget: draft")
    assert git(vault_path, "show", f"HEAD~1:{rel}").encode() == original


def test_forget_keeps_uncommitted_edits_in_history(run: Run, vault_path: Path) -> None:
    data = remember(run, "Edited by hand later")
    path = vault_path / data["path"]
    path.write_text(path.read_text() + "An edit made outside tmem.\n")
    edited = path.read_bytes()
    ok(run("forget", "--yes", data["id"]))
    assert git(vault_path, "show", f"HEAD~1:{data['path']}").encode() == edited


def test_forget_json(run: Run) -> None:
    data = remember(run, "Forget me")
    forgotten = as_json(run("forget", "-y", "--json", data["path"]))
    assert forgotten == {"forgotten": data["id"], "path": data["path"], "commit": forgotten["commit"]}
    assert len(forgotten["commit"]) == 40


def test_forget_without_yes_and_no_tty_refuses(run: Run, vault_path: Path) -> None:
    data = remember(run, "Do not lose this")
    log = git_log(vault_path)
    line = one_error_line(run("forget", data["id"]), 2)
    assert "--yes" in line
    assert (vault_path / data["path"]).exists()
    assert git_log(vault_path) == log


def test_forget_unknown_id(run: Run, vault_path: Path) -> None:
    one_error_line(run("forget", "--yes", "nope"), 1)
    assert len(git_log(vault_path)) == 1


# ---- edit -------------------------------------------------------------------------------------


def editor_script(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-editor.sh"
    script.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    script.chmod(0o755)
    return str(script)


def test_edit_reindexes_and_commits(run: Run, vault_path: Path, tmp_path: Path) -> None:
    data = remember(run, "Deploy checklist")
    editor = editor_script(tmp_path, 'printf "Also page the on-call quartermaster.\\n" >> "$1"')
    result = ok(run("edit", data["id"], env={"EDITOR": editor}))
    assert result.stdout.startswith(f"saved {data['path']} (")
    assert (vault_path / data["path"]).read_text().endswith("Also page the on-call quartermaster.\n")
    assert git_log(vault_path)[0] == "edit: Deploy checklist"
    assert git(vault_path, "status", "--porcelain") == ""
    assert search_paths(run, "--mode", "keyword", "quartermaster") == [data["path"]]


def test_edit_without_changes_makes_no_commit(run: Run, vault_path: Path, tmp_path: Path) -> None:
    data = remember(run, "Nothing changes")
    log = git_log(vault_path)
    result = ok(run("edit", data["id"], env={"EDITOR": editor_script(tmp_path, "true")}))
    assert result.stdout.strip() == "no changes"
    assert git_log(vault_path) == log


@pytest.mark.parametrize("editor", ["tmem-no-such-editor", "false"])
def test_an_editor_that_fails_is_one_line_naming_the_cure(
    run: Run, vault_path: Path, tmp_path: Path, editor: str
) -> None:
    """No $EDITOR and no terminal, or one that is no program: click said only "Error: ...
    Editing failed", exit 1; the note and the vault are left as they were."""
    data = remember(run, "Nothing changes")
    log = git_log(vault_path)
    line = one_error_line(run("edit", data["id"], env={"EDITOR": editor, "VISUAL": editor}), 2)
    assert f"tmem: {editor}: Editing failed" in line and "set $EDITOR" in line
    assert git_log(vault_path) == log and git(vault_path, "status", "--porcelain") == ""


def test_edit_keeps_the_updated_time_a_person_set_in_the_editor(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    """tmem moves `updated` of its own notes on an edit, unless the edit set it: the person said when."""
    data = remember(run, "Trip log\n\nFlew to Lisbon.")
    editor = editor_script(tmp_path, 'sed -i "s/^updated: .*/updated: 2019-05-04 10:00:00+00:00/" "$1"')
    ok(run("edit", data["id"], env={"EDITOR": editor}))
    assert "updated: 2019-05-04 10:00:00+00:00\n" in (vault_path / data["path"]).read_text(encoding="utf-8")
    moved = editor_script(tmp_path, 'printf "Then to Porto.\\n" >> "$1"')
    ok(run("edit", data["id"], env={"EDITOR": moved}))
    assert "updated: 2019-05-04" not in (vault_path / data["path"]).read_text(encoding="utf-8")


def agent_then_person(tmp_path: Path, vault_path: Path, note_id: str, agent_args: str, person: str) -> str:
    """A fake $EDITOR: it loads the file into its buffer ($BUF), an agent (another process) updates
    the note while it is open, then the person's change to the buffer is written back to the file."""
    agent = f"{sys.executable} -m tiered_memory --vault {vault_path} update {note_id} {agent_args}"
    buffer = tmp_path / "editor-buffer"
    return editor_script(
        tmp_path, f'BUF={buffer}\ncp "$1" "$BUF"\n{agent} >/dev/null || exit 1\n{person}\ncat "$BUF" > "$1"'
    )


def test_edit_keeps_what_an_agent_wrote_while_the_editor_was_open(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    data = remember(run, "Deploy checklist\n\nRun the migrations first.")
    editor = agent_then_person(
        tmp_path,
        vault_path,
        data["id"],
        "--append 'Agent: the staging deploy is on Fridays.'",
        'printf "Person: page the on-call quartermaster.\\n" >> "$BUF"',
    )
    result = ok(run("edit", data["id"], env={"EDITOR": editor, "PYTHONPATH": str(ROOT)}))
    assert result.stdout.startswith(f"saved {data['path']} (") and "meanwhile" not in result.stdout
    text = (vault_path / data["path"]).read_text(encoding="utf-8")
    assert "Agent: the staging deploy is on Fridays." in text
    assert "Person: page the on-call quartermaster." in text
    assert "conflict" not in text
    assert git_log(vault_path)[:2] == ["edit: Deploy checklist", "update: Deploy checklist (body)"]
    assert git(vault_path, "status", "--porcelain") == ""


def test_edit_keeps_both_versions_when_an_agent_changed_the_same_lines(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    data = remember(run, "Standup time\n\nThe standup is at nine.")
    editor = agent_then_person(
        tmp_path,
        vault_path,
        data["id"],
        "--body 'The standup is at ten.'",
        "sed -i 's/The standup is at nine./The standup is at half past nine./' \"$BUF\"",
    )
    result = ok(run("edit", data["id"], env={"EDITOR": editor, "PYTHONPATH": str(ROOT)}))
    assert "changed meanwhile on the same lines" in result.stdout
    text = (vault_path / data["path"]).read_text(encoding="utf-8")
    assert "The standup is at ten." in text and "The standup is at half past nine." in text
    assert "conflict: true" in text and "<<<<<<<" in text
    assert git(vault_path, "status", "--porcelain") == ""


def test_edit_of_a_persons_note_keeps_its_bytes(run: Run, vault_path: Path, tmp_path: Path) -> None:
    """The editor works on a copy, and the copy's bytes are saved as typed: comments, flow lists
    and CRLF line endings of a hand-written note's frontmatter stay."""
    rel = "memory/long-term/by-hand.md"
    before = b"---\r\n# mine\r\ntags: [a, b]\r\n---\r\nWritten by hand.\r\n"
    (vault_path / rel).write_bytes(before)
    ok(run("edit", rel, env={"EDITOR": editor_script(tmp_path, 'printf "More.\\r\\n" >> "$1"')}))
    assert (vault_path / rel).read_bytes() == before + b"More.\r\n"
    assert git(vault_path, "status", "--porcelain") == ""


def test_edit_of_a_note_moved_meanwhile_saves_it_where_it_is_now(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    data = remember(run, "Retro notes\n\nKeep the demo short.")
    archive = (
        f"{sys.executable} -m tiered_memory --vault {vault_path} archive {data['id']} >/dev/null || exit 1"
    )
    buf = tmp_path / "editor-buffer"
    editor = editor_script(
        tmp_path, f'cp "$1" {buf}\n{archive}\nprintf "Person line.\\n" >> {buf}\ncat {buf} > "$1"'
    )
    ok(run("edit", data["id"], env={"EDITOR": editor, "PYTHONPATH": str(ROOT)}))
    assert not (vault_path / data["path"]).exists()
    shown = as_json(run("show", data["id"], "--json"))
    assert shown["path"].startswith("memory/archive/") and "Person line." in shown["body"]
    assert git(vault_path, "status", "--porcelain") == ""


def test_edit_of_a_persons_note_moved_meanwhile_saves_it_where_it_is_now(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    """A note without an `id` key goes by an id made from its path; archived while the editor is
    open, it is still found, and the save makes no second copy at the old path."""
    rel = "memory/long-term/orchard.md"
    write(vault_path, rel, "# Orchard\n\nApples.\n")
    ok(run("reindex"))
    archive = f"{sys.executable} -m tiered_memory --vault {vault_path} archive {rel} >/dev/null || exit 1"
    editor = editor_script(tmp_path, f'{archive}\nprintf "Pears.\\n" >> "$1"')
    ok(run("edit", rel, env={"EDITOR": editor, "PYTHONPATH": str(ROOT)}))
    assert not (vault_path / rel).exists()
    [moved] = [p for p in (vault_path / "memory").rglob("orchard*.md")]
    assert "memory/archive/" in moved.as_posix() and moved.read_text(encoding="utf-8").endswith(
        "Apples.\nPears.\n"
    )
    assert git(vault_path, "status", "--porcelain") == ""


def test_edit_of_a_moved_note_never_lands_in_another_note_with_the_same_name(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    """Ids made from paths can be shared across tiers: another `orchard.md` is not the note the
    edit began at, and is left as it is."""
    rel, other = "memory/long-term/orchard.md", "memory/mid-term/orchard.md"
    write(vault_path, rel, "# Orchard\n\nApples.\n")
    write(vault_path, other, "Another orchard entirely.\n")
    ok(run("reindex"))
    gone = f"{sys.executable} -m tiered_memory --vault {vault_path} forget {rel} --yes >/dev/null || exit 1"
    editor = editor_script(tmp_path, f'{gone}\nprintf "Pears.\\n" >> "$1"')
    ok(run("edit", rel, env={"EDITOR": editor, "PYTHONPATH": str(ROOT)}))
    assert (vault_path / other).read_text(encoding="utf-8") == "Another orchard entirely.\n"
    assert (vault_path / rel).read_text(encoding="utf-8") == "# Orchard\n\nApples.\nPears.\n"


def test_edit_saved_in_another_encoding_is_refused_and_the_text_kept(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    """An editor set to Latin-1 writes `é` as one byte: saving it as U+FFFD would change the
    person's words without a word said; the save is refused and their text kept beside the vault."""
    data = remember(run, "Menu\n\nThe soup of the day.")
    before = (vault_path / data["path"]).read_bytes()
    log = git_log(vault_path)
    result = run("edit", data["id"], env={"EDITOR": editor_script(tmp_path, 'printf "Caf\\351.\\n" >> "$1"')})
    assert result.exit_code == 2
    assert "not UTF-8" in result.stderr and "Traceback" not in result.stderr
    assert (vault_path / data["path"]).read_bytes() == before and git_log(vault_path) == log
    kept = Path(result.stderr.split("it is kept in ", 1)[1].split()[0])
    assert kept.read_bytes().endswith(b"Caf\xe9.\n")
    # A note's private text: the owner's alone, and in this test's own folder, not the real /tmp.
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    assert kept.is_relative_to(tmp_path.parent)


def test_edit_unknown_id(run: Run, tmp_path: Path) -> None:
    one_error_line(run("edit", "nope", env={"EDITOR": editor_script(tmp_path, "exit 9")}), 1)


# ---- search -----------------------------------------------------------------------------------


@pytest.fixture
def corpus(run: Run, vault_path: Path) -> dict[str, str]:
    paths = {
        "queue": remember(
            run, "Use Postgres SKIP LOCKED for the job queue", "--category", "decision", "--tags", "db"
        )["path"],
        "kafka": remember(run, "Kafka retention on the orders topic is seven days", "--project", "falcon")[
            "path"
        ],
        "tea": remember(
            run, "Prefers oolong tea without sugar", "--category", "preference", "--tier", "short"
        )["path"],
    }
    return paths


def test_search_json_returns_results(run: Run, corpus: dict[str, str]) -> None:
    data = as_json(run("search", "--json", "job", "queue"))
    assert data["query"] == "job queue"
    assert data["mode"] == "hybrid"
    assert data["notice"] is None
    first = data["results"][0]
    assert first["path"] == corpus["queue"]
    assert set(first) >= {"id", "title", "path", "tier", "category", "score", "updated", "snippet"}
    assert "explain" not in first
    assert first["category"] == "decision"


def test_search_text_output(run: Run, corpus: dict[str, str]) -> None:
    lines = ok(run("search", "oolong", "tea")).stdout.splitlines()
    assert lines[0].startswith(" 1. ")
    assert "Prefers oolong tea without sugar" in lines[0]
    assert "[short/preference]" in lines[0]
    assert corpus["tea"] in lines[1]


def test_search_explain_includes_components(run: Run, corpus: dict[str, str]) -> None:
    data = as_json(run("search", "--json", "--explain", "kafka retention"))
    explain = data["results"][0]["explain"]
    assert {"keyword", "vector", "fused", "decay", "tier_weight", "prior", "final"} <= set(explain)
    assert explain["keyword"] > 0 and explain["vector"] > 0
    text = ok(run("search", "--explain", "kafka retention")).stdout
    assert "explain: keyword=" in text


@pytest.mark.parametrize("query", [[], [""], ["   "]])
def test_search_empty_query(run: Run, query: list[str]) -> None:
    assert one_error_line(run("search", *query), 2) == "tmem: empty query: say what to search for"


def test_search_modes(run: Run, corpus: dict[str, str]) -> None:
    keyword = as_json(run("search", "--json", "--mode", "keyword", "orders topic"))
    assert keyword["mode"] == "keyword"
    assert [r["path"] for r in keyword["results"]] == [corpus["kafka"]]
    vector = as_json(run("search", "--json", "--mode", "vector", "orders topic"))
    assert vector["mode"] == "vector"
    assert vector["results"][0]["path"] == corpus["kafka"]
    assert ok(run("search", "--mode", "keyword", "xylophone")).stdout.strip() == "no matching memories"


SEARCH_CASES: list[tuple[list[str], list[str]]] = [
    (["--tier", "short"], ["tea"]),
    (["--category", "decision"], ["queue"]),
    (["--tag", "db"], ["queue"]),
    (["--project", "falcon"], ["kafka"]),
    (["--tier", "archive"], []),
]


def test_search_filters(run: Run, corpus: dict[str, str]) -> None:
    query = "postgres queue kafka orders oolong tea"
    for args, expected in SEARCH_CASES:
        want = [corpus[name] for name in expected]
        assert search_paths(run, "--mode", "keyword", *args, query) == want, args
        # Vector candidates may add weaker notes, but only ones the filters allow.
        allowed = {row["path"] for row in as_json(run("list", "--json", *args))}
        hybrid = search_paths(run, "--mode", "hybrid", *args, query)
        assert set(hybrid) <= allowed, args
        assert hybrid[: len(want)] == want, args


def test_search_limit(run: Run, corpus: dict[str, str]) -> None:
    assert len(search_paths(run, "-k", "1", "queue")) == 1
    assert run("search", "--limit", "0", "queue").exit_code == 2


def test_superseded_notes_are_hidden_unless_all(run: Run, vault_path: Path, corpus: dict[str, str]) -> None:
    old = "memory/long-term/decisions/old-queue.md"
    write(
        vault_path,
        old,
        "---\nid: old-queue\ntitle: Use Redis for the job queue\nstatus: superseded\n---\nRedis lists for the job queue.\n",
    )
    by_pointer = "memory/long-term/decisions/older-queue.md"
    write(
        vault_path,
        by_pointer,
        "---\nid: older-queue\nsuperseded_by: old-queue\n---\nSQS for the job queue.\n",
    )
    for mode in ("keyword", "hybrid"):
        found = search_paths(run, "--mode", mode, "job queue")
        assert old not in found and by_pointer not in found
        assert corpus["queue"] in found
        everything = search_paths(run, "--mode", mode, "--all", "job queue")
        assert old in everything and by_pointer in everything


def test_archived_notes_rank_after_the_others_unless_asked_for(run: Run, vault_path: Path) -> None:
    # Give the archive a big weight, so only the ordering rule can put it last.
    (vault_path / "tmem.yaml").write_text(
        "embeddings:\n  provider: fake\nsearch:\n  tier_weights:\n    archive: 2.0\n", encoding="utf-8"
    )
    archived = write(
        vault_path,
        "memory/archive/sessions/falcon.md",
        "# Falcon launch\n\nFalcon falcon launch day falcon.\n",
    )
    current = write(
        vault_path,
        "memory/long-term/knowledge_base/domains/birds.md",
        "# Birds\n\nNotes about many birds seen this year, a falcon among them, and a heron, and gulls.\n",
    )
    arch_rel = archived.relative_to(vault_path).as_posix()
    cur_rel = current.relative_to(vault_path).as_posix()
    for mode in ("keyword", "hybrid"):
        # An archived note holding every word of the query would rank as any other: this one
        # holds two of three.
        data = as_json(run("search", "--json", "--explain", "--mode", mode, "falcon launch heron"))
        paths = [r["path"] for r in data["results"]]
        assert paths.index(cur_rel) < paths.index(arch_rel), mode
        assert all(r["tier"] != "archive" for r in data["results"][: paths.index(arch_rel)])
        by_score = {r["path"]: r["score"] for r in data["results"]}
        assert by_score[arch_rel] > by_score[cur_rel]  # ranked last despite the higher score
        assert search_paths(run, "--mode", mode, "--tier", "archive", "falcon launch heron") == [arch_rel]
        asked = search_paths(
            run, "--mode", mode, "--tier", "archive", "--tier", "long", "falcon launch heron"
        )
        assert asked.index(arch_rel) < asked.index(cur_rel)


def test_recall_is_an_alias_of_search(run: Run, corpus: dict[str, str]) -> None:
    recalled = as_json(run("recall", "--json", "job queue"))["results"]
    searched = as_json(run("search", "--json", "job queue"))["results"]
    assert recalled[0]["path"] == searched[0]["path"] == corpus["queue"]
    assert {r["id"] for r in recalled} == {r["id"] for r in searched}


def test_search_never_commits_or_rewrites_but_records_access(
    run: Run, vault_path: Path, corpus: dict[str, str]
) -> None:
    write(vault_path, "memory/long-term/hand.md", "hand written, no frontmatter, queue mentioned\r\n")
    ok(run("reindex"))
    before = snapshot(vault_path)
    mtimes = {p: (vault_path / p).stat().st_mtime_ns for p in before}
    log = git_log(vault_path)
    data = as_json(run("search", "--json", "job queue"))
    ok(run("search", "--mode", "keyword", "queue"))
    ok(run("recall", "tea"))
    assert snapshot(vault_path) == before
    assert {p: (vault_path / p).stat().st_mtime_ns for p in before} == mtimes
    assert git_log(vault_path) == log
    assert git(vault_path, "status", "--porcelain").splitlines() == ["?? memory/long-term/hand.md"]
    access = (vault_path / ".tmem-access.jsonl").read_text().splitlines()
    entries = [json.loads(line) for line in access]
    assert all(set(e) == {"id", "at"} for e in entries)
    assert [e["id"] for e in entries[: len(data["results"])]] == [r["id"] for r in data["results"]]


def test_search_with_a_malformed_note_still_works(run: Run, vault_path: Path, corpus: dict[str, str]) -> None:
    broken = write(vault_path, "memory/long-term/broken.md", "---\ntitle: [oops\n---\nThe queue broke.\n")
    before = broken.read_bytes()
    result = ok(run("search", "--json", "--mode", "keyword", "queue"))
    assert "malformed YAML frontmatter" in result.stderr
    assert "memory/long-term/broken.md" in [r["path"] for r in json.loads(result.stdout)["results"]]
    assert broken.read_bytes() == before


def test_search_skips_binary_and_huge_files(run: Run, vault_path: Path, corpus: dict[str, str]) -> None:
    (vault_path / "memory/long-term/blob.md").write_bytes(b"\x00\x01queue\x02" * 100)
    write(vault_path, "memory/long-term/huge.md", "queue " * (2 * 1024 * 1024))
    result = ok(run("search", "--json", "--mode", "keyword", "queue"))
    assert "warning: skipped memory/long-term/blob.md: binary file, not a note" in result.stderr
    assert "warning: skipped memory/long-term/huge.md: larger than index.max_file_mb" in result.stderr
    paths = [r["path"] for r in json.loads(result.stdout)["results"]]
    assert paths == [corpus["queue"]]


# ---- reindex and status -----------------------------------------------------------------------


def test_reindex_incremental_and_full(run: Run, vault_path: Path) -> None:
    first = as_json(run("reindex", "--json"))
    assert (first["added"], first["vectors"], first["embedded"]) == (0, "ok", 0)  # templates only
    write(vault_path, "memory/long-term/hand.md", "# Hand\n")
    second = as_json(run("reindex", "--json"))
    assert (second["added"], second["changed"], second["deleted"], second["unchanged"]) == (1, 0, 0, 7)
    assert (second["embedded"], second["rebuilt"]) == (1, [])
    full = as_json(run("reindex", "--full", "--json"))
    assert "full text" in full["rebuilt"]
    assert (full["added"], full["embedded"], full["vectors"]) == (1, 1, "ok")
    text = ok(run("reindex", "--keyword-only")).stdout.strip()
    assert text == (
        "indexed: 1 note; files: 0 added, 0 changed, 0 deleted, 8 unchanged, 0 embedded; vectors: skipped"
    )


def test_status_and_reindex_count_notes_as_list_does(run: Run, vault_path: Path) -> None:
    """JSON state under memory/ (the context stack, tasks) and templates nobody wrote in are
    indexed files but no notes: status counts what `list` lists, reindex says which it counts."""
    ok(run("add", "Kafka keeps offsets per consumer group.", "--title", "Kafka"))
    ok(run("st", "set", "focus", "the kafka migration"))  # memory/short-term/context_stack.json
    write(vault_path, "memory/short-term/tasks.json", '{"tasks": []}\n')
    listed = as_json(run("list", "--json"))
    assert len(listed) == 1
    assert "no notes" in ok(run("list", "--tier", "short")).stdout
    status = as_json(run("status", "--json"))
    assert (status["notes"], status["tiers"], status["categories"]) == (1, {"long": 1}, {"note": 1})
    assert "notes:      1 (long 1)" in ok(run("status")).stdout
    report = as_json(run("reindex", "--json"))
    templates = status["index"]["templates"]
    assert (report["notes"], report["unchanged"]) == (1, templates + 2 + 1)  # 2 JSON state, 1 note
    assert ok(run("reindex")).stdout.startswith("indexed: 1 note; files: 0 added, 0 changed")


def test_full_keyword_only_reindex_keeps_the_vectors(run: Run, vault_path: Path) -> None:
    """`reindex --full --keyword-only` builds the keyword side again and leaves the vectors as they
    are: the next vector pass embeds only the note edited since, not every note."""
    write(vault_path, "memory/long-term/hand.md", "# Hand\nThe boiler is serviced in May.\n")
    write(vault_path, "memory/long-term/foot.md", "# Foot\nThe bike needs new tyres.\n")
    assert as_json(run("reindex", "--json"))["embedded"] == 2
    write(vault_path, "memory/long-term/foot.md", "# Foot\nThe bike needs new brakes.\n")
    full = as_json(run("reindex", "--full", "--keyword-only", "--json"))
    assert (full["added"], full["vectors"], full["warnings"]) == (2, "skipped", [])
    assert (vault_path / ".tmem/vectors").is_dir()
    again = as_json(run("reindex", "--json"))
    assert (again["embedded"], again["vectors"]) == (1, "ok")
    assert as_json(run("status", "--json"))["index"]["vectors_pending"] == 0
    # A catalog found broken knows nothing of them: they go too, and the command says so.
    (vault_path / ".tmem/catalog.sqlite").write_bytes(b"not a database" * 20)
    broken = as_json(run("reindex", "--full", "--keyword-only", "--json"))
    assert [w.split(":")[0] for w in broken["warnings"]] == [
        "the catalog did not say which notes the vectors were made from"
    ]
    assert not (vault_path / ".tmem/vectors").exists()
    assert as_json(run("reindex", "--json"))["embedded"] == 2


def test_status_json(run: Run, vault_path: Path) -> None:
    ok(run("reindex"))
    data = as_json(run("status", "--json"))
    assert set(data) >= {"vault", "notes", "tiers", "categories", "index", "git", "embedder", "size_bytes"}
    assert (data["notes"], data["tiers"], data["index"]["templates"]) == (0, {}, 7)
    assert data["index"]["fresh"] is True
    assert data["index"]["vectors_pending"] == 0
    assert data["index"]["vector_model"] == "fake:64"
    assert data["git"]["branch"] == "main"
    assert data["git"]["uncommitted"] == 0
    assert data["git"]["last_commit"].endswith("init: new tmem vault from template")
    assert data["embedder"].startswith("fake")

    write(vault_path, "memory/long-term/hand.md", "# Hand\n")
    (vault_path / "memory/long-term/blob.md").write_bytes(b"\x00\x00")
    data = as_json(run("status", "--json"))
    assert (data["index"]["new_files"], data["index"]["fresh"]) == (2, False)
    assert data["git"]["uncommitted"] == 2
    ok(run("reindex", "--keyword-only"))
    data = as_json(run("status", "--json"))
    assert data["index"]["skipped"] == [
        {"path": "memory/long-term/blob.md", "why": "binary file, not a note"}
    ]
    profile = vault_path / "memory/long-term/user_profile.md"
    profile.write_text(profile.read_text(encoding="utf-8") + "- Prefers metric units\n", encoding="utf-8")
    ok(run("reindex", "--keyword-only"))
    data = as_json(run("status", "--json"))
    assert (data["notes"], data["index"]["templates"]) == (2, 6)
    assert data["tiers"] == {"long": 2} and data["categories"] == {"note": 1, "profile": 1}


def test_status_text(run: Run) -> None:
    lines = ok(run("status")).stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:7]] == [
        "vault",
        "notes",
        "categories",
        "index",
        "embedder",
        "size",
        "git",
    ]


# ---- finding the vault, config errors, help -----------------------------------------------------


def test_no_vault_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    for args in (["list"], ["search", "x"], ["add", "x"], ["status"]):
        line = one_error_line(CliRunner().invoke(cli, args), 2)
        assert line.startswith("tmem: no tmem vault")
    assert list(empty.iterdir()) == []


def test_vault_from_env_and_from_cwd(vault_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ok(CliRunner().invoke(cli, ["add", "found through the environment"], env={"TMEM_VAULT": str(vault_path)}))
    monkeypatch.chdir(vault_path / "memory" / "long-term")
    rows = as_json(CliRunner().invoke(cli, ["list", "--json"]))
    assert "found through the environment" in [r["title"] for r in rows]


def test_wrong_vault_option(tmp_path: Path) -> None:
    line = one_error_line(CliRunner().invoke(cli, ["--vault", str(tmp_path), "list"]), 2)
    assert "not a tmem vault" in line


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ("search:\n  vector_weight: 3\n", "search.vector_weight"),
        ("search:\n  limt: 3\n", "search.limt"),
        ("search: [unclosed\n", "malformed YAML"),
    ],
)
def test_malformed_config(run: Run, vault_path: Path, config: str, key: str) -> None:
    (vault_path / "tmem.yaml").write_text(config, encoding="utf-8")
    for args in (["search", "x"], ["list"], ["status"], ["add", "x"]):
        line = one_error_line(run(*args), 2)
        assert key in line
        assert "tmem.yaml" in line
    assert len(git_log(vault_path)) == 1


def test_help_lists_every_command(run: Run) -> None:
    text = ok(run("--help")).stdout
    expected = {
        "init",
        "add",
        "remember",
        "show",
        "list",
        "edit",
        "forget",
        "search",
        "recall",
        "reindex",
        "status",
    }
    assert expected <= set(cli.commands)
    for name, command in cli.commands.items():
        if command.hidden:  # plumbing git calls (merge-driver, post-merge), not for people
            continue
        assert f"  {name} " in text or f"  {name}\n" in text, name


def test_help_names_a_second_name_as_such(run: Run) -> None:
    """`recall` and `remember` are `search` and `add` under other names: the listing says so
    instead of showing two commands with the same help, which reads as two ways to choose from."""
    listing = ok(run("--help")).stdout.split("Commands:", 1)[1]
    rows = dict(line.strip().split(None, 1) for line in listing.splitlines() if line.strip())
    assert rows["recall"] == "Same as `tmem search`."
    assert rows["remember"] == "Same as `tmem add`."
    assert rows["search"].startswith("Hybrid search")


# Commands with no result to report as JSON: an editor, two servers, the agents' own hook format,
# and the context block (its `--format json`).
NO_JSON = {"edit", "mcp", "daemon run", "hook", "context"}


def test_every_command_that_reports_a_result_takes_json() -> None:
    """The README's promise: every command that reports a result has `--json` (for agents)."""
    without = [
        name
        for name, command in _all_commands(cli)
        if not isinstance(command, click.Group)
        and not command.hidden
        and name not in NO_JSON
        and not any("--json" in p.opts for p in command.params)
    ]
    assert without == []


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_command_has_help(run: Run, name: str) -> None:
    command = cli.commands[name]
    assert command.help and command.help.strip()
    # click wraps at spaces and hyphens, so compare without any whitespace
    text = "".join(ok(run(name, "--help")).stdout.split())
    assert "".join(command.help.split("\b")[0].split()) in text


def _all_commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []
    for name, command in group.commands.items():
        found.append((prefix + name, command))
        if isinstance(command, click.Group):
            found.extend(_all_commands(command, prefix + name + " "))
    return found


def test_every_option_and_subcommand_has_help() -> None:
    commands = _all_commands(cli)
    assert len(commands) > len(cli.commands)  # groups' subcommands are walked too
    missing = [
        f"{name} --{param.name}"
        for name, command in commands
        for param in command.params
        if param.param_type_name == "option" and not getattr(param, "help", None)
    ]
    missing += [name for name, command in commands if not command.hidden and not (command.help or "").strip()]
    assert missing == []


def test_every_listed_command_says_what_it_does() -> None:
    """In each `--help` listing a command's line is cut to the width left beside the names (as
    click lays it out at 80 columns): it must still say what the command does, not stop at a bare
    heading ("Domain knowledge..."), a colon ("and why:...") or an abbreviation's dot ("e.g.")."""
    groups = [("", cli)] + [(name + " ", c) for name, c in _all_commands(cli) if isinstance(c, click.Group)]
    stubs = []
    for prefix, group in groups:
        names = list(group.commands)
        limit = 80 - 6 - max(map(len, names))
        for name in names:
            command = group.commands[name]
            if command.hidden:
                continue
            line = command.get_short_help_str(limit)
            words = line.removesuffix("...").split()
            if len(words) < 3 or (line.endswith("...") and len(words) < 4) or line.endswith((":...", "e.g.")):
                stubs.append(f"{prefix}{name}: {line}")
    assert stubs == []


def test_version(run: Run) -> None:
    assert ok(run("--version")).stdout.startswith("tmem, version ")


def test_tracebacks_only_with_the_debug_variable(run: Run, vault_path: Path) -> None:
    from tiered_memory.errors import NoteNotFound

    with pytest.raises(NoteNotFound):
        run("show", "nope", env={"TMEM_RAISE_ERRORS": "1"})
    assert os.environ.get("TMEM_RAISE_ERRORS") is None


def test_the_lazy_command_table_matches_the_commands() -> None:
    """`tmem --help` lists commands from cli.main.COMMANDS without importing them: each entry is the
    one declaration of its command, naming the click command ("module:name") and the help line the
    command itself would show; every click command of the cli package is in the table."""
    from tiered_memory.cli import main

    for name, (runs, short) in main.COMMANDS.items():
        module_name, _, attribute = runs.partition(":")
        assert module_name.startswith("tiered_memory.cli."), runs
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command) and command.name == name, runs
        assert short == ("" if command.hidden else command.get_short_help_str(80)), name
    package = Path(main.__file__).parent
    modules = [importlib.import_module(f"tiered_memory.cli.{p.stem}") for p in sorted(package.glob("*.py"))]
    declared = {main.COMMANDS[name][0] for name in main.COMMANDS}
    groups = [
        v for m in modules for v in vars(m).values() if isinstance(v, click.Group) and v is not main.cli
    ]
    subcommands = {id(c) for group in groups for c in group.commands.values()}
    top_level = {
        f"{m.__name__}:{attribute}"
        for m in modules
        for attribute, value in vars(m).items()
        if isinstance(value, click.Command)
        and value is not main.cli
        and id(value) not in subcommands
        and value.callback is not None
        and value.callback.__module__ == m.__name__
    }
    assert top_level == declared  # a command defined but missing from the table is an error too


def test_help_imports_no_command_module() -> None:
    from tiered_memory.cli import main

    code = (
        "import sys\n"
        "from tiered_memory.cli import cli\n"
        "cli.main(['--help'], standalone_mode=False)\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(out.split())
    assert "tiered_memory.cli.main" in loaded
    assert not loaded & {runs.partition(":")[0] for runs, _ in main.COMMANDS.values()}
    assert "tiered_memory.app.memory" not in loaded


def test_a_narrow_include_narrows_the_persons_folders_never_tmems_tiers(tmp_path: Path) -> None:
    """`folders.include: [projects/**]` names the person's folders tmem reads; the notes tmem
    itself files under memory/ are found whatever it says, and a folder it leaves out is not."""
    vault = tmp_path / "vault"
    ok(CliRunner().invoke(cli, ["init", str(vault)]))
    config = vault / "tmem.yaml"
    config.write_text(
        config.read_text(encoding="utf-8") + "\nfolders:\n  include: ['projects/**']\n", encoding="utf-8"
    )
    write(vault, "projects/tiles.md", "# Tiles\nThe tile server renders quokka maps.\n")
    write(vault, "journal/day.md", "# Day\nA quokka walked past the window.\n")

    def run(*args: str) -> Result:
        return CliRunner().invoke(cli, ["--vault", str(vault), *args], catch_exceptions=False)

    added = remember(run, "The quokka cache expires after ten minutes.")
    found = search_paths(run, "--mode", "keyword", "quokka")

    assert added["path"].startswith("memory/") and added["path"] in found
    assert "projects/tiles.md" in found and "journal/day.md" not in found
