#!/usr/bin/env python3
"""How long the daemon takes to stop on a large vault (not a test: prints numbers).

    .venv/bin/python scripts/bench_daemon_stop.py [--notes 5000] [--written 0,50,500] [--busy] [--real]

Builds a vault of `--notes` synthetic notes (`bench_search.build_vault`, fake embedder unless
`--real`), then for each count in `--written`: starts `tmem daemon run --no-watch` on it, waits
until it is ready, writes that many new notes (no watcher reports them: every one is left to the
last scan at the stop), sends SIGTERM and times until the process is gone (the last scan, then
the auto-commit of what it applied). Notes an earlier stop left for the next start are committed
by git before each start, so that a stop's figure holds its own round's notes alone. Prints the stop's wall
time, the last scan's own line from the daemon's log (what it found, how long it took, what it
left for the next start) and the load average. `--busy` runs two `yes > /dev/null` beside it,
as a machine whose two cores are taken.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_search import build_vault  # noqa: E402

from tiered_memory.daemon import client  # noqa: E402
from tiered_memory.daemon.health import LOG_NAME  # noqa: E402

_LAST = re.compile(r"(last scan: .*|\d+ note\(s\) are left for the next start's scan.*)")


def load_line() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min) {five:.1f} (5 min) on {os.cpu_count()} cores"


def ready(root: Path, proc: subprocess.Popen[bytes], timeout: float = 1800) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"the daemon exited {proc.returncode}")
        info = client.ping(root)
        if info and info.get("ready"):
            return time.monotonic() - start
        time.sleep(0.1)
    raise SystemExit("the daemon was not ready in time")


def one_stop(root: Path, written: int, env: dict[str, str], round_: int) -> None:
    log = root / ".tmem" / LOG_NAME
    log.unlink(missing_ok=True)
    # What an earlier stop left for the next start (over its bound) is committed here, outside
    # the figures: each stop commits its own round's notes only.
    subprocess.run(["git", "-C", str(root), "add", "-A", "memory"], check=True)
    subprocess.run(
        ["git", "-C", str(root), "commit", "-qm", "bench: left by the last stop"],
        check=False,
        capture_output=True,
    )
    cmd = [
        sys.executable,
        "-m",
        "tiered_memory",
        "--vault",
        str(root),
        "daemon",
        "run",
        "--detached",
        "--no-watch",
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        took = ready(root, proc)
        folder = root / "memory" / "long-term" / "stop-bench"
        folder.mkdir(parents=True, exist_ok=True)
        run = f"{int(time.time())}-{round_}"  # new notes every run, on a vault kept with --out too
        for i in range(written):
            title = f"Stop bench {run}-{i}"
            (folder / f"stop-{run}-{i}.md").write_text(
                f"---\ntitle: {title}\n---\n# {title}\n\nThe kiln at station {i} runs hot.\n",
                encoding="utf-8",
            )
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(600)
        stopped = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = _LAST.findall(log.read_text(errors="replace")) if log.exists() else []
    print(
        f"{written:>5} notes written before the stop: stopped in {stopped:.2f} s (exit {code}; ready after {took:.1f} s)"
    )
    for line in lines:
        print(f"        {line}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=5000)
    parser.add_argument(
        "--written", default="0,50,500", help="comma-separated counts of notes written before a stop"
    )
    parser.add_argument("--busy", action="store_true", help="two `yes > /dev/null` running meanwhile")
    parser.add_argument(
        "--real", action="store_true", help="the real embedding model (default: the fake one)"
    )
    parser.add_argument("--out", type=Path, help="keep the vault here (default: a temp dir)")
    args = parser.parse_args()
    counts = [int(c) for c in args.written.split(",") if c.strip()]
    hogs: list[subprocess.Popen[bytes]] = []
    with tempfile.TemporaryDirectory(prefix="tmem-stop-") as temp:
        work = args.out or Path(temp)
        work.mkdir(parents=True, exist_ok=True)
        root = work / "vault"
        env = {**os.environ, "TMEM_CONFIG_HOME": str(work / "config"), "PYTHONPATH": str(ROOT)}
        env.pop("TMEM_VAULT", None)
        if not root.exists():
            build_vault(root, args.notes)
            if not args.real:
                (root / "tmem.yaml").write_text("embeddings:\n  provider: fake\n", encoding="utf-8")
            subprocess.run(["git", "-C", str(root), "commit", "-qam", "bench: settings"], check=False)
        print(
            f"{args.notes} notes, {'real' if args.real else 'fake'} embedder, {'busy' if args.busy else 'quiet'}"
        )
        try:
            if args.busy:
                hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(2)]
            print(f"start: {load_line()}")
            for round_, written in enumerate(counts):
                one_stop(root, written, env, round_)
            print(f"end: {load_line()}")
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()


if __name__ == "__main__":
    main()
