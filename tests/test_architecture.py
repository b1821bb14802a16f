"""The layers, checked on the source of every module (docs/architecture.md draws them).

Rules are per package, so a new module is checked the day it is written:

- `model` holds pure values and rules: it imports nothing else of ours but `errors`.
- `storage` and `index` never reach up into `app`, `sync`, `daemon`, `cli`, `mcp` or `present`.
- `app` never imports the doors (`cli`, `mcp`), the `daemon` or `present`.
- the doors (`cli`, `mcp`) see the application only through `app.api` records, `backend` and
  `present`: never `storage`, `index`, `sync` or an `app` implementation.
- every kind of import is an edge: at module top, inside a function, and under `if TYPE_CHECKING:`
  (an import for the type checker alone still says one module knows another, and is how a cycle
  or an arrow up the layers hides).
- no import cycle anywhere in the package, and imports of our own modules sit at module top except
  the lazy ones named in LAZY_SEAMS, each for a stated reason (speed: `backend.py` loads the
  application only when no daemon answers, and a search in a fresh process must not pay for loading
  the writing side).
- the one way tmem runs git is `storage/git.py`: no other module imports `subprocess` to run git
  (SUBPROCESS_USERS names the others that start processes, and why), and no other module names the
  `git` program in a command line.
- `model` does no I/O: no file opened, read, written, listed or stat'ed, no process started.
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
# The imports of ours made inside a function, kept there for speed: importer -> (the modules it
# loads late, why). Every other import of ours sits at module top. An entry that no longer matches
# an import fails too, so the list says what the code does.
LAZY_SEAMS: dict[str, tuple[set[str], str]] = {
    "backend": (
        {
            "app.local",
            "app.operations",
            "config",
            "daemon.doctor",
            "daemon.loop",
            "index.scan_ahead",
            "index.scan_mark",
            "model.folders",
            "model.layout",
            "model.merge_driver",
            "storage.crypto",
            "sync.merge_labels",
        },
        "the application, only when no daemon answers; the daemon, the doctor and git's merge "
        "driver only for the command that runs them (each costs a search the daemon answers ~0.25 s)",
    ),
    "app.memory": (
        {"index.embeddings", "index.multilingual", "model.redact", "storage.transaction"},
        "the writing side (transactions, redaction) and the embedder, which a search never uses",
    ),
    "app.sealed": (
        {"index.embeddings", "index.in_memory"},
        "the in-memory index and its embedder, for a vault that holds encrypted notes",
    ),
    "index.indexer": (
        {
            "index.chunking",
            "index.cjk_vectors",
            "index.embeddings",
            "index.fts_writer",
            "index.graph",
            "index.identity",
            "index.vectors",
            "index.written",
            "model.note_dates",
            "model.privacy",
        },
        "the index writers, the link graph and the embedding side: a search on an unchanged vault "
        "uses none of them",
    ),
    "cli.search": ({"app.api.session_list"}, "the session records, for `--recent` only"),
    "cli.options": (
        {"config"},
        "the vault's settings (pydantic), only for a text past the default index.max_file_mb",
    ),
    "cli.mcp": (
        {"mcp.front", "mcp.server"},
        "the MCP SDK, for `tmem mcp` only, and the front that answers the handshake before it loads",
    ),
}
# Our packages that start processes other than git, and why. Only `storage.git` runs git.
GIT_RUNNER = "storage.git"
SUBPROCESS_USERS = {
    GIT_RUNNER: "the one way tmem runs git",
    "daemon.client": "starts the vault's daemon (`tmem daemon start`, autostart)",
    "daemon.schedule": "asks crontab or systemctl to install the scheduled maintenance",
    "index.fts_writer": "the child process that writes a large build's full-text index",
}
# A door may start another door's server: `tmem mcp` is the command that runs the MCP server.
DOOR_STARTS = {("cli.mcp", "mcp.server"), ("cli.mcp", "mcp.front")}


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
    `app`. Imports under `if TYPE_CHECKING:` count as at module top: they never run, but they are
    an edge all the same (the module knows the other one's names).
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
    if mine == theirs or (importer, imported) in DOOR_STARTS:
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
    assert ("daemon.loop", True) in found  # for the type checker alone, and still an edge
    assert _forbidden("cli.notes", "app.notes") and not _forbidden("cli.notes", "app.api.notes")
    assert _forbidden("model.note", "storage.vault") and not _forbidden("app.notes", "model.note")
    assert _forbidden("model.tiers", "config") and _forbidden("cli.notes", "mcp.server")


@pytest.mark.parametrize("module", [m for m in modules() if m])
def test_each_module_imports_only_what_its_layer_may(module: str) -> None:
    bad = sorted({name for name, _top in imports_of(_tree(module), module) if _forbidden(module, name)})
    assert bad == [], f"{module} imports {bad}, which its layer must not (docs/architecture.md)"


@pytest.mark.parametrize("module", [m for m in modules() if m])
def test_our_imports_sit_at_module_top(module: str) -> None:
    late = {name for name, top in imports_of(_tree(module), module) if not top}
    allowed, _why = LAZY_SEAMS.get(module, (set(), ""))
    assert sorted(late - allowed) == [], (
        f"{module} imports {sorted(late - allowed)} inside a function: move them to the top "
        "(or name them in LAZY_SEAMS with the reason)"
    )
    assert sorted(allowed - late) == [], (
        f"LAZY_SEAMS names {sorted(allowed - late)} for {module}, which it no longer loads late"
    )


def test_lazy_seams_name_modules_that_exist() -> None:
    known = set(modules())
    assert sorted(m for m in LAZY_SEAMS if m not in known) == []
    assert all(why for _names, why in LAZY_SEAMS.values())
    for importer, imported in DOOR_STARTS:  # each exception to the layers is still made
        assert imported in {name for name, _top in imports_of(_tree(importer), importer)}


def _graph() -> dict[str, set[str]]:
    """Each module's imports of ours: at module top, inside functions and for the type checker."""
    graph: dict[str, set[str]] = {}
    for module in modules():
        if not module:
            continue
        graph[module] = {name for name, _top in imports_of(_tree(module), module) if name and name != module}
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


