"""The README is the front door: its two commands do what it says, and every `tmem` command it
shows exists."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tiered_memory.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_quick_start_gives_exactly_the_two_make_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", quick, re.DOTALL)
    assert block
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]


def test_make_demo_and_make_test_run_the_demo_the_lint_and_every_test() -> None:
    """What `make` would run (its dry run, so the Makefile may be written any way that does it):
    the demo script, the linters, and pytest on every test, the slow ones included; CI runs it."""
    dry = subprocess.run(
        ["make", "-n", "-C", str(ROOT), "demo", "test"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    assert any(line.strip() == "bash scripts/demo.sh" for line in dry)
    assert any("ruff check" in line for line in dry) and any("mypy" in line for line in dry)
    pytest_lines = [line.split() for line in dry if "-m pytest" in line]
    assert pytest_lines and all(words[words.index("pytest") + 1 :] == ["-q"] for words in pytest_lines)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test" in ci


def test_every_tmem_command_in_the_readme_exists() -> None:
    shown = set(re.findall(r"^\s*(?:\$ )?tmem (?:--vault \S+ )?([a-z][a-z-]+)", README, re.MULTILINE))
    assert {"init", "add", "search", "status"} <= shown
    missing = sorted(name for name in shown if name not in cli.commands)
    assert missing == []


def test_readme_documents_the_config_file_and_benchmarks() -> None:
    assert "vault_template/tmem.yaml" in README
    assert "## Benchmarks" in README


def test_every_script_and_doc_the_readme_names_exists() -> None:
    named = set(re.findall(r"(?<![\w/.])((?:scripts|docs)/[\w./-]+\w)", README))
    assert {"scripts/bench_search.py", "scripts/bench_daemon.py", "scripts/bench_scale.py"} <= named
    missing = sorted(path for path in named if not (ROOT / path).exists())
    assert missing == []
