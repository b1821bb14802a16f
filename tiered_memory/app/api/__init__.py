"""The contract of every operation: its name, its request and its result, as plain records.

These modules hold only dataclasses (no I/O, nothing heavy), so a door can build a request and
render a result without loading the application: `tmem search` answered by the daemon never
imports pydantic, Whoosh or torch. Each `Op` is the one declaration of its operation: it names the
function that carries it out (`runs`, a module of `app` and a function in it), which
`app/operations.py` imports only when the operation runs.
"""

from __future__ import annotations

__all__ = ["Empty", "Op", "Req", "Res"]

from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from tiered_memory.model.records import Record

Req = TypeVar("Req", bound=Record)
Res = TypeVar("Res", bound=Record)


@dataclass(frozen=True)
class Op(Generic[Req, Res]):
    """One user operation. `runs` is its function, "tiered_memory.app.<module>:<function>", named
    rather than imported so that a door loads none of the application (tests/app/test_operations.py
    checks that each one resolves). The function takes (Memory, request), or only the request when
    `needs_vault` is false (creating a vault, say). `writes` ops change the vault (one commit each).
    `where="local"` ops always run in the calling process: they need its terminal or files, or have
    no vault yet. `unbounded` names the request's fields the size check leaves to the function.
    `repeatable`: running the same request twice changes what once did and nothing more, so a
    write the daemon took and never answered may run again in the calling process."""

    name: str
    request: type[Req]
    result: type[Res]
    runs: str
    writes: bool = False
    where: Literal["any", "local"] = "any"
    needs_vault: bool = True
    unbounded: tuple[str, ...] = ()
    repeatable: bool = False


@dataclass
class Empty(Record):
    """The request of an operation that takes nothing."""
