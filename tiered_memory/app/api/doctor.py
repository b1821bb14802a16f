"""`tmem doctor`: the findings about the daemon, the watcher and the indexes, and the repairs made.

Not an operation of the table: the doctor looks at the daemon itself (which may be stuck), so it
always runs in the calling process, through `backend.doctor`.
"""

from __future__ import annotations

__all__ = ["DoctorFinding", "DoctorReport"]

from dataclasses import dataclass, field

from tiered_memory.model.records import Record


@dataclass
class DoctorFinding(Record):
    check: str  # daemon, watcher, index, vectors, notes, fulltext, git
    ok: bool
    message: str
    fix: str = ""  # what --fix does, or what a person should do
    action: str = ""  # how the repair fixes it; empty: not fixable automatically
    examples: list[str] = field(default_factory=list)


@dataclass
class DoctorReport(Record):
    healthy: bool
    findings: list[DoctorFinding] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)  # one line per repair done