def test_a_cycle_through_the_type_checker_or_a_function_is_a_cycle() -> None:
    source = {
        "daemon.loop": "from tiered_memory.daemon import jobs\n",
        "daemon.jobs": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tiered_memory.daemon import protocol\n",
        "daemon.protocol": "def f():\n    from tiered_memory.daemon.loop import Daemon\n",
    }
    graph = {m: {name for name, _top in imports_of(ast.parse(text), m)} for m, text in source.items()}
    assert _cycles(graph) == [["daemon.jobs", "daemon.loop", "daemon.protocol"]]


def test_the_daemons_parts_reach_it_through_their_protocols() -> None:
    """jobs, protocol, intake and embedding say what they need of the daemon (a Protocol of their
    own) and never import the loop, even for the type checker: the loop owns them."""
    parts = [m for m in modules() if m.startswith("daemon.") and m != "daemon.loop"]
    reaching = sorted(m for m in parts if "daemon.loop" in {name for name, _top in imports_of(_tree(m), m)})
    assert reaching == []


# ---- the one way tmem runs git -----------------------------------------------------------------


def _imports_module(tree: ast.AST, name: str) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == name for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == name:
            return True
    return False


def _names_git_program(tree: ast.AST) -> bool:
    """A command line whose program is `git`: ["git", ...] or ("git", ...)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and first.value == "git":
                return True
    return False


def test_the_git_rule_sees_each_form() -> None:
    assert _imports_module(ast.parse("def f():\n    import subprocess\n"), "subprocess")
    assert _imports_module(ast.parse("from subprocess import run\n"), "subprocess")
    assert not _imports_module(ast.parse("import subprocessing\n"), "subprocess")
    assert _names_git_program(ast.parse('run(["git", "log"])\n'))
    assert _names_git_program(ast.parse('cmd = ("git", "-C", root)\n'))
    assert not _names_git_program(ast.parse('names = [".git", "git"]\n'))


@pytest.mark.parametrize("module", [m for m in modules() if m])
def test_only_the_git_runner_runs_git(module: str) -> None:
    tree = _tree(module)
    if module != GIT_RUNNER:
        assert not _names_git_program(tree), f"{module} runs git itself: go through storage/git.py"
    if module not in SUBPROCESS_USERS:
        assert not _imports_module(tree, "subprocess"), (
            f"{module} imports subprocess: run git through storage/git.py (or name the module in "
            "SUBPROCESS_USERS with the process it starts)"
        )


def test_subprocess_users_exist_and_start_processes() -> None:
    for module in SUBPROCESS_USERS:
        assert _imports_module(_tree(module), "subprocess"), f"{module} no longer starts a process"


# ---- model/ is pure ------------------------------------------------------------------------------

# Modules whose import alone means I/O (files, processes, sockets, the file system's names).
IO_MODULES = {"subprocess", "shutil", "tempfile", "socket", "glob", "io", "fcntl", "sqlite3", "mmap"}
# Path methods that touch the file system (PurePath has none of them).
IO_METHODS = {
    "read_text", "write_text", "read_bytes", "write_bytes", "open", "unlink", "mkdir", "rmdir",
    "touch", "iterdir", "glob", "rglob", "exists", "is_file", "is_dir", "is_symlink", "stat",
    "lstat", "chmod", "rename", "resolve", "readlink", "symlink_to", "hardlink_to", "samefile",
}  # fmt: skip
# What of `os` a pure module may use: randomness for a new nonce, and constants.
OS_PURE = {"urandom", "sep", "linesep", "fsencode", "fsdecode"}


def io_calls(tree: ast.AST) -> list[str]:
    """The I/O a module's source does: `open(...)`, file-system methods, `os` calls, I/O modules."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in {"open", "print", "input"}:
                found.append(f"{func.id}()")
            elif isinstance(func, ast.Attribute) and func.attr in IO_METHODS:
                found.append(f".{func.attr}()")
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
            and node.attr not in OS_PURE
        ):
            found.append(f"os.{node.attr}")
        if isinstance(node, ast.ImportFrom) and not node.level:
            if node.module == "os" and any(a.name not in OS_PURE for a in node.names):
                found.append("from os import ...")
            if node.module == "pathlib" and any(not a.name.startswith("Pure") for a in node.names):
                found.append("pathlib.Path")
        for name in IO_MODULES:
            if isinstance(node, (ast.Import, ast.ImportFrom)) and _imports_module(node, name):
                found.append(f"import {name}")
    return found


