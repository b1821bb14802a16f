#!/usr/bin/env python3
"""Time and peak memory where input is huge (not a test: prints numbers).

    .venv/bin/python scripts/bench_bounds.py [--notes 2000] [--out DIR] [--only CASE ...]

Each case runs in a process of its own, so its peak RSS is its own; the line says how long the
case took (seconds, wall) and the process's peak RSS, with what the command answered:

- `query-keyword`, `query-hybrid`: `tmem search` (in-process, click's runner) with a 1.3 MB query
  of English words, in keyword and hybrid mode (hybrid loads the model);
- `hook-prompt`: `tmem hook user-prompt-submit` (a real subprocess) with a 1.3 MB prompt on stdin;
- `globs`: `tmem search --in` with 10,000 globs of two wildcards, over a vault of `--notes` notes;
- `mcp-folders`: the MCP `recall` tool with 10,000 folders, through the real SDK client;
- `add-file`, `add-stdin`: `tmem add --file` with a 100 MB file, and 100 MB piped on stdin, with
  `index.max_file_mb` at its default of 2 MB (what it costs to refuse them);
- `ingest-markdown`: `tmem ingest` of a 40 MB Markdown transcript into a vault whose
  `index.max_file_mb` is 100;
- `yaml-many-globs`, `yaml-1mb-glob`, `yaml-nested-glob`: `tmem status` in a copy of the vault
  whose tmem.yaml (as a pull could bring it) lists 50,000 `folders.exclude` globs (100,000 are
  refused by the YAML reader's bound on values first), one glob of
  1 MB, or `**/` nested 200 deep in `search.folders` (what it costs to refuse them);
- `yaml-worst-globs`: `tmem status`, then `tmem search` (keyword), in a copy of the vault whose
  tmem.yaml has as many globs as it may, each with as many wildcards as it may, of the kind a
  matcher keeps alive longest (`**/?` repeated, no plain word), in `folders.exclude`,
  `folders.tiers`, `search.folders`, `privacy.excluded_paths` and `privacy.encrypted_paths`: the
  new rules make the scan match every file again.

The load average at the start and the end is printed with the figures: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

CASES = (
    "query-keyword",
    "query-hybrid",
    "hook-prompt",
    "globs",
    "mcp-folders",
    "add-file",
    "add-stdin",
    "ingest-markdown",
    "yaml-many-globs",
    "yaml-1mb-glob",
    "yaml-nested-glob",
    "yaml-worst-globs",
)
QUERY_BYTES = 1_300_000
GLOBS = 10_000
HUGE_INPUT_MB = 100
MARKDOWN_MB = 40


def words_of(size: int, seed: int = 1) -> str:
    """`size` characters of words drawn from the README: English text with its repeats."""
    rng = random.Random(seed)
    vocabulary = (ROOT / "README.md").read_text(encoding="utf-8").split()
    out: list[str] = []
    total = 0
    while total < size:
        word = rng.choice(vocabulary)
        out.append(word)
        total += len(word) + 1
    return " ".join(out)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def children_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def cli(args: list[str], stdin: str | None = None) -> str:
    from click.testing import CliRunner

    from tiered_memory.cli.main import cli as tmem

    result = CliRunner().invoke(tmem, args, input=stdin)
    return " ".join(result.output.split())[:160] or f"exit {result.exit_code}"


def run_case(case: str, vault: Path, work: Path) -> tuple[float, float, str]:
    """(seconds, peak MB, what it answered) of one case, in this process."""
    os.environ["TMEM_VAULT"] = str(vault)
    started = time.perf_counter()
    peak: float | None = None
    if case in ("query-keyword", "query-hybrid"):
        query = words_of(QUERY_BYTES)
        started = time.perf_counter()
        said = cli(["search", "--mode", case.split("-")[1], "-k", "3", query])
    elif case == "hook-prompt":
        payload = json.dumps({"prompt": words_of(QUERY_BYTES), "cwd": str(work)})
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "tiered_memory", "hook", "user-prompt-submit"],
            input=payload,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        said = " ".join((done.stdout + done.stderr).split())[:160] or f"exit {done.returncode}"
        peak = children_peak_mb()
    elif case == "globs":
        args = [arg for i in range(GLOBS) for arg in ("--in", f"memory/**/topic{i}*.md")]
        said = cli(["search", "--mode", "keyword", "-k", "3", "database migration", *args])
    elif case == "mcp-folders":
        said = mcp_recall(vault, [f"memory/**/topic{i}*.md" for i in range(GLOBS)])
        peak = children_peak_mb()
    elif case in ("add-file", "add-stdin"):
        big = work / "huge.txt"
        if not big.exists():
            with big.open("w", encoding="utf-8") as out:
                chunk = words_of(1024 * 1024)
                for _ in range(HUGE_INPUT_MB):
                    out.write(chunk)
        started = time.perf_counter()
        if case == "add-file":
            done = subprocess.run(
                [sys.executable, "-m", "tiered_memory", "add", "--file", str(big)],
                capture_output=True,
                text=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
        else:
            with big.open("rb") as source:
                done = subprocess.run(
                    [sys.executable, "-m", "tiered_memory", "add", "--file", "-"],
                    stdin=source,
                    capture_output=True,
                    text=True,
                    env={**os.environ, "PYTHONPATH": str(ROOT)},
                )
        said = " ".join((done.stdout + done.stderr).split())[:160] or f"exit {done.returncode}"
        peak = children_peak_mb()
    elif case == "ingest-markdown":
        os.environ["TMEM_VAULT"] = str(raised(work))
        chat = work / "chat.md"
        if not chat.exists():
            rng = random.Random(3)
            with chat.open("w", encoding="utf-8") as out:
                line = words_of(200)
                written = 0
                while written < MARKDOWN_MB * 1024 * 1024:
                    turn = f"**{rng.choice(['User', 'Assistant'])}:** {line}\n\n"
                    out.write(turn)
                    written += len(turn)
        said = cli(["ingest", str(chat), "--format", "markdown"])
    elif case.startswith("yaml-"):
        os.environ["TMEM_VAULT"] = str(hostile_copy(vault, work, case))
        started = time.perf_counter()
        said = cli(["status"])
        if case == "yaml-worst-globs":
            said = f"status {time.perf_counter() - started:.2f} s; search: " + cli(
                ["search", "--mode", "keyword", "-k", "3", "database migration"]
            )
    else:
        raise SystemExit(f"unknown case {case}")
    return time.perf_counter() - started, peak if peak is not None else peak_mb(), said


def mcp_recall(vault: Path, folders: list[str]) -> str:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tiered_memory", "--vault", str(vault), "mcp"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    answer: list[str] = []

    async def main() -> None:
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result = await session.call_tool(
                    "recall", {"query": "database migration", "mode": "keyword", "folder": folders}
                )
                text = result.content[0].text if result.content else ""  # type: ignore[union-attr]
                answer.append(("error: " if result.is_error else "") + text)

    anyio.run(main)
    return " ".join(answer[0].split())[:160]


def build(vault: Path, notes: int) -> None:
    from bench_search import build_vault

    from tiered_memory.app.memory import Memory
    from tiered_memory.storage.vault import Vault

    build_vault(vault, notes)
    memory = Memory(Vault(vault))
    memory.refresh(vectors=False)
    memory.close()


def raised(work: Path) -> Path:
    """An empty vault whose `index.max_file_mb` is 100 (the default vault's is 2)."""
    from tiered_memory.storage.vault import init_vault

    vault = work / "vault-raised"
    if not vault.exists():
        init_vault(vault)
        config = vault / "tmem.yaml"
        text = config.read_text(encoding="utf-8")
        config.write_text(text.replace("max_file_mb: 2.0 ", "max_file_mb: 100 "), encoding="utf-8")
        subprocess.run(
            ["git", "-C", str(vault), "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qam", "limit"],
            check=True,
        )
    return vault


def hostile_copy(vault: Path, work: Path, case: str) -> Path:
    """A copy of the indexed vault whose tmem.yaml has the globs of `case` added."""
    import shutil

    from tiered_memory.config import MAX_GLOB_CHARS, MAX_GLOB_WILDCARDS, MAX_GLOBS

    copy = work / f"vault-{case}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(vault, copy, symlinks=True)
    if case == "yaml-many-globs":
        extra = {"folders": {"exclude": [f"d{i}" for i in range(50_000)]}}  # under 1 MB
    elif case == "yaml-1mb-glob":
        extra = {"folders": {"exclude": ["*a" * 500_000]}}
    elif case == "yaml-nested-glob":
        extra = {"search": {"folders": ["**/" * 200 + "*.md"]}}
    else:  # as many as allowed, each with as many wildcards, of the kind kept alive longest
        # `**/?` repeated, one `?` or two in each place, then a word every path holds but not
        # there (a path without a glob's words is refused at once): every glob a different one (a
        # glob twice is tried once), each alive to its end and matching no path.
        worst = [
            "".join("**/" + "?" * (1 + (i >> bit & 1)) for bit in range(MAX_GLOB_WILDCARDS)) + "memory"
            for i in range(MAX_GLOBS)
        ]
        assert max(map(len, worst)) <= MAX_GLOB_CHARS
        extra = {
            "folders": {"exclude": worst, "tiers": dict.fromkeys(worst, "short")},
            "search": {"folders": ["memory/", *worst[1:]]},
            "privacy": {"excluded_paths": worst, "encrypted_paths": worst},
        }
    import yaml

    config = copy / "tmem.yaml"
    settings = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    for name, values in extra.items():
        settings[name] = {**(settings.get(name) or {}), **values}
    config.write_text(json.dumps(settings), encoding="utf-8")  # JSON is YAML
    return copy


def load_line() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min) {five:.1f} (5 min) on {os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--out", type=Path, help="keep the vault and inputs here (default: a temp dir)")
    parser.add_argument("--only", nargs="+", choices=CASES, help="run these cases only")
    parser.add_argument("--case", choices=CASES, help=argparse.SUPPRESS)  # one case, in this process
    parser.add_argument("--vault", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        seconds, peak, said = run_case(args.case, args.vault, args.out)
        print(json.dumps({"seconds": seconds, "peak_mb": peak, "said": said}))
        return
    with tempfile.TemporaryDirectory(prefix="tmem-bounds-") as temp:
        work = args.out or Path(temp)
        work.mkdir(parents=True, exist_ok=True)
        vault = work / "vault"
        env = {**os.environ, "TMEM_AUTOSTART": "0", "TMEM_CONFIG_HOME": str(work / "config")}
        os.environ.update(env)
        print(f"start: {load_line()}")
        if not (vault / "tmem.yaml").exists():
            started = time.perf_counter()
            build(vault, args.notes)
            print(f"vault of {args.notes} notes indexed (keyword) in {time.perf_counter() - started:.1f} s")
        for case in args.only or CASES:
            done = subprocess.run(
                [sys.executable, __file__, "--case", case, "--vault", str(vault), "--out", str(work)],
                capture_output=True,
                text=True,
                env=env,
            )
            try:
                row = json.loads(done.stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):
                print(f"{case:16} failed: {' '.join(done.stderr.split())[-300:]}")
                continue
            print(f"{case:16} {row['seconds']:7.2f} s  peak {row['peak_mb']:7.0f} MB  {row['said']}")
        print(f"end: {load_line()}")


if __name__ == "__main__":
    main()
