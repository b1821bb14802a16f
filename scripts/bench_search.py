#!/usr/bin/env python3
"""Benchmark indexing and search on a synthetic vault of N realistic notes (not a test: prints numbers).

    .venv/bin/python scripts/bench_search.py [--notes 10000] [--queries 100] [--out DIR] [--busy N]
                                             [--keyword-only] [--full-embed]

Notes are 80-200 words, with 3% of 1,000-1,600 words. `--busy N` runs N CPU hogs (one busy loop
each) beside the benchmark, as on a laptop where a build or a second agent is running; the load
average at the start and the end is printed with the figures, since a shared machine is rarely
quiet. `--keyword-only` skips the model: the build, freshness, keyword and CLI rows only.
`--full-embed` measures the vector build alone, pass by pass (every note's first passages, then
long notes' deeper ones, then the refinement of int8 drafts to float32), with the model's CPU time
and the wordpieces it ran, and the precision each pass ran in; no queries. It reports notes/s until
every note is searchable by vectors (drafts count), with all passages, and until refined.
`--precision` sets the vault's `embeddings.precision`: `auto` drafts a backlog in int8 on a CPU
with VNNI and refines it, `int8` runs every batch in int8 there (never refined), `float32` never
drafts.

Reports full-index throughput, time for one changed note to be searchable (model loaded),
warm in-process query latency p50/p95 (hybrid and keyword-only), `tmem search` wall time,
`tmem --help` wall time, index size on disk, RSS while serving queries and the run's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tiered_memory.app.memory import Memory  # noqa: E402
from tiered_memory.index.indexer import index_dir_size  # noqa: E402
from tiered_memory.index.retrieve import SearchRequest  # noqa: E402
from tiered_memory.storage.vault import Vault, init_vault  # noqa: E402

TOPICS = {
    "database": [
        "PostgreSQL",
        "the migration",
        "an index on created_at",
        "the connection pool",
        "a slow query",
    ],
    "deployment": [
        "the staging cluster",
        "a blue-green rollout",
        "the Helm chart",
        "a canary release",
        "the load balancer",
    ],
    "testing": [
        "the flaky integration test",
        "a property-based test",
        "the CI pipeline",
        "test fixtures",
        "coverage",
    ],
    "frontend": [
        "the React form",
        "a CSS grid layout",
        "the date picker",
        "bundle size",
        "server-side rendering",
    ],
    "geodesy": [
        "CGCS2000 control points",
        "the RTK base station",
        "a coordinate transform",
        "the GNSS rover",
        "benchmarks",
    ],
    "security": [
        "the API token rotation",
        "an expired TLS certificate",
        "the OAuth callback",
        "rate limiting",
        "audit logs",
    ],
    "planning": [
        "the quarterly roadmap",
        "milestone three",
        "the design review",
        "a customer interview",
        "the retrospective",
    ],
    "travel": [
        "the flight to Chengdu",
        "a hotel near the station",
        "the visa appointment",
        "train tickets",
        "a field trip",
    ],
    "health": [
        "morning runs",
        "a dentist appointment",
        "sleep schedule",
        "the new standing desk",
        "a yoga class",
    ],
    "family": [
        "Mia's birthday",
        "the weekend hike",
        "grandma's visit",
        "school pickup",
        "a board game night",
    ],
}
VERBS = [
    "We decided to replace",
    "It turned out the cause was",
    "Remember to check",
    "The team agreed to keep",
    "Lin suggested we document",
    "The user prefers to avoid",
    "We fixed a bug in",
    "Next week we will revisit",
    "A lesson learned about",
    "Always double-check",
]
TAILS = [
    "because it kept failing under load on Mondays.",
    "since the old approach wasted about two hours a week.",
    "after the incident on the 14th.",
    "so that field crews can work offline.",
    "which saves roughly 30% of the cost.",
    "and nobody should change it without a benchmark.",
    "until the vendor ships a fix.",
    "as discussed with Alex in the standup.",
    "to keep the release on schedule.",
    "before the audit in December.",
]
TIERS = [
    ("short-term", 0.05),
    ("mid-term/projects/p{p}", 0.25),
    ("long-term/knowledge_base/domains", 0.5),
    ("archive/sessions/2025/0{m}/1{d}", 0.2),
]


FILLER = (
    "the notes from that week mention a second attempt with smaller batches and a rollback plan "
    "written up by whoever was on call at the time while the dashboard numbers looked normal again"
).split()
LONG_SHARE = 0.03  # notes of 1,000+ words (meeting logs, pasted documents) next to short ones


def note_words(rng: random.Random) -> int:
    """A realistic length: 80-200 words, and a few notes of 1,000-1,600 words."""
    return rng.randint(1000, 1600) if rng.random() < LONG_SHARE else rng.randint(80, 200)


def note_text(rng: random.Random, topic: str, words: int | None = None) -> str:
    subjects = TOPICS[topic]
    target = note_words(rng) if words is None else words
    sentences: list[str] = []
    count = 0
    while count < target:
        sentence = f"{rng.choice(VERBS)} {rng.choice(subjects)} {rng.choice(TAILS)}"
        if rng.random() < 0.5:  # clauses of varied wording keep the vocabulary from being tiny
            start = rng.randrange(len(FILLER) - 8)
            sentence = sentence[:-1] + ", and " + " ".join(FILLER[start : start + rng.randint(4, 8)]) + "."
        if rng.random() < 0.15:
            sentence += f" Ticket {rng.choice(['OPS', 'DEV', 'GEO', 'FIN'])}-{rng.randint(100, 9999)}."
        sentences.append(sentence)
        count += len(sentence.split())
    paragraphs = [" ".join(sentences[i : i + 5]) for i in range(0, len(sentences), 5)]
    return "\n\n".join(paragraphs)


def build_vault(root: Path, count: int, seed: int = 7, write: bool = True) -> list[tuple[str, str]]:
    """Write `count` synthetic notes (deterministic for a seed); write=False only lists them."""
    if write:
        init_vault(root)
    rng = random.Random(seed)
    written: list[tuple[str, str]] = []
    for i in range(count):
        topic = rng.choice(list(TOPICS))
        folder = rng.choices([t for t, _ in TIERS], [w for _, w in TIERS])[0].format(
            p=rng.randint(1, 20), m=rng.randint(1, 9), d=rng.randint(0, 9)
        )
        rel = f"memory/{folder}/{topic}-{i:06d}.md"
        body = note_text(rng, topic)
        title = f"{topic.title()} note {i}: {body.split(' ', 6)[-1][:40]}"
        text = (
            f"---\nid: bench-{i:06d}\ntitle: {json.dumps(title)}\ncategory: {rng.choice(['fact', 'decision', 'discovery', 'note'])}\n"
            f"tags: [{topic}]\nimportance: {rng.random():.2f}\nupdated: 2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}\n---\n"
            f"# {title}\n\n{body}\n"
        )
        written.append((rel, body))
        if not write:
            continue
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if not write:
        return written
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(root),
            "-c",
            "user.name=bench",
            "-c",
            "user.email=b@x",
            "commit",
            "-qm",
            "bench notes",
        ],
        check=True,
    )
    return written


def start_hogs(count: int) -> list[subprocess.Popen[bytes]]:
    """`count` processes that each keep one core busy until stop_hogs()."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop_hogs(hogs: list[subprocess.Popen[bytes]]) -> None:
    for hog in hogs:
        hog.kill()
    for hog in hogs:
        hog.wait()


