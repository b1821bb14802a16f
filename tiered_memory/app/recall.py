"""The search operation (recall): ranked notes for a query, from every door.

Its own module because it is the operation people wait on: a search in a fresh process imports
this and what ranking needs, not the writing side of notes (dedup, filing, statements).
"""

from __future__ import annotations

__all__ = ["search"]

from tiered_memory.app import profiles, sealed
from tiered_memory.app.memory import Memory
from tiered_memory.errors import BadInput
from tiered_memory.model import authors
from tiered_memory.model.search import SearchRequest, SearchResult


def search(memory: Memory, request: SearchRequest) -> SearchResult:
    """Ranked notes; an entity filter matches every name of that entity; each hit returned is
    counted as a recall (unless the request says not to)."""
    bad = request.problem()
    if bad:
        raise BadInput(bad)
    if request.entities:
        request.entities = profiles.expand_names(memory.vault, request.entities)
    request.folders = request.folders or list(memory.config.search.folders)
    if request.by is not None:
        request.by = request.by.strip()
        why = authors.problem(request.by)
        if why is not None:
            raise BadInput(f"--by: not a name to look for ({why})")
        memory.indexer.refresh_authors()  # the commits made since the last look, if any
    # encrypted notes: from memory only, while unlocked
    return sealed.search(memory, request, record_access=request.record_access)
