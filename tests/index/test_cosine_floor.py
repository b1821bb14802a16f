"""The cosine floor keeps a note that stands out from the query's nearest notes: a stated preference
is far from a request it bears on (MiniLM cosine ~0.3 between "I avoid gluten" and a request for
restaurants in Rome) yet far nearer than anything else in the vault. A flat pool (a question
nothing answers) keeps the absolute floor."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import FIXED_NOW, write

from tiered_memory.app.memory import Memory
from tiered_memory.index.retrieve import STANDOUT_DEPTH, cosine_floor, with_evidence
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault, init_vault


def _vector_only(cosines: dict[str, float]) -> dict[str, dict[str, float]]:
    return {p: {"keyword": 0.0, "vector": max(c, 0.01), "cosine": c, "fused": c} for p, c in cosines.items()}


def test_a_low_cosine_that_stands_out_from_the_pool_is_evidence() -> None:
    pool = {"preference": 0.28} | {f"chat{i}": 0.08 + i / 100 for i in range(12)}
    floor = cosine_floor(list(pool.values()), 0.4, 0.08)
    assert floor <= 0.28
    kept = with_evidence(_vector_only(pool), {}, min_coverage=0.4, min_cosine=floor)
    assert kept == {"preference"}  # the best, and only the best: the rest do not stand out


def test_a_flat_pool_keeps_the_absolute_floor() -> None:
    pool = {"nearest": 0.3} | {f"chat{i}": 0.25 + i / 200 for i in range(12)}
    floor = cosine_floor(list(pool.values()), 0.4, 0.08)
    assert floor > 0.3
    assert with_evidence(_vector_only(pool), {}, min_coverage=0.4, min_cosine=floor) == set()


def test_never_below_half_the_floor_and_no_margin_without_a_pool() -> None:
    assert cosine_floor([0.12] + [0.0] * 20, 0.4, 0.08) == pytest.approx(0.2)
    assert cosine_floor([0.28] + [0.05] * (STANDOUT_DEPTH - 2), 0.4, 0.08) == 0.4  # a tiny vault
    assert cosine_floor([0.28] + [0.05] * 20, 0.4, None) == 0.4  # a model not measured
    assert cosine_floor([0.28] + [0.05] * 20, -1.0, 0.08) == -1.0  # no floor at all


# Filler a person's vault holds beside one stated preference: long answers about other things.
FILLER = [
    "How to reverse a linked list in Python: walk the list keeping the previous node and relink.",
    "The French Revolution began in 1789 with the storming of the Bastille and ended the monarchy.",
    "To configure nginx as a reverse proxy, add a location block with proxy_pass to the upstream.",
    "Photosynthesis turns light, water and carbon dioxide into glucose and oxygen in chloroplasts.",
    "A haiku has three lines of five, seven and five syllables, often about a season.",
    "Kubernetes deployments roll out new pods gradually and roll back when health checks fail.",
    "The derivative of x squared is two x; the integral of one over x is the natural logarithm.",
    "Write a cover letter that opens with the role, shows two achievements and ends with a call.",
    "SQL joins: an inner join keeps matching rows, a left join keeps every row of the left table.",
    "Chess openings: the Sicilian defence answers e4 with c5 and leads to sharp positions.",
    "Explain quantum entanglement simply: two particles share one state however far apart.",
    "Tips for a job interview: research the company, prepare stories, ask questions at the end.",
]
PREFERENCE = "I strictly avoid restaurants that serve foods containing gluten, as I have celiac disease."
REQUEST = "I'll be visiting Rome soon. What are some must-try local restaurants you'd recommend for me?"


@pytest.mark.model
def test_a_stated_preference_is_found_for_a_request_it_bears_on(tmp_path: Path) -> None:
    from tiered_memory.index.embeddings import SentenceTransformerEmbedder

    root = tmp_path / "vault"
    init_vault(root)  # the default config: MiniLM, its floor and its margin
    for i, text in enumerate(FILLER):
        write(root, f"memory/archive/chats/chat-{i:02d}.md", f"---\ntitle: Chat {i}\n---\n{text}\n")
    write(root, "memory/long-term/diet.md", f"---\ntitle: Diet\n---\n{PREFERENCE}\n")
    memory = Memory(Vault(root), embedder_factory=SentenceTransformerEmbedder, now=lambda: FIXED_NOW)
    try:
        memory.refresh(vectors=False)
        memory.indexer.ensure_vectors()  # every note embedded, whatever a loaded machine's speed
        for mode in ("vector", "hybrid"):
            hits = memory.search(SearchRequest(query=REQUEST, mode=mode), record_access=False).hits
            assert [h.title for h in hits][:1] == ["Diet"], (mode, [(h.title, h.components) for h in hits])
            assert hits[0].components["cosine"] < 0.4  # below the absolute floor: kept by standing out
        # A question nothing in the vault answers still gets nothing.
        none = memory.search(SearchRequest(query="which coordinate system do we use"), record_access=False)
        assert none.hits == []
    finally:
        memory.close()