def load_line() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min) {five:.1f} (5 min) on {os.cpu_count()} cores"


def current_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * (len(ordered) - 1))))]


def wall(cmd: list[str], env: dict[str, str], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def full_embed(memory: Memory, notes: int, start_load: str) -> None:
    """The vector build alone, pass by pass: the first passes (every note searchable by vectors),
    the deeper passages of long notes, then the refinement of int8 drafts to float32 (with
    `precision: auto` on a CPU with VNNI, a backlog is drafted in int8 first), each with wall and
    CPU seconds, texts, wordpieces and the precision its batches ran in."""
    embedder = memory.indexer.embedder()
    texts: list[str] = []
    ran: set[str] = set()

    def counting(inner: Any, precision: str) -> Any:
        def run(batch: list[str]) -> object:
            texts.extend(batch)
            ran.add(precision)
            return inner(batch)

        return run

    embedder.embed = counting(embedder.embed, "float32")  # type: ignore[method-assign]
    draft = getattr(embedder, "embed_draft", None)
    if draft is not None:
        embedder.embed_draft = counting(draft, getattr(embedder, "draft_precision", None) or "float32")  # type: ignore[attr-defined]
    rows = []
    passes: list[list[str]] = []
    for name, deep, refine in (
        ("first passages", False, False),
        ("deeper passages", True, False),
        ("refinement to float32", True, True),
    ):
        texts.clear()
        ran.clear()
        wall0, cpu0 = time.perf_counter(), time.process_time()
        report = memory.indexer.ensure_vectors(deep=deep, refine=refine)
        wall_s, cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
        passes.append(list(texts))
        done = report.refined if refine else report.deepened if deep else report.embedded
        precision = "+".join(sorted(ran)) or "-"
        if report.drafted:
            precision += f" ({report.drafted} drafted)"
        rows.append((name, done, len(texts), 0, wall_s, cpu_s, precision))
    tokenizer = getattr(embedder, "_tokenizer", None)
    if tokenizer is not None:  # the model's own tokenizer, truncating as it does, padding off
        tokenizer.no_padding()
        counts = [sum(len(e.ids) for e in tokenizer.encode_batch(batch)) if batch else 0 for batch in passes]
        rows = [
            (n, d, c, pieces, w, p, r) for (n, d, c, _, w, p, r), pieces in zip(rows, counts, strict=True)
        ]
    threads = getattr(getattr(embedder, "_pools", None), "threads", "?")
    precision = getattr(embedder, "bulk_precision", None) or getattr(embedder, "precision", "?")
    drafts = getattr(embedder, "draft_precision", None) or "none"
    print(
        f"machine at start / end: {start_load} / {load_line()}; model threads {threads}, "
        f"batches in {precision}, drafts in {drafts}"
    )
    print(
        "| pass | notes | texts | wordpieces (after truncation) | wall s | CPU s | notes/s | texts per CPU-s | precision |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, done, count, pieces, wall_s, cpu_s, ran_in in rows:
        rate = f"{done / wall_s:.1f}" if wall_s and done else "-"
        per_cpu = f"{count / cpu_s:.1f}" if cpu_s and count else "-"
        print(
            f"| {name} | {done} | {count} | {pieces} | {wall_s:.1f} | {cpu_s:.1f} | {rate} | {per_cpu} | {ran_in} |"
        )
    walls = [r[4] for r in rows]
    for label, seconds in (
        ("searchable by vectors (drafts count)", walls[0]),
        ("with all passages", walls[0] + walls[1]),
        ("refined (every vector float32)", sum(walls)),
    ):
        print(f"{notes} notes {label}: {seconds:.1f} s, {notes / seconds:.1f} notes/s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--out", type=Path, default=None, help="keep the vault here (default: a temp dir, removed)"
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="with --out: keep the vault and index built by an earlier run; measure queries only",
    )
    parser.add_argument(
        "--busy", type=int, default=0, metavar="N", help="run N CPU hogs beside the benchmark"
    )
    parser.add_argument(
        "--keyword-only", action="store_true", help="no model: skip the vectors and the hybrid rows"
    )
    parser.add_argument(
        "--full-embed", action="store_true", help="measure the vector build's passes only (no queries)"
    )
    parser.add_argument(
        "--precision",
        choices=("auto", "float32", "int8"),
        default=None,
        help="the vault's embeddings.precision (default: the template's)",
    )
    args = parser.parse_args()
    if args.reuse and args.out is None:
        parser.error("--reuse needs --out DIR")
    hogs = start_hogs(args.busy)
    try:
        run(args)
    finally:
        stop_hogs(hogs)


SKIPPED = "(--keyword-only)"


def set_precision(root: Path, precision: str) -> None:
    """The vault's `embeddings.precision`, set in its tmem.yaml (one line of the template)."""
    config = root / "tmem.yaml"
    text, found = re.subn(
        r"(?m)^(  precision: )\S+", rf"\g<1>{precision}", config.read_text(encoding="utf-8"), count=1
    )
    if not found:
        raise SystemExit(f"bench_search: no embeddings precision line in {config}")
    config.write_text(text, encoding="utf-8")


def run(args: argparse.Namespace) -> None:
    start_load = load_line()

    base = args.out or Path(tempfile.mkdtemp(prefix="tmem-bench-"))
    root = base / "vault"
    reuse = args.reuse and (root / ".tmem").is_dir()
    if reuse:
        written = build_vault(root, args.notes, write=False)
        print(f"reusing the vault and index at {root}", flush=True)
    else:
        if root.exists():
            shutil.rmtree(root)
        t0 = time.perf_counter()
        written = build_vault(root, args.notes)
        print(f"built vault of {args.notes} notes in {time.perf_counter() - t0:.1f}s at {root}", flush=True)

    if args.precision:
        set_precision(root, args.precision)
    memory = Memory(Vault(root))
    t0 = time.perf_counter()
    memory.refresh(vectors=False)
    keyword_build = time.perf_counter() - t0
    if args.full_embed:
        full_embed(memory, args.notes, start_load)
        return
    scans = []
    for _ in range(5):  # what a search on an unchanged vault pays: the first also leaves the scan mark
        t0 = time.perf_counter()
        memory.refresh(vectors=False)
        scans.append(time.perf_counter() - t0)
    noop_scan = statistics.median(scans)
    model_load = vector_build = 0.0
    if not args.keyword_only:
        t0 = time.perf_counter()
        memory.indexer.embedder()
        model_load = time.perf_counter() - t0
        t0 = time.perf_counter()
        report = memory.indexer.ensure_vectors()
        vector_build = time.perf_counter() - t0
        precision = getattr(memory.indexer.embedder(), "precision", "")
        print(
            f"model precision {precision}; full index: {keyword_build + vector_build:.1f}s (keyword {keyword_build:.1f}s, vectors {vector_build:.1f}s, {report.embedded} embedded)",
            flush=True,
        )
    full = keyword_build + vector_build
    modes = ("keyword",) if args.keyword_only else ("hybrid", "keyword")

    rng = random.Random(11)
    queries = []
    for _ in range(args.queries):
        topic = rng.choice(list(TOPICS))
        queries.append(f"what did we decide about {rng.choice(TOPICS[topic])}?")
    lat: dict[str, list[float]] = {"hybrid": [], "keyword": []}
    for mode in modes:
        for q in queries[:5]:  # warm-up
            memory.searcher.search(SearchRequest(query=q, mode=mode))  # type: ignore[arg-type]
        for q in queries:
            start = time.perf_counter()
            memory.searcher.search(SearchRequest(query=q, mode=mode))  # type: ignore[arg-type]
            lat[mode].append((time.perf_counter() - start) * 1000)

    # One changed note, model loaded: edit the file, reindex just it, find it.
    rel, _ = written[len(written) // 2]
    path = root / rel
    marker = "zebracorn"
    path.write_text(
        path.read_text(encoding="utf-8") + f"\nThe {marker} migration finished.\n", encoding="utf-8"
    )
    start = time.perf_counter()
    memory.indexer.update_paths([rel], vectors=not args.keyword_only)
    found = memory.searcher.search(SearchRequest(query=marker, mode=modes[0]))
    reflect = time.perf_counter() - start
    assert found.hits and found.hits[0].path == rel, "changed note not found first"

    # "no daemon" means none: these commands would otherwise start one (daemon.autostart) and
    # every later run would be measuring the daemon's answer instead.
    env = dict(os.environ, TMEM_VAULT=str(root), TMEM_AUTOSTART="0")
    tmem = str(Path(sys.executable).parent / "tmem")
    help_wall = wall([tmem, "--help"], env)
    reindex = [tmem, "reindex", "--keyword-only"] if args.keyword_only else [tmem, "reindex"]
    noop_reindex_wall = wall(reindex, env, runs=3)
    keyword_wall = wall([tmem, "search", "--mode", "keyword", "database migration"], env)
    hybrid_wall = 0.0 if args.keyword_only else wall([tmem, "search", "database migration"], env, runs=2)
    size_mb = index_dir_size(Vault(root)) / 1e6
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    serving_mb = current_rss_mb()

    # The targets differ with the vault's size: one set for 10k notes, a looser one for 100k.
    at_scale = args.notes > 20_000
    rows = [
        ("notes", f"{args.notes}", ""),
        ("CPU hogs beside the benchmark", f"{args.busy}", ""),
        ("machine at start / end", f"{start_load} / {load_line()}", ""),
        ("model load (once)", SKIPPED if args.keyword_only else f"{model_load:.1f} s", ""),
        (
            "keyword-searchable after (catalog + full text)",
            "(reused index)"
            if reuse
            else f"{keyword_build:.1f} s ({args.notes / keyword_build:.0f} notes/s)",
            "<= 10 s at 10k",
        ),
        (
            "embedding throughput (vectors only)",
            "(reused index)"
            if reuse
            else SKIPPED
            if args.keyword_only
            else f"{args.notes / vector_build:.0f} notes/s ({vector_build:.0f} s)",
            ">= 150 notes/s",
        ),
        (
            "full index (keyword + vectors)",
            "(reused index)"
            if reuse
            else SKIPPED
            if args.keyword_only
            else f"{args.notes / full:.0f} notes/s ({full:.0f} s)",
            "",
        ),
        (
            "freshness scan, nothing changed (in-process, median of 5)",
            f"{noop_scan * 1000:.0f} ms",
            "<= 100 ms at 10k",
        ),
        ("`tmem reindex` wall, nothing changed", f"{noop_reindex_wall:.2f} s", "<= 1 s at 10k"),
        ("one changed note searchable", f"{reflect * 1000:.0f} ms", "<= 1 s"),
        (
            "warm hybrid query p50 / p95",
            SKIPPED
            if args.keyword_only
            else f"{percentile(lat['hybrid'], 50):.1f} / {percentile(lat['hybrid'], 95):.1f} ms",
            "p95 <= 50 ms",
        ),
        (
            "warm keyword query p50 / p95",
            f"{percentile(lat['keyword'], 50):.1f} / {percentile(lat['keyword'], 95):.1f} ms",
            "",
        ),
        ("`tmem --help` wall", f"{help_wall:.2f} s", "< 0.1 s"),
        ("`tmem search --mode keyword` wall (no daemon)", f"{keyword_wall:.2f} s", "<= 0.25 s at 10k"),
        (
            "`tmem search` (hybrid, no daemon) wall",
            SKIPPED if args.keyword_only else f"{hybrid_wall:.2f} s",
            "",
        ),
        ("index size on disk", f"{size_mb:.1f} MB", "<= 500 MB" if at_scale else "<= 100 MB"),
        (
            "RSS serving queries (both indexes and the model loaded)",
            f"{serving_mb:.0f} MB",
            "<= 1.5 GB" if at_scale else "",
        ),
        ("peak RSS of the run (the full build included)", f"{rss_mb:.0f} MB", ""),
    ]
    print("\n| measure | value | target |\n|---|---|---|")
    for name, value, target in rows:
        print(f"| {name} | {value} | {target} |")
    memory.close()
    if args.out is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
