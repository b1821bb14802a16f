#!/usr/bin/env python3
"""Recall evaluation on conversation-memory data in the neutral JSON Lines format of ../shared/eval/.

    .venv/bin/python scripts/eval_recall.py ../shared/eval/locomo-dev [--out docs/eval] [--modes hybrid,keyword,vector]

Each conversation is ingested into its own temporary vault through tmem's real code paths
(one note per dialog turn, filed under its session, committed per session, indexed by the real
indexer), then every question is asked through the real search path of that vault only. Reports
R@5, R@10 and MRR overall, without category 5, and per category, plus query latency p50/p95, for
the default hybrid pipeline and for tmem's keyword-only and vector-only modes, as a Markdown
table (stdout) and a JSON file.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml  # noqa: E402

from tiered_memory.app.filing import NewNote, add_many
from tiered_memory.app.memory import Memory, default_embedder_factory  # noqa: E402
from tiered_memory.config import parse_config  # noqa: E402
from tiered_memory.index.retrieve import SearchRequest  # noqa: E402
from tiered_memory.storage.vault import Vault, init_vault  # noqa: E402

MODES = ("hybrid", "keyword", "vector")


@dataclass
class Scores:
    r5: list[float] = field(default_factory=list)
    r10: list[float] = field(default_factory=list)
    rr: list[float] = field(default_factory=list)

    def add(self, ranked: list[str], gold: set[str]) -> None:
        self.r5.append(len(gold & set(ranked[:5])) / len(gold))
        self.r10.append(len(gold & set(ranked[:10])) / len(gold))
        first = next((i for i, doc in enumerate(ranked, 1) if doc in gold), None)
        self.rr.append(1.0 / first if first else 0.0)

    def summary(self) -> dict[str, float]:
        n = len(self.r5) or 1
        return {
            "n": len(self.r5),
            "R@5": round(sum(self.r5) / n, 4),
            "R@10": round(sum(self.r10) / n, 4),
            "MRR": round(sum(self.rr) / n, 4),
        }


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def parse_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def turn_note(doc: dict[str, Any]) -> NewNote:
    """A dialog turn as conversation memory stores it: speaker, date, text, image caption."""
    when = parse_date(doc.get("date"))
    speaker = doc.get("speaker") or "unknown"
    said = doc.get("date_raw") or (when.strftime("%d %B %Y") if when else "")
    body = f"{speaker}: {doc['text']}"
    if doc.get("image_caption"):
        body += f"\n\n[image: {doc['image_caption']}]"
    session = f"{doc['conversation']}/{doc['session']}"
    day = when.strftime("%Y/%m/%d") if when else "undated"
    return NewNote(
        text=body + "\n",
        title=f"{speaker}, {said}" if said else speaker,
        tier="archive",
        category="session",
        entities=[speaker],
        session=session,
        id=_slug(doc["id"]),
        when=when,
        folder=f"archive/sessions/{day}/{_slug(session)}",
        extra={"turn": doc.get("dia_id") or doc["id"], "seq": doc.get("turn_index", 0), "said_at": said},
    )


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def ingest(memory: Memory, docs: list[dict[str, Any]], vectors: bool = True) -> dict[str, str]:
    """Ingest a conversation session by session; returns note path -> document id."""
    by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for doc in docs:
        by_session[doc["session"]].append(doc)
    path_to_doc: dict[str, str] = {}
    for session, turns in by_session.items():
        turns.sort(key=lambda d: d.get("turn_index", 0))
        written = add_many(
            memory, [turn_note(d) for d in turns], f"ingest: {turns[0]['conversation']} {session}"
        )
        for note, doc in zip(written, turns, strict=True):
            path_to_doc[note.path] = doc["id"]
    if vectors:
        memory.indexer.ensure_vectors()
    return path_to_doc


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values) or [0.0]
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * (len(ordered) - 1))))]


def apply_overrides(vault: Vault, overrides: list[str]) -> None:
    """`section.key=value` settings applied on top of the vault's config (for experiments)."""
    if not overrides:
        return
    data = vault.config.model_dump()
    for item in overrides:
        key, _, raw = item.partition("=")
        target = data
        *parents, leaf = key.split(".")
        for part in parents:
            target = target[part]
        target[leaf] = yaml.safe_load(raw)
    vault._config = parse_config(data)


