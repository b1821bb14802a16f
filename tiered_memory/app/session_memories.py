"""The memories of a session: which candidates to store, and filing them through dedup.

Shared by `session end`, `ingest` and `tmem extract`: the rule-based candidates always give the
summary its highlights (deterministic); what is stored comes from the configured extractor.
"""

from __future__ import annotations

__all__ = ["Extraction", "HIGHLIGHTS", "describe", "new_notes", "plan", "store"]

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tiered_memory.app import dedup, extract_llm
from tiered_memory.app.dedup import RememberOutcome
from tiered_memory.app.filing import NewNote
from tiered_memory.model import extract
from tiered_memory.model.extract import Candidate
from tiered_memory.model.transcripts import Message
from tiered_memory.storage.transaction import Transaction

if TYPE_CHECKING:
    from tiered_memory.app.memory import Memory

HIGHLIGHTS = 5


@dataclass
class Extraction:
    rules: list[Candidate] = field(default_factory=list)  # for the summary's highlights
    wanted: list[Candidate] = field(default_factory=list)  # to store (at or above min_confidence)
    extractor: str = ""

    def highlights(self) -> list[tuple[str, str]]:
        ranked = sorted(self.rules, key=lambda c: -c.confidence)[:HIGHLIGHTS]
        return [(c.category, c.text if len(c.text) <= 160 else c.text[:159] + "…") for c in ranked]


def plan(memory: Memory, messages: Sequence[Message], sid: str, run: bool) -> Extraction:
    rules = extract.extract(messages, sid)
    if not run:
        return Extraction(rules)
    cfg = memory.config.extract
    if not cfg.llm:
        return Extraction(rules, [c for c in rules if c.confidence >= cfg.min_confidence], "rules")
    wanted, name = extract_llm.run(cfg, messages, sid, memory.warn)
    return Extraction(rules, wanted, name)


def new_notes(
    candidates: Sequence[Candidate], extractor: str, session: str | None, project: str | None, source: str
) -> list[NewNote]:
    return [
        NewNote(
            text=c.text,
            category=c.category,
            confidence=c.confidence,
            source=c.source or source,
            session=session,
            project=project,
            extra={"extractor": extractor},
        )
        for c in candidates
    ]


def store(
    memory: Memory, tx: Transaction, extraction: Extraction, sid: str, project: str | None
) -> list[RememberOutcome]:
    """Write the wanted memories (added, merged or superseded) inside the caller's unit of work."""
    if not extraction.wanted:
        return []
    items = new_notes(extraction.wanted, extraction.extractor, sid, project, f"session:{sid}")
    return dedup.apply_many(memory, tx, items)


def describe(outcomes: list[RememberOutcome]) -> str:
    return f"memories: {dedup.counts(outcomes)}" if outcomes else "no memories"
