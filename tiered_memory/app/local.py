"""Running operations in this process: open the vault once, then call each operation's function."""

from __future__ import annotations

__all__ = ["LocalBackend"]

import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tiered_memory.app import operations
from tiered_memory.app.api import Op, Req, Res
from tiered_memory.app.memory import Memory
from tiered_memory.config import Config, unapproved, unapproved_warning
from tiered_memory.index.indexer import Progress
from tiered_memory.index.scan_ahead import Ahead
from tiered_memory.storage.vault import Vault


class LocalBackend:
    """The application in this process. The vault's indexes open at the first operation."""

    kind = "in-process"

    def __init__(
        self,
        root: Path,
        *,
        warn: Callable[[str], None] = lambda message: None,
        progress: Progress | None = None,
        memory_factory: Callable[[Vault], Memory] | None = None,
        config: Config | None = None,
        ahead: Ahead | None = None,
    ) -> None:
        """`config`: the vault's, when the caller has loaded it already. `ahead`: the first
        freshness scan's look at the disk, started by the caller (index.scan_ahead)."""
        self.root = root
        self.warn = warn
        self.progress = progress
        self._factory = memory_factory
        self._memory: Memory | None = None
        # The application's modules are loaded now and live as long as the process: moved out of
        # the collector's generations, they are not walked again each time a scan or a search
        # allocates its thousands of tuples (a tenth of a keyword search's wall time at 10k notes).
        gc.freeze()
        self._ahead = ahead
        self.agent: str | None = None  # the agent the operations run for (`Memory.acting_as`)
        self.vault = Vault(root, config)
        self.vault.config  # noqa: B018 - an invalid config is reported before anything else runs
        if left_out := unapproved(root):
            warn(unapproved_warning(left_out))

    @property
    def memory(self) -> Memory:
        if self._memory is None:
            ahead, self._ahead = self._ahead, None
            if self._factory is not None:
                self._memory = self._factory(self.vault)
                if ahead is not None:
                    ahead.cancel()
            else:
                try:
                    self._memory = Memory(self.vault, warn=self.warn, progress=self.progress, ahead=ahead)
                except BaseException:
                    if ahead is not None:
                        ahead.cancel()
                    raise
        return self._memory

    def run(self, op: Op[Req, Res], request: Req) -> Res:
        memory = self.memory
        with memory.acting_as(self.agent):
            result: Any = operations.implementation(op)(memory, request)
        return result  # type: ignore[no-any-return]

    def close(self) -> None:
        if self._ahead is not None:  # no operation ran
            self._ahead.cancel()
            self._ahead = None
        if self._memory is not None:
            self._memory.close()
            self._memory = None
