"""The layers, checked on the source of every module (docs/architecture.md draws them).

Rules are per package, so a new module is checked the day it is written:

- `model` holds pure values and rules: it imports nothing else of ours but `errors`.
- `storage` and `index` never reach up into `app`, `sync`, `daemon`, `cli`, `mcp` or `present`.
- `app` never imports the doors (`cli`, `mcp`), the `daemon` or `present`.
- the doors (`cli`, `mcp`) see the application only through `app.api` records, `backend` and
  `present`: never `storage`, `index`, `sync` or an `app` implementation.
- no import cycle anywhere in the package, counting the imports inside functions (a
  function-local import of one of our modules is how a cycle hides), and imports of our own modules
  sit at module top except in the few modules named in LAZY_SEAMS, each for a stated reason:
  `backend.py` loads the application only when no daemon answers, and a search in a fresh process
  must not pay for loading the writing side.
- `tmem --help` loads no application module and nothing heavy.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

PACKAGE = "tiered_memory"
SOURCE = Path(__file__).resolve().parent.parent / PACKAGE
HEAVY = {"torch", "sentence_transformers", "transformers", "whoosh", "hnswlib", "git", "pydantic", "mcp"}

# For each package (or top-level module), the packages of ours it must not import.
EVERYTHING = {"storage", "index", "app", "sync", "daemon", "cli", "mcp", "present", "backend", "config"}
FORBIDDEN: dict[str, set[str]] = {
    "errors": EVERYTHING | {"model"},
    "model": EVERYTHING,
    "config": EVERYTHING - {"config"},
    "storage": {"index", "app", "sync", "daemon", "cli", "mcp", "present", "backend"},
    "index": {"app", "sync", "daemon", "cli", "mcp", "present", "backend"},
    "sync": {"app", "daemon", "cli", "mcp", "present", "backend"},
    "app": {"daemon", "cli", "mcp", "present", "backend"},
    "present": {"storage", "index", "sync", "daemon", "cli", "mcp", "backend"},
    "daemon": {"cli", "mcp", "present", "backend"},
    "cli": {"storage", "index", "sync", "mcp"},
    "mcp": {"storage", "index", "sync", "cli"},
}
# The doors and the renderers may import these parts of `app`: the records and op constants,
# nothing that runs.
DOOR_APP_ALLOWED = ("app.api",)
RECORD_READERS = ("cli", "mcp", "present")
# Modules that load some of ours inside functions, and why.
LAZY_SEAMS = {
    "backend": "the application, only when no daemon answers",
    "app.memory": "the writing side (transactions, redaction) and the embedder, which a search never uses",
    "app.sealed": "the in-memory index, for a vault that holds encrypted notes",
    "index.indexer": "the index writers, the link graph and the embedding side: a search on an "
    "unchanged vault uses none of them",
    "cli.search": "the session records, for `--recent` only",
}


def modules() -> list[str]:
    out = []
    for path in sorted(SOURCE.rglob("*.py")):
        rel = path.relative_to(SOURCE).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        out.append(".".join(parts) if parts else "")
    return out


def _path(module: str) -> Path:
    base = SOURCE.joinpath(*module.split(".")) if module else SOURCE
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


@cache
def _tree(module: str) -> ast.Module:
    path = _path(module)
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(tree: ast.AST, module: str = "") -> list[tuple[str, bool]]:
    """(our module imported, whether at module top) for each import of a `tiered_memory` module.

    `from tiered_memory.app import notes` names the module `app.notes` when that is a module, else
    `app`. Imports under `if TYPE_CHECKING:` are left out: they never run.
    """
    known = set(modules())
    found: list[tuple[str, bool]] = []

    def ours(name: str) -> str | None:
        if name == PACKAGE:
            return ""
        if name.startswith(PACKAGE + "."):
            return name[len(PACKAGE) + 1 :]
        return None

    def visit(node: ast.AST, top: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child, top)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = ours(alias.name)
                if name is not None:
                    found.append((name, top))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = module.split(".")[: -node.level] if _path(module).name != "__init__.py" else []
                base = ".".join([*package, node.module or ""]).strip(".")
                name: str | None = base
            else:
                name = ours(node.module or "")
            if name is not None:
                for alias in node.names:
                    sub = f"{name}.{alias.name}".strip(".")
                    found.append((sub if sub in known else name, top))
        inner = top and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, True)
    return found


def _package(module: str) -> str:
    return module.split(".")[0]


def _forbidden(importer: str, imported: str) -> bool:
    mine, theirs = _package(importer), _package(imported)
    if mine == theirs:
        return False
    if theirs in FORBIDDEN.get(mine, set()):
        return True
    if mine in RECORD_READERS and theirs == "app":
        return not any(imported == a or imported.startswith(a + ".") for a in DOOR_APP_ALLOWED)
    return False


def test_the_checker_sees_every_import_form() -> None:
    source = (
        "import tiered_memory.storage.vault\n"
        "from tiered_memory import cli\n"
        "from tiered_memory.app.memory import Memory\n"
        "from tiered_memory.app import notes\n"
        "def f():\n    from tiered_memory.index import fts\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from tiered_memory.daemon import loop\n"
    )
    found = imports_of(ast.parse(source), "cli.example")
    assert ("storage.vault", True) in found
    assert ("cli", True) in found
    assert ("app.memory", True) in found
    assert ("app.notes", True) in found
    assert ("index.fts", False) in found
    assert all(name != "daemon.loop" for name, _ in found)
    assert _forbidden("cli.notes", "app.notes") and not _forbidden("cli.notes", "app.api.notes")
    assert _forbidden("model.note", "storage.vault") and not _forbidden("app.notes", "model.note")


@pytest.mark.parametrize("module", [m for m in modules() if m])
def test_each_module_imports_only_what_its_layer_may(module: str) -> None:
    bad = sorted({name for name, _top in imports_of(_tree(module), module) if _forbidden(module, name)})
    assert bad == [], f"{module} imports {bad}, which its layer must not (docs/architecture.md)"


@pytest.mark.parametrize("module", [m for m in modules() if m and m not in LAZY_SEAMS])
def test_our_imports_sit_at_module_top(module: str) -> None:
    late = sorted({name for name, top in imports_of(_tree(module), module) if not top})
    assert late == [], f"{module} imports {late} inside a function: move them to the top"


def _graph() -> dict[str, set[str]]:
    """Each module's imports of ours, those inside functions included, except the application's
    own seam: `backend` loads the doors' servers (the MCP server, which runs operations through
    `backend`) when asked to serve."""
    graph: dict[str, set[str]] = {}
    for module in modules():
        if not module:
            continue
        graph[module] = {
            name
            for name, top in imports_of(_tree(module), module)
            if name and name != module and (top or module != "backend")
        }
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in graph:
        if v not in index:
            strong(v)
    return out


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    # A package's __init__ that re-exports its modules is not a cycle with them.
    graph = {m: {n for n in deps if not (n and m.startswith(n + "."))} for m, deps in _graph().items()}
    assert _cycles(graph) == []


def test_help_loads_no_application_and_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from tiered_memory.cli import cli\n"
        "assert CliRunner().invoke(cli, ['--help']).exit_code == 0\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = set(out.split())
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    assert heavy == []
    app = sorted(
        m for m in loaded if m.startswith(f"{PACKAGE}.app.") and not m.startswith(f"{PACKAGE}.app.api")
    )
    for layer in ("storage", "index", "sync", "daemon.loop", "mcp"):
        app += sorted(m for m in loaded if m.startswith(f"{PACKAGE}.{layer}"))
    assert app == [], "tmem --help loads the application"
