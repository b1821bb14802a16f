"""A secret given to any field of any write command never reaches a file or git history.

Every fake secret is assembled at run time (prefix + seeded random body), so this file holds
nothing that a secret scanner would flag.
"""

from __future__ import annotations

import json
import random
import string
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import ok, write
from test_sessions import claude_transcript

from tiered_memory.model.redact import redact, redact_value
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import Vault

Run = Callable[..., Result]
ALNUM = string.ascii_letters + string.digits


def token(seed: int) -> str:
    """A GitHub-token-shaped fake: recognised on its own, with no label around it."""
    return "gh" + "p_" + "".join(random.Random(seed).choices(ALNUM, k=36))


def leaks(root: Path, secrets: list[str]) -> list[str]:
    """Where any secret (or its lowercased form, as slugs and indexes keep it) still appears:
    file names, file contents outside .git, and every commit's message and diff."""
    needles = {s for secret in secrets for s in (secret, secret.lower(), secret[4:].lower())}
    found = []
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(".git/") or rel == ".git":
            continue
        found += [f"name {rel}" for n in needles if n in rel.lower()]
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found += [f"content {rel}" for n in needles if n.encode() in data or n.encode() in data.lower()]
    log = subprocess.run(
        ["git", "-C", str(root), "log", "-p", "--all", "--format=%B"], capture_output=True, check=True
    ).stdout
    found += [f"git {n[:8]}..." for n in needles if n.encode() in log or n.encode() in log.lower()]
    return found


def test_a_secret_in_every_cli_field_is_redacted_everywhere(run: Run, vault_path: Path) -> None:
    s = [token(i) for i in range(20)]
    ok(
        run(
            "add",
            f"Deploy notes {s[0]}",
            "--title",
            f"Release {s[1]}",
            "--tags",
            f"ops,{s[2]}",
            "--entity",
            f"Bot {s[3]}",
            "--source",
            f"https://ci.example.org/run?t={s[4]}",
            "--no-dedup",
        )
    )
    ok(run("add", "Plain words about the build", "--tags", "password=Xk39fa0Qpz7", "--no-dedup"))
    ok(run("session", "start", f"Pairing {s[5]}"))
    ok(run("session", "append", f"we used {s[6]} today"))
    ok(run("st", "set", f"cache-{s[7]}", f"value {s[8]}"))
    ok(run("st", "set", "db_password", "Hq7vZ2mP9xLr"))
    ok(run("decide", f"Rotate {s[9]} weekly", "--why", f"it leaked as {s[10]}", "--tags", s[11]))
    ok(run("project", "new", "apollo", "--title", f"Apollo {s[12]}", "--description", f"uses {s[13]}"))
    ok(run("task", "add", "-p", "apollo", f"revoke {s[14]}"))
    ok(run("project", "update", "apollo", "--note", f"moved {s[15]}"))
    ok(run("profile", "set", f"key-{s[16]}", f"v {s[17]}"))
    ok(run("lesson", "add", f"Never paste {s[18]}", "--title", f"Lesson {s[19]}"))
    found = leaks(vault_path, [*s, "Xk39fa0Qpz7", "Hq7vZ2mP9xLr"])
    assert found == [], "\n".join(found)
    assert (
        "[REDACTED:github-token]"
        in subprocess.run(
            ["git", "-C", str(vault_path), "log", "-p", "--all"], capture_output=True, text=True, check=True
        ).stdout
    )


def slack_token(seed: int) -> str:
    """A bot token with short numeric ids and a body of lowercase letters and digits."""
    rng = random.Random(seed)
    ids = f"{rng.randrange(100, 10_000)}-{rng.randrange(100, 10_000)}"
    return "xo" + f"xb-{ids}-" + "".join(rng.choices(string.ascii_lowercase + string.digits, k=24))


def introduced(seed: int) -> tuple[list[str], list[str]]:
    """Sentences that introduce a secret with no `key=` label, and the secrets in them."""
    rng = random.Random(seed)
    aws = "".join(rng.choices(ALNUM + "+/", k=40))
    passphrase = "-".join(rng.sample(["correct", "horse", "battery", "staple", "orbit", "maple"], 4)) + "!"
    key_id = "".join(rng.choices("0123456789abcdef", k=40))
    sentences = [
        f"The AWS secret for the backup bucket is {aws}, keep it safe.",
        f"My password for the NAS is {passphrase}",
        f'{{"type": "service_account", "private_key_id": "{key_id}", "client_id": "1234"}}',
    ]
    return sentences, [aws, passphrase, key_id]


