"""Encrypted notes while the vault is unlocked: read, found by id and searched in memory only.

The indexer never reads an encrypted note (its catalog row says only that the path is encrypted),
so nothing of its text reaches `.tmem/`. While a key is at hand, this module decrypts those notes
into a per-process cache (the daemon's memory) and answers id lookups and keyword searches over
them; the hits join the ranked results of the on-disk indexes.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from tiered_memory.errors import Locked, NoteNotFound, NoteParseError, Tampered
from tiered_memory.model import note as notes
from tiered_memory.model import statements
from tiered_memory.model.search import Hit, SearchRequest, SearchResult
from tiered_memory.storage import crypto
from tiered_memory.storage.vault import ENCRYPTED

if TYPE_CHECKING:
    from tiered_memory.app.memory import Memory

_cache: dict[str, tuple[float, int, notes.Note]] = {}  # abspath -> (mtime, size, note)
_lock = threading.Lock()


def paths(memory: Memory) -> list[str]:
    """Every encrypted note the catalog knows (by path only)."""
    memory.fresh()
    return sorted(path for path, why in memory.indexer.catalog.skipped() if why == ENCRYPTED)


def read_all(memory: Memory) -> list[notes.Note]:
    """The encrypted notes, decrypted; none while locked. A tampered one is warned about and left out."""
    if crypto.key_for(memory.vault.root) is None:
        return []
    out: list[notes.Note] = []
    for rel in paths(memory):
        path = memory.vault.abspath(rel)
        try:
            stat = path.stat()
        except OSError:
            continue
        key = str(path)
        with _lock:
            hit = _cache.get(key)
        if hit is not None and hit[:2] == (stat.st_mtime, stat.st_size):
            out.append(hit[2])
            continue
        try:
            note = memory.vault.read_note(rel)
        except (Tampered, NoteParseError) as exc:
            memory.warn(str(exc))
            continue
        except Locked:
            return []
        with _lock:
            _cache[key] = (stat.st_mtime, stat.st_size, note)
        out.append(note)
    return out


def forget_all() -> None:
    with _lock:
        _cache.clear()


def by_id(memory: Memory, ref: str) -> str | None:
    for note in read_all(memory):
        if note.id == ref:
            return note.path
    return None


def resolve(memory: Memory, ref: str) -> str:
    """`memory.resolve`, and ids of encrypted notes while unlocked."""
    try:
        return memory.resolve(ref)
    except NoteNotFound as exc:
        found = by_id(memory, ref.strip())
        if found is not None:
            return found
        locked = paths(memory) if crypto.key_for(memory.vault.root) is None else []
        if locked:
            raise NoteNotFound(f"{exc} ({len(locked)} encrypted note(s) are locked: tmem unlock)") from None
        raise


def _score(query: set[str], note: notes.Note) -> float:
    words = statements.words(f"{note.title}\n{note.text}")
    found = {w for w in words}
    if not query:
        return 0.0
    return len(query & found) / len(query)


def add_hits(memory: Memory, request: SearchRequest, result: SearchResult) -> SearchResult:
    """The ranked result plus encrypted notes that match (while unlocked), best first."""
    sealed = read_all(memory)
    if not sealed or not request.query.strip():
        return result
    query = set(statements.words(request.query))
    extra: list[Hit] = []
    for note in sealed:
        if request.tiers and note.tier not in request.tiers:
            continue
        if request.projects and note.project not in request.projects:
            continue
        if request.categories and note.category not in request.categories:
            continue
        if request.entities and not set(request.entities) & set(note.entities):
            continue
        score = _score(query, note) if request.query.strip() != "*" else 0.5
        if score <= 0:
            continue
        snippet = " ".join(note.text.split())[:160]
        updated = note.updated.timestamp() if note.updated else 0.0
        extra.append(
            Hit(
                note.path,
                note.id,
                note.title,
                note.tier or "",
                note.category,
                round(score, 4),
                snippet,
                updated,
                {"encrypted": 1.0},
            )
        )
    if not extra:
        return result
    hits = sorted([*result.hits, *extra], key=lambda h: -h.score)[
        : request.limit or len(result.hits) + len(extra)
    ]
    return SearchResult(hits, result.mode, result.notice)
