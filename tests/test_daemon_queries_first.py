"""Queries first: while the daemon embeds a backlog, a query waits for one short batch, not a slice."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
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


class QueryDuringBatch(FakeEmbedder):
    """Records each batch; during the `at`-th one a query arrives and is waiting for the index
    before the batch returns (the query is sent from a thread, as a socket connection would)."""

    def __init__(self, at: int) -> None:
        super().__init__(64)
        self.at = at
        self.events: list[str] = []
        self.start_query: Callable[[], None] = lambda: None
        self.query_waiting: Callable[[], bool] = lambda: True

    def embed(self, texts: list[str]) -> np.ndarray:
        self.events.append(f"batch of {len(texts)}")
        if sum(e.startswith("batch") for e in self.events) == self.at:
            self.start_query()
            _wait_for(self.query_waiting)
        return super().embed(texts)


def _backlog_daemon(vault_path: Path, embedder: FakeEmbedder) -> Daemon:
    for i in range(NOTES):
        write(vault_path, f"memory/long-term/n{i:03d}.md", f"# Note {i}\n\ntopic{i} walrus\n")
    daemon = Daemon(vault_path, now=lambda: FIXED_NOW, embedder_factory=lambda: embedder)
    memory = daemon.open_memory()
    memory.refresh(vectors=False)  # keyword first, as the daemon's first scan does
    daemon._pending_vectors = -1
    daemon.ready.set()
    return daemon


def test_a_query_sent_during_a_slice_is_answered_before_the_slices_next_batch(vault_path: Path) -> None:
    embedder = QueryDuringBatch(at=3)
    daemon = _backlog_daemon(vault_path, embedder)
    replies: list[dict[str, Any]] = []
    line = json.dumps(
        {"op": "call", "name": "search", "request": {"query": "walrus", "mode": "keyword", "limit": 3}}
    ).encode()

    def query() -> None:
        replies.append(dispatch(daemon, line))
        embedder.events.append("query answered")

    requester = threading.Thread(target=query)
    embedder.start_query = requester.start
    embedder.query_waiting = lambda: daemon._waiting > 0
    try:
        worker = threading.Thread(target=daemon._embed_slice)
        daemon._worker = worker  # the slice runs on the daemon's indexer thread
        worker.start()
        worker.join(30)
        requester.join(30)
        assert replies and replies[0]["ok"], replies
        assert len(replies[0]["result"]["hits"]) == 3
        batches = [e for e in embedder.events if e.startswith("batch")]
        # The slice gave way after the batch the query arrived in; the rest waits for the next one.
        assert len(batches) == 3
        assert 0 < daemon.pending_vectors() < NOTES
        embedded = NOTES - daemon.pending_vectors()
        assert embedded == sum(int(e.split()[-1]) for e in batches)
        # Not saved under the query's nose: listed, to be embedded again after a crash.
        assert len(daemon.unsaved.paths()) == embedded
        # The next slice takes up the backlog where this one stopped, after the query.
        worker = threading.Thread(target=daemon._embed_slice)
        daemon._worker = worker
        worker.start()
        worker.join(30)
        assert embedder.events.index("query answered") < len(embedder.events) - 1
        assert embedder.events[-1].startswith("batch")
    finally:
        assert daemon.memory is not None
        daemon.memory.close()


def test_without_a_query_a_slice_embeds_on_until_its_time_is_up(vault_path: Path) -> None:
    embedder = QueryDuringBatch(at=0)  # no query ever
    daemon = _backlog_daemon(vault_path, embedder)
    try:
        worker = threading.Thread(target=daemon._embed_slice)
        daemon._worker = worker
        worker.start()
        worker.join(30)
        assert daemon.pending_vectors() == 0  # a fast embedder does the whole backlog in one slice
        assert len(embedder.events) > 3
        assert daemon.unsaved.paths() == []  # the finished backlog is saved at once
        saved = VectorIndex.open(vault_path / ".tmem" / "vectors", embedder.dim, embedder.model_id)
        assert len(saved.paths()) == NOTES
    finally:
        assert daemon.memory is not None
        daemon.memory.close()


def test_notes_embedded_by_a_slice_a_query_stopped_are_embedded_again_after_a_crash(
    vault_path: Path,
) -> None:
    embedder = QueryDuringBatch(at=2)
    daemon = _backlog_daemon(vault_path, embedder)
    requester = threading.Thread(
        target=dispatch,
        args=(daemon, json.dumps({"op": "call", "name": "search", "request": {"query": "walrus"}}).encode()),
    )
    embedder.start_query = requester.start
    embedder.query_waiting = lambda: daemon._waiting > 0
    worker = threading.Thread(target=daemon._embed_slice)
    daemon._worker = worker
    worker.start()
    worker.join(30)
    requester.join(30)
    assert daemon.memory is not None
    catalog = daemon.memory.indexer.catalog
    embedded = NOTES - len(catalog.pending_vectors())
    assert 0 < embedded < NOTES
    daemon.memory.close()  # killed here: the vectors of this slice were never saved
    after = Memory(Vault(vault_path), embedder_factory=lambda: FakeEmbedder(64), now=lambda: FIXED_NOW)
    try:
        after.indexer.vectors()  # a process opening the index after the crash
        assert len(after.indexer.catalog.pending_vectors()) == NOTES
    finally:
        after.close()
