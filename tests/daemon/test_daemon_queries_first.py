"""Queries first: while the daemon embeds a backlog, a query waits for one short batch, not a slice."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import FIXED_NOW, write

from tiered_memory.app.memory import Memory
from tiered_memory.daemon.loop import Daemon
from tiered_memory.daemon.protocol import dispatch
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.vectors import VectorIndex
from tiered_memory.storage.vault import Vault

NOTES = 300


def _wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


class DuringBatch(FakeEmbedder):
    """Records each batch; during the `at`-th one it runs `during(texts)` on another thread (as a
    socket connection would) and gives it a few seconds to finish before the batch returns."""

    def __init__(self, at: int) -> None:
        super().__init__(64)
        self.at = at
        self.events: list[str] = []
        self.during: Callable[[list[str]], None] = lambda texts: None

    def embed(self, texts: list[str]) -> np.ndarray:
        self.events.append(f"batch of {len(texts)}")
        if len(self.events) == self.at:
            helper = threading.Thread(target=self._run, args=(texts,))
            helper.start()
            helper.join(5.0)  # the old daemon held its lock through the batch: the helper waited on
            self.events.append("batch ends")
        return super().embed(texts)

    def _run(self, texts: list[str]) -> None:
        self.during(texts)
        self.events.append("during done")


def _backlog_daemon(vault_path: Path, embedder: FakeEmbedder) -> Daemon:
    for i in range(NOTES):
        write(vault_path, f"memory/long-term/n{i:03d}.md", f"# Note {i}\n\ntopic{i} walrus\n")
    daemon = Daemon(vault_path, now=lambda: FIXED_NOW, embedder_factory=lambda: embedder)
    memory = daemon.open_memory()
    memory.refresh(vectors=False)  # keyword first, as the daemon's first scan does
    daemon.embedding.pending = -1
    daemon.ready.set()
    return daemon


def _slice(daemon: Daemon) -> None:
    worker = threading.Thread(target=daemon.embedding.embed_slice)
    daemon._worker = worker  # the slice runs on the daemon's indexer thread
    worker.start()
    worker.join(30)


def test_a_query_sent_while_the_model_embeds_a_batch_is_answered_before_the_batch_ends(
    vault_path: Path,
) -> None:
    embedder = DuringBatch(at=3)
    daemon = _backlog_daemon(vault_path, embedder)
    replies: list[dict[str, Any]] = []
    line = json.dumps(
        {"op": "call", "name": "search", "request": {"query": "walrus", "mode": "keyword", "limit": 3}}
    ).encode()
    embedder.during = lambda texts: replies.append(dispatch(daemon, line))
    try:
        _slice(daemon)
        assert replies and replies[0]["ok"], replies
        assert len(replies[0]["result"]["hits"]) == 3
        # Answered while the third batch was in the model, not after the slice.
        assert embedder.events.index("during done") < embedder.events.index("batch ends")
        assert embedder.events[-1].startswith("batch of")  # and the slice went on
        assert daemon.embedding.pending_vectors() == 0
    finally:
        assert daemon.memory is not None
        daemon.memory.close()


def test_a_note_deleted_while_the_model_embeds_it_gets_no_vector(vault_path: Path) -> None:
    embedder = DuringBatch(at=2)
    daemon = _backlog_daemon(vault_path, embedder)
    gone: list[str] = []

    def delete_one(texts: list[str]) -> None:
        number = next(t for t in texts if "walrus" in t).split("topic")[1].split()[0]
        rel = f"memory/long-term/n{int(number):03d}.md"
        (vault_path / rel).unlink()
        daemon.intake.apply_paths([rel], 1)  # what the watcher's event brings in
        gone.append(rel)

    embedder.during = delete_one
    try:
        _slice(daemon)
        assert gone and "during done" in embedder.events
        assert daemon.memory is not None
        vectors = daemon.memory.indexer.vectors()
        assert vectors is not None
        assert not vectors.has(gone[0])
        assert len(vectors.paths()) == NOTES - 1
    finally:
        assert daemon.memory is not None
        daemon.memory.close()


def test_without_a_query_a_slice_embeds_on_until_its_time_is_up(vault_path: Path) -> None:
    embedder = DuringBatch(at=0)  # nothing happens meanwhile
    daemon = _backlog_daemon(vault_path, embedder)
    try:
        _slice(daemon)
        assert daemon.embedding.pending_vectors() == 0  # a fast embedder does the whole backlog in one slice
        assert len(embedder.events) > 3
        assert daemon.embedding.unsaved.paths() == []  # the finished backlog is saved at once
        saved = VectorIndex.open(vault_path / ".tmem" / "vectors", embedder.dim, embedder.model_id)
        assert len(saved.paths()) == NOTES
    finally:
        assert daemon.memory is not None
        daemon.memory.close()


def test_notes_a_slice_embedded_are_embedded_again_after_a_crash(
    vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slice leaves the saving to the daemon's schedule (a query must not wait for it): what it
    embedded is listed first, and a crash before the save loses no vector for good."""
    monkeypatch.setattr("tiered_memory.daemon.embedding.EMBED_SLICE", 0.0)  # one batch per slice
    daemon = _backlog_daemon(vault_path, DuringBatch(at=0))
    _slice(daemon)
    assert daemon.memory is not None
    embedded = NOTES - len(daemon.memory.indexer.catalog.pending_vectors())
    assert 0 < embedded < NOTES
    assert len(daemon.embedding.unsaved.paths()) == embedded
    daemon.memory.close()  # killed here: the vectors of this slice were never saved
    after = Memory(Vault(vault_path), embedder_factory=lambda: FakeEmbedder(64), now=lambda: FIXED_NOW)
    try:
        after.indexer.vectors()  # a process opening the index after the crash
        assert len(after.indexer.catalog.pending_vectors()) == NOTES
    finally:
        after.close()
