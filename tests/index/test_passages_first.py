"""Vectors of long notes' first passages first, the deeper passages in a later, resumable pass, and a
build's progress that moves at least every second."""

from __future__ import annotations

import textwrap
import threading
import time
from pathlib import Path

import numpy as np
from helpers import FIXED_NOW, kill_in_phase, write

from tiered_memory.app.memory import Memory
from tiered_memory.daemon.loop import Daemon
from tiered_memory.index.chunking import FIRST_PASSAGES, chunk_text
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.indexer import embed_text
from tiered_memory.index.vectors import VectorIndex
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault, init_vault

LONG_NOTES = 20


def long_body(i: int, paragraphs: int = 12) -> str:
    """About 1,000 words: 8 chunks or more, each paragraph with words of its own."""
    return "\n\n".join(
        f"Paragraph {p} of note {i} is about topic{i}x{p}. "
        + " ".join(f"word{i}w{p}w{k}" for k in range(40))
        + f" It ends with the marker deep{i}m{p}."
        for p in range(paragraphs)
    )


def make_vault(root: Path, config: str = "embeddings:\n  provider: fake\n") -> list[str]:
    init_vault(root, config_text=config)
    rels = []
    for i in range(LONG_NOTES):
        rel = f"memory/long-term/knowledge_base/long-{i:02d}.md"
        write(root, rel, f"# Long note {i}\n\n{long_body(i)}\n")
        rels.append(rel)
    write(root, "memory/long-term/knowledge_base/short.md", "# Short\n\nOne paragraph only.\n")
    return rels


def open_memory(root: Path, embedder: FakeEmbedder | None = None) -> Memory:
    memory = Memory(Vault(root), embedder_factory=lambda: embedder or FakeEmbedder(64), now=lambda: FIXED_NOW)
    memory.indexer.embedder_settings = "fake:64"  # what a vault's config gives: current-ness is known
    return memory


def chunk_counts(memory: Memory) -> dict[str, int]:
    vectors = memory.indexer.vectors()
    assert vectors is not None
    return {path: len(labels) for path, labels in vectors._labels.items()}


def full_chunks(memory: Memory, rel: str) -> int:
    cfg = memory.vault.config.embeddings
    return len(chunk_text(embed_text(memory.vault.read_note(rel)), cfg.chunk_tokens, cfg.chunk_overlap))