def test_the_io_rule_sees_each_form() -> None:
    source = (
        "import os\nimport shutil\nfrom pathlib import Path, PurePosixPath\n"
        "def f(p):\n"
        "    with open(p, 'rb') as h:\n        h.read()\n"
        "    p.write_text('x')\n    os.replace(p, p)\n    return os.urandom(4)\n"
    )
    found = io_calls(ast.parse(source))
    for expected in ("open()", ".write_text()", "os.replace", "import shutil", "pathlib.Path"):
        assert expected in found
    assert "os.urandom" not in found
    pure = "from pathlib import PurePosixPath\ndef g(s):\n    return s.replace('a', 'b').split()\n"
    assert io_calls(ast.parse(pure)) == []


@pytest.mark.parametrize("module", [m for m in modules() if m.startswith("model.") or m == "model"])
def test_model_does_no_io(module: str) -> None:
    assert io_calls(_tree(module)) == [], f"{module} does I/O: model/ holds pure values and rules"


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


# ---- the doors render with present ------------------------------------------------------------

# A door parses its input, runs an operation and writes what `present` made of the result: every
# line a person reads is composed in present/, so it is found, tested and changed in one place. The
# calls through which a cli module writes to the person, and which of their arguments is the text:
# `emit`'s third (`text`), the first of the others.
OUTPUT_FUNCTIONS = {"emit": 2, "warn": 0, "fail": 0, "print": 0}
OUTPUT_METHODS = {("click", "echo"), ("click", "secho"), ("click", "confirm"), ("click", "prompt")}
OUTPUT_STREAMS = {"stdout", "stderr"}  # sys.stdout.write(...), sys.stderr.write(...)
TEXT_KEYWORDS = {"text", "message"}
# String methods that compose text out of parts.
COMPOSING_METHODS = {"format", "format_map", "join"}
# The cli modules that may still compose what they write, each for its reason. An entry that no
# longer composes anything fails too, so the list says what the code does.
DOOR_TEXT_ALLOWED: dict[str, str] = {
    "cli.edge": "the error edge: an error of the hierarchy becomes its one line on stderr "
    "(`tmem: <message>`), the translation every door shares, not a rendering of a result",
}


