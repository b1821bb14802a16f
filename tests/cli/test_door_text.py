"""What the small commands print, pinned through the command line: the confirmations, refusals
and warnings that present/ composes for the doors (byte for byte what they printed before)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import Result
from helpers import as_json, ok, one_error_line

Run = Callable[..., Result]


def test_confirmations_of_the_small_commands(run: Run, vault_path: Path, tmp_path: Path) -> None:
    note = as_json(run("add", "--json", "--title", "Tile cache", "--", "The cache lives in /var/tiles."))[
        "note"
    ]
    path = note["path"]
    assert ok(run("update", note["id"], "--append", "More.")).stdout == f"updated {path}: body\n"
    assert ok(run("update", note["id"], "--set", "category=note")).stdout == f"{path}: nothing changed\n"
    assert ok(run("st", "set", "k", "v")).stdout.startswith("set k (expires ")
    assert ok(run("st", "clear", "k")).stdout == "cleared 1 key(s)\n"
    assert ok(run("st", "expire")).stdout == "expired 0 item(s)\n"
    assert (
        ok(run("project", "new", "demo")).stdout == "created project demo (memory/mid-term/projects/demo)\n"
    )
    assert ok(run("project", "update", "demo", "--note", "hi")).stdout == "updated project demo\n"
    assert ok(run("task", "add", "-p", "demo", "write", "docs")).stdout == "added task #1 to demo\n"
    assert ok(run("task", "done", "-p", "demo", "1")).stdout == "done: #1 write docs\n"
    ana = "memory/long-term/relationships/ana.md"
    assert ok(run("entity", "add", "Ana")).stdout == f"added Ana ({ana})\n"
    assert ok(run("entity", "update", "Ana", "--seen")).stdout == f"updated Ana ({ana})\n"
    assert ok(run("lock")).stdout == "locked\n"  # marked locked until `tmem unlock`
    assert ok(run("lock")).stdout == "was not unlocked\n"

    assert ok(run("edit", note["id"], env={"EDITOR": "true"})).stdout == "no changes\n"
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\necho "Edited." >> "$1"\n')
    editor.chmod(0o755)
    saved = ok(run("edit", note["id"], env={"EDITOR": str(editor)})).stdout
    assert saved.startswith(f"saved {path} (") and len(saved) == len(f"saved {path} (01234567)\n")

    refused = one_error_line(run("forget", note["id"]), 2)
    assert refused == "tmem: refusing to forget 'Tile cache' without confirmation: pass --yes"
    refused = one_error_line(run("forget", "--entity", "Ana"), 2)
    assert refused == "tmem: refusing to forget everything about 'Ana' without confirmation: pass --yes"
    assert ok(run("forget", note["id"], "--yes")).stdout == f"forgot {note['id']} ({path})\n"

    (vault_path / "memory" / "long-term" / "hand.md").write_text("# hand\nwritten by hand\n")
    backed = ok(run("backup", "--to", str(tmp_path / "bk")))
    bundle = next((tmp_path / "bk").iterdir())
    assert backed.stdout == f"backed up to {bundle} (1 kept)\n"
    assert (
        backed.stderr == "warning: 1 uncommitted change(s) are not in the backup (`tmem sync` commits them)\n"
    )
    restored = ok(run("backup", "--restore", str(bundle), str(tmp_path / "copy")))
    assert restored.stdout == f"restored vault at {tmp_path / 'copy'} (add a remote to sync it)\n"

    stopped = ok(run("daemon", "stop"))
    assert stopped.stdout == "daemon not running\n"
    down = run("daemon", "status")
    assert down.exit_code == 1 and down.stdout == "daemon not running\n"


def test_config_texts(run: Run, vault_path: Path) -> None:
    done = ok(run("config", "set", "default-vault", str(vault_path))).stdout
    where = done.rsplit("(", 1)[1].rstrip(")\n")
    assert done == f"default-vault = {vault_path}  ({where})\n"
    assert ok(run("config", "get")).stdout == f"default-vault = {vault_path}\n# {where}\n"
    assert ok(run("config", "unset", "default-vault")).stdout == f"default-vault removed ({where})\n"
    assert ok(run("config", "get")).stdout == f"(no settings)\n# {where}\n"
    assert ok(run("config", "approve")).stdout == "nothing waits for approval\n"


def test_control_characters_from_the_vault_never_reach_the_terminal(run: Run, vault_path: Path) -> None:
    """A note (hand-written, or pulled) whose title and text carry escape sequences: one retitles
    the terminal's window, one clears its screen, one plants a link under other text. What tmem
    prints for people shows them as `\\x1b`; its JSON escapes them as JSON does."""
    rel = "memory/long-term/escapes.md"
    (vault_path / rel).write_text(
        '---\ntitle: "lamp \\e]0;owned\\a\\e[2J keeper"\n---\n'
        "The lamp \x1b]8;;https://evil.example\x1b\\keeper\x1b]8;;\x1b\\ log\r is trimmed.\r\n",
        encoding="utf-8",
    )
    for args in (
        ["list"],
        ["search", "--mode", "keyword", "lamp keeper"],
        ["show", rel],
        ["show", "\x1b[2Jnone"],
    ):
        result = run(*args)
        assert "\x1b" not in result.output and "\x07" not in result.output, args
        assert "\r is" not in result.output
    assert "lamp \\x1b]0;owned\\x07\\x1b[2J keeper" in ok(run("list")).stdout
    assert as_json(run("list", "--json"))[0]["title"] == "lamp \x1b]0;owned\x07\x1b[2J keeper"
