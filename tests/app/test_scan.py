"""`tmem scan`: secrets already in the vault's files and in git history, reported masked.

Every fake secret is assembled at run time (prefix + seeded random body), so this file holds
nothing that a secret scanner would flag.
"""

from __future__ import annotations

import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable
from pathlib import Path

from click.testing import Result
from helpers import git, write

from tiered_memory.app.scan import mask, scan_vault
from tiered_memory.storage.vault import Vault

Run = Callable[..., Result]
ALNUM = string.ascii_letters + string.digits


def rand(n: int, seed: int, alphabet: str = ALNUM) -> str:
    return "".join(random.Random(seed).choices(alphabet, k=n))


OPENAI = "sk-" + rand(48, 1)
AWS = "AKIA" + rand(16, 5, string.ascii_uppercase + "234567")
GITHUB = "ghp_" + rand(36, 7)
DB_PASSWORD = "Zq8" + rand(13, 40)
PEM_BODY = "\n".join(rand(64, 100 + i, ALNUM + "+/") for i in range(4))
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD").strip()


def test_mask_never_shows_more_than_four_characters() -> None:
    assert mask(OPENAI) == "sk-" + OPENAI[3] + f"…({len(OPENAI)} chars)"
    assert mask("hunter22") == "hu…(8 chars)"
    assert mask("abc") == "…(3 chars)"


def test_secrets_in_files_are_reported_masked(run: Run, vault_path: Path) -> None:
    write(vault_path, "memory/long-term/deploy.md", f"# Deploy\n\nThe staging key is {OPENAI} for now.\n")
    write(vault_path, "memory/mid-term/projects/x/notes.md", f"aws id {AWS}\n\npush with {GITHUB}\n")
    write(
        vault_path,
        "memory/long-term/db.md",
        f"connect to postgres://app:{DB_PASSWORD}@db.internal:5432/survey\n",
    )
    write(vault_path, "memory/short-term/temp/key.md", f"server key:\n\n{PEM}\n")
    result = run("scan")
    assert result.exit_code == 1
    out = result.stdout
    for secret in (OPENAI, AWS, GITHUB, DB_PASSWORD, PEM_BODY.splitlines()[0][:20]):
        assert secret not in out and secret[4:20] not in out
    assert "memory/long-term/deploy.md:3  openai-key  sk-" in out
    assert "memory/mid-term/projects/x/notes.md:1  aws-access-key  AKIA…(20 chars)" in out
    assert "memory/mid-term/projects/x/notes.md:3  github-token  ghp_…(40 chars)" in out
    assert "memory/long-term/db.md:1  url-credentials" in out
    assert "memory/short-term/temp/key.md:3  private-key" in out
    assert "found 5 secret(s) (5 in files;" in out
    data = json.loads(run("scan", "--json").stdout)
    assert data["found"] == 5 and data["history"] is None
    assert {f["kind"] for f in data["files"]} == {
        "openai-key",
        "aws-access-key",
        "github-token",
        "url-credentials",
        "private-key",
    }
    assert all(f["commit"] is None for f in data["files"])


def test_look_alikes_are_not_reported(run: Run, vault_path: Path) -> None:
    sha = git(vault_path, "rev-parse", "HEAD").strip()
    text = (
        f"Run id {uuid.UUID(int=random.Random(3).getrandbits(128))} finished.\n"
        f"Fixed in commit {sha}; artefact sha256 {hashlib.sha256(b'x').hexdigest()}.\n"
        "Internationalization and electroencephalographically are ordinary long words.\n"
        "The password field is required; read the token from the TMEM_TOKEN environment variable.\n"
        "Already handled: api_key = [REDACTED:generic-secret]\n"
    )
    write(vault_path, "memory/long-term/lookalikes.md", text)
    result = run("scan", "--history")
    assert result.exit_code == 0, result.stdout
    assert "no secrets found" in result.stdout


def test_history_finds_secrets_removed_from_the_files(run: Run, vault_path: Path) -> None:
    write(vault_path, "memory/long-term/old.md", f"# Old\n\nfirst line\nthe deploy token is {GITHUB}\n")
    leaked = commit_all(vault_path, "add a note with a token")
    write(vault_path, "memory/long-term/old.md", "# Old\n\nfirst line\nthe deploy token is rotated\n")
    commit_all(vault_path, "remove the token")
    assert run("scan").exit_code == 0
    result = run("scan", "--history")
    assert result.exit_code == 1
    assert f"  {leaked[:10]}  memory/long-term/old.md:4  github-token  ghp_…(40 chars)" in result.stdout
    assert GITHUB not in result.stdout
    data = json.loads(run("scan", "--history", "--json").stdout)
    assert data["files"] == [] and data["commits_scanned"] >= 3
    assert data["history"] == [
        {
            "kind": "github-token",
            "file": "memory/long-term/old.md",
            "line": 4,
            "masked": "ghp_…(40 chars)",
            "commit": leaked,
        }
    ]


def test_history_covers_every_branch_and_keywords(vault_path: Path) -> None:
    git(vault_path, "checkout", "-q", "-b", "side")
    write(vault_path, "memory/long-term/side.md", f"aws {AWS}\n")
    side = commit_all(vault_path, "side branch leak")
    git(vault_path, "checkout", "-q", "main")
    (vault_path / "tmem.yaml").write_text(
        "embeddings:\n  provider: fake\nprivacy:\n  sensitive_keywords: [project-falcon]\n", encoding="utf-8"
    )
    write(vault_path, "memory/long-term/codename.md", "The client codename is Project-Falcon.\n")
    report = scan_vault(Vault(vault_path), history=True)
    assert [(f.kind, f.file, f.line) for f in report.files] == [
        ("sensitive-keyword", "memory/long-term/codename.md", 1)
    ]
    assert [(f.kind, f.file, f.commit) for f in report.history] == [
        ("aws-access-key", "memory/long-term/side.md", side)
    ]


def test_side_indexes_and_git_objects_are_not_scanned(vault_path: Path) -> None:
    write(vault_path, ".tmem/cache.txt", f"{OPENAI}\n")
    report = scan_vault(Vault(vault_path))
    assert report.found == 0
    assert report.files_scanned > 5