def _present_names(tree: ast.AST) -> set[str]:
    """The names a module binds to present/: its functions and its modules."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module == f"{PACKAGE}.present" or node.module.startswith(f"{PACKAGE}.present."):
                names.update(alias.asname or alias.name for alias in node.names)
    return names


def _output_text(call: ast.Call) -> ast.expr | None:
    """The text argument of a call that writes to the person; None for any other call."""
    func = call.func
    index: int | None = None
    if isinstance(func, ast.Name) and func.id in OUTPUT_FUNCTIONS:
        index = OUTPUT_FUNCTIONS[func.id]
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if (func.value.id, func.attr) in OUTPUT_METHODS or (func.value.id, func.attr) == ("console", "print"):
            index = 0
    elif (
        isinstance(func, ast.Attribute)
        and func.attr == "write"
        and isinstance(func.value, ast.Attribute)
        and func.value.attr in OUTPUT_STREAMS
        and isinstance(func.value.value, ast.Name)
        and func.value.value.id == "sys"
    ):
        index = 0
    if index is None:
        return None
    if len(call.args) > index:
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg in TEXT_KEYWORDS), None)


def _bindings(scope: ast.AST, name: str) -> list[ast.expr]:
    """What `name` is bound to in a function: assigned values, and a nested function's returns."""
    found: list[ast.expr] = []
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            found.append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            if node.target.id == name and node.value is not None:
                found.append(node.value)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found += [r.value for r in ast.walk(node) if isinstance(r, ast.Return) and r.value is not None]
    return found


def _composed(node: ast.AST, scope: ast.AST, present: set[str], seen: set[str] | None = None) -> str | None:
    """How `node`, written to the person, was composed in the door itself (None: by present/, or
    text an operation returned as it is)."""
    seen = set() if seen is None else seen
    if isinstance(node, ast.JoinedStr):
        return "an f-string"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return f"the literal {node.value!r}"
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return "text joined with + or %"
    if isinstance(node, ast.Call):
        func = node.func
        base = func.value if isinstance(func, ast.Attribute) else func
        if isinstance(base, ast.Name) and base.id in present:
            return None  # present/ made it
        if isinstance(func, ast.Attribute) and func.attr in COMPOSING_METHODS:
            return f".{func.attr}()"
        parts: list[ast.AST] = [*node.args, *(k.value for k in node.keywords)]
    elif isinstance(node, ast.Lambda):
        parts = [node.body]
    elif isinstance(node, ast.IfExp):
        parts = [node.body, node.orelse]
    elif isinstance(node, ast.BoolOp):
        parts = list(node.values)
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        parts = list(node.elts)
    elif isinstance(node, ast.Starred):
        parts = [node.value]
    elif isinstance(node, ast.Name) and node.id not in seen:
        seen.add(node.id)
        parts = list(_bindings(scope, node.id))
    else:
        return None
    return next((why for part in parts if (why := _composed(part, scope, present, seen))), None)