def test_secrets_without_a_label_never_reach_the_vault(run: Run, vault_path: Path, tmp_path: Path) -> None:
    # Slack ids this short made the whole token read as words and numbers (seeds 162 and 299).
    slack = [slack_token(162), slack_token(299)]
    sentences, secrets = introduced(1)
    said, said_secrets = introduced(3)
    turns = [("user", text, f"2026-11-20T09:00:0{i}Z") for i, text in enumerate(said)]
    ok(run("ingest", str(write(tmp_path, "9d1c.jsonl", claude_transcript(*turns)))))
    ok(run("session", "start", "Pairing"))
    ok(run("session", "append", f"posted the alert with {slack[0]}"))
    for sentence in sentences:
        ok(run("session", "append", sentence))
    ok(run("add", "The alert bot of the ops channel", "--source", slack[1], "--no-dedup"))
    ok(run("add", sentences[0], "--title", "Backups", "--no-dedup"))
    ok(run("add", "Home network", "--source", sentences[1], "--no-dedup"))
    found = leaks(vault_path, [*slack, *secrets, *said_secrets])
    assert found == [], "\n".join(found)
    log = subprocess.run(
        ["git", "-C", str(vault_path), "log", "-p", "--all"], capture_output=True, text=True, check=True
    ).stdout
    for kind in ("slack-token", "aws-secret-key", "password", "generic-secret"):
        assert f"[REDACTED:{kind}]" in log, kind  # what was said was stored, without its secrets


def test_scan_reports_secrets_without_a_label(run: Run, vault_path: Path) -> None:
    sentences, secrets = introduced(2)
    text = "\n".join([*sentences, f"slack: {slack_token(340)}", "The password is required.", ""])
    (vault_path / "memory" / "long-term" / "by-hand.md").write_text(text, encoding="utf-8")
    result = run("scan", "--json")
    assert result.exit_code == 1, result.stdout
    data = json.loads(result.stdout)
    assert [(f["line"], f["kind"]) for f in data["files"]] == [
        (1, "aws-secret-key"),
        (2, "password"),
        (3, "generic-secret"),
        (4, "slack-token"),
    ]
    assert not any(secret[4:] in result.stdout for secret in secrets)


def _redactor(text: str) -> str:
    return redact(text)[0]


def test_transaction_redacts_notes_json_names_and_the_message(vault: Vault) -> None:
    from tiered_memory.model import note as notes

    s = [token(100 + i) for i in range(6)]
    warnings: list[str] = []
    tx = Transaction(vault, f"remember: {s[0]}", warn=warnings.append, redact=_redactor)
    note = notes.Note(
        path=f"memory/long-term/{notes.slugify('Release ' + s[1])}.md",
        meta={
            "title": f"Release {s[1]}",
            "tags": ["ops", s[2]],
            "extra": {"nested": [s[3]]},
            "password": "Zq81xVb3",
        },
        body=f"body {s[4]}\n",
        has_frontmatter=True,
    )
    final = tx.create_note(note)
    tx.write_json("memory/short-term/state.json", {s[5]: "x", "list": [{"api_key": "pV7kQ2mZ9xRt4"}]})
    tx.commit()
    assert "redacted" in final and s[1].lower()[:10] not in final
    parsed = notes.parse((vault.root / final).read_text(), final)
    assert parsed.meta["tags"] == ["ops", "[REDACTED:github-token]"]  # still a list of strings
    assert parsed.meta["extra"] == {"nested": ["[REDACTED:github-token]"]}
    assert parsed.meta["password"] == "[REDACTED:password]"
    assert leaks(vault.root, [*s, "Zq81xVb3", "pV7kQ2mZ9xRt4"]) == []
    assert any("before writing" in w for w in warnings)


def test_a_clean_file_is_written_byte_for_byte(vault: Vault) -> None:
    text = "---\ntitle: 'yes'\nwhen: 2026-01-02\n---\nplain text\n"
    tx = Transaction(vault, "edit", redact=_redactor)
    tx.write_text("memory/long-term/a.md", text)
    tx.commit()
    assert (vault.root / "memory/long-term/a.md").read_text() == text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"password": "Zq81xVb3"}, {"password": "[REDACTED:password]"}),
        ({"title": "plain"}, {"title": "plain"}),
        ([("a", {"k": ["x"]})], [("a", {"k": ["x"]})]),
        ({1: 2, "n": None}, {1: 2, "n": None}),
    ],
)
def test_redact_value_keeps_shapes(value: object, expected: object) -> None:
    assert redact_value(value, _redactor) == expected
    assert json.dumps(redact_value({"token": token(7)}, _redactor)) == '{"token": "[REDACTED:github-token]"}'
