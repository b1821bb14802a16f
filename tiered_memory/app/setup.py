"""Creating a vault, or adopting a cloned one (`tmem init [--adopt]`)."""

from __future__ import annotations

from pathlib import Path

from tiered_memory.app.api.setup import InitRequest, InitResult
from tiered_memory.storage.vault import init_vault, merge_driver_command
from tiered_memory.sync.gitmerge import adopt_vault


def init(request: InitRequest) -> InitResult:
    target = Path(request.path)
    if request.adopt:
        root = adopt_vault(target)
        return InitResult(str(root), adopted=True, merge_driver=merge_driver_command())
    vault = init_vault(target)
    return InitResult(str(vault.root), merge_driver=merge_driver_command())
