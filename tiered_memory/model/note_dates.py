"""When a note was created and last changed, for notes that do not say so themselves. Pure: no I/O.

A file's mtime alone cannot answer it: a clone, checkout or pull writes every file it touches, so
on a new machine every note would look written today and decay would restart from zero. What git
keeps is stable on every clone: the author time of the first commit holding a note's exact content
(its blob). So a note's content was *written* at

    the earlier of its mtime and the first commit of its current content,

which is the edit time for a hand edit (the mtime, or the commit the daemon makes a minute later),
the original commit time on a fresh clone (mtime is later there), and unchanged by a move or rename
(same blob) or by `touch`. Content never committed (a new, unsaved-to-git edit) uses its mtime.

`updated` is then:
- tmem's own notes (an `id` and an `updated` in frontmatter): the frontmatter `updated`, which tmem
  bumps on every write it makes (its bookkeeping rewrites must not make a note look freshly edited);
- every other note: the latest of its frontmatter `updated` and `created`, the date in a daily
  note's name, and when its content was written, so an edit a person makes without touching the
  frontmatter still counts.
`created` is the frontmatter `created`, else a daily note's name date, else when its content was written.
"""

from __future__ import annotations

__all__ = ["git_blob_ids", "note_dates", "written_at"]

import hashlib
from datetime import datetime

from tiered_memory.model import obsidian
from tiered_memory.model.dates import from_epoch, to_datetime
from tiered_memory.model.note import Note


def git_blob_ids(data: bytes) -> list[str]:
    """The git blob ids this content may be committed as: as is, and with CRLF read as LF (a
    repository with `core.autocrlf` or `eol` attributes stores LF and checks out CRLF)."""
    variants = [data]
    if b"\r\n" in data:
        variants.append(data.replace(b"\r\n", b"\n"))
    return [hashlib.sha1(b"blob %d\0" % len(v) + v, usedforsecurity=False).hexdigest() for v in variants]


def written_at(mtime: float | None, committed: float | None) -> datetime | None:
    """When a note's current content was written: the earlier of its mtime and its first commit."""
    known = [t for t in (mtime, committed) if t is not None]
    return from_epoch(min(known)) if known else None


def note_dates(note: Note, committed: float | None = None) -> tuple[datetime | None, datetime | None]:
    """(created, updated) of a note whose current content was first committed at `committed`
    (epoch seconds; None when never committed or unknown)."""
    written = written_at(note.mtime, committed)
    fm_created = to_datetime(note.meta.get("created"))
    fm_updated = to_datetime(note.meta.get("updated"))
    named = obsidian.date_of_name(note.path)
    created = fm_created or named or written
    if fm_updated is not None and note.meta.get("id") not in (None, ""):
        return created, fm_updated
    candidates = [d for d in (fm_updated, fm_created, named, written) if d is not None]
    return created, max(candidates) if candidates else None