def test_long_notes_get_their_first_passages_first_then_the_rest(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    rels = make_vault(root)
    memory = open_memory(root)
    try:
        memory.refresh(vectors=False)
        first = memory.indexer.ensure_vectors(deep=False)
        assert first.embedded == LONG_NOTES + 1 and first.pending_vectors == 0
        assert first.deep_pending == LONG_NOTES
        counts = chunk_counts(memory)
        assert all(counts[rel] == FIRST_PASSAGES for rel in rels)
        assert counts["memory/long-term/knowledge_base/short.md"] == 1
        assert memory.indexer.vectors_current() is False  # the index is loaded in this process
        assert not memory.indexer.passages_current()
        # Searchable by vectors at once: every note has its lead.
        hits = memory.search(
            SearchRequest("word7w0w1 word7w0w2 word7w0w3 word7w0w4", mode="vector"), record_access=False
        ).hits
        assert hits[0].path == rels[7]

        deep = memory.indexer.ensure_vectors(deep=True)
        assert deep.embedded == 0 and deep.deepened == LONG_NOTES and deep.deep_pending == 0
        counts = chunk_counts(memory)
        assert all(counts[rel] == full_chunks(memory, rel) > FIRST_PASSAGES for rel in rels)
        assert memory.indexer.passages_current()
    finally:
        memory.close()
    again = open_memory(root)
    try:
        assert again.indexer.vectors_current() and again.indexer.passages_current()
        nothing = again.indexer.ensure_vectors(deep=True)
        assert (nothing.embedded, nothing.deepened, nothing.deep_pending) == (0, 0, 0)
    finally:
        again.close()


def test_a_search_leaves_the_deeper_passages_and_a_reindex_embeds_them(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    rels = make_vault(root)
    memory = open_memory(root)
    try:
        memory.refresh(vectors=True, budget=60.0)  # a search's bounded pass
        assert all(n == FIRST_PASSAGES for rel, n in chunk_counts(memory).items() if rel in rels)
        report = memory.refresh(vectors=True)  # `tmem reindex`
        assert report.deepened == LONG_NOTES and report.deep_pending == 0
        assert all(chunk_counts(memory)[rel] == full_chunks(memory, rel) for rel in rels)
    finally:
        memory.close()


def test_a_note_edited_while_partial_is_embedded_afresh_never_twice(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    rels = make_vault(root)
    memory = open_memory(root)
    try:
        memory.refresh(vectors=False)
        memory.indexer.ensure_vectors(deep=False)
        write(root, rels[3], f"# Long note 3\n\n{long_body(3, paragraphs=15)}\n", bump=5)
        memory.refresh(vectors=False)
        report = memory.indexer.ensure_vectors(deep=True)
        assert report.embedded == 1 and report.deep_pending == 0
        counts = chunk_counts(memory)
        assert all(counts[rel] == full_chunks(memory, rel) for rel in rels)
    finally:
        memory.close()


def test_an_edit_of_a_long_note_leaves_its_deeper_passages_to_the_background(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    rels = make_vault(root)
    memory = open_memory(root)
    try:
        memory.refresh(vectors=True)
        assert memory.indexer.passages_current() and not memory.indexer.vectors_deferred
        write(root, rels[2], f"# Long note 2\n\n{long_body(2, paragraphs=14)}\n", bump=5)
        memory.indexer.update_paths([rels[2]])
        assert chunk_counts(memory)[rels[2]] == FIRST_PASSAGES  # searchable at once by its lead
        assert memory.indexer.vectors_deferred  # a daemon then goes on in its slices
        assert not memory.indexer.passages_current()
    finally:
        memory.close()


SLOW_DEEP_PASS = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tiered_memory.app.memory import Memory
    from tiered_memory.index import indexer
    from tiered_memory.index.embeddings import FakeEmbedder
    from tiered_memory.storage.vault import Vault

    indexer.Indexer._save_every.__defaults__ = (0.0,)  # save after every batch

    class Slow(FakeEmbedder):
        def embed(self, texts):
            time.sleep(0.01 * len(texts))
            return super().embed(texts)

    memory = Memory(Vault(Path(sys.argv[1])), embedder_factory=lambda: Slow(64))
    memory.indexer.ensure_vectors(
        progress=lambda phase, done, total: print(phase, done, total, flush=True), deep=True
    )
    print("finished", flush=True)
    """
)


def test_the_deep_pass_resumes_after_a_kill(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    rels = make_vault(root, "embeddings:\n  provider: fake\n  batch_size: 1\n")  # batches of 16 notes
    memory = open_memory(root)
    try:
        memory.refresh(vectors=False)
        memory.indexer.ensure_vectors(deep=False)
    finally:
        memory.close()
    script = tmp_path / "deep.py"
    script.write_text(SLOW_DEEP_PASS, encoding="utf-8")
    kill_in_phase(script, root, "embedding deeper passages", 16)  # the first batch of 16 is saved

    resumed = open_memory(root)
    try:
        vectors = resumed.indexer.vectors()
        assert vectors is not None and not vectors.rebuilt
        assert 0 < len(vectors.partial_paths()) <= LONG_NOTES - 16  # the saved batch is kept
        report = resumed.indexer.ensure_vectors(deep=True)
        assert 0 < report.deepened <= LONG_NOTES - 16  # resumed, not started over
        assert report.deep_pending == 0 and resumed.indexer.passages_current()
        assert all(chunk_counts(resumed)[rel] == full_chunks(resumed, rel) for rel in rels)  # none twice
    finally:
        resumed.close()


class SlowEmbedder(FakeEmbedder):
    def __init__(self, seconds: float) -> None:
        super().__init__(64)
        self.seconds = seconds

    def embed(self, texts: list[str]) -> np.ndarray:
        time.sleep(self.seconds * len(texts))
        return super().embed(texts)


class SlowClockEmbedder(FakeEmbedder):
    """Takes `seconds` of a fake clock per text."""

    def __init__(self, clock: list[float], seconds: float) -> None:
        super().__init__(64)
        self.clock, self.seconds = clock, seconds

    def embed(self, texts: list[str]) -> np.ndarray:
        self.clock[0] += self.seconds * len(texts)
        return super().embed(texts)


def test_a_build_reports_progress_at_least_every_second(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    init_vault(root, config_text="embeddings:\n  provider: fake\n")
    for i in range(60):
        write(root, f"memory/long-term/knowledge_base/n{i:02d}.md", f"# Note {i}\n\nShort note number {i}.\n")
    now = [0.0]
    memory = open_memory(root, SlowClockEmbedder(now, 0.3))  # 60 notes: 18 s of model time
    memory.indexer.clock = lambda: now[0]
    seen: list[tuple[float, int]] = []
    try:
        memory.refresh(vectors=False)
        memory.indexer.ensure_vectors(progress=lambda phase, done, total: seen.append((now[0], done)))
    finally:
        memory.close()
    assert now[0] >= 60 * 0.3
    times = [0.0] + [t for t, _ in seen]
    assert max(b - a for a, b in zip(times[:-1], times[1:], strict=True)) <= 1.0
    assert [done for _, done in seen] == sorted(done for _, done in seen) and seen[-1][1] == 60


def test_the_daemon_embeds_the_deeper_passages_after_the_first_ones(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    rels = make_vault(root)
    embedder = SlowEmbedder(0.02)  # ~3 s for the deeper passages: more than one slice
    daemon = Daemon(root, now=lambda: FIXED_NOW, embedder_factory=lambda: embedder)
    memory = daemon.open_memory()
    memory.indexer.embedder_settings = "fake:64"
    memory.refresh(vectors=False)  # keyword first, as the daemon's first scan does
    daemon.embedding.pending = -1
    daemon.ready.set()
    try:
        slices = 0
        # What the loop's step does while work is left.
        while daemon.embedding.busy():
            worker = threading.Thread(target=daemon.embedding.embed_slice)
            daemon._worker = worker  # the slice runs on the daemon's indexer thread
            worker.start()
            worker.join(30)
            slices += 1
            assert slices < 100
        assert slices >= 2
        assert daemon.embedding.pending_vectors() == 0
        daemon.embedding.save()
        saved = VectorIndex.open(root / ".tmem" / "vectors", embedder.dim, embedder.model_id)
        assert saved.partial_paths() == []
        assert all(chunk_counts(memory)[rel] == full_chunks(memory, rel) > FIRST_PASSAGES for rel in rels)
        assert memory.indexer.passages_current()
    finally:
        memory.close()
