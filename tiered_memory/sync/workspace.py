"""What sync needs of the vault it works on, as a shape: the application's `Memory` has it.

Sync never imports the application (it sits below it); the application passes its Memory in, and
these protocols say which of its parts sync uses: the vault, the unit of work, finding a note by
id, and updating the indexes for the paths a merge changed.
"""

from __future__ import annotations

__all__ = ["Indexes", "Workspace"]

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import Vault


class Indexes(Protocol):
    @property
    def vectors_loaded(self) -> bool: ...

    def update_paths(
        self, paths: Iterable[str], *, vectors: bool = True, save_vectors: bool = True
    ) -> Any: ...


class Workspace(Protocol):
    vault: Vault

    @property
    def indexer(self) -> Indexes: ...

    def change(self, message: str) -> AbstractContextManager[Transaction]: ...

    def resolve(self, ref: str) -> str: ...

    def recover(self) -> list[str]: ...

    def refresh(self, *, vectors: bool = False, full: bool = False, progress: Any = None) -> Any: ...
