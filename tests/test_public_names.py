"""What a module offers the others is what its `__all__` says, and a leading underscore means "this
module's own": no module reaches into another's private names. Read from the source, like
tests/test_architecture.py, so the rule holds for code no test runs."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tiered_memory"

# (module, use) pairs still waiting for their owner to give the name a public one: none now.
ALLOWED_PRIVATE: set[tuple[str, str]] = set()


def _name_of(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _modules() -> dict[str, ast.Module]:
    return {_name_of(p): ast.parse(p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = _modules()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _top_level(tree: ast.Module) -> Iterator[ast.stmt]:
    """The module's statements, with those of top-level `if` (but `if TYPE_CHECKING:`) and `try`."""
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            yield from [*node.body, *node.orelse]
        elif isinstance(node, ast.Try):
            yield from [
                *node.body,
                *(s for h in node.handlers for s in h.body),
                *node.orelse,
                *node.finalbody,
            ]
        else:
            yield node


def _defined(tree: ast.Module) -> list[str]:
    """The public names a module defines (not those it imports)."""
    names: list[str] = []
    for node in _top_level(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            names.append(node.target.id)
    return [n for n in dict.fromkeys(names) if not n.startswith("_")]


def _bound(tree: ast.Module) -> set[str]:
    """Every name a module binds at its top level, imports included."""
    names = set(_defined(tree))
    for node in _top_level(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == "__all__":
            value = ast.literal_eval(node.value)  # type: ignore[attr-defined]
            return list(value)
    return None


@functools.cache
def _uses(module: str) -> list[tuple[str, str, str]]:
    return list(_taken(MODULES[module]))


def _taken(tree: ast.Module) -> Iterator[tuple[str, str, str]]:
    """(other module, name, how it is written) for every name this module takes from another
    module of tiered_memory: `from other import name` and `other.name` on an imported module, or
    `Class._name` on a class imported from another module."""
    aliases: dict[str, str] = {}  # local name -> module it stands for
    owners: dict[str, str] = {}  # local name -> module it was imported from (a class, say)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tiered_memory"):
            for alias in node.names:
                local = alias.asname or alias.name
                if f"{node.module}.{alias.name}" in MODULES:
                    aliases[local] = f"{node.module}.{alias.name}"
                else:
                    owners[local] = node.module
                    yield node.module, alias.name, f"from {node.module} import {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("tiered_memory") and alias.asname:
                    aliases[alias.asname] = alias.name
    # A module's alias that a function's variable or argument shadows somewhere is left out.
    rebound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    rebound |= {
        a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments) for a in [*n.args, *n.kwonlyargs]
    }
    for name in rebound:
        aliases.pop(name, None)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and not node.attr.startswith("__")
        ):
            if node.value.id in aliases and f"{aliases[node.value.id]}.{node.attr}" not in MODULES:
                yield aliases[node.value.id], node.attr, ast.unparse(node)
            elif node.value.id in owners and _private(node.attr):
                yield owners[node.value.id], node.attr, ast.unparse(node)


def test_no_module_uses_another_modules_private_names() -> None:
    found = sorted(
        f"{module}: {written}"
        for module, tree in MODULES.items()
        for other, name, written in _uses(module)
        if other != module and _private(name) and (module, written) not in ALLOWED_PRIVATE
    )
    assert found == [], "a private name used outside its module: give it a public name in its module"


def test_every_module_with_public_names_declares_them_in_all() -> None:
    missing, wrong = [], []
    for module, tree in MODULES.items():
        declared = _all(tree)
        if declared is None:
            if _defined(tree) and not module.endswith("__main__"):
                missing.append(module)
            continue
        bound = _bound(tree) | {m.rsplit(".", 1)[1] for m in MODULES if m.startswith(f"{module}.")}
        wrong += [f"{module}: {n}" for n in declared if n not in bound or _private(n)]
        wrong += [f"{module}: {n} twice" for n in declared if declared.count(n) > 1]
    assert missing == [], "modules without __all__"
    assert wrong == [], "__all__ names a private name, one the module does not define, or one twice"


def test_what_a_module_takes_from_another_is_in_that_ones_all() -> None:
    outside = sorted(
        f"{module}: {written}"
        for module, tree in MODULES.items()
        for other, name, written in _uses(module)
        if other != module
        and not _private(name)
        and (declared := _all(MODULES[other])) is not None
        and name not in declared
    )
    assert outside == [], "a name used outside its module but missing from that module's __all__"


def test_no_error_is_named_after_a_builtin() -> None:
    """An error class named like a builtin with an underscore added still reads as the builtin."""
    import builtins

    from tiered_memory import errors

    names = [n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, BaseException)]
    assert "TmemError" in names
    assert [n for n in names if n.rstrip("_") in dir(builtins)] == []
