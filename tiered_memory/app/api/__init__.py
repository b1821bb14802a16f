"""The contract of every operation: its name, its request and its result, as plain records.

These modules hold only dataclasses (no I/O, nothing heavy), so a door can build a request and
render a result without loading the application: `tmem search` answered by the daemon never
imports pydantic, Whoosh or torch. The implementations live in the `app` modules beside this
package, listed op by op in `app/operations.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from tiered_memory.model.records import Record

Req = TypeVar("Req", bound=Record)
Res = TypeVar("Res", bound=Record)


@dataclass(frozen=True)
class Op(Generic[Req, Res]):
    """One user operation. `writes` ops change the vault (one commit each). `where="local"` ops
    always run in the calling process: they need its terminal or files, or have no vault yet."""

    name: str
    request: type[Req]
    result: type[Res]
    writes: bool = False
    where: Literal["any", "local"] = "any"


@dataclass
class Empty(Record):
    """The request of an operation that takes nothing."""
