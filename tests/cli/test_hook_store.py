"""`tmem hook pre-compact|session-end` store the agent's transcript; when that takes a while the
hook says so on stderr at once instead of keeping the agent's log silent."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import FAKE_CONFIG, fake_daemon, git, silent_but_ready

from tiered_memory.cli import cli, hook
from tiered_memory.daemon import client
from tiered_memory.storage.vault import init_vault

TRANSCRIPT = Path(__file__).resolve().parents[1] / "data" / "claude-code-session.jsonl"
STORING = "storing the session's transcript"


def _store(tmp_path: Path, event: str) -> tuple[str, Path]:
    vault = tmp_path / "vault"
    init_vault(vault, config_text=FAKE_CONFIG)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(TRANSCRIPT.read_text(encoding="utf-8"), encoding="utf-8")
    payload = json.dumps({"session_id": "s1", "transcript_path": str(transcript), "cwd": str(tmp_path)})
    done = CliRunner().invoke(
        cli, ["--vault", str(vault), "hook", event], input=payload, catch_exceptions=False
    )
    assert done.exit_code == 0, done.output
    return done.stderr, vault


@pytest.mark.parametrize("event", ["pre-compact", "session-end"])
def test_a_slow_store_says_what_it_is_doing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, event: str
) -> None:
    monkeypatch.setattr(hook, "STORE_NOTICE_AFTER", 0.0)  # every store is "slow"
    err, vault = _store(tmp_path, event)
    lines = err.splitlines()
    assert lines[0] == f"tmem hook: {event}: {STORING}…"
    assert any("ingested" in line for line in lines[1:]), err  # and then what it stored
    assert list((vault / "memory").rglob("ses-*.md"))


def test_a_quick_store_says_only_what_it_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hook, "STORE_NOTICE_AFTER", 60.0)
    err, _ = _store(tmp_path, "session-end")
    assert STORING not in err
    assert "ingested" in err


@pytest.fixture
def silent_daemon(tmp_path: Path) -> Iterator[tuple[Path, list[str]]]:
    """A vault whose daemon socket says it is ready and takes every other request without ever
    answering it (a daemon hung in the middle of its work)."""
    vault = tmp_path / "vault"
    init_vault(vault, config_text=FAKE_CONFIG)
    with fake_daemon(vault, silent_but_ready) as seen:
        yield vault, seen


def test_a_hung_daemon_costs_the_store_its_budget_then_it_is_stored_here(
    silent_daemon: tuple[Path, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon that takes the transcript and never answers held session-end for the ten minutes
    any write gets, past every agent's hook timeout: the transcript was never stored. Storing it
    again is harmless (the same transcript is "already ingested"), so the hook stores it itself."""
    vault, seen = silent_daemon
    monkeypatch.setattr(hook, "STORE_BUDGET", 1.0, raising=False)
    monkeypatch.setattr(client, "CALL_TIMEOUT", 8.0)  # what the daemon got before, kept short here
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(TRANSCRIPT.read_text(encoding="utf-8"), encoding="utf-8")
    payload = json.dumps({"session_id": "s1", "transcript_path": str(transcript), "cwd": str(tmp_path)})
    started = time.monotonic()
    done = CliRunner().invoke(cli, ["--vault", str(vault), "hook", "session-end"], input=payload)
    took = time.monotonic() - started
    assert done.exit_code == 0 and done.stdout == ""
    assert "call" in seen and "ingested" in done.stderr, done.stderr
    assert list((vault / "memory").rglob("ses-*.md"))
    assert took < 6.0


KIMI_SESSION = [
    {"role": "_system_prompt", "content": "You are Kimi CLI."},
    {"role": "_checkpoint", "id": 0},
    {"role": "user", "content": [{"type": "text", "text": "Use pnpm workspaces for the monorepo build."}]},
    {"role": "assistant", "content": [{"type": "text", "text": "Switched the build to pnpm workspaces."}]},
]


@pytest.mark.parametrize("linked", [False, True])
def test_a_kimi_session_end_stores_the_session_file_kimi_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, linked: bool
) -> None:
    # Kimi's hooks send the session id and working folder, no transcript_path; its session file
    # is under the md5 of the folder it was started in (another spelling of it when linked).
    vault = tmp_path / "vault"
    init_vault(vault, config_text=FAKE_CONFIG)
    share, project = tmp_path / "kimi-share", tmp_path / "project"
    project.mkdir()
    started_in = str(tmp_path / "elsewhere") if linked else str(project)
    session = share / "sessions" / hashlib.md5(started_in.encode()).hexdigest() / "0b9e6f2c-1d"
    session.mkdir(parents=True)
    (session / "context.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in KIMI_SESSION), encoding="utf-8"
    )
    monkeypatch.setenv("KIMI_SHARE_DIR", str(share))
    payload = json.dumps(
        {"hook_event_name": "SessionEnd", "session_id": "0b9e6f2c-1d", "cwd": str(project), "reason": "exit"}
    )

    done = CliRunner().invoke(
        cli,
        ["--vault", str(vault), "hook", "session-end", "--agent", "kimi"],
        input=payload,
        catch_exceptions=False,
    )

    assert done.exit_code == 0 and "ingested" in done.stderr, done.stderr
    stored = "".join(p.read_text(encoding="utf-8") for p in (vault / "memory").rglob("ses-*.md"))
    assert "pnpm workspaces" in stored


