"""Layering rules, checked on the source: pure modules never reach up into the vault, the CLI or the
daemon, and `tmem --help` never pays for torch, Whoosh, hnswlib or GitPython."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = "tiered_memory"
SOURCE = Path(__file__).resolve().parent.parent / PACKAGE

PURE_MODULES = [
    "model.note",
    "model.tiers",
    "app.merging",
    "index.fts",
    "index.vectors",
    "index.chunking",
    "index.embeddings",
    "model.redact",
    "model.merge3",
    "index.catalog",
    "config",
    "errors",
]
UPPER_LAYERS = {"storage", "cli", "daemon", "app", "mcp"}
HEAVY = {"torch", "sentence_transformers", "transformers", "whoosh", "hnswlib", "git"}


def _module_path(name: str) -> Path:
    return SOURCE / (name.replace(".", "/") + ".py")


def imported_modules(tree: ast.AST, *, top_level_only: bool = False) -> set[str]:
    """Absolute dotted names a module imports (relative imports resolved against the package).

    With `top_level_only`, imports inside functions, classes and `if TYPE_CHECKING:` blocks are
    left out: those run later, or never.
    """
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = PACKAGE if node.level == 1 else ""
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)  # `from pkg import mod`
        if top_level_only:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                return
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                for child in node.orelse:
                    visit(child)
                return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _parse(name: str) -> ast.Module:
    path = _module_path(name)
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@pytest.mark.parametrize("name", PURE_MODULES)
def test_pure_modules_do_not_import_upper_layers(name: str) -> None:
    if not _module_path(name).exists():
        pytest.skip(f"{PACKAGE}/{name}.py does not exist yet")
    imports = imported_modules(_parse(name))
    bad = sorted(m for m in imports if m.split(".")[0] == PACKAGE and set(m.split(".")[1:2]) & UPPER_LAYERS)
    assert bad == [], f"{name}.py imports {bad}"


def test_the_checker_sees_every_import_form() -> None:
    source = (
        "import tiered_memory.storage.vault\n"
        "from tiered_memory import cli\n"
        "from tiered_memory.app.memory import Memory\n"
        "from . import daemon\n"
        "def f():\n    import torch\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import hnswlib\n"
    )
    every = imported_modules(ast.parse(source))
    assert {
        "tiered_memory.storage.vault",
        "tiered_memory.cli",
        "tiered_memory.app.memory",
        "tiered_memory.daemon",
    } <= every
    assert {"torch", "hnswlib"} <= every
    top = imported_modules(ast.parse(source), top_level_only=True)
    assert "torch" not in top and "hnswlib" not in top
    assert "tiered_memory.storage.vault" in top


def test_cli_has_no_heavy_imports_at_module_top() -> None:
    imports = set()
    for path in (SOURCE / "cli").glob("*.py"):
        imports |= imported_modules(_parse(f"cli.{path.stem}"), top_level_only=True)
    heavy = sorted(m for m in imports if m.split(".")[0] in HEAVY)
    assert heavy == [], f"cli.py imports {heavy} at module top; import them inside the commands"


REPORT_HEAVY = f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {sorted(HEAVY)!r})))\n"


def test_importing_the_cli_loads_no_heavy_module() -> None:
    code = "import sys, json\nimport tiered_memory.cli.main\n" + REPORT_HEAVY
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_help_loads_no_heavy_module() -> None:
    code = (
        "import sys, json\n"
        "from tiered_memory.cli.main import cli\n"
        "try:\n    cli.main(['--help'], standalone_mode=False)\n"
        "except SystemExit:\n    pass\n" + REPORT_HEAVY
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"
