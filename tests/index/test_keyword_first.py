"""Keyword first, vectors behind: a build is keyword-searchable before any note is embedded, a
search embeds only within a time budget, and notes without a vector yet rank by keyword alone."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from helpers import FIXED_NOW, write

from tiered_memory.app import memory as memory_module
from tiered_memory.app.memory import Memory
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.indexer import Indexer
from tiered_memory.index.retrieve import fuse_linear, fuse_rrf, keyword_alone
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault


class SlowEmbedder(FakeEmbedder):
    """A fake embedder that takes real time per batch, like a model on a busy machine."""

    def __init__(self, seconds: float = 0.05) -> None:
        super().__init__(64)
        self.seconds = seconds
        self.batches = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.batches += 1
        time.sleep(self.seconds)
        return super().embed(texts)


def _notes(root: Path, count: int) -> None:
    for i in range(count):
        write(
            root, f"memory/long-term/knowledge_base/domains/n{i:03d}.md", f"# Note {i}\n\ntopic{i} walrus\n"
        )


@pytest.fixture
def slow_memory(vault_path: Path) -> Memory:
    _notes(vault_path, 300)  # over two embedding batches
    embedder = SlowEmbedder()
    memory = Memory(Vault(vault_path), embedder_factory=lambda: embedder, now=lambda: FIXED_NOW)
    yield memory
    memory.close()


def test_reindex_reports_keyword_ready_before_embedding(slow_memory: Memory) -> None:
    phases: list[str] = []
    report = slow_memory.refresh(vectors=True, progress=lambda phase, done, total: phases.append(phase))
    assert phases.index("keyword search ready") < phases.index("embedding")
    assert phases[-1] == "embedding"
    assert report.pending_vectors == 0 and report.vectors == "ok"
    assert not slow_memory.indexer.catalog.pending_vectors()


def test_search_embeds_within_its_budget_and_says_what_is_missing(
    slow_memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_module, "SEARCH_EMBED_BUDGET", 0.0)  # one batch, then answer
    result = slow_memory.search(SearchRequest(query="topic7 walrus"), record_access=False)
    pending = len(slow_memory.indexer.catalog.pending_vectors())
    total = slow_memory.indexer.catalog.count()
    assert 0 < pending < total
    assert result.notice is not None and f"{pending} of {total} notes have no vector yet" in result.notice
    # The note the words name is first, embedded or not: no vector is not a vector score of 0.
    assert result.hits[0].path.endswith("n007.md")
    # Later searches go on embedding; a finished vault says nothing.
    monkeypatch.setattr(memory_module, "SEARCH_EMBED_BUDGET", 60.0)
    result = slow_memory.search(SearchRequest(query="topic7 walrus"), record_access=False)
    assert result.notice is None and not slow_memory.indexer.catalog.pending_vectors()


def test_keyword_search_never_loads_the_model(slow_memory: Memory) -> None:
    slow_memory.search(SearchRequest(query="walrus", mode="keyword"), record_access=False)
    assert not slow_memory.indexer.vectors_loaded


@pytest.mark.parametrize("fusion", ["linear", "rrf"])
def test_keyword_alone_puts_an_unembedded_note_on_the_fused_scale(fusion: str) -> None:
    keyword = [("a.md", 9.0), ("b.md", 3.0)]
    vector = [("b.md", 0.9)]  # a.md has no vector yet
    if fusion == "rrf":
        fused = fuse_rrf(keyword, vector, 60, 0.7, 0.3)
        keyword_alone(fused, ["a.md"], 0.7)
        assert fused["a.md"]["fused"] == pytest.approx(1.0)  # first by keyword: as if first in both
    else:
        fused = fuse_linear(keyword, vector, 0.7, 0.3)
        keyword_alone(fused, ["a.md"], 1.0)
        assert fused["a.md"]["fused"] == pytest.approx(1.0)
    assert fused["a.md"]["fused"] > fused["b.md"]["fused"]


def test_a_no_op_reindex_never_loads_the_model_when_vectors_are_current(vault_path: Path) -> None:
    _notes(vault_path, 3)
    loads: list[int] = []

    def factory() -> FakeEmbedder:
        loads.append(1)
        return FakeEmbedder(64)

    def indexer() -> Indexer:
        return Indexer(Vault(vault_path), factory, embedder_settings="fake:64")

    first = indexer()
    assert first.refresh(vectors=True).embedded > 0
    first.close()
    second = indexer()
    report = second.refresh(vectors=True)
    assert (report.embedded, report.vectors, len(loads)) == (0, "ok", 1)
    # A deleted note leaves a stale vector behind: the next pass loads the model to drop it.
    (vault_path / "memory/long-term/knowledge_base/domains/n000.md").unlink()
    assert second.refresh(vectors=True).deleted == 1
    assert len(loads) == 2 and not second.vectors().has("memory/long-term/knowledge_base/domains/n000.md")
    second.close()
    # Other settings (another model in the config) mean the vectors may be another model's.
    third = Indexer(Vault(vault_path), factory, embedder_settings="fake:32")
    third.refresh(vectors=True)
    assert len(loads) == 3
    third.close()


def test_an_update_embeds_only_the_few_notes_it_touched(slow_memory: Memory, vault_path: Path) -> None:
    """Notes left without a vector by a keyword-first build wait for the background: an edit of
    one note embeds that note, not the whole backlog, and does not hold the lock for minutes."""
    indexer = slow_memory.indexer
    indexer.refresh(vectors=False)  # keyword first: all 300 notes wait for a vector
    assert len(indexer.catalog.pending_vectors()) == 300
    indexer.embedder()  # the model loaded, as in a daemon
    write(
        vault_path, "memory/long-term/knowledge_base/domains/n007.md", "# Note 7\n\ntopic7 walrus narwhal\n"
    )
    report = indexer.update_paths(["memory/long-term/knowledge_base/domains/n007.md"])
    assert report.embedded == 1 and report.pending_vectors == 299
    assert len(indexer.catalog.pending_vectors()) == 299
    assert indexer.vectors_deferred  # a daemon's signal to embed the rest a slice at a time


def test_a_big_batch_of_changes_is_embedded_in_the_background(
    slow_memory: Memory, vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexer = slow_memory.indexer
    indexer.refresh(vectors=True)
    assert not indexer.catalog.pending_vectors() and not indexer.vectors_deferred
    monkeypatch.setattr("tiered_memory.index.indexer.INLINE_VECTORS", 5)
    paths = [f"memory/long-term/knowledge_base/domains/n{i:03d}.md" for i in range(6)]
    for i, rel in enumerate(paths):
        write(vault_path, rel, f"# Note {i}\n\ntopic{i} walrus changed\n")
    report = indexer.update_paths(paths)
    assert report.changed == 6 and report.embedded == 0 and report.pending_vectors == 6
    assert indexer.vectors_deferred
    assert sorted(indexer.catalog.pending_vectors()) == paths
    few = paths[:2]
    for rel in few:
        write(vault_path, rel, "# Again\n\nwalrus once more\n")
    indexer.vectors_deferred = False
    assert indexer.update_paths(few).embedded == 2  # a few touched notes: embedded at once


class PerTextEmbedder(FakeEmbedder):
    """A fake embedder whose time grows with the texts it is given, like a model on a slow CPU."""

    def __init__(self, seconds_per_text: float) -> None:
        super().__init__(64)
        self.seconds_per_text = seconds_per_text

    def embed(self, texts: list[str]) -> np.ndarray:
        time.sleep(self.seconds_per_text * len(texts))
        return super().embed(texts)


def test_a_bounded_pass_embeds_batches_that_fit_its_time(vault_path: Path) -> None:
    """A daemon's slice or a search's budget is kept on a slow CPU: batches are sized by the speed
    measured so far, not fixed at 128 notes (16 s at 8 notes a second)."""
    _notes(vault_path, 300)
    embedder = PerTextEmbedder(0.02)  # 50 notes a second
    memory = Memory(Vault(vault_path), embedder_factory=lambda: embedder, now=lambda: FIXED_NOW)
    try:
        memory.indexer.refresh(vectors=False)
        report = memory.indexer.ensure_vectors(budget=0.3)
        assert 8 <= report.embedded < 64  # 8 first, then what fits; a fixed batch was 128
        assert report.pending_vectors == 300 - report.embedded
    finally:
        memory.close()
