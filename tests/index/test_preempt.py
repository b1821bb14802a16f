"""Queries first in the model: a query cancels the batch under way, runs, and the batch runs again."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from tiered_memory.index.preempt import QueriesFirst, preempted


class Cancelled(Exception):
    pass


def _model(events: list[str], started: threading.Event, steps: int = 2000) -> Callable[[Any], str]:
    """A batch that computes in small steps and stops at the first step after it is cancelled,
    as ONNX Runtime stops between two nodes of the graph."""

    def run(options: Any) -> str:
        events.append("batch starts")
        started.set()
        for _ in range(steps):
            if options.terminate:
                events.append("batch cancelled")
                raise Cancelled
            time.sleep(0.001)
        events.append("batch done")
        return "vectors"

    return run


def _in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    return thread, out


def test_a_query_cancels_the_batch_in_the_model_and_the_batch_runs_again_after_it() -> None:
    turns = QueriesFirst()
    events: list[str] = []
    started = threading.Event()
    batch, result = _in_thread(
        lambda: turns.batch(_model(events, started), lambda: SimpleNamespace(terminate=False))
    )
    assert started.wait(10)
    began = time.monotonic()
    with turns.query():
        waited = time.monotonic() - began
        events.append("query")
    batch.join(30)
    assert waited < 1.0  # not the batch's 2 s
    assert events == ["batch starts", "batch cancelled", "query", "batch starts", "batch done"]
    assert result == ["vectors"]
    assert turns.preempted == 1 and 0 < turns.wasted_seconds < 1.0


def test_a_batch_waits_while_a_query_holds_the_model_and_a_query_is_never_cancelled() -> None:
    turns = QueriesFirst()
    events: list[str] = []
    started = threading.Event()
    with turns.query():
        batch, result = _in_thread(
            lambda: turns.batch(_model(events, started, steps=5), lambda: SimpleNamespace(terminate=False))
        )
        time.sleep(0.1)
        assert not started.is_set()  # the model is the query's
        events.append("query done")
    batch.join(30)
    assert events == ["query done", "batch starts", "batch done"] and result == ["vectors"]
    assert turns.preempted == 0


def test_a_batch_that_fails_on_its_own_is_not_run_again() -> None:
    turns = QueriesFirst()
    calls: list[int] = []

    def broken(options: Any) -> str:
        calls.append(1)
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        turns.batch(broken, lambda: SimpleNamespace(terminate=False))
    assert calls == [1] and turns.preempted == 0
    with turns.query():  # and the model is free again
        pass


def test_the_daemon_status_counts_what_queries_cancelled() -> None:
    assert preempted(None) is None  # no embedder built yet
    assert preempted(object()) is None  # an embedder whose batches no query cancels (torch, HTTP)
    turns = QueriesFirst()
    turns.preempted, turns.wasted_seconds = 2, 0.12345
    assert preempted(SimpleNamespace(model_turns=turns)) == {"batches": 2, "seconds": 0.123}


def _ask(turns: QueriesFirst) -> None:
    with turns.query():
        pass


def _query_at(turns: QueriesFirst, now: list[float], elapsed: float) -> bool:
    """Whether a query that comes `elapsed` seconds into a batch's run cancels it."""
    in_model, release = threading.Event(), threading.Event()
    first = SimpleNamespace(terminate=False)
    runs = iter([first, SimpleNamespace(terminate=False)])

    def run(options: Any) -> str:
        in_model.set()
        release.wait(10)
        if options.terminate:
            raise Cancelled
        return "vectors"

    batch, result = _in_thread(lambda: turns.batch(run, lambda: next(runs), cost=10))
    assert in_model.wait(10)
    now[0] += elapsed
    query, _ = _in_thread(lambda: _ask(turns))
    time.sleep(0.05)
    cancelled = bool(first.terminate)
    release.set()
    query.join(10)
    batch.join(10)
    assert result == ["vectors"]
    return cancelled


def test_a_run_about_to_end_is_waited_for_not_cancelled() -> None:
    """A cancel throws away what the run computed: a run due to end within the patience is
    waited for."""
    for elapsed, cancelled in ((0.3, True), (0.9, True), (0.995, False)):
        now = [0.0]
        turns = QueriesFirst(clock=lambda now=now: now[0], patience=0.01)
        turns.batch(
            lambda options, now=now: now.__setitem__(0, now[0] + 1.0),
            lambda: SimpleNamespace(terminate=False),
            cost=10,
        )
        # The model's pace is known now: 0.1 s per unit of cost, so a run of 10 takes 1 s.
        assert _query_at(turns, now, elapsed) is cancelled, elapsed
        assert turns.preempted == int(cancelled)


def test_batch_runs_share_the_model_and_a_query_cancels_them_all() -> None:
    """A batch shared across two cores has two runs in the model at once; a query cancels both,
    has the model alone, and both run again after it."""
    turns = QueriesFirst()
    events: list[str] = []
    started = [threading.Event(), threading.Event()]
    batches = [
        _in_thread(lambda s=s: turns.batch(_model(events, s), lambda: SimpleNamespace(terminate=False)))
        for s in started
    ]
    together = all(s.wait(1.0) for s in started)  # the second does not wait for the first to end
    began = time.monotonic()
    with turns.query():
        waited = time.monotonic() - began
        events.append("query")
    for thread, _ in batches:
        thread.join(30)
    assert together
    assert waited < 1.0  # not a batch's 2 s
    assert events[:5] == ["batch starts", "batch starts", "batch cancelled", "batch cancelled", "query"]
    assert events[5:] == ["batch starts", "batch starts", "batch done", "batch done"]
    assert [out for _, out in batches] == [["vectors"], ["vectors"]]
    assert turns.preempted == 2
