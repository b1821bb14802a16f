"""Many writers changing ONE file at the same moment: every change must be in it afterwards.

Each command that rewrites an existing file (update --append and --set, entity update --note,
project update --note, task add, task done, profile set, st set, session append, MCP update) is
run by WRITERS real `tmem` processes released together on the same target (helpers.all_at_once:
forked from one Python that imported the application, so no writer pays an interpreter's
start-up and all race from the same instant). Every writer must exit 0 with its own commit, and
the file must hold every writer's change: an operation that read the file before taking the
write lock would write what it read, and all but the last change of a burst would be lost while
every writer still reported success.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import Result
from helpers import all_at_once, as_json, git, ok
from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]
WRITERS = 8
MCP_SESSIONS = 6
TIMEOUT = 240  # seconds for one burst of writers, even on a loaded machine

Run = Callable[..., Result]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def committed(vault: Path, rel: str) -> str:
    """The file as HEAD holds it (what survives is what is committed)."""
    return git(vault, "show", f"HEAD:{rel}")


def tokens(what: str) -> list[str]:
    return [f"{what}{i:02d}zq" for i in range(WRITERS)]


def test_update_append_keeps_every_line(run: Run, vault_path: Path) -> None:
    note = as_json(ok(run("add", "--json", "--no-dedup", "Lines appended by many writers")))["note"]
    words = tokens("line")
    all_at_once(vault_path, [["update", note["id"], "--append", w] for w in words])
    text = committed(vault_path, note["path"])
    assert [w for w in words if w not in text] == []


def test_update_set_keeps_every_field(run: Run, vault_path: Path) -> None:
    note = as_json(ok(run("add", "--json", "--no-dedup", "Fields set by many writers")))["note"]
    words = tokens("field")
    all_at_once(vault_path, [["update", note["id"], "--set", f"{w}={w}"] for w in words])
    text = committed(vault_path, note["path"])
    assert [w for w in words if f"{w}: {w}" not in text] == []


def test_entity_update_note_keeps_every_note(run: Run, vault_path: Path) -> None:
    rel = as_json(ok(run("entity", "add", "--json", "Dana Writers")))["path"]
    words = tokens("met")
    all_at_once(vault_path, [["entity", "update", "Dana Writers", "--note", w] for w in words])
    text = committed(vault_path, rel)
    assert [w for w in words if w not in text] == []


def test_project_update_note_keeps_every_line(run: Run, vault_path: Path) -> None:
    ok(run("project", "new", "busy"))
    words = tokens("progress")
    all_at_once(vault_path, [["project", "update", "busy", "--note", w] for w in words])
    text = committed(vault_path, "memory/mid-term/projects/busy/notes.md")
    assert [w for w in words if w not in text] == []


def test_task_add_keeps_every_task_with_its_own_number(run: Run, vault_path: Path) -> None:
    ok(run("project", "new", "busy"))
    words = tokens("task")
    all_at_once(vault_path, [["task", "add", "-p", "busy", w] for w in words])
    tasks = json.loads(committed(vault_path, "memory/mid-term/projects/busy/tasks.json"))["tasks"]
    assert sorted(t["text"] for t in tasks) == words
    assert sorted(t["id"] for t in tasks) == list(range(1, WRITERS + 1))


def test_task_done_keeps_every_task_done(run: Run, vault_path: Path) -> None:
    ok(run("project", "new", "busy"))
    for w in tokens("chore"):
        ok(run("task", "add", "-p", "busy", w))
    all_at_once(vault_path, [["task", "done", "-p", "busy", str(i)] for i in range(1, WRITERS + 1)])
    tasks = json.loads(committed(vault_path, "memory/mid-term/projects/busy/tasks.json"))["tasks"]
    assert len(tasks) == WRITERS
    assert [t["id"] for t in tasks if t["status"] != "done"] == []


def test_profile_set_keeps_every_fact(vault_path: Path) -> None:
    words = tokens("fact")
    all_at_once(vault_path, [["profile", "set", w, f"value of {w}"] for w in words])
    text = committed(vault_path, "memory/long-term/user_profile.md")
    assert [w for w in words if f"- {w}: value of {w}" not in text] == []


def test_st_set_keeps_every_key(vault_path: Path) -> None:
    words = tokens("key")
    all_at_once(vault_path, [["st", "set", w, f"value of {w}"] for w in words])
    stack = json.loads(committed(vault_path, "memory/short-term/context_stack.json"))
    assert [w for w in words if stack.get(w, {}).get("value") != f"value of {w}"] == []


def test_session_append_keeps_every_message(run: Run, vault_path: Path) -> None:
    session = as_json(ok(run("session", "start", "--json", "Busy session")))
    words = tokens("said")
    all_at_once(vault_path, [["session", "append", w] for w in words])
    text = committed(vault_path, session["path"])
    assert [w for w in words if w not in text] == []
    assert f"messages: {WRITERS}" in text


@pytest.mark.timeout(TIMEOUT + 60)
def test_mcp_update_from_many_sessions_keeps_every_line(run: Run, vault_path: Path) -> None:
    note = as_json(ok(run("add", "--json", "--no-dedup", "Lines appended by many agents")))["note"]
    words = [f"agent{i:02d}zq" for i in range(MCP_SESSIONS)]
    env = {k: v for k, v in _env().items() if k != "TMEM_VAULT"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tiered_memory", "--vault", str(vault_path), "mcp"], env=env
    )
    results: list[Any] = []
    before = len(git(vault_path, "log", "--format=%H").split())

    started: list[str] = []
    all_up, go = anyio.Event(), anyio.Event()

    async def agent(word: str) -> None:
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                started.append(word)
                if len(started) == len(words):
                    all_up.set()
                await go.wait()  # every server up: the updates arrive together
                results.append(await session.call_tool("update", {"id": note["id"], "append": word}))

    async def main() -> None:
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as group:
                for word in words:
                    group.start_soon(agent, word)
                await all_up.wait()
                go.set()

    anyio.run(main)
    assert [r.content for r in results if r.is_error] == []
    assert len(results) == MCP_SESSIONS
    assert len(git(vault_path, "log", "--format=%H").split()) - before == MCP_SESSIONS
    text = committed(vault_path, note["path"])
    assert [w for w in words if w not in text] == []
