"""A query that holds no word the index keeps, yet is a note's name: `C++`, `C`, `R` (a stray
letter and marks) in a programming vault. Reduced from a public zettelkasten vault of 13,000
notes where `tmem search C++` found nothing, though `Programming/C++.md` is a hub note."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import FAKE_CONFIG, FIXED_NOW, write

from tiered_memory.app.memory import Memory
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault, init_vault

NOTES = {
    "Programming/C++.md": "---\naliases:\n  - CPP\ntags:\n  - programming\n---\n"
    "C++ or CPP is the advanced version of [[C]], for object oriented programming.\n",
    "Programming/C.md": "The low level language operating systems are written in.\n",
    "Programming/C++ Destructor.md": "A destructor method for a [[C++]] class frees its heap memory.\n",
    "Programming/R.md": "A programming language for statistical models.\n",
    "Notes/Grades.md": "I got a C in statistics and an A in languages.\n",
}


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    for rel, text in NOTES.items():
        write(root, rel, text)
    memory = Memory(Vault(root), now=lambda: FIXED_NOW)
    memory.refresh()
    yield memory
    memory.close()


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
@pytest.mark.parametrize(
    ("query", "path"),
    [("C++", "Programming/C++.md"), ("c", "Programming/C.md"), (" R ", "Programming/R.md")],
)
def test_a_name_without_a_word_finds_its_note(memory: Memory, mode: str, query: str, path: str) -> None:
    hits = memory.search(SearchRequest(query=query, mode=mode)).hits  # type: ignore[arg-type]
    assert hits and hits[0].path == path


def test_filters_still_apply(memory: Memory) -> None:
    assert not memory.search(SearchRequest(query="C++", mode="keyword", folders=["Notes/"])).hits
    assert not memory.search(SearchRequest(query="C++", mode="keyword", tags=["databases"])).hits


def test_a_query_with_words_is_searched_as_before(memory: Memory) -> None:
    hits = memory.search(SearchRequest(query="C++ destructor", mode="keyword")).hits
    assert [h.path for h in hits][:1] == ["Programming/C++ Destructor.md"]
    assert not memory.search(SearchRequest(query="C#", mode="keyword")).hits  # no note is named so
