"""Progress on stderr for the waits a command cannot avoid (a model load, a first embedding, a
rebuild, a daemon's first indexing).

On a terminal: a bar per phase (rich), gone when the command ends. Piped, or with `enabled=False`
(a command printing JSON): one status line per phase ("tmem: embedding 120/500…"), and only for a
phase that has lasted a second, so quick commands stay silent. Stdout is never touched.
"""

from __future__ import annotations

__all__ = ["AT_ONCE", "PATIENCE", "Progress", "progress_bar", "status_lines"]

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from tiered_memory.present.lines import progress_line

Progress = Callable[[str, int, int], None]
PATIENCE = 1.0  # seconds a phase runs before it is worth a line
# Said at once: a model load (its caller reports it only when it is slow), and a daemon started in
# the background (a process now runs that the person did not start by name; waiting for it to
# become ready takes about a second, made of phases that each stay under PATIENCE).
AT_ONCE = ("loading", "starting the daemon")


def status_lines(patience: float = PATIENCE, clock: Callable[[], float] = time.monotonic) -> Progress:
    """One line on stderr per phase that lasts `patience` seconds; the phases of AT_ONCE say so at
    once."""
    began: dict[str, float] = {}
    said: set[str] = set()

    def line(phase: str, done: int, total: int) -> None:
        now = clock()
        start = began.setdefault(phase, now)
        if phase in said or (now - start < patience and not phase.startswith(AT_ONCE)):
            return
        if total > 1 and done >= total:
            return  # finished before anyone waited for it
        said.add(phase)
        click.echo(progress_line(phase, done, total), err=True)

    return line


@contextmanager
def progress_bar(*, enabled: bool = True) -> Iterator[Progress | None]:
    """A bar per phase on a terminal, drawn from the first progress a command reports: a command
    that reports none (a search of an unchanged vault) loads no rich and starts no drawing thread
    (a thread would also keep the freshness scan from looking ahead: index.scan_ahead)."""
    if not enabled or not sys.stderr.isatty():
        yield status_lines()
        return
    bar: Any = None
    tasks: dict[str, object] = {}

    def update(phase: str, done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as Bars

            bar = Bars(
                TextColumn("{task.description:<10}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                transient=True,
            )
            bar.start()
        if phase not in tasks:
            tasks[phase] = bar.add_task(phase, total=total or None)
        bar.update(tasks[phase], completed=done, total=total or None)

    try:
        yield update
    finally:
        if bar is not None:
            # rich only signals its refresh thread to end; wait for it, so that the command's
            # next step (a freshness scan that forks only in a single-threaded process) sees none.
            refresher = getattr(bar.live, "_refresh_thread", None)
            bar.stop()
            if refresher is not None:
                refresher.join(timeout=2.0)