def evaluate(
    data_dir: Path,
    modes: Iterable[str],
    config_text: str | None,
    limit: int | None,
    cache: Path | None = None,
    overrides: list[str] | None = None,
) -> dict[str, Any]:
    docs = read_jsonl(data_dir / "documents.jsonl")
    queries = [q for q in read_jsonl(data_dir / "queries.jsonl") if q.get("evidence")]
    if limit:
        queries = queries[:limit]
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for doc in docs:
        by_conv[doc["conversation"]].append(doc)
    scores: dict[str, dict[str, Scores]] = {m: defaultdict(Scores) for m in modes}
    latency: dict[str, list[float]] = {m: [] for m in modes}
    embedder = None
    with tempfile.TemporaryDirectory(prefix="tmem-eval-") as tmp:
        for conv, conv_docs in sorted(by_conv.items()):
            conv_queries = [q for q in queries if q["conversation"] == conv]
            if not conv_queries:
                continue
            root = (cache or Path(tmp)) / _slug(conv)
            done_marker = root / ".tmem" / "eval-ingested.json"
            reuse = cache is not None and done_marker.exists()
            if not reuse:
                if root.exists():
                    shutil.rmtree(root)
                init_vault(root, config_text=config_text)
            vault = Vault(root)
            apply_overrides(vault, overrides or [])
            if embedder is None and set(modes) != {"keyword"}:
                embedder = default_embedder_factory(vault)()
            dates = [d for d in (parse_date(x.get("date")) for x in conv_docs) if d]
            asked_at = (max(dates) if dates else datetime.now(UTC)) + timedelta(days=1)
            memory = Memory(vault, embedder_factory=lambda e=embedder: e, now=lambda t=asked_at: t)
            started = time.perf_counter()
            if reuse:
                path_to_doc = json.loads(done_marker.read_text(encoding="utf-8"))
            else:
                path_to_doc = ingest(memory, conv_docs, vectors=set(modes) != {"keyword"})
                print(
                    f"{conv}: {len(conv_docs)} turns ingested in {time.perf_counter() - started:.1f}s",
                    file=sys.stderr,
                )
                done_marker.write_text(json.dumps(path_to_doc), encoding="utf-8")
            for query in conv_queries:
                gold = set(query["evidence"])
                category = str(query.get("category", "?"))
                for mode in modes:
                    start = time.perf_counter()
                    result = memory.search(
                        SearchRequest(query=query["question"], limit=10, mode=mode), record_access=False
                    )  # type: ignore[arg-type]
                    latency[mode].append((time.perf_counter() - start) * 1000)
                    ranked = [path_to_doc.get(h.path, "") for h in result.hits]
                    for bucket in ("all", f"cat{category}") + (("no5",) if category != "5" else ()):
                        scores[mode][bucket].add(ranked, gold)
            memory.close()
    report: dict[str, Any] = {"data": str(data_dir), "queries": len(queries), "modes": {}}
    for mode in modes:
        report["modes"][mode] = {
            "scores": {bucket: s.summary() for bucket, s in sorted(scores[mode].items())},
            "latency_ms": {
                "p50": round(percentile(latency[mode], 50), 1),
                "p95": round(percentile(latency[mode], 95), 1),
            },
        }
    return report


def markdown(report: dict[str, Any]) -> str:
    modes = list(report["modes"])
    buckets = sorted(
        {b for m in modes for b in report["modes"][m]["scores"]}, key=lambda b: (b != "all", b != "no5", b)
    )
    lines = [f"Recall on `{report['data']}` ({report['queries']} queries with evidence)", ""]
    lines.append("| slice | n | " + " | ".join(f"{m} R@5 | {m} R@10 | {m} MRR" for m in modes) + " |")
    lines.append("|---|---|" + "---|---|---|" * len(modes))
    for bucket in buckets:
        cells = []
        n = 0
        for mode in modes:
            s = report["modes"][mode]["scores"].get(bucket, {})
            n = s.get("n", n)
            cells.append(f"{s.get('R@5', 0):.3f} | {s.get('R@10', 0):.3f} | {s.get('MRR', 0):.3f}")
        name = {"all": "overall", "no5": "overall w/o cat 5"}.get(bucket, bucket.replace("cat", "category "))
        lines.append(f"| {name} | {n} | " + " | ".join(cells) + " |")
    lat = ", ".join(
        f"{m} p50 {report['modes'][m]['latency_ms']['p50']} ms / p95 {report['modes'][m]['latency_ms']['p95']} ms"
        for m in modes
    )
    lines += ["", f"Query latency (in-process, warm): {lat}"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path, help="folder with documents.jsonl and queries.jsonl")
    parser.add_argument(
        "--out", type=Path, default=Path("docs/eval"), help="where to write results.json and results.md"
    )
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument(
        "--config", type=Path, help="a tmem.yaml to use instead of the defaults (for experiments)"
    )
    parser.add_argument("--limit", type=int, help="only the first N queries (quick experiments)")
    parser.add_argument(
        "--cache", type=Path, help="keep the ingested vaults here and reuse them on later runs"
    )
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], help="override a setting: search.fusion=rrf"
    )
    args = parser.parse_args()
    if not (args.data / "documents.jsonl").is_file() or not (args.data / "queries.jsonl").is_file():
        parser.error(f"{args.data} has no documents.jsonl and queries.jsonl")
    modes = [m for m in args.modes.split(",") if m in MODES]
    config_text = args.config.read_text(encoding="utf-8") if args.config else None
    started = time.perf_counter()
    report = evaluate(args.data, modes, config_text, args.limit, args.cache, args.overrides)
    report["seconds"] = round(time.perf_counter() - started, 1)
    table = markdown(report)
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (args.out / "results.md").write_text(table + "\n", encoding="utf-8")
    print(
        f"\nwritten {args.out / 'results.json'} and {args.out / 'results.md'} in {report['seconds']}s",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
