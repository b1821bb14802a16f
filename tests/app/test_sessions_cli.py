"""`tmem session ...`, `tmem ingest`, `tmem extract` and `tmem recall --recent` as a user runs them:
exit codes, output, files and git log over a real vault; the LLM extractor through a real server."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import approve_outward, as_json, commit, git, git_log, ok, one_error_line, write
from test_extract import OPENCODE_SUMMARY, ChatServer, chat_server  # noqa: F401 - the fixture
from test_sessions import TURNS, claude_transcript

from tiered_memory.app.api.sessions import EXTRACT, ExtractRequest
from tiered_memory.app.local import LocalBackend
from tiered_memory.storage.vault import Vault

Run = Callable[..., Result]
OPENAI_KEY = "sk-proj-" + "T3BlbkFJx9aQ2mZ7rW1kP0vYc8L5nE4hU6sJgXoA"


# ---- tmem session ----------------------------------------------------------------------------------


def test_session_commands_end_to_end(run: Run, vault_path: Path) -> None:
    started = as_json(
        run("session", "start", "Reproject", "control", "points", "--project", "tunnel", "--json")
    )
    sid = started["id"]
    assert started["status"] == "active" and started["project"] == "tunnel"
    out = ok(run("session", "append", "We decided to use the 7-parameter transformation.")).stdout
    assert out.strip() == f'appended user message to {sid} "Reproject control points" (1 message)'
    piped = ok(
        run("session", "append", "--role", "assistant", "-", input=f"Done. Key {OPENAI_KEY} redacted.\n")
    )
    assert "warning: redacted 1 secret(s) before writing: openai-key" in piped.stderr
    listing = ok(run("session", "list")).stdout
    assert sid in listing and "live" in listing and "2 msgs" in listing
    ended = ok(run("session", "end", "--summary", "Chose the transformation."))
    assert ended.stdout.startswith(
        f'ended {sid} "Reproject control points": archived at memory/archive/sessions/'
    )
    assert 'added      remembered "We decided to use the 7-parameter transformation."' in ended.stdout
    shown = as_json(run("session", "show", sid, "--json"))
    assert shown["status"] == "completed"
    assert [m["role"] for m in shown["transcript"]] == ["user", "assistant"]
    assert "[REDACTED:openai-key]" in shown["transcript"][1]["content"]
    grep = ok(run("session", "show", sid, "--grep", "transformation")).stdout
    assert "7-parameter" in grep and "Done." not in grep
    assert OPENAI_KEY not in git(vault_path, "log", "-p")
    subjects = git_log(vault_path)
    assert subjects[0].startswith('session: end "Reproject control points" (2 messages; memories: 1 added)')
    assert subjects[1:4] == [
        'session: append to "Reproject control points" (assistant)',
        'session: append to "Reproject control points" (user)',
        'session: start "Reproject control points"',
    ]


def test_session_errors_are_one_line(run: Run) -> None:
    assert (
        one_error_line(run("session", "end"), 1)
        == "tmem: no live session to end (tmem session list shows them)"
    )
    assert "no session with id 'nope'" in one_error_line(run("session", "show", "nope"), 1)
    assert "nothing to append" in one_error_line(run("session", "append", "  "), 2)
    assert "invalid project id" in one_error_line(run("session", "start", "x", "--project", "../up"), 2)


def test_recall_recent_and_search_within_a_session(run: Run) -> None:
    for topic in ("levelling loop closure", "prism monitoring alarms"):
        ok(run("session", "start", topic))
        ok(run("session", "append", f"Today we looked at the {topic} in detail."))
        ok(run("session", "end", "--no-extract"))
    recent = ok(run("recall", "--recent")).stdout
    assert recent.index("prism monitoring alarms") < recent.index("levelling loop closure")
    assert "First topic: Today we looked at the prism monitoring alarms in detail." in recent
    one = as_json(run("recall", "--recent", "1", "--json"))
    assert [s["title"] for s in one] == ["prism monitoring alarms"]
    sid = one[0]["id"]
    within = as_json(run("search", "detail", "--session", sid, "--mode", "keyword", "--json"))["results"]
    assert within and all(sid in r["path"] for r in within)
    assert "takes no query" in one_error_line(run("recall", "--recent", "2", "alarms"), 2)


# ---- tmem ingest -----------------------------------------------------------------------------------


def test_ingest_claude_code_transcript(run: Run, vault_path: Path, tmp_path: Path) -> None:
    path = str(write(tmp_path, "9d1c.jsonl", claude_transcript(*TURNS)))
    out = ok(run("ingest", path)).stdout
    assert out.startswith('ingested "Datum for the tunnel survey" as ses-20261120-')
    assert 'added      remembered "The project uses CGCS2000."' in out
    again = ok(run("ingest", path)).stdout
    assert "already ingested" in again
    assert git_log(vault_path)[0].startswith('ingest: session "Datum for the tunnel survey"')
    patch = git(vault_path, "log", "-p")
    assert "[REDACTED:github-token]" in patch and TURNS[0][1].split()[-3] not in patch


# A transcript in each shape an agent or a person leaves it, from its first `n` turns: the same
# file ingested again, and again once it grew.
GROWING = [
    ("user", "We decided to use CGCS2000 for the tunnel survey.", "2026-11-20T09:00:00Z"),
    ("assistant", "Noted. The control file lists 42 points.", "2026-11-20T09:00:10Z"),
    ("user", "Always export coordinates with 4 decimals.", "2026-11-20T09:05:00Z"),
    ("assistant", "Understood: exports use 4 decimals from now on.", "2026-11-20T09:05:10Z"),
]


def _part(role: str) -> str:
    return "input_text" if role == "user" else "output_text"


def _shaped(kind: str, turns: list[tuple[str, str, str]]) -> str:
    records: list[object]
    if kind == "markdown":
        return "".join(f"**{role.title()}:** {text}\n\n" for role, text, _ts in turns)
    if kind == "claude-code":
        records = [
            {"type": r, "sessionId": "9d1c", "message": {"role": r, "content": t}, "timestamp": ts}
            for r, t, ts in turns
        ]
    elif kind == "codex, old (no session_meta)":
        records = [
            {"type": "message", "role": r, "content": [{"type": _part(r), "text": t}]} for r, t, _ts in turns
        ]
    elif kind == "codex, no session_meta":
        records = [
            {
                "timestamp": ts,
                "type": "response_item",
                "payload": {"type": "message", "role": r, "content": [{"type": _part(r), "text": t}]},
            }
            for r, t, ts in turns
        ]
    elif kind == "kimi":
        records = [{"role": "_system_prompt", "content": "You are Kimi CLI."}]
        for n, (r, t, _ts) in enumerate(turns):
            records += [
                {"role": "_checkpoint", "id": n},
                {"role": r, "content": [{"type": "text", "text": t}]},
            ]
    else:  # generic chat JSON Lines, with times or without
        stamped = kind == "openai"
        records = [{"role": r, "content": t, **({"timestamp": ts} if stamped else {})} for r, t, ts in turns]
    return "".join(json.dumps(record) + "\n" for record in records)


@pytest.mark.parametrize(
    "kind",
    [
        "claude-code",
        "codex, old (no session_meta)",
        "codex, no session_meta",
        "kimi",
        "openai",
        "openai, no times",
        "markdown",
    ],
)
def test_a_transcript_ingested_again_and_grown_is_one_session(
    run: Run, vault_path: Path, tmp_path: Path, kind: str
) -> None:
    """A transcript with no session id of its own (an old Codex log, a Kimi session file, a chat
    log) was named by its whole content: once it grew it made a second session, and extracted its
    first memories again. Its opening names it now, so each copy adds only what is new."""
    transcript = tmp_path / ("chat.md" if kind == "markdown" else "rollout.jsonl")
    seen = []
    for turns in (2, 2, 4, 4):
        transcript.write_text(_shaped(kind, GROWING[:turns]), encoding="utf-8")
        seen.append(as_json(run("ingest", str(transcript), "--json")))
    assert len({s["id"] for s in seen}) == 1, [s["id"] for s in seen]
    assert [s["messages"] for s in seen] == [2, 2, 4, 4]
    assert [[m["title"] for m in s.get("memories", [])] for s in seen] == [
        ["We decided to use CGCS2000 for the tunnel survey."],
        [],
        ["Always export coordinates with 4 decimals."],
        [],
    ]
    assert "already ingested" in seen[1]["notice"] and "already ingested" in seen[3]["notice"]
    assert seen[2]["notice"].endswith("2 new messages")
    assert len(list((vault_path / "memory/archive/sessions").rglob("*.md"))) == 1


@pytest.mark.parametrize("kind", ["kimi", "openai", "openai, no times", "markdown"])
def test_a_session_stored_under_its_old_content_name_takes_the_grown_transcript(
    run: Run, vault_path: Path, tmp_path: Path, kind: str
) -> None:
    """An earlier tmem named a transcript with no session id of its own by a hash of its whole
    content. The transcript grown since has another hash, and its opening names no session yet:
    the stored session is found by its messages and updated, never stored a second time."""
    transcript = tmp_path / ("chat.md" if kind == "markdown" else "rollout.jsonl")
    text = _shaped(kind, GROWING[:2])
    transcript.write_text(text, encoding="utf-8")
    first = as_json(run("ingest", str(transcript), "--json"))
    # The session as an earlier tmem stored it: named `ses-<first day>-<hash of the content hash>`.
    content = hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
    key = hashlib.blake2b(content.encode(), digest_size=4).hexdigest()
    old_id = f"ses-20261120-{key[:6]}" if kind == "openai" else f"ses-{key}"  # the others say no time
    vault = Vault(vault_path)
    old_path = f"{Path(first['path']).parent.as_posix()}/{old_id}.md"
    stored = (vault_path / first["path"]).read_text(encoding="utf-8")
    (vault_path / old_path).write_text(stored.replace(first["id"], old_id), encoding="utf-8")
    (vault_path / first["path"]).unlink()
    commit(vault, [first["path"], old_path], "an earlier tmem: ingest")

    transcript.write_text(_shaped(kind, GROWING), encoding="utf-8")
    grown = as_json(run("ingest", str(transcript), "--json"))
    assert grown["id"] == old_id and grown["path"] == old_path
    assert grown["messages"] == 4 and grown["notice"].endswith("2 new messages")
    assert [m["title"] for m in grown.get("memories", [])] == ["Always export coordinates with 4 decimals."]
    assert [p.name for p in (vault_path / "memory/archive/sessions").rglob("*.md")] == [f"{old_id}.md"]
    again = as_json(run("ingest", str(transcript), "--json"))
    assert again["id"] == old_id and "already ingested" in again["notice"]


def test_two_transcripts_that_open_alike_stay_two_sessions(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    """Two chats that both open with "hi" and carry no times are two sessions: the second is not
    taken for a copy of the first, nor written over it."""
    one, other = tmp_path / "one.jsonl", tmp_path / "other.jsonl"
    one.write_text(_shaped("openai, no times", [("user", "hi", ""), ("assistant", "Hello! Rust?", "")]))
    other.write_text(_shaped("openai, no times", [("user", "hi", ""), ("assistant", "Hello! Go?", "")]))
    first, second = (as_json(run("ingest", str(path), "--json", "--no-extract")) for path in (one, other))
    assert first["id"] != second["id"]
    again = as_json(run("ingest", str(other), "--json"))
    assert again["id"] == second["id"] and "already ingested" in again["notice"]
    stored = [p.read_text(encoding="utf-8") for p in (vault_path / "memory/archive/sessions").rglob("*.md")]
    assert sorted("Rust?" in text for text in stored) == [False, True]


def test_ingest_formats_from_stdin_and_forced(run: Run, tmp_path: Path) -> None:
    md = "### User\nWe decided to deliver reports as PDF.\n\n### Assistant\nNoted.\n"
    data = json.loads(ok(run("ingest", "-", "--json", "--no-extract", input=md)).stdout)
    assert data["source"] == "transcript:markdown" and data["messages"] == 2 and "memories" not in data
    jl = str(
        write(
            tmp_path, "chat.jsonl", '{"role": "user", "content": "I prefer metric units in every report"}\n'
        )
    )
    forced = as_json(run("ingest", jl, "--format", "openai", "--json"))
    assert forced["memories"][0]["action"] == "added" and forced["memories"][0]["category"] == "preference"


@pytest.mark.parametrize(
    ("content", "args", "expected"),
    [
        ("", (), "is empty"),
        ("no speakers here\n", (), "no chat messages found in it as markdown"),
        (
            '{"role": "user", "content": "a"}\n{oops}\n{"role": "user", "content": "b"}\n',
            (),
            "line 2 is not valid JSON",
        ),
        (
            '{"role": "user", "content": "a"}\n',
            ("--format", "claude-code"),
            "no chat messages found in it as claude-code",
        ),
    ],
)
def test_ingest_bad_input_is_one_line(
    run: Run, tmp_path: Path, content: str, args: tuple[str, ...], expected: str
) -> None:
    path = str(write(tmp_path, "t.txt", content))
    assert expected in one_error_line(run("ingest", path, *args), 2)


def test_ingest_binary_and_missing_files(run: Run, tmp_path: Path) -> None:
    binary = tmp_path / "x.bin"
    binary.write_bytes(b"\x00\x01\x02")
    assert "binary file" in one_error_line(run("ingest", str(binary)), 2)
    assert "no such file" in one_error_line(run("ingest", str(tmp_path / "missing.jsonl")), 2)
    latin = tmp_path / "latin.md"
    latin.write_bytes("**User:** caf\xe9".encode("latin-1"))
    assert "not UTF-8" in one_error_line(run("ingest", str(latin)), 2)


# ---- tmem extract ----------------------------------------------------------------------------------


def test_extract_dry_run_changes_nothing_and_says_what_would_happen(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    ok(run("add", "--category", "discovery", "The project uses the WGS84 coordinate system"))
    ok(run("add", "Reports use A4 landscape with deformation curves"))
    commits = git_log(vault_path)
    path = str(write(tmp_path, "compaction.md", OPENCODE_SUMMARY))
    data = as_json(run("extract", path, "--dry-run", "--json"))
    assert git_log(vault_path) == commits
    rows = {r["text"]: r for r in data["candidates"]}
    assert rows["Reports use A4 landscape with deformation curves"]["would"] == "merge"
    coordinate = rows["The project uses the CGCS2000 coordinate system, central meridian 121°"]
    assert coordinate["would"] == "supersede"  # same subject and relation, same kind of value
    assert "coordinate system" in coordinate["reason"]
    assert rows["Set up deformation monitoring reports for the metro tunnel project."]["would"] == "add"
    text = ok(run("extract", path, "--dry-run")).stdout
    assert "[decision 0.90] Set up deformation monitoring reports" in text and "would merge" in text


def test_extract_stores_in_one_commit(run: Run, vault_path: Path, tmp_path: Path) -> None:
    ok(run("add", "The project uses CGCS2000"))
    path = str(
        write(
            tmp_path,
            "notes.md",
            "## Discoveries\n- The project uses WGS84\n- Prism P7 is unstable\n\n## Goal\nShip v1\n",
        )
    )
    commits = len(git_log(vault_path))
    data = as_json(run("extract", path, "--json"))
    assert [m["action"] for m in data["memories"]] == ["superseded", "added", "added"]
    assert len(git_log(vault_path)) == commits + 1
    assert git_log(vault_path)[0] == "extract: memories from notes.md (2 added, 1 superseded)"
    hits = as_json(run("search", "project", "uses", "--mode", "keyword", "--json"))["results"]
    assert [h["title"] for h in hits][:1] == ["The project uses WGS84"]
    assert "The project uses CGCS2000" not in [h["title"] for h in hits]


def test_extract_from_a_stored_session(run: Run) -> None:
    sid = as_json(run("session", "start", "s", "--json"))["id"]
    ok(run("session", "append", "Never deploy on Fridays."))
    ok(run("session", "end", "--no-extract"))
    data = as_json(run("extract", "--session", sid, "--json"))
    assert [(m["action"], m["category"]) for m in data["memories"]] == [("added", "pattern")]
    assert "FILE or --session" in one_error_line(run("extract", "x.md", "--session", sid), 2)


def test_extract_with_the_llm_through_a_real_local_server(
    run: Run,
    vault_path: Path,
    tmp_path: Path,
    chat_server: ChatServer,  # noqa: F811 - pytest fixture
) -> None:
    (vault_path / "tmem.yaml").write_text(
        "embeddings:\n  provider: fake\n"
        f"extract:\n  llm: true\n  base_url: {chat_server.url}\n  model: local-model\n  api_key_env: null\n",
        encoding="utf-8",
    )
    approve_outward(vault_path)  # the chat API is this machine's user's choice
    chat_server.reply = json.dumps(
        {"memories": [{"category": "fact", "text": "The client is ACME Surveying.", "confidence": 0.8}]}
    )
    path = str(
        write(
            tmp_path,
            "chat.md",
            f"**User:** our client is ACME Surveying, key {OPENAI_KEY}\n\n**Assistant:** noted\n",
        )
    )
    data = as_json(run("extract", path, "--json"))
    assert data["extractor"] == "llm"
    assert [m["title"] for m in data["memories"]] == ["The client is ACME Surveying."]
    sent = json.dumps(chat_server.requests)
    assert "ACME Surveying" in sent and OPENAI_KEY not in sent  # redacted before it left the machine
    note = next((vault_path / "memory").rglob("the-client-is-acme-surveying-*.md"))
    assert "extractor: llm" in note.read_text(encoding="utf-8")


def test_extract_is_an_operation_any_door_can_run(vault_path: Path, tmp_path: Path) -> None:
    """What MCP calls: the same extraction as `tmem extract`, through the backend, in one commit."""
    tmem = LocalBackend(vault_path)
    try:
        preview = tmem.run(EXTRACT, ExtractRequest(text=OPENCODE_SUMMARY, name="summary.md", dry_run=True))
        assert preview.dry_run and preview.candidates and not preview.memories
        commits = len(git_log(vault_path))
        stored = tmem.run(EXTRACT, ExtractRequest(text=OPENCODE_SUMMARY, name="summary.md"))
    finally:
        tmem.close()
    assert [m.action for m in stored.memories] == ["added"] * len(preview.candidates)
    assert len(git_log(vault_path)) == commits + 1 and stored.commit
    assert git_log(vault_path)[0].startswith("extract: memories from summary.md")
