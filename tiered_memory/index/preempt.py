"""Queries first: one model shared by the queries a person waits for and the batches of a backlog.

A daemon embeds a new vault's backlog a batch at a time while it answers searches, and a search
embeds its query with the same model. Waiting for the batch in the model (~0.1 s) more than
doubled a hybrid search. So a query does not wait for a batch: it cancels the run under way
(ONNX Runtime stops a `session.run` whose `RunOptions.terminate` another thread sets, between two
nodes of the graph, within a millisecond or two), takes the model, and the batch runs again once
no query wants it. What a cancelled run had computed is lost (`preempted` and `wasted_seconds`
count it), so a run expected to end within PATIENCE is waited for instead, and runs are kept
short (a text at a time, onnx_embedder.CANCELLABLE_RUN): a cancel throws away part of one text.
Waiting for half a run instead (at most) lost less, but on a loaded machine half a text is
~75 ms, more than the search itself. A batch may have several runs in the model at once (one per
core it works on, each a text on one thread): a query cancels them all and has the model alone.
"""

from __future__ import annotations

__all__ = ["T", "PATIENCE", "Cancellable", "QueriesFirst", "preempted"]

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
# Seconds a query waits for a run about to end rather than cancel it.
PATIENCE = 0.01


class Cancellable(Protocol):
    """What a run can be cancelled through (ONNX Runtime's RunOptions has this attribute)."""

    terminate: bool


class QueriesFirst:
    """Admits the batches' runs of the model, several at once (one per core the embedder works
    on), or one query alone; a waiting query goes before every batch, and cancels the batches'
    runs in the model when it comes, unless each is about to end."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, patience: float = PATIENCE) -> None:
        self._clock = clock
        self._patience = patience
        self._state = threading.Condition()
        self._querying = False  # a query holds the model
        self._queries = 0  # queries waiting for the model
        # The batches' runs in the model, which a query cancels: (its options, start, size).
        self._runs: dict[int, tuple[Cancellable, float, float]] = {}
        self._seconds_per_cost: float | None = None  # learnt from the runs that completed
        self.preempted = 0  # batch runs cancelled by a query (each run again)
        self.wasted_seconds = 0.0  # model time those cancelled runs had spent

    @contextlib.contextmanager
    def query(self) -> Iterator[None]:
        """Hold the model for a query: at once if it is free, else as soon as the batches' runs in
        it stop (cancelled) or another query ends."""
        with self._state:
            self._queries += 1
            try:
                now = self._clock()
                for cancel, began, cost in self._runs.values():
                    if not self._about_to_end(now - began, cost):
                        cancel.terminate = True
                while self._querying or self._runs:
                    self._state.wait()
                self._querying = True
            finally:
                self._queries -= 1
        try:
            yield
        finally:
            with self._state:
                self._querying = False
                self._state.notify_all()

    def batch(self, run: Callable[[Any], T], options: Callable[[], Cancellable], cost: float = 1.0) -> T:
        """`run(options())` once no query waits (beside the other batches' runs); run again with
        new options while a query cancels it. `cost` is the run's size (any unit proportional to
        its time: tokens). Any other failure is raised as it is."""
        while True:
            cancel = options()
            with self._state:
                while self._querying or self._queries:
                    self._state.wait()
                began = self._clock()
                self._runs[id(cancel)] = (cancel, began, cost)
            try:
                result = run(cancel)
            except Exception:
                if not cancel.terminate:
                    raise
                with self._state:
                    self.preempted += 1
                    self.wasted_seconds += self._clock() - began
            else:
                self._learn((self._clock() - began) / max(cost, 1e-9))
                return result
            finally:
                with self._state:
                    del self._runs[id(cancel)]
                    self._state.notify_all()

    def _about_to_end(self, elapsed: float, cost: float) -> bool:
        """Is a run of `cost` that began `elapsed` seconds ago expected to end within the
        patience? (No while nothing is known of the model's pace.)"""
        if self._seconds_per_cost is None:
            return False
        return cost * self._seconds_per_cost - elapsed <= self._patience

    def _learn(self, seconds_per_cost: float) -> None:
        with self._state:
            old = self._seconds_per_cost
            self._seconds_per_cost = seconds_per_cost if old is None else (old + seconds_per_cost) / 2


def preempted(embedder: object) -> dict[str, float] | None:
    """What an embedder's queries cancelled (for a daemon's status); None for an embedder whose
    batches no query can cancel, or none built yet."""
    turns = getattr(embedder, "model_turns", None)
    if not isinstance(turns, QueriesFirst):
        return None
    return {"batches": turns.preempted, "seconds": round(turns.wasted_seconds, 3)}
