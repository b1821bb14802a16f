"""Every operation tmem offers and the function that carries it out. The CLI, the daemon's socket
and the MCP server all run operations through here (via `tiered_memory.backend`), so each means
the same thing everywhere.

There is no table to keep: each operation is declared once, as an `Op` in `app.api.<module>`, and
its `runs` names the function ("tiered_memory.app.notes:remember"). A process imports only the
records of the operations it runs and, when it runs one, that one's implementation, so a keyword
search does not load sync, sessions, importers, encryption and the rest. Only a lookup by name
(the daemon's socket, which receives names) imports every record module, once, to list the Ops
(tests/app/test_operations.py checks that each `runs` resolves and that names are unique).
"""

from __future__ import annotations

__all__ = ["Implementation", "declared", "every_op", "find", "find_vaultless", "implementation"]

import functools
import importlib
from collections.abc import Callable
from typing import Any

from tiered_memory.app import api, input_size
from tiered_memory.app.api import Op
from tiered_memory.errors import BadInput

Implementation = Callable[[Any, Any], Any]  # (Memory, request) -> result


def declared() -> list[tuple[str, Op[Any, Any]]]:
    """Every operation with the name of the `app.api` module that declares it, in the order of
    the modules and of the declarations within each."""
    import pkgutil  # only for a lookup by name: a process that runs an Op it holds never needs it

    found: list[tuple[str, Op[Any, Any]]] = []
    for info in sorted(pkgutil.iter_modules(api.__path__), key=lambda info: info.name):
        module = importlib.import_module(f"{api.__name__}.{info.name}")
        found += [(info.name, value) for value in vars(module).values() if isinstance(value, Op)]
    return found


@functools.cache
def every_op() -> dict[str, Op[Any, Any]]:
    """Every operation by name (an Op imported by another record module is the same object, so it
    is counted once; two different Ops of one name are a bug)."""
    ops: dict[str, Op[Any, Any]] = {}
    for _module, op in declared():
        if ops.setdefault(op.name, op) is not op:
            raise RuntimeError(f"two operations are named '{op.name}'")
    return ops


def _load(runs: str) -> Callable[..., Any]:
    module, _, function = runs.partition(":")
    loaded: Callable[..., Any] = getattr(importlib.import_module(module), function)
    return loaded


def implementation(op: Op[Any, Any]) -> Implementation:
    """The function of an operation on a vault (its module imported now, if not yet), which first
    checks the request's size (`app.input_size`): whichever door it came through, input over the
    limit is refused before any other work."""
    if not op.needs_vault:
        raise BadInput(f"operation '{op.name}' runs without a vault")
    return _bounded(_load(op.runs), op.unbounded)


def find(name: str) -> tuple[Op[Any, Any], Implementation]:
    """The operation on a vault of that name (a name off the daemon's socket) and its function."""
    op = every_op().get(name)
    if op is None or not op.needs_vault:
        known = ", ".join(sorted(n for n, o in every_op().items() if o.needs_vault))
        raise BadInput(f"unknown operation '{name}' (known: {known})")
    return op, implementation(op)


def _bounded(function: Implementation, skip: tuple[str, ...]) -> Implementation:
    def run(memory: Any, request: Any) -> Any:
        input_size.check_request(memory, request, skip)
        return function(memory, request)

    return run


def find_vaultless(name: str) -> tuple[Op[Any, Any], Callable[[Any], Any]]:
    """An operation that needs no vault (creating one, say) and its function."""
    op = every_op().get(name)
    if op is None or op.needs_vault:
        raise BadInput(f"operation '{name}' needs a vault")
    return op, _load(op.runs)
