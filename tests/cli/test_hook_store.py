"""`tmem hook pre-compact|session-end` store the agent's transcript; when that takes a while the
hook says so on stderr at once instead of keeping the agent's log silent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import FAKE_CONFIG

from tiered_memory.cli import cli, hook
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
