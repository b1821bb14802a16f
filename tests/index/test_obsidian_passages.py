"""The passage a search result shows, on text as real Obsidian vaults hold it: a dot inside a word
(a version, a file name, a domain) does not end a sentence, and what Obsidian draws rather than
shows as text (embeds, callout types) is not shown."""

from __future__ import annotations

from pathlib import Path

from helpers import FAKE_CONFIG, FIXED_NOW, write

from tiered_memory.app.memory import Memory
from tiered_memory.index.fts import analyze
from tiered_memory.index.passages import best_passage, sentences
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault, init_vault

# Reduced from a note of a public zettelkasten vault: headings over pasted screenshots.
GATE = (
    "---\ntags:\n  - hardware\n---\n"
    "This is a modified [[Identity Gate|Buffer Gate]], that takes a transistor as a switch.\n"
    "# Component Diagram\n![[Tri-state Buffer Gate-20250624145335963.webp]]\n"
    "# Truth Table\n![[Tri-state Buffer Gate-20250624145358378.webp]]\n"
    "- $Z$ means $Y$ is not connected to anything\n"
)


def _terms(query: str) -> list[tuple[str, float]]:
    return [(term, 1.0) for term in analyze(query)]


def test_a_dot_inside_a_word_keeps_the_words_before_it() -> None:
    assert sentences("Python 3.11 is fast. We call numpy.linalg here") == [
        "Python 3.11 is fast.",
        "We call numpy.linalg here",
    ]
    assert sentences("See example.com first? Yes") == ["See example.com first?", "Yes"]
    passage, _ = best_passage("Upgrade to Python 3.11 for speed.", _terms("python upgrade"), analyze)
    assert passage == "Upgrade to Python 3.11 for speed."


def test_embeds_and_callout_types_are_not_shown() -> None:
    assert sentences("# Truth Table\n![[Gate-20250624145358378.webp]]\n![a map](map.png)\nrows") == [
        "Truth Table",
        "rows",
    ]
    callouts = ">[!info]-\n> Complexity of lists\n> > [!danger|flat] Delayed missions"
    assert sentences(callouts) == ["Complexity of lists", "Delayed missions"]


def test_a_search_shows_the_passage_without_file_names(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    write(root, "Hardware/Tri-state Buffer Gate.md", GATE)
    memory = Memory(Vault(root), now=lambda: FIXED_NOW)
    try:
        memory.refresh(vectors=False)
        hits = memory.search(SearchRequest(query="truth table", mode="keyword")).hits
    finally:
        memory.close()
    assert [h.path for h in hits] == ["Hardware/Tri-state Buffer Gate.md"]
    assert "webp" not in hits[0].passage
    assert "Truth Table" in hits[0].passage
