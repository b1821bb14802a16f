"""The README is the front door: its two commands do what it says, and every `tmem` command it
shows exists."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
import yaml

from tiered_memory.cli.main import cli
from tiered_memory.config import Config

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


DOCS = ("README.md", "docs/encryption.md", "docs/export.md", "docs/redaction.md", "scripts/hooks/README.md")


def _tmem_commands(text: str) -> list[list[str]]:
    """Every `tmem …` a user is told to type: lines of the code blocks and inline code, each part
    of a pipe or a `;`/`&&` list, with its words (comments dropped)."""
    snippets = re.findall(r"`(tmem [^`]+)`", text)
    snippets += [
        line.strip().removeprefix("$ ") for line in text.splitlines() if re.match(r"\s*(\$ )?tmem ", line)
    ]
    commands = []
    for snippet in snippets:
        # a pipe between words (`markdown|json`, a table's `user\|assistant`) lists values
        for part in re.split(r"\s+\|\s+|\s*(?:;|&&)\s*", snippet.split("#")[0]):
            words = part.split()
            if words[:1] == ["tmem"]:
                commands.append(words[1:])
    return commands


def test_every_option_the_docs_name_exists() -> None:
    """`tmem search --folder …`, `tmem schedule install [--print]`: each option the README and the
    setup docs show is an option of the command it is shown with."""
    wrong = []
    for doc in DOCS:
        for words in _tmem_commands((ROOT / doc).read_text(encoding="utf-8")):
            command: click.Command = cli
            if words[:1] == ["--vault"]:
                words = words[2:]
            for word in words:
                if not isinstance(command, click.Group) or word not in command.commands:
                    break
                command = command.commands[word]
            options = {o for p in command.params for o in (*p.opts, *p.secondary_opts)} | {"--help", "-h"}
            for word in words:
                wrong += [
                    f"{doc}: tmem {' '.join(words)}: {o}"
                    for o in re.findall(r"(?:^|[\[(])(--?[a-z][a-z-]*)", word)
                    if o not in options
                ]
    assert wrong == []


def test_every_setting_the_readme_names_is_in_the_config_and_its_template() -> None:
    """`search.min_confidence`, `backup.keep`, …: a setting the README or a setup doc names is a
    field of the config model and is documented in vault_template/tmem.yaml."""
    template = yaml.safe_load((ROOT / "vault_template" / "tmem.yaml").read_text(encoding="utf-8"))
    config = Config()
    sections = {f.name for f in dataclasses.fields(Config)}
    named = {
        (section, key)
        for doc in DOCS
        for section, key in re.findall(
            r"`([a-z_]+)\.([a-z_]+)(?:[:=][^`]*)?`", (ROOT / doc).read_text(encoding="utf-8")
        )
        if section in sections
    }
    assert ("search", "min_confidence") in named
    missing = sorted(
        f"{section}.{key}"
        for section, key in named
        if not hasattr(getattr(config, section), key) or key not in (template.get(section) or {})
    )
    assert missing == []


@pytest.mark.model
@pytest.mark.slow
def test_the_using_tmem_block_runs_as_written(tmp_path: Path) -> None:
    """The README's first block of commands, typed in order on a fresh vault in ~/memory (`<id>` is
    the decision it adds, $EDITOR changes nothing): every command succeeds, and the search in plain
    words finds that decision."""
    block = README.split("## Using tmem", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line.split("  #")[0].strip() for line in block.replace("\\\n", " ").splitlines()]
    script = ["set -e", 'tmem() { "$PYTHON" -m tiered_memory "$@"; }']
    for n, line in enumerate(line for line in lines if line):
        line = line.replace(
            "<id>",
            '"$(tmem list --category decision --json | "$PYTHON" -c \'import json,sys; print(json.load(sys.stdin)[0]["id"])\')"',
        )
        script += [f"echo '### {n} {line[:40]}'", line.replace("[--full]", "--full")]
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHON": sys.executable, "EDITOR": "true", "TMEM_AUTOSTART": "0"},
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    outputs = dict(part.split("\n", 1) for part in done.stdout.split("### ")[1:])
    searched = next(out for head, out in outputs.items() if "tmem search" in head and "--mode" not in head)
    assert "CGCS2000" in searched, done.stdout


def _command_of(words: list[str]) -> tuple[click.Command, list[str]]:
    """The (sub)command a README line names, and the words after its name."""
    command: click.Command = cli
    if words[:1] == ["--vault"]:
        words = words[2:]
    while words and isinstance(command, click.Group) and words[0] in command.commands:
        command, words = command.commands[words[0]], words[1:]
    return command, words


def _shown_values(word: str) -> list[str]:
    """`auto|openai|markdown]`, `[markdown|json]`, `claude-code`: the values a word offers."""
    return [v for v in re.split(r"[|\[\]()]", word.rstrip(",;.").replace("\\", "")) if v]


def test_every_choice_the_docs_show_is_accepted() -> None:
    """`tmem ingest --format auto|openai|claude-code|markdown`, `tmem install codex`,
    `tmem hook session-end`: a value the docs give an option or an argument that has a fixed set of
    values is one of them, so a renamed format or agent cannot linger in the README."""
    wrong = []
    for doc in DOCS:
        for words in _tmem_commands((ROOT / doc).read_text(encoding="utf-8")):
            command, rest = _command_of(words)
            options = {o: p for p in command.params for o in p.opts if isinstance(p, click.Option)}
            arguments = [p for p in command.params if isinstance(p, click.Argument)]
            for n, word in enumerate(rest):
                before = rest[n - 1].lstrip("[(") if n else ""
                param: click.Parameter | None = None
                if before in options and not options[before].is_flag:
                    param = options[before]
                elif n == 0 and arguments:
                    param = arguments[0]
                if param is None or not isinstance(param.type, click.Choice):
                    continue
                choices = set(param.type.choices)
                wrong += [
                    f"{doc}: tmem {' '.join(words)}: {value}"
                    for value in _shown_values(word)
                    if value not in choices and not value.isupper() and not value.startswith(("<", "-"))
                ]
    assert wrong == []
