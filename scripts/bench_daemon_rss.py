#!/usr/bin/env python3
"""The daemon's memory once idle with the embedding model loaded, per embedding runtime (not a
test: prints a table).

    .venv/bin/python scripts/bench_daemon_rss.py [--notes 300] [--idle 15] [--runtime torch onnx]

A synthetic vault (bench_search.build_vault) is built and indexed with vectors once. For each
runtime, `embeddings.runtime` is set in its tmem.yaml, `tmem daemon start` starts the daemon, one
hybrid search makes it embed a query, and after --idle seconds of quiet its /proc/PID/status is
read: VmRSS, and its anonymous (heap, the imports' objects, the model) and file-backed (shared
libraries) parts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_search import build_vault, load_line  # noqa: E402

TMEM = str(Path(sys.executable).parent / "tmem")


def tmem(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TMEM, "--vault", str(vault), *args], capture_output=True, text=True, timeout=3600)


def set_runtime(vault: Path, runtime: str) -> None:
    config = vault / "tmem.yaml"
    lines = [ln for ln in config.read_text(encoding="utf-8").splitlines() if "runtime:" not in ln]
    if "embeddings:" in lines:
        lines.insert(lines.index("embeddings:") + 1, f"  runtime: {runtime}")
    else:
        lines += ["embeddings:", f"  runtime: {runtime}"]
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")


def memory_mb(pid: int) -> dict[str, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            fields[key] = int(value.split()[0]) / 1024
    return fields


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--idle", type=float, default=15.0, help="seconds of quiet before reading")
    parser.add_argument("--runtime", nargs="+", default=["torch", "onnx"], choices=["torch", "onnx"])
    parser.add_argument("--out", type=Path, help="the vault's folder (default: a temporary one)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="tmem-rss-"))
    vault = args.out or scratch / "vault"
    try:
        if not (vault / "tmem.yaml").is_file():
            build_vault(vault, args.notes)
            subprocess.run([TMEM, "--vault", str(vault), "reindex"], check=True, capture_output=True)
        print(f"# {args.notes} notes, idle {args.idle:.0f} s; {load_line()}")
        print("| runtime | VmRSS MB | anonymous MB | file-backed MB |")
        print("|---|---|---|---|")
        for runtime in args.runtime:
            set_runtime(vault, runtime)
            tmem(vault, "daemon", "stop")
            started = tmem(vault, "daemon", "start")
            if started.returncode != 0:
                raise SystemExit(f"daemon start failed: {started.stderr.strip()}")
            tmem(vault, "search", "how do we roll back a database migration")
            time.sleep(args.idle)
            pid = json.loads(tmem(vault, "daemon", "status", "--json").stdout)["pid"]
            mb = memory_mb(pid)
            print(
                f"| {runtime} | {mb['VmRSS']:.0f} | {mb['RssAnon']:.0f} | {mb['RssFile']:.0f} |", flush=True
            )
            tmem(vault, "daemon", "stop")
    finally:
        if args.out is None:
            tmem(vault, "daemon", "stop")
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    os.environ.pop("TMEM_PASSPHRASE", None)
    main()
