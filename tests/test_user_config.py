"""The user's default vault: commands and agents started from any folder find it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import FAKE_CONFIG, ok, run_together

from tiered_memory.cli import cli
from tiered_memory.storage.vault import init_vault


def tmem(*args: str, cwd: Path) -> Result:
    old = Path.cwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def test_a_default_vault_is_used_from_any_folder(tmp_path: Path) -> None:
    vault = tmp_path / "memory-vault"
    init_vault(vault, config_text=FAKE_CONFIG)
    elsewhere = tmp_path / "some" / "project"
    elsewhere.mkdir(parents=True)
    lost = tmem("status", cwd=elsewhere)
    assert lost.exit_code == 2 and "tmem config set default-vault PATH" in lost.stderr
    shown = ok(tmem("config", "set", "default-vault", str(vault), cwd=elsewhere))
    assert shown.stdout.startswith(f"default-vault = {vault}")
    assert (Path(os.environ["TMEM_CONFIG_HOME"]) / "config.toml").is_file()
    ok(tmem("add", "Found from anywhere", cwd=elsewhere))
    assert "Found from anywhere" in ok(tmem("search", "--mode", "keyword", "anywhere", cwd=elsewhere)).stdout
    assert f"default-vault = {vault}" in ok(tmem("config", "get", cwd=elsewhere)).stdout
    # --vault and an enclosing vault still come first.
    other = tmp_path / "other"
    init_vault(other, config_text=FAKE_CONFIG)
    assert str(other) in ok(tmem("status", cwd=other)).stdout
    ok(tmem("config", "unset", "default-vault", cwd=elsewhere))
    assert tmem("status", cwd=elsewhere).exit_code == 2


@pytest.mark.parametrize(
    "args", [("config", "set", "colour", "red"), ("config", "set", "default-vault", "/nope")]
)
def test_bad_settings_are_one_line(tmp_path: Path, args: tuple[str, ...]) -> None:
    result = tmem(*args, cwd=tmp_path)
    assert (
        result.exit_code == 2 and result.stderr.startswith("tmem: ") and len(result.stderr.splitlines()) == 1
    )


def test_the_mcp_token_is_long_and_kept_owner_only(tmp_path: Path) -> None:
    """The settings file holds the MCP bearer token: written 0600 (an older 0644 file too), and a
    token short enough to guess is refused in one line."""
    settings = Path(os.environ["TMEM_CONFIG_HOME"]) / "config.toml"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('default_vault = "/nowhere"\n', encoding="utf-8")
    settings.chmod(0o644)
    short = tmem("config", "set", "mcp-token", "x", cwd=tmp_path)
    assert short.exit_code == 2 and len(short.stderr.splitlines()) == 1
    assert "at least 32 characters" in short.stderr
    assert "mcp_token" not in settings.read_text(encoding="utf-8")
    token = "t" * 32
    ok(tmem("config", "set", "mcp-token", token, cwd=tmp_path))
    assert f'mcp_token = "{token}"' in settings.read_text(encoding="utf-8")
    assert settings.stat().st_mode & 0o777 == 0o600
    assert not [p for p in settings.parent.iterdir() if p.name.endswith(".tmp")]  # none left


# The settings file is rewritten whole by each `tmem config set`: real processes changing it at
# once each keep their change (each would otherwise write back what it had read).
_CHANGER = """
import sys, time
from pathlib import Path
from tiered_memory.storage.locate import change_user_settings
go, me, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
while not go.exists():
    time.sleep(0.001)
for k in range(rounds):
    change_user_settings(lambda values: values.update(author=values.get("author", "") + f"{me}-{k};"))
"""


def test_settings_changed_by_processes_at_once_keep_every_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tiered_memory import config
    from tiered_memory.storage.locate import user_settings

    processes, rounds = 8, 12
    home = tmp_path / "home"
    go = tmp_path / "go"
    env = {**os.environ, config.ENV_CONFIG_HOME: str(home)}
    run_together(_CHANGER, [[str(me), str(rounds)] for me in range(processes)], env, go)
    monkeypatch.setenv(config.ENV_CONFIG_HOME, str(home))
    kept = set(user_settings()["author"].split(";")) - {""}
    assert kept == {f"{me}-{k}" for me in range(processes) for k in range(rounds)}
