#!/usr/bin/env python3
"""Time and peak memory of `tmem ingest` of one long opencode session, over a temporary vault.

    .venv/bin/python scripts/bench_opencode.py [--turns 400] [--output-kb 256]

Writes a session of --turns user/assistant turns into opencode's JSON storage (each answer with
a tool call whose output is --output-kb), then runs `tmem ingest --no-extract` as its own process
three ways: the session's folder, its id looked up in an `opencode.db` holding the same session,
and what `opencode export` would print for it. Prints the storage's size, and each run's seconds
and peak RSS: the parts are slimmed as they are read, so memory follows the kept text, not the
tool output.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tiered_memory.storage.vault import init_vault  # noqa: E402

SESSION = "ses_3f2a1b9c8ffeBenchMark01"
FAKE = "embeddings:\n  provider: fake\n"
_MEASURE = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
_pid, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss // 1024)
"""


def session(turns: int, output_kb: int) -> tuple[dict[str, object], list[dict[str, object]]]:
    info = {"id": SESSION, "projectID": "p" * 40, "directory": "/home/ana/geodesy", "title": "Bench"}
    info["time"] = {"created": 1763629200000, "updated": 1763629200000}
    output = ("station 42 residual 0.3 mm\n" * (output_kb * 1024 // 27))[: output_kb * 1024]
    messages: list[dict[str, object]] = []
    for n in range(turns):
        at = 1763629200000 + n * 60_000
        for role, mid in (("user", f"msg_{n:06d}uuuuuu"), ("assistant", f"msg_{n:06d}vvvvvv")):
            parts: list[dict[str, object]] = [
                {"id": f"prt_{mid[4:]}0000", "type": "text", "text": f"Turn {n}: check the tunnel datum."}
            ]
            if role == "assistant":
                parts.append(
                    {
                        "id": f"prt_{mid[4:]}0001",
                        "type": "reasoning",
                        "text": "x" * 2000,
                        "time": {"start": 0},
                    }
                )
                parts.append(
                    {
                        "id": f"prt_{mid[4:]}0002",
                        "type": "tool",
                        "tool": "bash",
                        "callID": f"c{n}",
                        "state": {
                            "status": "completed",
                            "input": {"command": "cat adj.log"},
                            "output": output,
                            "title": "",
                            "metadata": {},
                            "time": {"start": 0, "end": 1},
                        },
                    }
                )
            info_m = {"id": mid, "sessionID": SESSION, "role": role, "time": {"created": at}}
            messages.append(
                {"info": info_m, "parts": [{**p, "sessionID": SESSION, "messageID": mid} for p in parts]}
            )
    return info, messages


def write_storage(share: Path, info: dict[str, object], messages: list[dict[str, object]]) -> Path:
    storage = share / "opencode" / "storage"
    (storage / "session" / "p").mkdir(parents=True)
    (storage / "session" / "p" / f"{SESSION}.json").write_text(json.dumps(info))
    for item in messages:
        mid = item["info"]["id"]  # type: ignore[index]
        (storage / "message" / SESSION).mkdir(parents=True, exist_ok=True)
        (storage / "message" / SESSION / f"{mid}.json").write_text(json.dumps(item["info"]))
        (storage / "part" / mid).mkdir(parents=True)
        for part in item["parts"]:  # type: ignore[union-attr]
            (storage / "part" / mid / f"{part['id']}.json").write_text(json.dumps(part))
    return storage / "message" / SESSION


def write_database(share: Path, info: dict[str, object], messages: list[dict[str, object]]) -> None:
    (share / "opencode").mkdir(parents=True)
    db = sqlite3.connect(share / "opencode" / "opencode.db")
    db.executescript(
        "CREATE TABLE session (id TEXT PRIMARY KEY, title TEXT, directory TEXT, time_created INTEGER);"
        "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, data TEXT);"
        "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, data TEXT);"
    )
    db.execute("INSERT INTO session VALUES (?, ?, ?, ?)", (SESSION, info["title"], info["directory"], 0))
    for item in messages:
        m = item["info"]
        db.execute(
            "INSERT INTO message VALUES (?, ?, ?, ?)", (m["id"], SESSION, m["time"]["created"], json.dumps(m))
        )  # type: ignore[index]
        for p in item["parts"]:  # type: ignore[union-attr]
            db.execute("INSERT INTO part VALUES (?, ?, ?, ?)", (p["id"], m["id"], SESSION, json.dumps(p)))  # type: ignore[index]
    db.commit()
    db.close()


def ingest(root: Path, source: str, env: dict[str, str]) -> tuple[float, int, int]:
    command = [sys.executable, "-m", "tiered_memory", "--vault", str(root), "ingest", "--no-extract", source]
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, *command], env=env, capture_output=True, text=True, check=True
    )
    status, rss = (int(word) for word in done.stdout.split())
    return time.perf_counter() - began, rss, status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--output-kb", type=int, default=256)
    args = parser.parse_args()
    info, messages = session(args.turns, args.output_kb)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        share = base / "share"
        folder = write_storage(share, info, messages)
        write_database(base / "dbshare", info, messages)
        export = base / "export.json"
        export.write_text(json.dumps({"info": info, "messages": messages}, indent=2))
        del messages
        size = sum(f.stat().st_size for f in (share / "opencode" / "storage").rglob("*.json"))
        print(
            f"session: {args.turns * 2} messages, JSON storage {size / 1048576:.0f} MB, export {export.stat().st_size / 1048576:.0f} MB"
        )
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent), "TMEM_AUTOSTART": "0"}
        for label, source, extra in (
            ("storage folder", str(folder), {}),
            ("id in opencode.db", SESSION, {"XDG_DATA_HOME": str(base / "dbshare")}),
            ("export file", str(export), {}),
        ):
            vault = base / f"vault-{label.split()[0]}"
            init_vault(vault, config_text=FAKE)
            seconds, rss, status = ingest(vault, source, {**env, **extra})
            print(f"tmem ingest {label}: exit {status}, {seconds:.1f} s, peak RSS {rss} MB")


if __name__ == "__main__":
    main()
