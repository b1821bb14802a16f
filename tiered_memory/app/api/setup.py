"""Operations that run before (or outside) a vault: creating or adopting one."""

from __future__ import annotations

from dataclasses import dataclass

from tiered_memory.app.api import Op
from tiered_memory.model.records import Record


@dataclass
class InitRequest(Record):
    path: str
    adopt: bool = False  # an existing vault (a fresh `git clone`): register the merge driver there


@dataclass
class InitResult(Record):
    vault: str
    adopted: bool = False
    merge_driver: str = ""


INIT = Op("init", InitRequest, InitResult, writes=True, where="local")
