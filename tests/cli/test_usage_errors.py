"""A usage error is one line on stderr naming the command's help, and exit 2, as every other bad
input is; a group run without a command still shows its help."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import FAKE_CONFIG, PING_READY, fake_daemon, git

from tiered_memory.cli import cli
from tiered_memory.errors import EXIT_FAILED
from tiered_memory.storage.vault import init_vault

Run = Callable[..., Result]


@pytest.fixture
def run(vault_path: Path) -> Run:
    """The CLI under the name a person types, which its usage errors name."""
    return lambda *args: CliRunner().invoke(cli, ["--vault", str(vault_path), *args], prog_name="tmem")


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["search", "--limit", "0", "kafka"], "tmem search: Invalid value for --limit: must be at least 1"),
        (["bogus"], "tmem: No such command 'bogus'."),
        (["--bogus"], "tmem: No such option '--bogus'."),
        (["st", "set"], "tmem st set: Missing argument 'KEY'."),
        (["project", "new"], "tmem project new: Missing argument 'PROJECT_ID'."),
    ],
)
def test_a_usage_error_is_one_line_naming_the_commands_help(run: Run, argv: list[str], line: str) -> None:
    result = run(*argv)
    assert result.exit_code == 2
    assert result.stdout == ""
    command = line.split(":", 1)[0]
    assert result.stderr.splitlines() == [f"{line} (see `{command} --help`)"]


def test_a_group_without_its_command_shows_its_help(run: Run) -> None:
    result = run("st")
    assert result.exit_code == 2
    assert "Usage: tmem st [OPTIONS] COMMAND [ARGS]..." in result.output
    assert "set" in result.output


def test_a_usage_error_shows_no_control_character_it_was_given(run: Run) -> None:
    result = run("\x1b]0;owned\x07")
    assert result.exit_code == 2
    assert "\x1b" not in result.stderr and "\\x1b" in result.stderr


def test_a_daemon_that_stops_answering_is_a_failure_not_bad_input(tmp_path: Path) -> None:
    """A daemon that took a write and died is tmem's failure: one line, exit 3, never the exit 2
    of bad input (a script or an agent would blame its arguments and change them)."""
    vault = tmp_path / "vault"
    init_vault(vault, config_text=FAKE_CONFIG)
    with fake_daemon(vault, lambda op: PING_READY if op == "ping" else b""):  # takes it, says nothing
        done = CliRunner().invoke(cli, ["--vault", str(vault), "add", "Deploys freeze on Fridays."])
    assert done.exit_code == EXIT_FAILED == 3, done.output
    assert done.stderr.startswith("tmem: the daemon stopped answering during 'remember'")
    assert done.stderr.count("\n") == 1 and done.stdout == ""


def test_a_write_the_daemon_dropped_before_any_commit_is_said_not_to_have_happened(tmp_path: Path) -> None:
    """The daemon is gone and the vault's commit is the one the write started from: it did not
    happen (a unit of work commits or is undone), so an agent can run it again without a twin."""
    vault = tmp_path / "vault"
    init_vault(vault, config_text=FAKE_CONFIG)
    with fake_daemon(vault, lambda op: PING_READY if op == "ping" else b""):
        done = CliRunner().invoke(cli, ["--vault", str(vault), "add", "Deploys freeze on Fridays."])
    assert done.exit_code == EXIT_FAILED
    assert "it did not happen: the daemon is gone and nothing was committed" in done.stderr


def test_a_write_the_daemon_dropped_after_commits_landed_names_them(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    init_vault(vault, config_text=FAKE_CONFIG)
    before = git(vault, "rev-parse", "HEAD").strip()

    def commits_then_dies(op: str) -> bytes:
        if op != "ping":
            git(
                vault,
                "-c",
                "user.name=d",
                "-c",
                "user.email=d@x",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "remember: x",
            )
        return PING_READY if op == "ping" else b""

    with fake_daemon(vault, commits_then_dies):
        done = CliRunner().invoke(cli, ["--vault", str(vault), "add", "Deploys freeze on Fridays."])
    after = git(vault, "rev-parse", "HEAD").strip()
    assert done.exit_code == EXIT_FAILED
    assert f"commits landed meanwhile: `git log {before[:8]}..{after[:8]}` tells" in done.stderr
