"""`tmem mcp` end to end: the official SDK's stdio client spawns `python -m tiered_memory mcp`
against a temporary vault (fake embedder) and calls every tool and resource over the wire; with
the daemon's autostart on, the server's operations run in the daemon it started."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import FAKE_CONFIG, PING_READY, commit, fake_daemon, git_log, write
from mcp import ClientSession
from mcp_client import ROOT, call, error, serve

from tiered_memory.mcp.tools import MAX_ITEMS
from tiered_memory.storage.vault import Vault

TOOLS = {
    "remember",
    "recall",
    "read",
    "update",
    "list",
    "related",
    "links",
    "read_many",
    "context",
    "forget",
    "promote",
    "archive",
    "session_append",
    "session_end",
}


def test_tools_have_schemas_descriptions_and_hints(vault_path: Path) -> None:
    async def scenario(session: ClientSession) -> None:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert tool.description and len(tool.description) > 40
            assert tool.input_schema["type"] == "object"
            assert tool.annotations is not None and tool.annotations.read_only_hint is not None
        hints = {name: t.annotations for name, t in tools.items()}
        assert hints["recall"].read_only_hint and hints["context"].read_only_hint  # type: ignore[union-attr]
        assert hints["forget"].destructive_hint and hints["forget"].idempotent_hint  # type: ignore[union-attr]
        assert hints["archive"].destructive_hint  # type: ignore[union-attr]
        assert hints["remember"].destructive_hint is False and not hints["remember"].read_only_hint  # type: ignore[union-attr]
        remember = tools["remember"].input_schema
        assert remember["required"] == ["text"]
        assert "discovery" in json.dumps(remember["properties"]["category"])
        assert remember["properties"]["text"]["description"]
        assert tools["recall"].input_schema["required"] == ["query"]

    serve(vault_path, scenario)


def test_remember_recall_context_forget(vault_path: Path) -> None:
    key = "ghp_" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"

    async def scenario(session: ClientSession) -> None:
        added = await call(
            session,
            "remember",
            text="The survey project uses CGCS2000 for all control points.",
            category="decision",
            project="survey-app",
            tags=["geodesy"],
        )
        assert added["action"] in ("added", "merged", "superseded") and added["id"]
        assert added["path"].startswith("memory/mid-term/projects/survey-app/")
        found = await call(session, "recall", query="which coordinate system CGCS2000 control points")
        assert found["results"][0]["id"] == added["id"]
        block = await call(session, "context", query="coordinate system")
        assert block.startswith("<project-memory") and "CGCS2000" in block and "may be outdated" in block
        leaked = await call(session, "remember", text=f"Deploy with the token {key} on Fridays.")
        assert any("redacted" in w for w in leaked["warnings"])
        stored = (vault_path / leaked["path"]).read_text()
        assert key not in stored and "[REDACTED:github-token]" in stored
        gone = await call(session, "forget", id=added["id"], reason="wrong project")
        assert gone["forgotten"] == added["id"]
        after = await call(session, "recall", query="CGCS2000 control points", mode="keyword")
        assert added["id"] not in [r["id"] for r in after["results"]]

    serve(vault_path, scenario)
    log = git_log(vault_path)
    assert log[0].startswith("forget: The survey project uses CGCS2000") and "(wrong project)" in log[0]
    assert any(line.startswith("remember: The survey project uses CGCS2000") for line in log)
    secrets = subprocess.run(
        ["git", "-C", str(vault_path), "log", "-p", "--all"], capture_output=True, text=True
    )
    assert key not in secrets.stdout


def test_errors_are_one_line_tool_errors_and_the_server_survives(vault_path: Path) -> None:
    async def scenario(session: ClientSession) -> None:
        assert "no note with id 'nope'" in await error(session, "forget", id="nope")
        assert "empty query" in await error(session, "recall", query="  ")
        assert "too small" in await error(session, "context", budget=50)
        assert "invalid project id" in await error(session, "context", project="../etc")
        assert "nothing to remember" in await error(session, "remember", text="   ")
        await error(session, "remember", text="x", importance=3)  # schema: 0..1
        await error(session, "recall", query="x", mode="telepathy")
        # still serving after all of that
        added = await call(session, "remember", text="The server keeps working after errors.")
        assert added["id"]

    serve(vault_path, scenario)


def test_promote_and_archive(vault_path: Path) -> None:
    async def scenario(session: ClientSession) -> None:
        added = await call(
            session, "remember", text="Scratch idea: cache tiles per zoom level.", tier="short"
        )
        assert added["path"].startswith("memory/short-term/")
        promoted = await call(session, "promote", id=added["id"], to="mid")
        assert "mid-term" in json.dumps(promoted)
        archived = await call(session, "archive", id=added["id"], reason="done with it")
        assert "archive" in json.dumps(archived)
        found = await call(session, "recall", query="cache tiles zoom", tier=["archive"], mode="keyword")
        assert [r["id"] for r in found["results"]] == [added["id"]]

    serve(vault_path, scenario)
    assert not list((vault_path / "memory/short-term").glob("scratch-idea*"))


def test_resources_profile_and_projects(vault_path: Path) -> None:
    status = vault_path / "memory/mid-term/projects/survey-app/status.md"
    status.parent.mkdir(parents=True)
    status.write_text("---\nstatus: active\n---\n# survey-app\n\nReport generator next.\n")
    (status.parent / "tasks.json").write_text(
        json.dumps([{"id": 1, "text": "Write the PDF export", "status": "open"}])
    )

    async def scenario(session: ClientSession) -> None:
        uris = {str(r.uri) for r in (await session.list_resources()).resources}
        assert uris == {"tmem://profile", "tmem://projects"}
        templates = {t.uri_template for t in (await session.list_resource_templates()).resource_templates}
        assert templates == {"tmem://note/{id}"}
        profile = await session.read_resource("tmem://profile")
        assert "# User profile" in profile.contents[0].text  # type: ignore[union-attr]
        projects = json.loads((await session.read_resource("tmem://projects")).contents[0].text)  # type: ignore[union-attr]
        assert projects["current"] == "survey-app"
        assert projects["projects"]["survey-app"]["open_tasks"] == ["- [ ] Write the PDF export"]
        assert "Report generator next." in projects["projects"]["survey-app"]["summary"]

    serve(vault_path, scenario)


def test_session_append_and_end(vault_path: Path) -> None:
    key = "sk-" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm12345"

    async def scenario(session: ClientSession) -> None:
        first = await call(
            session, "session_append", text="Please fix the settlement chart axis.", role="user"
        )
        live = first["session"]
        assert live["status"] == "active" and live["path"].startswith("memory/short-term/")
        again = await call(session, "session_append", text=f"Fixed it; the deploy key {key} was not needed.")
        assert again["session"]["id"] == live["id"] and again["session"]["message_count"] == 2
        assert "role" in await error(session, "session_append", text="x", role="robot")
        ended = await call(session, "session_end", summary="We fixed the settlement chart axis labels.")
        assert ended["session"]["id"] == live["id"] and ended["session"]["path"].startswith(
            "memory/archive/sessions/"
        )
        assert "no live session" in await error(session, "session_end")

    serve(vault_path, scenario)
    archived = list((vault_path / "memory/archive/sessions").rglob("*.md"))
    assert len(archived) == 1 and "settlement chart axis labels" in archived[0].read_text()
    history = subprocess.run(
        ["git", "-C", str(vault_path), "log", "-p", "--all"], capture_output=True, text=True
    )
    assert key not in history.stdout and key not in archived[0].read_text()


def test_a_missing_vault_is_one_line_at_start(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tiered_memory", "--vault", str(tmp_path / "nope"), "mcp"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("tmem: ") and len(done.stderr.strip().splitlines()) == 1


def test_read_update_list_related_and_the_note_resource(vault_path: Path) -> None:
    long_body = "\n\n".join(
        [
            "The tile server renders vector tiles for the survey maps.",
            "Caching: tiles are cached in Redis for ten minutes. The cache key holds the zoom level.",
            "Deployment happens on Fridays after the review meeting.",
        ]
    )

    async def scenario(session: ClientSession) -> None:
        added = await call(session, "remember", text=long_body, title="Tile server notes", tags=["tiles"])
        other = await call(
            session,
            "remember",
            text="Map styles live in the styles repository, one JSON per theme.",
            tags=["tiles"],
        )
        found = await call(session, "recall", query="how long are tiles cached in Redis", mode="keyword")
        hit = next(r for r in found["results"] if r["id"] == added["id"])
        assert hit["passage"].startswith("Caching: tiles are cached in Redis")  # the passage that matched
        # read: by id and by path, whole or a line range, with the frontmatter
        whole = await call(session, "read", id=added["id"])
        assert whole["frontmatter"]["tags"] == ["tiles"] and "Deployment happens" in whole["body"]
        assert whole["lines"] >= 5
        line = next(i for i, t in enumerate(whole["body"].splitlines(), 1) if t.startswith("Caching:"))
        by_path = await call(session, "read", id=added["path"], start=line, end=line)
        assert by_path["body"].startswith("Caching:") and by_path["start"] == by_path["end"] == line
        # update: append, fields, then replace; one commit each; redaction applies
        key = "ghp_" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
        appended = await call(
            session, "update", id=added["id"], append=f"Deploy token: {key}", reason="note the token"
        )
        assert appended["changed"] == ["body"] and appended["commit"]
        assert any("redacted" in w for w in appended.get("warnings", []))
        fields = await call(
            session, "update", id=added["id"], fields={"importance": 0.9, "tags": ["tiles", "redis"]}
        )
        assert set(fields["changed"]) == {"fields.importance", "fields.tags"}
        replaced = await call(
            session, "update", id=added["id"], body="Tiles are cached in Redis for five minutes now."
        )
        assert replaced["changed"] == ["body"]
        text = (vault_path / added["path"]).read_text()
        assert "five minutes" in text and "ten minutes" not in text and "importance: 0.9" in text
        assert key not in text
        assert "cannot be changed" in await error(session, "update", id=added["id"], fields={"id": "x"})
        assert "nothing to change" in await error(session, "update", id=added["id"])
        # list with the CLI's filters
        listed = await call(session, "list", tag=["redis"])
        assert [n["id"] for n in listed["notes"]] == [added["id"]]
        # related: no links here, so by shared tags
        related = await call(session, "related", id=added["id"])
        assert other["id"] in [n["id"] for n in related["notes"]]
        # the note resource
        resource = await session.read_resource(f"tmem://note/{added['id']}")
        assert "five minutes" in resource.contents[0].text  # type: ignore[union-attr]

    serve(vault_path, scenario)
    log = git_log(vault_path)
    assert log[0].startswith("update: Tile server notes (body)")
    assert any("(note the token)" in line for line in log)


@pytest.mark.slow
def test_operations_run_in_the_daemon_it_starts(vault_path: Path) -> None:
    from tiered_memory.daemon import client

    async def scenario(session: ClientSession) -> None:
        added = await call(session, "remember", text="The daemon answers this session.")
        found = await call(session, "recall", query="daemon answers session", mode="keyword")
        assert found["results"][0]["id"] == added["id"]

    try:
        serve(vault_path, scenario, TMEM_AUTOSTART="1")
        info = client.ping(vault_path)
        assert info is not None and info["ready"]
    finally:
        subprocess.run(
            [sys.executable, "-m", "tiered_memory", "--vault", str(vault_path), "daemon", "stop"],
            capture_output=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )


def test_http_needs_a_token(vault_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tiered_memory", "--vault", str(vault_path), "mcp", "--http"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2 and "bearer token" in done.stderr
    assert done.stderr.startswith("tmem: --http needs") and "tmem: tmem" not in done.stderr


@pytest.mark.parametrize("token", ["", "short"])
def test_http_without_a_usable_token_is_refused_before_the_sdk_loads(vault_path: Path, token: str) -> None:
    """One line, without a second of the SDK's imports first (`-X importtime` lists every import)."""
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "tiered_memory",
            "--vault",
            str(vault_path),
            "mcp",
            "--http",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TMEM_MCP_TOKEN": token},
    )
    refusal = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert done.returncode == 2 and len(refusal) == 1 and refusal[0].startswith("tmem: "), done.stderr
    assert not re.search(r"\| +mcp(\.|$)", done.stderr, re.MULTILINE)


