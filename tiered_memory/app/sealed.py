"""Encrypted notes while the vault is unlocked: read, found by id and searched in memory only.

The indexer never reads an encrypted note (its catalog row says only that the path is encrypted),
so nothing of its text reaches `.tmem/`. While a key is at hand, this module decrypts those notes
into an in-memory index per vault (`index.in_memory`: catalog rows, terms and, with a local
embedder, chunk vectors), held by this process (the daemon, for every command it answers) until
`tmem lock`. Searches and context blocks rank them with the notes of the on-disk indexes.
Embedding them is never done by a remote embedder: an API would receive their text.
"""

from __future__ import annotations

__all__ = [
    "by_id",
    "forget_all",
    "locked",
    "paths",
    "prepared",
    "private_paths",
    "read_all",
    "resolve",
    "search",
]

import threading
import time
from typing import TYPE_CHECKING

from tiered_memory.app.memory import SEARCH_EMBED_BUDGET, Memory
from tiered_memory.errors import Locked, NoteNotFound, NoteParseError, Tampered
from tiered_memory.model import note as notes
from tiered_memory.model.search import SearchRequest, SearchResult
from tiered_memory.storage import crypto
from tiered_memory.storage.vault import ENCRYPTED

if TYPE_CHECKING:  # loaded with the first encrypted note: a vault without any never needs it
    from tiered_memory.index.in_memory import InMemoryIndex

_indexes: dict[str, InMemoryIndex] = {}  # vault root -> its encrypted notes, decrypted
_lock = threading.Lock()


def _index(memory: Memory) -> InMemoryIndex:
    from tiered_memory.index.in_memory import InMemoryIndex

    key = str(memory.root)
    with _lock:
        index = _indexes.get(key)
        if index is None:
            index = _indexes[key] = InMemoryIndex()
        return index


def _held(memory: Memory) -> InMemoryIndex | None:
    """The vault's in-memory index, if this process has made one."""
    with _lock:
        return _indexes.get(str(memory.root))


def _forget(memory: Memory) -> None:
    """Drop the vault's decrypted notes, if this process holds any."""
    if (index := _held(memory)) is not None:
        index.clear()


def paths(memory: Memory) -> list[str]:
    """Every encrypted note the catalog knows (by path only)."""
    if not (memory.root / crypto.SETTINGS).is_file():
        return []  # encryption never set up here: no scan for what cannot exist
    memory.fresh()
    return sorted(path for path, why in memory.indexer.catalog.skipped() if why == ENCRYPTED)


def locked(memory: Memory) -> int:
    """How many encrypted notes the vault holds while no key is at hand (0 while unlocked)."""
    found = paths(memory)
    return len(found) if found and crypto.key_for(memory.root) is None else 0


def read_all(memory: Memory) -> list[notes.Note]:
    """The encrypted notes, decrypted (and the in-memory index brought up to date with them);
    none while locked. A tampered one is warned about and left out."""
    found = paths(memory)
    if not found or crypto.key_for(memory.root) is None:
        _forget(memory)
        return []
    index = _index(memory)
    out: list[notes.Note] = []
    for rel in found:
        try:
            stat = memory.abspath(rel).stat()
        except OSError:
            continue
        stamp = (stat.st_mtime, stat.st_size)
        note = index.current(rel, stamp)
        if note is None:
            try:
                note = memory.read_note(rel)
            except (Tampered, NoteParseError) as exc:
                memory.warn(str(exc))
                continue
            except Locked:
                index.clear()
                return []
            index.put(note, stamp, memory.tier_of(rel))
        out.append(note)
    index.retain(n.path for n in out)
    return out


def prepared(memory: Memory, mode: str = "hybrid") -> InMemoryIndex | None:
    """The vault's in-memory index of encrypted notes, current and (unless `mode` is keyword or
    the embedder is remote) embedded; None while locked or when there are none."""
    if not read_all(memory):
        return None
    index = _index(memory)
    if mode != "keyword":
        from tiered_memory.index.embeddings import is_remote_embedder

        embedder = memory.embedder()
        if embedder is not None and not is_remote_embedder(embedder):
            cfg = memory.config.embeddings
            deadline = time.monotonic() + SEARCH_EMBED_BUDGET  # as for plain notes: answer first
            index.embed(embedder, cfg.chunk_tokens, cfg.chunk_overlap, deadline)
    return index


def search(
    memory: Memory, request: SearchRequest, *, record_access: bool = True, say_locked: bool = True
) -> SearchResult:
    """`Memory.search` over the on-disk indexes and, while unlocked, the encrypted notes; while
    locked, the result says how many encrypted notes were not searched (`say_locked`).

    A request that leaves sensitive notes out (`include_sensitive=False`: what tmem hands an agent
    on its own, such as the prompt hook's memories) leaves the encrypted ones out too, unless the
    person's `privacy.sealed_in_prompts` lets them in: a note they sealed reaches an agent's model
    only when someone asked for it."""
    wanted = request.include_sensitive or memory.config.privacy.sealed_in_prompts
    apart = prepared(memory, request.mode) if wanted else None
    result = memory.search(request, record_access=record_access, apart=apart)
    shut = locked(memory) if say_locked and wanted else 0
    if shut:
        line = f"{shut} encrypted note(s) not searched: the vault is locked (tmem unlock)"
        result.notice = f"{result.notice}; {line}" if result.notice else line
    return result


def private_paths(memory: Memory) -> set[str]:
    """Paths of the notes held in memory only: their ids never go to the recall log."""
    index = _held(memory)
    return set(index.rows()) if index is not None else set()


def forget_all() -> None:
    """Drop every decrypted note and vector this process holds (`tmem lock`)."""
    with _lock:
        for index in _indexes.values():
            index.clear()


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
        shut = locked(memory)
        if shut:
            raise NoteNotFound(f"{exc} ({shut} encrypted note(s) are locked: tmem unlock)") from None
        raise
