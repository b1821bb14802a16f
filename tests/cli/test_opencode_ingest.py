"""`tmem ingest` of an opencode session: what `opencode export <id>` prints, its folder in
opencode's JSON storage, its id (looked up in the storage, then in `opencode.db`). What opencode
keeps beside the conversation (reasoning, the contents of a mentioned file, step records) is not
stored; a link inside the storage is never followed; a file opencode was still writing is left out."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from helpers import as_json, git_log, ok, one_error_line

from tiered_memory.model import transcripts

Run = Callable[..., Result]
SESSION = "ses_3f2a1b9c8ffeAbCdEf012345"
REASONING = "the user seems unsure, PRIVATE-REASONING"
MENTIONED = "Called the Read tool with the following input: control.csv FILE-CONTENTS"


def _message(mid: str, role: str, created: int, parts: list[dict[str, Any]]) -> dict[str, Any]:
    info: dict[str, Any] = {"id": mid, "sessionID": SESSION, "role": role, "time": {"created": created}}
    if role == "assistant":
        info.update(
            parentID="msg_0001aaaaaaaa",
            modelID="claude-sonnet-4",
            providerID="anthropic",
            mode="build",
            agent="build",
            path={"cwd": "/home/ana/geodesy", "root": "/home/ana/geodesy"},
            cost=0,
            tokens={"input": 1, "output": 1, "reasoning": 0, "cache": {"read": 0, "write": 0}},
        )
    else:
        info.update(agent="build", model={"providerID": "anthropic", "modelID": "claude-sonnet-4"})
    return {
        "info": info,
        "parts": [
            {"id": f"prt_{mid[4:]}{n:04d}", "sessionID": SESSION, "messageID": mid, **part}
            for n, part in enumerate(parts)
        ],
    }


INFO = {
    "id": SESSION,
    "slug": "quiet-river",
    "version": "1.1.0",
    "projectID": "4b0ea68d7af9a6031a7ffda7ad66e0cb83315750",
    "directory": "/home/ana/geodesy",
    "title": "Tunnel survey datum",
    "time": {"created": 1763629200000, "updated": 1763629510000},
}
MESSAGES = [
    _message(
        "msg_0001aaaaaaaa",
        "user",
        1763629200000,
        [
            {"type": "text", "text": "We decided to use CGCS2000 for the tunnel survey."},
            {"type": "text", "synthetic": True, "text": MENTIONED},
            {"type": "file", "mime": "text/plain", "filename": "control.csv", "url": "file:///x/control.csv"},
        ],
    ),
    _message(
        "msg_0002aaaaaaaa",
        "assistant",
        1763629210000,
        [
            {"type": "step-start"},
            {"type": "reasoning", "text": REASONING, "time": {"start": 1, "end": 2}},
            {"type": "text", "text": "Let me look at the control file."},
            {
                "type": "tool",
                "callID": "call_1",
                "tool": "read",
                "state": {
                    "status": "completed",
                    "input": {"filePath": "control.csv"},
                    "output": "42 points\n" * 5000,
                    "title": "control.csv",
                    "metadata": {},
                    "time": {"start": 1, "end": 2},
                },
            },
            {"type": "text", "text": "Noted. The control file lists 42 points."},
            {"type": "step-finish", "reason": "stop", "cost": 0},
        ],
    ),
    _message(
        "msg_0003aaaaaaaa",
        "user",
        1763629500000,
        [{"type": "text", "text": "Always export coordinates with 4 decimals."}],
    ),
    _message(
        "msg_0004aaaaaaaa",
        "assistant",
        1763629510000,
        [{"type": "text", "text": "Understood: exports use 4 decimals from now on."}],
    ),
]
SAID = [
    ("user", "We decided to use CGCS2000 for the tunnel survey.\n[file: control.csv]"),
    ("assistant", 'Let me look at the control file.\n[tool: read] {"filePath": "control.csv"}'),
    ("tool", "[tool result] " + " ".join(["42 points"] * 2000)[:185] + "…"),
    ("assistant", "Noted. The control file lists 42 points."),
    ("user", "Always export coordinates with 4 decimals."),
    ("assistant", "Understood: exports use 4 decimals from now on."),
]


def _export(messages: int = len(MESSAGES)) -> str:
    """What `opencode export <id>` prints."""
    return json.dumps({"info": INFO, "messages": MESSAGES[:messages], "todos": []}, indent=2) + "\n"


def _storage(share: Path, messages: int = len(MESSAGES)) -> Path:
    """opencode's JSON storage under `share` (its data folder) holding the session; its messages'
    folder."""
    storage = share / "opencode" / "storage"
    _json(storage / "session" / INFO["projectID"] / f"{SESSION}.json", INFO)
    for item in MESSAGES[:messages]:
        info = item["info"]
        _json(storage / "message" / SESSION / f"{info['id']}.json", info)
        for part in item["parts"]:
            _json(storage / "part" / info["id"] / f"{part['id']}.json", part)
    return storage / "message" / SESSION


def _json(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")


def _said(vault: Path) -> list[tuple[str, str]]:
    [note] = (vault / "memory/archive/sessions").rglob("*.md")
    text = note.read_text(encoding="utf-8")
    return [
        (m.role, m.content)
        for m in transcripts.markdown_messages(text.split("## Messages", 1)[1], {"heading"}, False)
    ]


# ---- the model ----------------------------------------------------------------------------------


def test_an_export_is_told_from_the_other_formats_and_read() -> None:
    text = _export()
    assert transcripts.detect(text) == "opencode"
    got = transcripts.parse(text)
    assert (got.format, got.origin, got.cwd, got.title) == (
        "opencode",
        SESSION,
        "/home/ana/geodesy",
        INFO["title"],
    )
    assert [(m.role, m.content) for m in got.messages] == SAID
    assert REASONING not in repr(got.messages) and "FILE-CONTENTS" not in repr(got.messages)


def test_its_messages_as_json_lines_read_alike_and_slim() -> None:
    lines = [json.dumps({"info": INFO})] + [json.dumps(m) for m in MESSAGES]
    slim = [transcripts.slim_line(line + "\n") for line in lines]
    assert REASONING not in "".join(slim) and sum(map(len, slim)) < sum(map(len, lines)) // 10
    for given in (lines, slim):
        got = transcripts.parse("\n".join(given) + "\n")
        assert got.format == "opencode" and [(m.role, m.content) for m in got.messages] == SAID


# ---- tmem ingest ----------------------------------------------------------------------------------


def test_an_export_is_one_session_that_grows(run: Run, vault_path: Path, tmp_path: Path) -> None:
    export = tmp_path / "export.json"
    export.write_text(_export(2), encoding="utf-8")
    first = as_json(run("ingest", str(export), "--json"))
    assert first["source"] == "transcript:opencode" and first["origin"] == SESSION
    assert first["title"] == INFO["title"] and first["messages"] == 4
    export.write_text(_export(), encoding="utf-8")
    grown = as_json(run("ingest", str(export), "--json"))
    assert grown["id"] == first["id"] and grown["notice"].endswith("2 new messages")
    assert [m["title"] for m in grown["memories"]] == ["Always export coordinates with 4 decimals."]
    assert _said(vault_path) == SAID
    stored = "".join(p.read_text(encoding="utf-8") for p in (vault_path / "memory").rglob("*.md"))
    assert REASONING not in stored and "FILE-CONTENTS" not in stored


def test_a_session_s_storage_by_folder_or_id_is_the_session_its_export_is(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    share = tmp_path / "share"
    folder = _storage(share)
    by_folder = as_json(run("ingest", str(folder), "--json"))
    assert by_folder["origin"] == SESSION and by_folder["messages"] == len(SAID)
    assert _said(vault_path) == SAID
    head = git_log(vault_path)
    by_id = as_json(run("ingest", SESSION, "--json", env={"XDG_DATA_HOME": str(share)}))
    export = tmp_path / "export.json"
    export.write_text(_export(), encoding="utf-8")
    exported = as_json(run("ingest", str(export), "--json"))
    assert by_id["id"] == exported["id"] == by_folder["id"]
    assert "already ingested" in by_id["notice"] and "already ingested" in exported["notice"]
    assert git_log(vault_path) == head


def test_a_session_in_opencode_s_database_by_id(run: Run, vault_path: Path, tmp_path: Path) -> None:
    """opencode since 1.2 keeps sessions in `opencode.db`: the same JSON in its tables."""
    share = tmp_path / "share"
    (share / "opencode").mkdir(parents=True)
    database = sqlite3.connect(share / "opencode" / "opencode.db")
    database.executescript(
        "CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, slug TEXT, directory TEXT, title TEXT,"
        " version TEXT, time_created INTEGER, time_updated INTEGER);"
        "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER,"
        " time_updated INTEGER, data TEXT);"
        "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER,"
        " time_updated INTEGER, data TEXT);"
    )
    database.execute(
        "INSERT INTO session VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            SESSION,
            INFO["projectID"],
            "quiet-river",
            INFO["directory"],
            INFO["title"],
            "1.2.0",
            1763629200000,
            0,
        ),
    )
    for item in reversed(MESSAGES):  # stored in any order, read in the order they were written
        info = {k: v for k, v in item["info"].items() if k not in ("id", "sessionID")}
        database.execute(
            "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
            (item["info"]["id"], SESSION, info["time"]["created"], 0, json.dumps(info)),
        )
        for part in item["parts"]:
            data = {k: v for k, v in part.items() if k not in ("id", "sessionID", "messageID")}
            database.execute(
                "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                (part["id"], part["messageID"], SESSION, 0, 0, json.dumps(data)),
            )
    database.commit()
    database.close()
    done = as_json(run("ingest", SESSION, "--json", env={"XDG_DATA_HOME": str(share)}))
    assert done["origin"] == SESSION and done["title"] == INFO["title"]
    assert _said(vault_path) == SAID


def test_a_link_inside_the_storage_is_not_followed(run: Run, vault_path: Path, tmp_path: Path) -> None:
    """A part folder and a part file that are links (to what the person never named) are left out
    and said so; the rest of the session is stored."""
    folder = _storage(tmp_path / "share")
    outside = tmp_path / "elsewhere"
    _json(outside / "prt_secret.json", {"type": "text", "text": "OUTSIDE-SECRET"})
    parts = folder.parent.parent / "part"
    linked = parts / "msg_0004aaaaaaaa"
    for child in linked.iterdir():
        child.unlink()
    linked.rmdir()
    linked.symlink_to(outside, target_is_directory=True)
    (parts / "msg_0003aaaaaaaa" / "prt_zz.json").symlink_to(outside / "prt_secret.json")
    done = run("ingest", str(folder), "--json")
    ok(done)
    assert "left out msg_0004aaaaaaaa (a symbolic link, not followed)" in done.stderr
    assert "left out prt_zz.json (a symbolic link, not followed)" in done.stderr
    stored = "".join(p.read_text(encoding="utf-8") for p in (vault_path / "memory").rglob("*.md"))
    assert "OUTSIDE-SECRET" not in stored
    assert _said(vault_path) == SAID[:-1]


def test_the_messages_folder_as_a_link_is_refused(run: Run, vault_path: Path, tmp_path: Path) -> None:
    real = _storage(tmp_path / "share")
    storage = tmp_path / "other" / "opencode" / "storage"
    (storage / "message").mkdir(parents=True)
    os.symlink(real, storage / "message" / SESSION)
    head = git_log(vault_path)
    assert "a symbolic link is not followed" in one_error_line(
        run("ingest", str(storage / "message" / SESSION)), 2
    )
    assert git_log(vault_path) == head


def test_a_part_that_is_not_utf8_json_or_too_large_is_left_out(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    folder = _storage(tmp_path / "share")
    parts = folder.parent.parent / "part"
    (parts / "msg_0003aaaaaaaa" / "prt_0003aaaaaaaa0000.json").write_bytes(
        b'{"type": "text", "text": "caf\xe9"}'
    )
    huge = parts / "msg_0004aaaaaaaa" / "prt_0004aaaaaaaa0000.json"
    with huge.open("w", encoding="utf-8") as handle:
        handle.write('{"type": "text", "text": "')
        handle.write("x" * (transcripts.RECORD_MB * 1024 * 1024 + 10))
        handle.write('"}')
    done = run("ingest", str(folder))
    ok(done)
    assert "prt_0003aaaaaaaa0000.json (not UTF-8 JSON" in done.stderr
    assert "prt_0004aaaaaaaa0000.json (larger than a record may hold)" in done.stderr
    assert _said(vault_path) == SAID[:4]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("ses_0000000000nothere", "no opencode session with that id"),
        ("folder", "not an opencode session's folder"),
    ],
)
def test_what_names_no_session_is_one_line(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str, expected: str
) -> None:
    share = tmp_path / "share"
    _storage(share)
    (tmp_path / "folder").mkdir()
    monkeypatch.chdir(tmp_path)
    assert expected in one_error_line(run("ingest", given, env={"XDG_DATA_HOME": str(share)}), 2)


def test_a_message_naming_another_session_s_message_brings_none_of_its_parts(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    """Which parts a message holds is told by its file's name, under its own session's folder,
    not by the id written inside it: a message claiming another session's message id (and that
    session) would otherwise carry that conversation into this session's note."""
    folder = _storage(tmp_path / "share")
    storage = folder.parent.parent
    other = "msg_0099ffffffff"
    _json(storage / "message" / "ses_0000otherSession01" / f"{other}.json", {"id": other, "role": "user"})
    _json(storage / "part" / other / "prt_0099ffffffff0000.json", {"type": "text", "text": "OTHER-SESSION"})
    claim = {**MESSAGES[0]["info"], "id": other, "sessionID": "ses_0000otherSession01"}
    _json(folder / "msg_0000aaaaaaaa.json", {**claim, "time": {"created": 1}})
    ok(run("ingest", str(folder)))
    stored = "".join(p.read_text(encoding="utf-8") for p in (vault_path / "memory").rglob("*.md"))
    assert "OTHER-SESSION" not in stored
    assert _said(vault_path) == SAID