def door_text_problems(tree: ast.Module) -> list[str]:
    """Where a cli module composes text itself: what it writes, and `_render*`/`_format*` helpers."""
    present = _present_names(tree)
    problems: list[str] = []

    def visit(node: ast.AST, scope: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith(("_render", "_format")):
                problems.append(f"line {node.lineno}: defines {node.name}(), a rendering: put it in present/")
            if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                scope = node  # a nested function's names are its enclosing function's
        if isinstance(node, ast.Call) and (text := _output_text(node)) is not None:
            if (why := _composed(text, scope, present)) is not None:
                problems.append(f"line {node.lineno}: writes {why} composed here")
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(tree, tree)
    return problems


def test_the_door_text_rule_sees_each_form() -> None:
    def problems(source: str) -> list[str]:
        return door_text_problems(ast.parse(source))

    header = "import click, sys\nfrom tiered_memory.present import notes as show\nfrom tiered_memory.present.links import links_text\n"
    composed = [
        "def f(r, j):\n    emit(r.to_dict(), j, f'added {r.id}')\n",
        "def f(r, j):\n    emit(r.to_dict(), j, text='added ' + r.id)\n",
        "def f(r, j):\n    emit(r.to_dict(), j, lambda: '%s' % r.id)\n",
        "def f(r, j):\n    lines = [f'{p}' for p in r.paths]\n    emit(r.to_dict(), j, '\\n'.join(lines))\n",
        "def f(r, j):\n    text = 'done {}'.format(r.id)\n    emit(r.to_dict(), j, text)\n",
        "def f(r, j):\n    def text():\n        return 'x' + r.id\n    emit(r.to_dict(), j, text)\n",
        "def f(r):\n    click.echo('locked' if r.forgotten else 'was not unlocked')\n",
        "def f(r):\n    click.echo(r.text.rstrip('\\n'), err=True)\n",
        "def f(r):\n    sys.stdout.write(f'{r.text}')\n",
        "def f(r):\n    click.confirm(f'Forget {r.title}?', abort=True)\n",
        "def f(r):\n    warn(f'{r.path}: {r.warning}')\n",
        "def _render_status(s):\n    return s\n",
    ]
    for source in composed:
        assert len(problems(header + source)) == 1, source
    rendered = [
        "def f(r, j):\n    emit(r.to_dict(), j, show.note_text(r))\n",
        "def f(r, j):\n    emit(r.to_dict(), j, lambda: links_text(r, 'links'))\n",
        "def f(r):\n    text = show.note_text(r)\n    click.echo(text, err=True)\n",
        "def f(r):\n    sys.stdout.write(r.text)\n    click.echo(r.text, nl=False)\n",
        "def f(r, out):\n    out.write(f'{r}')\n    x = f'{r}'\n",
    ]
    for source in rendered:
        assert problems(header + source) == [], source


@pytest.mark.parametrize("module", [m for m in modules() if m.startswith("cli.")])
def test_the_doors_write_what_present_renders(module: str) -> None:
    problems = door_text_problems(_tree(module))
    if module in DOOR_TEXT_ALLOWED:
        assert problems, f"DOOR_TEXT_ALLOWED names {module}, which composes no text any more"
        return
    assert problems == [], (
        f"{module} composes the text it writes: render it in present/ (a function of the result "
        f"that returns the text) and write what it returns: {problems}"
    )


def test_door_text_allowed_names_cli_modules_with_reasons() -> None:
    known = set(modules())
    assert sorted(m for m in DOOR_TEXT_ALLOWED if m not in known or not m.startswith("cli.")) == []
    assert all(DOOR_TEXT_ALLOWED.values())


# What `--json` prints is a result's data: a record's `to_dict()` or what a present/ function made
# of it, so each shape is declared once, beside the record, and the MCP server and the socket can
# give the same. The data a door hands `emit` (its first argument), or writes through `dumps` /
# `json.dumps`, is never a dict, list or set built in the door. An entry that no longer builds
# any fails too.
DOOR_DATA_ALLOWED: dict[str, str] = {}
DUMPING_FUNCTIONS = {"dumps"}  # present.dumps and json.dumps


def _output_data(call: ast.Call) -> ast.expr | None:
    """The data argument of a call that writes JSON to the person: `emit`'s first, `dumps`'s."""
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if name == "emit" or name in DUMPING_FUNCTIONS:
        if call.args:
            return call.args[0]
        return next((k.value for k in call.keywords if k.arg in ("data", "obj", "value")), None)
    return None


def _built(node: ast.AST, scope: ast.AST, seen: set[str] | None = None) -> str | None:
    """How `node`, written as JSON, was built in the door itself (None: it came from a call)."""
    seen = set() if seen is None else seen
    if isinstance(node, (ast.Dict, ast.DictComp)):
        return "a dict"
    if isinstance(node, (ast.List, ast.ListComp, ast.Tuple, ast.GeneratorExp)):
        return "a list"
    if isinstance(node, (ast.Set, ast.SetComp)):
        return "a set"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("dict", "list"):
        return f"a {node.func.id}"
    if isinstance(node, ast.IfExp):
        parts: list[ast.AST] = [node.body, node.orelse]
    elif isinstance(node, ast.BoolOp):
        parts = list(node.values)
    elif isinstance(node, ast.Name) and node.id not in seen:
        seen.add(node.id)
        parts = list(_bindings(scope, node.id))
    else:
        return None
    return next((why for part in parts if (why := _built(part, scope, seen))), None)


def door_data_problems(tree: ast.Module) -> list[str]:
    """Where a cli module builds the JSON it writes instead of taking a record's or present/'s."""
    problems: list[str] = []

    def visit(node: ast.AST, scope: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not isinstance(
            scope, (ast.FunctionDef, ast.AsyncFunctionDef)
        ):
            scope = node
        if isinstance(node, ast.Call) and (data := _output_data(node)) is not None:
            if (why := _built(data, scope)) is not None:
                problems.append(f"line {node.lineno}: writes {why} built here as JSON")
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(tree, tree)
    return problems


def test_the_door_data_rule_sees_each_form() -> None:
    def problems(source: str) -> list[str]:
        return door_data_problems(ast.parse(source))

    header = "import click, json\nfrom tiered_memory.present import dumps\nfrom tiered_memory.present import notes as show\n"
    built = [
        "def f(r, j):\n    emit({'key': r.key, 'value': r.value}, j, show.t(r))\n",
        "def f(r, j):\n    emit({'running': True, **r}, j, show.t(r))\n",
        "def f(r, j):\n    data = {'pid': r.pid}\n    emit(data, j, show.t(r))\n",
        "def f(r, j):\n    data: dict = {'pid': r.pid}\n    emit(data, j, show.t(r))\n",
        "def f(r, j):\n    emit([h.to_dict() for h in r.hits], j, show.t(r))\n",
        "def f(r, j):\n    emit({k: v for k, v in r}, j, show.t(r))\n",
        "def f(r, j):\n    emit(dict(pid=r.pid), j, show.t(r))\n",
        "def f(r, j):\n    emit(r.to_dict() if j else {'pid': 1}, j, show.t(r))\n",
        "def f(r):\n    click.echo(dumps({'reindexed': r}))\n",
        "def f(r):\n    click.echo(json.dumps({'path': r.path}))\n",
        "def f(r):\n    out = [r.path]\n    click.echo(json.dumps(out, indent=2))\n",
    ]
    for source in built:
        assert len(problems(header + source)) == 1, source
    given = [
        "def f(r, j):\n    emit(r.to_dict(), j, show.t(r))\n",
        "def f(r, j):\n    emit(show.note_list_json(r), j, lambda: show.t(r))\n",
        "def f(r, j):\n    data = r.to_dict()\n    emit(data, j, show.t(r))\n",
        "def f(r):\n    click.echo(dumps(r.to_dict()))\n",
        "def f(r, j):\n    found = sched.installed(r)\n    emit(found, j, show.t(found))\n",
        "def f(r, j):\n    paths = [p for p in r]\n    emit(show.paths_json(paths), j, show.t(paths))\n",
    ]
    for source in given:
        assert problems(header + source) == [], source


@pytest.mark.parametrize("module", [m for m in modules() if m.startswith("cli.")])
def test_the_doors_write_the_data_records_give(module: str) -> None:
    problems = door_data_problems(_tree(module))
    if module in DOOR_DATA_ALLOWED:
        assert problems, f"DOOR_DATA_ALLOWED names {module}, which builds no JSON any more"
        return
    assert problems == [], (
        f"{module} builds the JSON it writes: give the result a record with `to_dict()` (or a "
        f"present/ function of the result) and write what it returns: {problems}"
    )


def test_door_data_allowed_names_cli_modules_with_reasons() -> None:
    known = set(modules())
    assert sorted(m for m in DOOR_DATA_ALLOWED if m not in known or not m.startswith("cli.")) == []
    assert all(DOOR_DATA_ALLOWED.values())


@pytest.mark.parametrize("module", [m for m in modules() if m == "present" or m.startswith("present.")])
def test_present_is_pure(module: str) -> None:
    """present/ turns values into text: no I/O, and no click (the doors write what it returns)."""
    tree = _tree(module)
    assert io_calls(tree) == [], f"{module} does I/O: present/ only renders"
    for name in ("click", "rich", "sys"):
        assert not _imports_module(tree, name), (
            f"{module} imports {name}: present/ returns text, the doors write it"
        )