TOKEN = "s3cret-token-of-at-least-32-characters"


def test_http_refuses_a_short_token(vault_path: Path) -> None:
    """A token that can be guessed is refused in one line, before anything starts."""
    done = subprocess.run(
        [sys.executable, "-m", "tiered_memory", "--vault", str(vault_path), "mcp", "--http"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TMEM_MCP_TOKEN": "x"},
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "at least 32 characters" in done.stderr


def test_http_refuses_requests_without_the_token(vault_path: Path) -> None:
    import socket
    import time
    import urllib.error
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMEM_MCP_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tiered_memory",
            "--vault",
            str(vault_path),
            "mcp",
            "--http",
            "--port",
            str(port),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
        deadline = time.monotonic() + 30
        status = None
        while time.monotonic() < deadline and status is None:
            try:
                urllib.request.urlopen(urllib.request.Request(url, data=body, method="POST"), timeout=2)
                status = 200
            except urllib.error.HTTPError as exc:
                status = exc.code
            except OSError:
                time.sleep(0.2)
        assert status == 401
        request = urllib.request.Request(
            url,
            data=body,
            method="POST",
            headers={
                "Authorization": f"Bearer {TOKEN}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
        )
        try:
            code = urllib.request.urlopen(request, timeout=5).status
        except urllib.error.HTTPError as exc:
            code = exc.code
        assert code != 401
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_unknown_arguments_are_refused_with_the_names_a_tool_takes(vault_path: Path) -> None:
    async def scenario(session: ClientSession) -> None:
        tools = (await session.list_tools()).tools
        assert all(t.input_schema.get("additionalProperties") is False for t in tools)
        added = await call(
            session, "remember", text="The survey app stores control points in CGCS2000.\n\nSecond line."
        )
        wrong = await error(session, "read", id=added["id"], start_line=1, end_line=1)
        assert "unknown argument(s) start_line, end_line" in wrong
        assert "it takes: id, start, end" in wrong
        wrong = await error(session, "update", id=added["id"], set={"importance": 0.9})
        assert "unknown argument(s) set" in wrong and "it takes: id, body, append, fields, reason" in wrong
        # a wrong value next to an unknown name: both are said
        both = await error(session, "recall", query="x", limit=0, tiers=["long"])
        assert "unknown argument(s) tiers" in both and "limit" in both
        assert "nothing to change" in await error(session, "update", id=added["id"])

    before = git_log(vault_path)
    serve(vault_path, scenario)
    after = git_log(vault_path)
    assert not any(line.startswith("update:") for line in after)
    assert before != after  # the remember went through


def test_a_single_value_where_a_list_is_expected_is_a_list_of_one(vault_path: Path) -> None:
    async def scenario(session: ClientSession) -> None:
        added = await call(
            session,
            "remember",
            text="The survey app uses CGCS2000 for control points.",
            project="survey-app",
            tags="geodesy",
            entities="Ana",
        )
        listed = await call(session, "list", project="survey-app")
        assert [n["id"] for n in listed["notes"]] == [added["id"]]
        tagged = await call(session, "list", tag="geodesy", tier="mid", entity="Ana")
        assert [n["id"] for n in tagged["notes"]] == [added["id"]]
        found = await call(session, "recall", query="CGCS2000 control points", tier="mid", mode="keyword")
        assert [r["id"] for r in found["results"]] == [added["id"]]
        none = await call(session, "recall", query="CGCS2000 control points", tier="long", mode="keyword")
        assert none["results"] == []

    serve(vault_path, scenario)


def test_recall_and_list_keep_to_a_folder(vault_path: Path) -> None:
    write(vault_path, "en/Callouts.md", "Callout types: note, tip and warning.\n")
    write(vault_path, "zh/标注.md", "标注的类型 callout types：note、tip。\n")

    async def scenario(session: ClientSession) -> None:
        everywhere = await call(session, "recall", query="callout types", mode="keyword")
        assert {r["path"] for r in everywhere["results"]} >= {"en/Callouts.md", "zh/标注.md"}
        english = await call(session, "recall", query="callout types", mode="keyword", folder="en/")
        assert [r["path"] for r in english["results"]] == ["en/Callouts.md"]
        listed = await call(session, "list", folder=["zh"])
        assert [n["path"] for n in listed["notes"]] == ["zh/标注.md"]

    serve(vault_path, scenario)


def test_every_list_argument_is_bounded_and_a_huge_query_is_searched_in_part(vault_path: Path) -> None:
    """An agent's 10,000 folders took 8 s of `recall` (every note's path tried against each); a
    list past MAX_ITEMS, of any tool, is refused in one line before anything runs. A 1.3 MB query
    is answered, searched by its start and end, and says so."""
    write(vault_path, "en/Otters.md", "Sea otters hold hands while they sleep.\n")
    many = [f"memory/**/topic{i}*.md" for i in range(10_000)]
    over = [f"t{i}" for i in range(MAX_ITEMS + 1)]

    async def scenario(session: ClientSession) -> None:
        line = await error(session, "recall", query="otters", folder=many)
        assert (
            line
            == "invalid arguments for recall: folder: Value should have at most 100 items after validation, not 10000"
        )
        for tool, arguments in (
            ("list", {"folder": many}),
            ("list", {"tag": over}),
            ("recall", {"query": "otters", "category": ["fact"] * (MAX_ITEMS + 1)}),
            ("remember", {"text": "Otters use stones as tools.", "tags": over}),
            ("read_many", {"ids": over}),
            ("update", {"id": "en/Otters.md", "fields": {k: "x" for k in over}}),
        ):
            assert f"should have at most {MAX_ITEMS} items" in await error(session, tool, **arguments)
        turn = "User: what did the planning meeting decide about the budget?\nAssistant: it moved on.\n"
        query = turn * 16_000 + "User: do sea otters sleep holding hands?"  # 1.3 MB
        found = await call(session, "recall", query=query, mode="keyword")
        assert [r["path"] for r in found["results"]] == ["en/Otters.md"]
        assert "its first and last 32 K of them were searched" in found["notice"]
        assert len(found["query"]) <= 64 * 1024 and found["query"].endswith("sleep holding hands?")
        within = await call(session, "list", folder=many[: MAX_ITEMS - 1] + ["en"])
        assert [n["path"] for n in within["notes"]] == ["en/Otters.md"]

    serve(vault_path, scenario)


def _topic_notes(vault_path: Path) -> tuple[str, str, str]:
    """Three hand-written notes: a links to b, c is long."""
    a = write(
        vault_path,
        "memory/long-term/topics/tile-cache.md",
        "# Tile cache\n\nTiles live in Redis; see [[map-styles]].\n",
    )
    b = write(vault_path, "memory/long-term/topics/map-styles.md", "# Map styles\n\nOne JSON per theme.\n")
    long = "\n".join(f"Line {i}: the deploy checklist goes on." for i in range(1, 200))
    c = write(vault_path, "memory/long-term/topics/zz-deploy.md", f"# Deploy\n\n{long}\n")
    rels = [str(p.relative_to(vault_path)) for p in (a, b, c)]
    commit(Vault(vault_path), rels, "notes by hand")
    return rels[0], rels[1], rels[2]


def test_links_and_read_many(vault_path: Path) -> None:
    a, b, c = _topic_notes(vault_path)

    async def scenario(session: ClientSession) -> None:
        out = await call(session, "links", id=a)
        assert [(x["target"], x["note"]["path"]) for x in out["outgoing"]] == [("map-styles", b)]
        back = await call(session, "links", id=b)
        assert [x["source"]["path"] for x in back["backlinks"]] == [a]
        # by ids (a single one is a list of one), in the order given; a miss is said, not fatal
        one = await call(session, "read_many", ids=a)
        assert [n["path"] for n in one["notes"]] == [a] and "Redis" in one["notes"][0]["body"]
        some = await call(session, "read_many", ids=[b, "no-such-note", a])
        assert [n["path"] for n in some["notes"]] == [b, a]
        assert [m["ref"] for m in some["missing"]] == ["no-such-note"]
        assert "no note" in some["missing"][0]["error"]
        # by a glob, relative to memory/ or to the vault, in path order, bounded
        found = await call(session, "read_many", glob="long-term/topics/*.md")
        assert [n["path"] for n in found["notes"]] == sorted([a, b, c]) and found["matched"] == 3
        assert (await call(session, "read_many", glob="memory/**/map-*"))["notes"][0]["path"] == b
        first = await call(session, "read_many", glob="long-term/**", limit=2)
        assert len(first["notes"]) == 2 and first["omitted"] == 1
        cut = await call(session, "read_many", ids=[c], max_chars=300)
        assert cut["truncated"] == [c] and len(cut["notes"][0]["body"]) == 300
        assert cut["notes"][0]["lines"] > cut["notes"][0]["end"]
        assert "nothing to read" in await error(session, "read_many")
        assert "inside the vault" in await error(session, "read_many", glob="../*/*.md")
        assert "limit" in await error(session, "read_many", ids=[a], limit=500)

    serve(vault_path, scenario)


def test_links_of_a_note_the_index_has_not_seen_yet(vault_path: Path, run: Any) -> None:
    """A note named by its path resolves without the index: `links` freshens it first (it failed
    with a KeyError traceback on a note written since the last command)."""
    a, b, _c = _topic_notes(vault_path)
    done = run("links", a, "--json")
    assert done.exit_code == 0, done.stderr
    assert [x["note"]["path"] for x in json.loads(done.stdout)["outgoing"]] == [b]


def test_read_many_reads_encrypted_notes_like_read(vault_path: Path, run: Any) -> None:
    """While unlocked, an encrypted note is read; while locked, it is a miss saying so."""
    write(vault_path, "tmem.yaml", FAKE_CONFIG + "privacy:\n  encrypt: sensitive\n")
    commit(Vault(vault_path), ["tmem.yaml"], "config: encryption on")
    passphrase = {"TMEM_PASSPHRASE": "correct horse battery staple"}
    assert run("unlock", "--new", env=passphrase).exit_code == 0
    added = run("add", "--json", "--category", "profile", "--", "Meilin fears thunderstorms.", env=passphrase)
    path = json.loads(added.stdout)["note"]["path"]
    assert b"thunderstorms" not in (vault_path / path).read_bytes()

    async def unlocked(session: ClientSession) -> None:
        got = await call(session, "read_many", glob="long-term/**")
        assert any("thunderstorms" in n["body"] for n in got["notes"] if n["path"] == path)

    async def locked(session: ClientSession) -> None:
        got = await call(session, "read_many", glob="long-term/**")
        assert path not in [n["path"] for n in got["notes"]]
        [miss] = [m for m in got["missing"] if m["ref"] == path]
        assert "lock" in miss["error"]

    serve(vault_path, unlocked, **passphrase)
    serve(vault_path, locked)


def test_prompts_for_the_start_of_a_task_and_a_decision(vault_path: Path) -> None:
    async def scenario(session: ClientSession) -> None:
        await call(session, "remember", text="Tiles are cached in Redis for ten minutes.", tags=["tiles"])
        prompts = {p.name: p for p in (await session.list_prompts()).prompts}
        assert set(prompts) == {"start_task", "remember_decision"}
        assert [(a.name, a.required) for a in prompts["start_task"].arguments or []] == [
            ("task", True),
            ("project", False),
        ]
        start = await session.get_prompt("start_task", {"task": "shorten how long tiles stay in Redis"})
        text = start.messages[0].content.text  # type: ignore[union-attr]
        assert start.messages[0].role == "user" and "shorten how long tiles stay in Redis" in text
        assert "<project-memory" in text and "ten minutes" in text and "outdated" in text
        decision = await session.get_prompt(
            "remember_decision", {"decision": "Cache tiles for five minutes", "why": "fresher maps"}
        )
        words = decision.messages[0].content.text  # type: ignore[union-attr]
        assert "Decision: Cache tiles for five minutes" in words and "Why: fresher maps" in words
        assert '`remember` with category "decision"' in words and "`update`" in words

    serve(vault_path, scenario)


def test_a_daemon_that_stops_answering_is_told_as_tmem_failing(vault_path: Path) -> None:
    """The agent must not take a dead daemon for a bad argument and change its call: the error
    says tmem failed, as the CLI's exit code 3 does."""

    async def scenario(session: ClientSession) -> None:
        line = await error(session, "remember", text="Deploys freeze on Fridays.")
        assert "tmem failed, not the call's arguments: the daemon stopped answering" in line
        assert "no note with id 'nope'" in await error(session, "forget", id="nope")  # input: as it was

    with fake_daemon(vault_path, lambda op: PING_READY if op == "ping" else b""):  # takes it, says nothing
        serve(vault_path, scenario)
