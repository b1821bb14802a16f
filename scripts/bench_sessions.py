#!/usr/bin/env python3
"""Timings of the session paths an agent hits on every turn, over a temporary vault with real git.

    .venv/bin/python scripts/bench_sessions.py [--appends 50] [--messages 1000] [--notes 1000] [--model]
        [--hostile-mb 64] [--long-mb 100] [--whole-mb 31]

Prints: `session append` latency (write + commit + reindex, p50/p95), ingest of a Claude Code
transcript, rule-based extraction alone, and `dedup.remember` latency in a vault of N notes.
The fake embedder is used unless --model asks for the packaged MiniLM. Then the time and peak
memory of a `tmem ingest` and a `tmem extract` process given a transcript of --hostile-mb of
one-word messages (every record kept; refused), of `tmem ingest` given a Markdown log of --whole-mb
(read whole; refused), and one of --long-mb whose tool output is slimmed away (stored).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tiered_memory.app import dedup, sessions
from tiered_memory.app.filing import NewNote, add_many
from tiered_memory.app.memory import Memory, default_embedder_factory  # noqa: E402
from tiered_memory.index.embeddings import FakeEmbedder  # noqa: E402
from tiered_memory.model import extract, transcripts
from tiered_memory.storage.vault import Vault, init_vault  # noqa: E402

TOPICS = ["datum", "levelling", "prism", "tunnel", "report", "alarm", "adjustment", "station", "bridge", "ci"]


def claude_transcript(n: int) -> str:
    start = datetime(2026, 11, 20, 9, tzinfo=UTC)
    lines = [json.dumps({"type": "summary", "summary": "Long survey session", "leafUuid": "x"})]
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        topic = TOPICS[i % len(TOPICS)]
        text = (
            f"Message {i} about the {topic}. We decided to check the {topic} twice."
            if i % 7 == 0
            else f"Message {i}: some discussion of the {topic} and its numbers {i * 3}."
        )
        content: object = text if role == "user" else [{"type": "text", "text": text}]
        lines.append(
            json.dumps(
                {
                    "type": role,
                    "sessionId": "bench-session",
                    "message": {"role": role, "content": content},
                    "timestamp": (start + timedelta(seconds=i)).isoformat(),
                }
            )
        )
    return "\n".join(lines) + "\n"


def tiny_records(path: Path, mb: int) -> None:
    """`mb` MB of one-word messages in Claude Code's shape: every record is kept."""
    line = json.dumps(
        {
            "type": "user",
            "sessionId": "bench-hostile",
            "cwd": "/work/app",
            "message": {"role": "user", "content": "ok"},
            "timestamp": "2026-11-20T09:00:00Z",
        }
    )
    with path.open("w", encoding="utf-8") as handle:
        for _ in range(mb * 1024 * 1024 // (len(line) + 1)):
            handle.write(line + "\n")


def long_session(path: Path, mb: int) -> None:
    """`mb` MB of a Claude Code log: a question, a Read call and its 300 KB result (twice, as
    Claude Code keeps its own copy) for each exchange, until the log is that large."""
    output = "\n".join(f"{n}\tline {n} of the file = {n * 7}" for n in range(10_000))
    with path.open("w", encoding="utf-8") as handle:
        n = 0
        while handle.tell() < mb * 1024 * 1024:
            base = {"sessionId": "bench-long", "cwd": "/work/app", "timestamp": "2026-11-20T09:00:00Z"}
            call = {"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {"file_path": f"f{n}.py"}}
            result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": output}
            for record in (
                {**base, "type": "user", "message": {"role": "user", "content": f"Look at f{n}.py"}},
                {**base, "type": "assistant", "message": {"role": "assistant", "content": [call]}},
                {
                    **base,
                    "type": "user",
                    "toolUseResult": {"stdout": output},
                    "message": {"role": "user", "content": [result]},
                },
            ):
                handle.write(json.dumps(record) + "\n")
            n += 1


# Started from a fresh small interpreter: a child's peak RSS counts the pages of the process it
# was forked from, and this one holds a vault and its indexes.
_MEASURE = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_pid, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss // 1024)
"""


def ingest_process(root: Path, transcript: Path, command_name: str = "ingest") -> tuple[float, int, int]:
    """(seconds, peak RSS in MB, exit status) of `tmem ingest --no-extract` (or `tmem extract`) run
    as its own process."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    command = [sys.executable, "-m", "tiered_memory", "--vault", str(root), command_name]
    command += ["--no-extract"] if command_name == "ingest" else []
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, *command, str(transcript)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    status, rss = (int(word) for word in done.stdout.split())
    return time.perf_counter() - began, rss, status


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=50)
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument(
        "--model", action="store_true", help="use the packaged MiniLM instead of the fake embedder"
    )
    parser.add_argument("--hostile-mb", type=int, default=64)
    parser.add_argument("--long-mb", type=int, default=100)
    parser.add_argument("--whole-mb", type=int, default=31, help="a Markdown log, read whole (at most 32)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        init_vault(root, config_text="" if args.model else "embeddings:\n  provider: fake\n")
        vault = Vault(root)
        factory = default_embedder_factory(vault) if args.model else (lambda: FakeEmbedder(64))
        memory = Memory(vault, embedder_factory=factory)

        sessions.start(memory, "bench")
        times = []
        for i in range(args.appends):
            began = time.perf_counter()
            sessions.append(memory, f"message {i}: the {TOPICS[i % len(TOPICS)]} looks fine", role="user")
            times.append(time.perf_counter() - began)
        times.sort()
        p95 = times[int(0.95 * (len(times) - 1))]
        print(
            f"session append ({args.appends}x, incl. commit): p50 {ms(statistics.median(times))}, p95 {ms(p95)}"
        )
        began = time.perf_counter()
        sessions.end(memory)
        print(
            f"session end ({args.appends} messages, extraction + commit): {ms(time.perf_counter() - began)}"
        )

        text = claude_transcript(args.messages)
        began = time.perf_counter()
        messages = transcripts.parse(text).messages
        parsed = time.perf_counter() - began
        began = time.perf_counter()
        found = extract.extract(messages, "bench")
        extracted = time.perf_counter() - began
        print(
            f"parse {args.messages} Claude Code records: {ms(parsed)}; rule extraction: {ms(extracted)} ({len(found)} candidates)"
        )
        began = time.perf_counter()
        session = sessions.ingest(memory, text, name="bench.jsonl")
        print(
            f"ingest {args.messages} messages (redact, summary, extract, dedup, one commit): "
            f"{time.perf_counter() - began:.2f} s, {len(session.outcomes)} memories"
        )

        items = [
            NewNote(f"Note {i}: the {TOPICS[i % len(TOPICS)]} value {i} was checked on site", category="fact")
            for i in range(args.notes)
        ]
        add_many(memory, items, "bench: filler notes")
        memory.refresh()
        times = []
        for i in range(20):
            began = time.perf_counter()
            dedup.remember(
                memory, NewNote(f"The {TOPICS[i % len(TOPICS)]} tolerance is {i} mm", category="fact")
            )
            times.append(time.perf_counter() - began)
        print(
            f"dedup.remember in a vault of {args.notes + 20} notes (incl. commit): p50 {ms(statistics.median(times))}"
        )
        memory.close()

        transcript = Path(tmp) / "transcript.jsonl"
        tiny_records(transcript, args.hostile_mb)
        seconds, rss, status = ingest_process(root, transcript)
        print(
            f"tmem ingest of {args.hostile_mb} MB of one-word Claude Code records (refused, exit {status}): "
            f"{seconds:.1f} s, peak RSS {rss} MB"
        )
        seconds, rss, status = ingest_process(root, transcript, "extract")
        print(
            f"tmem extract of {args.hostile_mb} MB of one-word Claude Code records (refused, exit {status}): "
            f"{seconds:.1f} s, peak RSS {rss} MB"
        )
        markdown = Path(tmp) / "transcript.md"
        markdown.write_text("**User:** ok\n**Assistant:** ok\n" * (args.whole_mb * 1024 * 1024 // 32))
        seconds, rss, status = ingest_process(root, markdown)
        print(
            f"tmem ingest of {args.whole_mb} MB of one-word Markdown messages (read whole; refused, exit {status}): "
            f"{seconds:.1f} s, peak RSS {rss} MB"
        )
        long_session(transcript, args.long_mb)
        seconds, rss, status = ingest_process(root, transcript)
        print(
            f"tmem ingest of a {args.long_mb} MB Claude Code log of big tool output (exit {status}): "
            f"{seconds:.1f} s, peak RSS {rss} MB"
        )


if __name__ == "__main__":
    main()
