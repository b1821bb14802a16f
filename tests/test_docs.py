"""The README is the front door: its two commands are the Makefile's, and every `tmem` command it
shows exists."""

from __future__ import annotations

import re
from pathlib import Path

from tiered_memory.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")


def _target(name: str) -> str:
    """The recipe and prerequisites of one Makefile target."""
    match = re.search(rf"^{name}:(.*?)(?=^\S|\Z)", MAKEFILE, re.MULTILINE | re.DOTALL)
    assert match, f"Makefile has no target {name}"
    return match.group(1)


def test_quick_start_gives_exactly_the_two_make_commands() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", quick, re.DOTALL)
    assert block
    commands = [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]


def test_make_demo_sets_up_and_runs_the_demo_script() -> None:
    demo = _target("demo")
    assert "setup" in demo and "scripts/demo.sh" in demo
    assert (ROOT / "scripts" / "demo.sh").is_file()
    setup = _target(r"\$\(STAMP\)")
    assert "torch==2.13.0" in setup and "-e '.[dev]'" in setup
    assert setup.index("torch==2.13.0") < setup.index("-e '.[dev]'")  # CPU torch first


def test_make_test_lints_and_runs_pytest_and_ci_calls_it() -> None:
    assert "lint" in _target("test") and "pytest" in _target("test")
    lint = _target("lint")
    assert "ruff check" in lint and "mypy" in lint
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
