"""The daemon drafts a large backlog in int8, says how many drafts wait, and refines them to
float32 slice by slice once nothing else waits."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from helpers import FIXED_NOW, DraftingFake, write

from tiered_memory.daemon.loop import Daemon
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.indexer import DRAFT_BACKLOG, embed_text

NOTES = DRAFT_BACKLOG + 60


def _slice(daemon: Daemon) -> None:
    worker = threading.Thread(target=daemon.embedding.embed_slice)
    daemon._worker = worker  # the slice runs on the daemon's indexer thread
    worker.start()
    worker.join(30)


def test_the_daemon_drafts_a_backlog_then_refines_it_and_its_status_counts_the_drafts(
    vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tiered_memory.daemon.embedding.EMBED_SLICE", 0.0)  # one batch per slice
    for i in range(NOTES):
        write(vault_path, f"memory/long-term/n{i:03d}.md", f"# Note {i}\n\ntopic{i} walrus\n")
    embedder = DraftingFake()
    daemon = Daemon(vault_path, now=lambda: FIXED_NOW, embedder_factory=lambda: embedder)
    memory = daemon.open_memory()
    try:
        memory.refresh(vectors=False)  # keyword first, as the daemon's first scan does
        daemon.embedding.pending = -1
        daemon.ready.set()
        seen: list[int] = []
        for _ in range(2000):
            if not daemon.embedding.busy():
                break
            _slice(daemon)
            seen.append(daemon.status()["vector_drafts"])
        assert not daemon.embedding.busy()
        drafted = {text for ran, texts in embedder.runs if ran == "int8" for text in texts}
        assert drafted and max(seen) == len(drafted)  # the status said how many wait
        assert seen[-1] == 0
        # Refined: each draft embedded again in float32, once, and the marks gone with the save.
        last = {text: ran for ran, texts in embedder.runs for text in texts}
        assert all(last[text] == "float32" for text in drafted)
        assert all(n == 1 for text, n in Counter(embedder.texts("float32")).items() if text in drafted)
        assert memory.indexer.catalog.count_drafts() == 0
        assert daemon.embedding.dirty_since is None  # saved at the end, as a finished backlog is
        vectors = memory.indexer.vectors()
        assert vectors is not None
        exact = FakeEmbedder(64)
        assert len(vectors.paths()) == NOTES
        assert vectors.graph_builds == 1  # most of the index replaced: its graph built afresh
        for path in vectors.paths():
            expected = exact.embed([embed_text(memory.vault.read_note(path))])
            assert np.abs(vectors.vectors_of(path) - expected).max() < 1e-6, path
    finally:
        memory.close()
