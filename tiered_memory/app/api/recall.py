"""The search operation (recall): ranked notes for a query. Its request and result are the search
model's (model.search); this module holds only the operation, so a search loads none of the other
operations' records."""

from __future__ import annotations

__all__ = ["SEARCH"]

from tiered_memory.app.api import Op
from tiered_memory.model.search import SearchRequest, SearchResult

SEARCH = Op("search", SearchRequest, SearchResult, runs="tiered_memory.app.recall:search")
