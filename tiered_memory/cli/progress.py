"""Progress on stderr for the waits a command cannot avoid (a first embedding, a full rebuild).

On a terminal: a bar per phase (rich), gone when the command ends. Piped: one line per phase, so
a log shows what took the time. With --json: nothing, the output stays one JSON document.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

Progress = Callable[[str, int, int], None]


@contextmanager
def progress_bar(*, enabled: bool = True) -> Iterator[Progress | None]:
    if not enabled:
        yield None
        return
    if not sys.stderr.isatty():
        seen: set[str] = set()

        def line(phase: str, done: int, total: int) -> None:
            if phase not in seen:
                seen.add(phase)
                click.echo(f"tmem: {phase}" + (f" ({total})" if total > 1 else "") + "…", err=True)

        yield line
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description:<10}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
    ) as bar:
        tasks: dict[str, object] = {}

        def update(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(phase, total=total)
            bar.update(tasks[phase], completed=done, total=total)  # type: ignore[arg-type]

        yield update
