"""Helpers shared by the tests: git and file shortcuts, and the CLI failure contract."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from click.testing import Result

from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import Vault

FIXED_NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
FAKE_CONFIG = "embeddings:\n  provider: fake\n"


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def write(root: Path, rel: str, text: str, *, bump: float = 0.0) -> Path:
    """Write a file under `root`; `bump` moves its mtime that many seconds forward."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if bump:
        st = path.stat()
        os.utime(path, (st.st_atime, st.st_mtime + bump))
    return path


def ok(result: Result) -> Result:
    assert result.exit_code == 0, f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    return result


def as_json(result: Result) -> Any:
    return json.loads(ok(result).stdout)


def one_error_line(result: Result, code: int) -> str:
    """The failure contract: the exit code, one line on stderr, nothing on stdout, no traceback."""
    assert result.exit_code == code, (
        f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    )
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tmem: "), result.stderr
    assert "Traceback" not in result.output and result.stdout == ""
    return lines[0]


def git_log(root: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(root), "log", "--format=%s"], capture_output=True, text=True, check=True
    )
    return out.stdout.splitlines()


def commit(vault: Vault, paths: list[str], message: str) -> str | None:
    """Commit files a test changed by hand, the way tmem commits (its one git path)."""
    tx = Transaction(vault, message)
    tx.include(paths)
    return tx.commit()


def move_file(vault: Vault, src: str, dst: str) -> str:
    """Move a file by hand (as a person or another tool would); returns `dst`."""
    target = vault.abspath(dst)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(vault.abspath(src), target)
    return dst
