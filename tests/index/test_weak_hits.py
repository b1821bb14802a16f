"""Weak results are no results: a hit needs evidence of its own (keyword coverage or an absolute
cosine), an archived note holding every query word is not buried under notes matching none, and
`--min-score` / MCP `min_score` cut the rest."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import FAKE_CONFIG, FIXED_NOW, as_json, ok, one_error_line, write
from mcp import ClientSession
from mcp_client import call, serve

from tiered_memory.app.memory import Memory
from tiered_memory.cli.main import cli
from tiered_memory.config import SearchConfig
from tiered_memory.index.catalog import NoteRow
from tiered_memory.index.retrieve import score_hits, with_evidence
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault, init_vault

# The issue's vault: a few notes a person keeps, none of them about coordinate systems.
PIZZA = (
    "memory/mid-term/pizza-friday.md",
    "---\ntitle: Friday pizza order\n---\n"
    "The team orders from Luigi's on Fridays: two margheritas, one diavola, one vegan.\n",
)
FLAKY_CI = (
    "memory/long-term/knowledge_base/lessons/flaky-ci-timezones.md",
    "---\ntitle: Flaky CI was caused by time zones\ncategory: error\n---\n"
    "Tests failed only between 00:00 and 08:00 UTC. Fixed by injecting a clock and always using\n"
    "aware datetimes.\n",
)
DENTIST = (
    "memory/archive/2026/dentist.md",
    "---\ntitle: Dentist appointment\ntier: archive\n---\n"
    "Dentist appointment with Dr. Weber on 3 March at 10:00. Bring the insurance card.\n",
)
NOTES = (PIZZA, FLAKY_CI, DENTIST)


def _fill(root: Path) -> None:
    for rel, text in NOTES:
        write(root, rel, text)


def _row(path: str, tier: str) -> NoteRow:
    return NoteRow(path=path, id=path, title=path, tier=tier, category="note", updated=FIXED_NOW.timestamp())


# ---- the rule, on fused candidates ------------------------------------------------------------


def test_only_candidates_with_evidence_of_their_own_survive() -> None:
    fused = {
        # the nearest vector of a poor lot: scaled to a fair score, yet barely similar
        "pizza": {"keyword": 0.0, "vector": 0.11, "cosine": 0.04, "fused": 0.03},
        # matched one common word of three
        "ci": {"keyword": 1.0, "vector": 1.0, "cosine": -0.01, "fused": 1.0},
        "dentist": {"keyword": 1.0, "vector": 1.0, "cosine": 0.47, "fused": 1.0},
        # no shared word, but close in meaning
        "teeth": {"keyword": 0.0, "vector": 0.9, "cosine": 0.45, "fused": 0.27},
        # an encrypted note scored apart: its coverage is unknown, its keyword match counts
        "sealed": {"keyword": 0.4, "vector": 0.0, "fused": 0.28},
    }
    coverage = {"ci": (1 / 3, 1), "dentist": (1.0, 1)}
    kept = with_evidence(fused, coverage, min_coverage=0.4, min_cosine=0.4)
    assert sorted(kept) == ["dentist", "sealed", "teeth"]
    assert fused["dentist"]["coverage"] == 1.0  # recorded for --explain
    assert sorted(with_evidence(fused, {**coverage, "ci": (1 / 3, 2)}, 0.4, 0.4)) == [
        "ci",
        "dentist",
        "sealed",
        "teeth",
    ]
    assert sorted(with_evidence(fused, coverage, 0.0, 0.0)) == [
        "ci",
        "dentist",
        "pizza",
        "sealed",
        "teeth",
    ]


def test_an_archived_note_holding_every_query_word_is_not_ranked_below_notes_matching_none() -> None:
    fused = {
        "pizza.md": {"keyword": 0.0, "vector": 1.0, "coverage": 0.0, "fused": 0.3},
        "dentist.md": {"keyword": 1.0, "vector": 0.0, "coverage": 1.0, "fused": 0.7},
        "old-half.md": {"keyword": 0.5, "vector": 0.0, "coverage": 0.5, "fused": 0.35},
    }
    rows = {
        "pizza.md": _row("pizza.md", "mid"),
        "dentist.md": _row("dentist.md", "archive"),
        "old-half.md": _row("old-half.md", "archive"),
    }
    hits = score_hits(fused, rows, SearchConfig(), FIXED_NOW)
    # The partial match stays behind the current notes, as every archived note did before.
    assert [h.path for h in hits] == ["dentist.md", "pizza.md", "old-half.md"]


# ---- the keyword side's coverage ---------------------------------------------------------------


def test_keyword_coverage_is_the_share_of_the_query_weight_a_note_holds(memory: Memory) -> None:
    _fill(memory.vault.root)
    hits = memory.search(SearchRequest(query="dentist", mode="keyword"), record_access=False).hits
    assert [h.title for h in hits] == ["Dentist appointment"]
    assert hits[0].components["coverage"] == 1.0
    # "use" matches "using" in the CI note: one word of three, the other two held by no note.
    wide = SearchConfig(min_coverage=0.0)
    found = memory.searcher.gather(SearchRequest(query="which coordinate system do we use", mode="keyword"))
    ranked = memory.searcher.rank(found, SearchRequest(query="x"), cfg=wide).hits
    assert [h.title for h in ranked] == ["Flaky CI was caused by time zones"]
    assert ranked[0].components["coverage"] == pytest.approx(1 / 3, abs=0.01)


def test_a_conversation_pasted_as_the_query_needs_only_one_of_its_words(memory: Memory) -> None:
    _fill(memory.vault.root)
    dialogue = (
        "Ann: I had a rough week, work was endless and the car broke down twice\n"
        "Assistant: That sounds exhausting, what else happened?\n"
        "Ann: and on top of it I still have to see the dentist\n"
    )
    hits = memory.search(SearchRequest(query=dialogue, mode="keyword"), record_access=False).hits
    assert [h.title for h in hits] == ["Dentist appointment"]
    assert hits[0].components["coverage"] < 0.4


# ---- the doors ----------------------------------------------------------------------------------


@pytest.fixture
def issue_vault(tmp_path: Path) -> Path:
    """The issue's small vault with the fake embedder, whose cosines no floor is measured for:
    the vault sets one, as a person may for any model."""
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG + "search:\n  min_cosine: 0.3\n")
    _fill(root)
    return root


def _searcher(vault: Path) -> Callable[..., Result]:
    def search(*args: str) -> Result:
        return CliRunner().invoke(cli, ["--vault", str(vault), "search", *args], catch_exceptions=False)

    return search


def test_search_dentist_lists_the_archived_dentist_note_first_and_no_pizza(issue_vault: Path) -> None:
    search = _searcher(issue_vault)
    found = as_json(search("dentist", "--json"))["results"]
    assert [h["title"] for h in found] == ["Dentist appointment"], found
    assert as_json(search("which coordinate system do we use", "--json"))["results"] == []
    assert "no matching memories" in ok(search("which coordinate system do we use")).stdout


def test_min_score_cuts_hits_below_it_and_a_bad_one_is_one_line(issue_vault: Path) -> None:
    search = _searcher(issue_vault)
    found = as_json(search("dentist", "--json"))["results"]
    assert found and found[0]["score"] < 0.9  # archived: tier weight 0.6
    assert as_json(search("dentist", "--json", "--min-score", "0.9"))["results"] == []
    low = as_json(search("dentist", "--json", "--min-score", "0.1"))["results"]
    assert [h["id"] for h in low] == [h["id"] for h in found]
    assert "--min-score" in one_error_line(search("dentist", "--min-score", "1.5"), 2)


def test_mcp_recall_takes_a_min_score(issue_vault: Path) -> None:
    async def scenario(session: ClientSession) -> None:
        found = await call(session, "recall", query="dentist", mode="keyword")
        assert [h["title"] for h in found["results"]] == ["Dentist appointment"]
        cut = await call(session, "recall", query="dentist", mode="keyword", min_score=0.9)
        assert cut["results"] == []

    serve(issue_vault, scenario)


# ---- with the real packaged model ---------------------------------------------------------------


@pytest.mark.model
def test_the_issues_vault_with_the_real_model_gives_the_answer_or_nothing(tmp_path: Path) -> None:
    from tiered_memory.index.embeddings import SentenceTransformerEmbedder

    root = tmp_path / "real"
    init_vault(root)  # the default config: MiniLM and its measured cosine floor
    _fill(root)
    memory = Memory(Vault(root), embedder_factory=SentenceTransformerEmbedder, now=lambda: FIXED_NOW)
    try:

        def titles(query: str) -> list[str]:
            hits = memory.search(SearchRequest(query=query), record_access=False).hits
            return [h.title for h in hits]

        assert titles("dentist") == ["Dentist appointment"]
        assert titles("which coordinate system do we use") == []
        # Found by meaning alone (no shared word): the floor is not a keyword filter.
        assert titles("when is my teeth cleaning") == ["Dentist appointment"]
        assert titles("what do we order on friday") == ["Friday pizza order"]
    finally:
        memory.close()
