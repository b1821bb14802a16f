"""Ranking: the pure scoring functions, and hybrid search on a fixture vault whose answers are known."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path

import pytest
from helpers import FIXED_NOW, among_others, write

from tiered_memory.app.filing import NewNote, add
from tiered_memory.app.memory import Memory
from tiered_memory.config import SearchConfig
from tiered_memory.index.catalog import NoteRow
from tiered_memory.index.retrieve import fuse_linear, fuse_rrf, link_lift, propagate, score_hits
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault


def row(path: str, **fields: object) -> NoteRow:
    base: dict[str, object] = {"id": Path(path).stem, "tier": "long", "updated": FIXED_NOW.timestamp()}
    base.update(fields)
    return NoteRow(path=path, **base)  # type: ignore[arg-type]


# ---- pure functions -----------------------------------------------------------------------------


def test_linear_fusion_normalises_each_side_and_weights_them() -> None:
    fused = fuse_linear(
        [("a", 10.0), ("b", 5.0)], [("b", 0.9), ("c", 0.5)], keyword_weight=0.4, vector_weight=0.6
    )
    assert fused["a"] == {"keyword": 1.0, "vector": 0.0, "fused": pytest.approx(0.4)}
    assert fused["b"]["keyword"] == pytest.approx(0.5)
    assert fused["b"]["vector"] == pytest.approx(1.0)
    assert fused["b"]["fused"] == pytest.approx(0.4 * 0.5 + 0.6 * 1.0)
    assert fused["c"]["fused"] == pytest.approx(0.0)  # lowest cosine of the pool scales to 0


def test_rrf_puts_a_document_first_in_both_lists_on_top() -> None:
    fused = fuse_rrf(
        [("a", 3.0), ("b", 2.0)], [("a", 0.9), ("c", 0.8)], k=60, keyword_weight=1, vector_weight=1
    )
    assert fused["a"]["fused"] == pytest.approx(1.0)
    assert fused["a"]["fused"] > fused["b"]["fused"] > 0
    assert fused["b"]["fused"] == pytest.approx(fused["c"]["fused"])


def test_decay_prior_and_min_score_shape_the_final_score() -> None:
    cfg = SearchConfig(decay_lambda=0.01, prior_weight=0.2, min_score=0.05)
    old = (FIXED_NOW - timedelta(days=100)).timestamp()
    rows = {
        "new": row("new", importance=0.9),
        "old": row("old", updated=old, importance=0.9),
        "weak": row("weak"),
    }
    fused = {
        "new": {"keyword": 1, "vector": 1, "fused": 0.8},
        "old": {"keyword": 1, "vector": 1, "fused": 0.8},
    }
    fused["weak"] = {"keyword": 0.01, "vector": 0, "fused": 0.01}
    hits = score_hits(fused, rows, cfg, FIXED_NOW)
    assert [h.path for h in hits] == ["new", "old"]  # "weak" falls under min_score
    assert hits[1].components["decay"] == pytest.approx(2.718281828 ** (-1.0), rel=1e-3)
    assert hits[0].score > hits[1].score


def test_by_default_age_counts_through_confidence_not_through_the_edit_date() -> None:
    # Ten years since an edit costs a note nothing by itself; the confidence the daily
    # maintenance lowers for a note nobody recalls is what ranks it below.
    cfg = SearchConfig()
    decade = (FIXED_NOW - timedelta(days=3650)).timestamp()
    rows = {
        "fresh": row("fresh", confidence=0.8),
        "old-recalled": row("old-recalled", updated=decade, confidence=0.8),
        "old-forgotten": row("old-forgotten", updated=decade, confidence=0.4),
    }
    same = {"keyword": 1.0, "vector": 1.0, "fused": 0.8}
    hits = {h.path: h for h in score_hits(dict.fromkeys(rows, same), rows, cfg, FIXED_NOW)}
    assert hits["old-recalled"].score == pytest.approx(hits["fresh"].score)
    assert hits["old-recalled"].components["decay"] == 1.0
    assert hits["old-forgotten"].score < hits["fresh"].score


def test_a_candidate_with_no_evidence_is_not_a_hit_even_without_a_min_score() -> None:
    # A Chinese query gives its vector side no weight: a candidate only the vectors found has a
    # fused score of 0 and must not trail the answers as a 0.000 hit.
    cfg = SearchConfig(min_score=0.0)
    rows = {"answer": row("answer"), "vector-only": row("vector-only")}
    fused = {
        "answer": {"keyword": 1, "vector": 0, "fused": 0.9},
        "vector-only": {"keyword": 0, "vector": 0.8, "fused": 0.0},
    }
    assert [h.path for h in score_hits(fused, rows, cfg, FIXED_NOW)] == ["answer"]


def test_archive_ranks_after_other_tiers_unless_asked_for() -> None:
    cfg = SearchConfig()
    rows = {"arch": row("arch", tier="archive"), "mid": row("mid", tier="mid")}
    fused = {
        "arch": {"keyword": 1, "vector": 1, "fused": 1.0},
        "mid": {"keyword": 0.2, "vector": 0, "fused": 0.2},
    }
    assert [h.path for h in score_hits(fused, rows, cfg, FIXED_NOW)] == ["mid", "arch"]
    assert [h.path for h in score_hits(fused, rows, cfg, FIXED_NOW, archive_requested=True)] == [
        "arch",
        "mid",
    ]


def test_propagate_lifts_neighbours_and_sessions_without_compounding() -> None:
    turns = [row(f"t{i}", session="s1", seq=i) for i in range(4)]
    other = [row("u0", session="s2", seq=0)]
    fused = {
        "t1": {"keyword": 1.0, "vector": 0.0, "fused": 1.0},
        "u0": {"keyword": 0.5, "vector": 0, "fused": 0.5},
    }
    out = propagate(fused, {"s1": turns, "s2": other}, neighbor_weight=0.5, session_weight=0.1)
    assert out["t0"]["fused"] == pytest.approx(0.5 + 0.1)  # neighbour of t1
    assert out["t2"]["fused"] == pytest.approx(0.5 + 0.1)
    assert out["t3"]["fused"] == pytest.approx(0.1)  # same session, not adjacent
    assert out["t1"]["fused"] == pytest.approx(1.0 + 0.1)  # its neighbours had nothing to lend
    assert out["u0"]["fused"] == pytest.approx(0.5 + 0.05)
    assert fused["t1"]["fused"] == 1.0  # input untouched


# ---- a fixture vault with known answers ----------------------------------------------------------

FIXTURE = [
    (
        "Use CGCS2000 for control points",
        "decision",
        "long",
        "该项目控制点坐标系为 CGCS2000。Store control points in CGCS2000.",
    ),
    (
        "Database migration to PostgreSQL",
        "decision",
        "long",
        "We migrated the sync server from SQLite to PostgreSQL 16.",
    ),
    (
        "Flaky CI from naive datetimes",
        "error",
        "long",
        "Tests failed at night because datetime.now() had no time zone.",
    ),
    (
        "Retry uploads with backoff",
        "pattern",
        "long",
        "Uploads retry with exponential backoff and jitter in tunnels.",
    ),
    (
        "Prefers small pull requests",
        "preference",
        "long",
        "The user likes pull requests under 300 lines with tests.",
    ),
    (
        "Lunch place near the office",
        "fact",
        "mid",
        "The noodle shop on Fuxing Road is the team's favourite lunch place.",
    ),
]
QUESTIONS = [
    ("which coordinate system for control points", "Use CGCS2000 for control points"),
    ("坐标系", "Use CGCS2000 for control points"),
    ("when did we migrate the database", "Database migration to PostgreSQL"),
    ("why were the tests flaky", "Flaky CI from naive datetimes"),
    ("how should uploads handle lost signal", "Retry uploads with backoff"),
    ("where do we eat lunch", "Lunch place near the office"),
]


def _fill(memory: Memory) -> None:
    for title, category, tier, text in FIXTURE:
        add(memory, NewNote(text=text, title=title, category=category, tier=tier))


@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
def test_fixture_vault_answers_come_first(memory: Memory, mode: str) -> None:
    _fill(memory)
    for question, expected in QUESTIONS:
        if mode == "keyword" and question.startswith("how should"):
            continue  # no shared words: only the vector side can find it
        hits = memory.search(SearchRequest(query=question, mode=mode), record_access=False).hits  # type: ignore[arg-type]
        assert hits, question
        assert hits[0].title == expected, (question, [h.title for h in hits])


def test_superseded_notes_leave_results_unless_all(memory: Memory) -> None:
    _fill(memory)
    old = add(
        memory, NewNote(text="The project uses WGS84 for control points", title="Uses WGS84", tier="long")
    )
    with memory.change("supersede by hand") as tx:
        tx.write_note(tx.read_note(old.path).with_meta(status="superseded", superseded_by="x"))
    memory.refresh()
    titles = [
        h.title for h in memory.search(SearchRequest(query="WGS84 control points"), record_access=False).hits
    ]
    assert "Uses WGS84" not in titles
    request = SearchRequest(query="WGS84 control points", include_superseded=True)
    assert "Uses WGS84" in [h.title for h in memory.search(request, record_access=False).hits]


def test_filters_restrict_both_sides(memory: Memory) -> None:
    _fill(memory)
    hits = memory.search(
        SearchRequest(query="lunch control points tests", tiers=["mid"]), record_access=False
    ).hits
    assert hits[0].title == "Lunch place near the office"
    assert {h.tier for h in hits} == {"mid"}
    hits = memory.search(
        SearchRequest(query="control points", categories=["error"]), record_access=False
    ).hits
    assert all(h.category == "error" for h in hits)


def test_session_neighbours_surface_the_answer_turn(memory: Memory) -> None:
    """A question turn matches the query; the reply right after it holds the answer."""
    turns = [
        "Alex: Where did you end up going for the team offsite?",
        "Sam: Hangzhou, by the West Lake. Everyone loved the boat ride.",
        "Alex: Nice. Did the budget hold up?",
        "Sam: Barely, the hotel was pricier than planned.",
    ]
    notes = [
        NewNote(text=t, tier="archive", category="session", session="s-offsite", extra={"seq": i})
        for i, t in enumerate(turns)
    ]
    among_others(memory, notes, "ingest: offsite chat")
    request = SearchRequest(query="team offsite destination", mode="keyword", limit=3)
    memory.searcher.cfg = dataclasses.replace(memory.searcher.cfg, neighbor_weight=0.0)
    plain = [h.title for h in memory.search(request, record_access=False).hits]
    memory.searcher.cfg = dataclasses.replace(memory.searcher.cfg, neighbor_weight=0.5)
    lifted = memory.search(request, record_access=False).hits
    assert not any(t.startswith("Sam: Hangzhou") for t in plain)  # shares no word with the query
    assert [h.title for h in lifted][:2] == [turns[0], turns[1]], [h.title for h in lifted]
    assert lifted[1].components["context"] > 0


@pytest.mark.model
def test_hybrid_with_the_real_packaged_minilm(tmp_path: Path) -> None:
    from tiered_memory.index.embeddings import SentenceTransformerEmbedder
    from tiered_memory.storage.vault import init_vault

    root = tmp_path / "real"
    init_vault(root)
    memory = Memory(Vault(root), embedder_factory=SentenceTransformerEmbedder, now=lambda: FIXED_NOW)
    try:
        _fill(memory)
        hits = memory.search(
            SearchRequest(query="how should uploads handle lost signal"), record_access=False
        ).hits
        assert hits[0].title == "Retry uploads with backoff"
        assert hits[0].components["vector"] > 0
        assert memory.indexer.catalog.pending_vectors() == []
    finally:
        memory.close()


def test_link_lift_gives_targets_a_share_of_their_best_source_without_compounding() -> None:
    fused = {
        "hub.md": {"keyword": 1.0, "vector": 0.0, "fused": 1.0},
        "weak.md": {"keyword": 0.2, "vector": 0.0, "fused": 0.2},
        "target.md": {"keyword": 0.1, "vector": 0.0, "fused": 0.1},
    }
    lifted = link_lift(fused, {"hub.md": ["target.md", "new.md", "hub.md"], "weak.md": ["target.md"]}, 0.5)
    assert lifted["target.md"]["fused"] == pytest.approx(0.1 + 0.5 * 1.0)  # the best source counts
    assert lifted["target.md"]["link"] == pytest.approx(0.5)
    assert lifted["new.md"]["fused"] == pytest.approx(0.5)  # a note linked to becomes a candidate
    assert lifted["hub.md"] == fused["hub.md"]  # a note's link to itself lifts nothing
    assert fused["target.md"]["fused"] == 0.1  # the input is left as it was
    assert link_lift(fused, {}, 0.5) == fused


def test_a_note_linked_from_a_strong_hit_gains_only_when_link_weight_is_set(memory: Memory) -> None:
    hub = "Notes/Harbor survey.md"
    decision = "Notes/Decision 7.md"
    write(memory.vault.root, hub, "# Harbor survey\n\nWhat we settled on is in [[Decision 7]].\n")
    write(memory.vault.root, decision, "# Decision 7\n\nEPSG:25832 for every later campaign.\n")
    write(memory.vault.root, "Notes/Journal.md", "# Journal\n\nThe harbor was foggy, nothing settled.\n")
    memory.refresh()
    request = SearchRequest("what did we settle on for the harbor survey", mode="keyword")
    found = memory.searcher.gather(request)
    off = memory.searcher.rank(found, request)
    assert decision not in [h.path for h in off.hits]
    cfg = dataclasses.replace(memory.searcher.cfg, link_weight=0.5)
    on = memory.searcher.rank(found, request, cfg=cfg)
    assert [h.path for h in on.hits][:2] == [hub, decision]
    assert on.hits[1].components["link"] == 0.5


def test_a_hybrid_search_embeds_its_query_beside_the_keyword_side(vault_path: Path) -> None:
    """An embedder that can leave a core to the keyword side (`embed_beside`) is asked that way
    for the query; one that cannot is asked plainly."""
    from tiered_memory.index.embeddings import FakeEmbedder

    beside: list[list[str]] = []

    class Sparing(FakeEmbedder):
        def embed_beside(self, texts: list[str]) -> object:
            beside.append(list(texts))
            return self.embed(texts)

    write(vault_path, "memory/long-term/zebra.md", "# Zebra\n\nThe zebra crossing was repainted.\n")
    memory = Memory(Vault(vault_path), embedder_factory=lambda: Sparing(32), now=lambda: FIXED_NOW)
    try:
        memory.refresh(vectors=True)
        hits = memory.search(SearchRequest("zebra crossing", mode="hybrid"), record_access=False).hits
    finally:
        memory.close()
    assert [h.path for h in hits] == ["memory/long-term/zebra.md"]
    assert beside == [["zebra crossing"]]