@pytest.mark.parametrize("session_id", ["../../etc", "a/b", "", 7])
def test_a_kimi_session_id_that_is_not_one_is_never_looked_up(tmp_path: Path, session_id: object) -> None:
    share = tmp_path / "kimi-share"
    (share / "sessions" / "x" / "etc").mkdir(parents=True)
    assert (
        hook.kimi_session_file({"session_id": session_id, "cwd": "/"}, {"KIMI_SHARE_DIR": str(share)}) is None
    )


def test_a_daemon_that_answers_its_ping_with_an_error_is_passed_over(tmp_path: Path) -> None:
    """A broken daemon answered the hook's ping with an error, which the hook did not expect: the
    session started with no context at all. Now this process makes the block."""
    vault = tmp_path / "vault"
    init_vault(vault, config_text=FAKE_CONFIG)
    with fake_daemon(vault, lambda _op: b'{"ok": false, "error": "index is corrupt", "code": 3}\n'):
        assert hook.daemon_ready(vault) is False
        done = CliRunner().invoke(
            cli, ["--vault", str(vault), "hook", "session-start"], input=json.dumps({"cwd": str(tmp_path)})
        )
    assert done.exit_code == 0 and done.stdout.strip(), done.stderr


def _hook_process(vault: Path, payload: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`tmem hook session-end` as an agent runs it: a process of its own, the payload on stdin."""
    return subprocess.run(
        [sys.executable, "-m", "tiered_memory", "--vault", str(vault), "hook", "session-end"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["link to a secret", "pipe", "link to a device"])
def test_only_a_regular_file_named_as_the_transcript_is_read(tmp_path: Path, kind: str) -> None:
    """The one file outside the vault a hook reads is the transcript the agent names, and only
    when it is a regular file there: a link naming a transcript may lead to a key, a pipe would
    hold the hook, a device never ends."""
    vault = tmp_path / "vault"
    init_vault(vault, config_text=FAKE_CONFIG)
    head = git(vault, "rev-parse", "HEAD")
    secret = tmp_path / "id_rsa"
    # Read as a transcript, this is a chat of two messages a session note would store.
    secret.write_text("User: my key is hunter2-swordfish\n\nAssistant: noted, hunter2-swordfish\n")
    named = tmp_path / "session.md"
    if kind == "pipe":
        os.mkfifo(named)
    else:
        named.symlink_to(secret if kind == "link to a secret" else "/dev/zero")
    done = _hook_process(vault, {"session_id": "s1", "transcript_path": str(named), "cwd": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    why = "is not a regular file" if kind == "pipe" else "is a symbolic link, not followed"
    assert done.stderr.strip() == f"tmem hook: session-end: transcript {named} {why}; nothing stored"
    assert git(vault, "rev-parse", "HEAD") == head
    assert not any("hunter2" in p.read_text(errors="replace") for p in (vault / "memory").rglob("*.md"))


@pytest.mark.slow
def test_a_transcript_through_a_linked_folder_is_still_read(tmp_path: Path) -> None:
    """Only the file itself must be no link: an agent's folder of sessions kept elsewhere
    (dotfiles, another disk) and linked to is the person's choice."""
    vault = tmp_path / "vault"
    init_vault(vault, config_text=FAKE_CONFIG)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "t.jsonl").write_text(TRANSCRIPT.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "sessions").symlink_to(tmp_path / "elsewhere")
    done = _hook_process(
        vault, {"session_id": "s1", "transcript_path": str(tmp_path / "sessions" / "t.jsonl")}
    )
    assert done.returncode == 0 and "ingested" in done.stderr, done.stderr
    assert list((vault / "memory").rglob("ses-*.md"))


@pytest.mark.parametrize(
    ("named", "shown"),
    [
        (
            "/x/\x1b[2J\x1b]8;;evil\x07t.jsonl\nfake line\u2028",
            r"/x/\x1b[2J\x1b]8;;evil\x07t.jsonl\nfake line\u2028",
        ),
        ("~nobody-of-that-name/t.jsonl", "~nobody-of-that-name/t.jsonl"),
    ],
)
def test_a_transcript_name_that_leads_nowhere_is_one_plain_line(
    tmp_path: Path, named: str, shown: str
) -> None:
    vault = tmp_path / "vault"
    init_vault(vault, config_text=FAKE_CONFIG)
    payload = json.dumps({"transcript_path": named})
    done = CliRunner().invoke(cli, ["--vault", str(vault), "hook", "session-end"], input=payload)
    assert done.exit_code == 0 and done.stdout == ""
    assert done.stderr == f"tmem hook: session-end: transcript {shown} does not exist; nothing stored\n"
