"""The one-line messages every door writes on stderr beside its result: a warning, a hint, the
status line of a wait."""

from __future__ import annotations

__all__ = ["hint_line", "progress_line", "warning_line"]


def warning_line(message: str) -> str:
    return f"warning: {message}"


def hint_line(hint: str) -> str:
    return f"hint: {hint}"


def progress_line(phase: str, done: int, total: int) -> str:
    """A phase of a wait, with its count when it has more than one step: `tmem: embedding 3/120…`."""
    count = f" {done:,}/{total:,}" if total > 1 else ""
    return f"tmem: {phase}{count}…"
