"""`privacy.sensitive_keywords` is bounded like the glob settings: every text tmem writes, exports
or stores is searched for each keyword, and tmem.yaml arrives with every pull. A list too long or
a keyword too large is one line naming the setting, from every command that reads the settings,
and from the sync that pulled it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import bare_origin, git, git_log, ok, one_error_line

from tiered_memory.cli.main import cli
from tiered_memory.config import MAX_KEYWORD_CHARS, MAX_KEYWORDS
from tiered_memory.model.layout import CONFIG_NAME


def _keywords(count: int, size: int = 6) -> str:
    return "privacy:\n  sensitive_keywords: [" + ",".join(f"k{i:0{size - 1}d}" for i in range(count)) + "]\n"


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        (_keywords(MAX_KEYWORDS + 1), f"lists {MAX_KEYWORDS + 1:,} keywords; at most {MAX_KEYWORDS}"),
        (_keywords(60_000), f"lists 60,000 keywords; at most {MAX_KEYWORDS}"),
        (
            "privacy:\n  sensitive_keywords: ['" + "a" * 1_000_000 + "']\n",
            f"has a keyword of 1,000,000 characters; at most {MAX_KEYWORD_CHARS}",
        ),
        # Past the values a YAML text may hold (a `*` in it, as in the template's comments, could
        # be an alias): refused before it is built, still by its setting.
        (
            "# folders: ['**']\nprivacy:\n  sensitive_keywords: [" + ",".join(["k"] * 110_000) + "]\n",
            "YAML holds over 100,000 values, most in privacy.sensitive_keywords",
        ),
    ],
)
def test_a_hand_edited_config_of_too_many_or_too_long_keywords_is_one_line(
    run: Callable[..., Result], vault_path: Path, setting: str, expected: str
) -> None:
    with (vault_path / CONFIG_NAME).open("a", encoding="utf-8") as handle:
        handle.write(setting)
    before = git_log(vault_path)
    for argv in (["add", "The survey starts Monday."], ["search", "survey"], ["status"], ["doctor"]):
        line = one_error_line(run(*argv), 2)
        assert line.startswith(f"tmem: {CONFIG_NAME}: ") and expected in line, (argv, line)
        assert "privacy.sensitive_keywords" in line and len(line) < 140
    assert git_log(vault_path) == before


def test_a_pulled_config_of_too_many_keywords_is_said_by_the_sync_that_pulls_it(
    vault_path: Path, tmp_path: Path
) -> None:
    remote = bare_origin(vault_path, tmp_path)
    tmem = CliRunner()
    ok(tmem.invoke(cli, ["--vault", str(vault_path), "sync"]))
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    with (other / CONFIG_NAME).open("a", encoding="utf-8") as handle:
        handle.write(_keywords(60_000))
    git(other, "-c", "user.name=o", "-c", "user.email=o@x", "commit", "-qam", "keywords")
    git(other, "push", "-q", "origin", "main")

    synced = ok(tmem.invoke(cli, ["--vault", str(vault_path), "sync"]))
    said = [line for line in synced.stderr.splitlines() if "privacy.sensitive_keywords" in line]
    assert len(said) == 1 and f"lists 60,000 keywords; at most {MAX_KEYWORDS}" in said[0], synced.stderr
    assert "Traceback" not in synced.output
    line = one_error_line(tmem.invoke(cli, ["--vault", str(vault_path), "status"]), 2)
    assert "privacy.sensitive_keywords lists 60,000 keywords" in line
