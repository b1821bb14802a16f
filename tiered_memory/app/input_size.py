"""How much text one input may bring: `index.max_file_mb`, the size past which the indexer would
skip the note it makes. Every operation that takes text (remember and its kin, update, a session
message, a transcript's messages, extraction, an import's items) asks here first, before it
redacts or does anything else with the text: redacting 60 MB took minutes only to be refused.
"""

from __future__ import annotations

__all__ = ["Meter", "check", "check_request", "limit"]

import dataclasses
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from tiered_memory.errors import BadInput

if TYPE_CHECKING:
    from tiered_memory.app.memory import Memory


def limit(memory: Memory) -> int:
    """The most bytes (UTF-8) one input may hold."""
    return int(memory.config.index.max_file_mb * 1024 * 1024)


class Meter:
    """Texts counted as they come: the one that takes them together over the limit is refused
    (BadInput, one line) then, so what is measured need never be held all at once."""

    def __init__(self, memory: Memory, what: str = "text") -> None:
        self.most = limit(memory)
        self.mb = memory.config.index.max_file_mb
        self.what = what
        self.total = 0

    def add(self, text: str) -> None:
        # A character is at least one byte: a text longer than the limit is over it uncounted.
        size = len(text) if len(text) > self.most else len(text.encode("utf-8", "surrogatepass"))
        self.total += size
        if self.total > self.most:
            raise BadInput(f"{self.what} is larger than index.max_file_mb ({self.mb} MB)")


def check(memory: Memory, texts: Iterable[Any], what: str = "text") -> None:
    """Refuse (BadInput, one line) when the strings among `texts` together are over the limit."""
    meter = Meter(memory, what)
    for text in texts:
        if isinstance(text, str):
            meter.add(text)


def check_request(memory: Memory, request: Any, skip: Iterable[str] = ()) -> None:
    """Every string a request carries (its fields, lists, mappings and nested records), except the
    fields named in `skip`, together within the limit: what the operations runner asks before it
    runs any operation, so no door's input reaches the redactor (or anything else) unchecked."""
    skipped = set(skip)
    fields = (
        [getattr(request, f.name) for f in dataclasses.fields(request) if f.name not in skipped]
        if dataclasses.is_dataclass(request) and not isinstance(request, type)
        else [request]
    )
    check(memory, _strings(fields), "the input")


def _strings(value: Any) -> Iterator[str]:
    """Every string within `value`, in order; walked without recursion, so a request nested
    thousands deep (an agent's JSON) is measured like any other."""
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            stack.extend(reversed([part for pair in value.items() for part in pair]))
        elif isinstance(value, (list, tuple, set, frozenset)):
            stack.extend(reversed(list(value)))
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            stack.extend(reversed([getattr(value, field.name) for field in dataclasses.fields(value)]))
