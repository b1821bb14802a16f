"""Talking to a running daemon over its Unix socket (`.tmem/daemon.sock`).

`search_via_daemon` returns None when no daemon answers, and the caller searches in-process.
The daemon (issue #5) implements the server side; until it runs, this is a cheap no-op: one
`os.path.exists` on the socket path.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tiered_memory.retrieve import SearchRequest, SearchResult

SOCKET_NAME = "daemon.sock"


def socket_path(root: Path) -> Path:
    return root / ".tmem" / SOCKET_NAME


def search_via_daemon(root: Path, request: SearchRequest) -> SearchResult | None:
    if not os.path.exists(socket_path(root)):
        return None
    return None
