"""The operations table, and what a keyword search without a daemon loads."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tiered_memory.app import api, operations
from tiered_memory.daemon import client
from tiered_memory.errors import BadInput


@pytest.mark.parametrize("name", sorted(operations.every_op()))
def test_every_operation_resolves_to_its_function(name: str) -> None:
    """Each Op names its function as "tiered_memory.app.<module>:<function>": a string a reader
    (or a tool) can follow to the code, checked here to resolve to a function of that name."""
    op = operations.every_op()[name]
    module, _, function_name = op.runs.partition(":")
    assert module.startswith("tiered_memory.app.") and ".api." not in module, op.runs
    function = getattr(importlib.import_module(module), function_name)
    assert callable(function) and function.__name__ == function_name
    if op.needs_vault:
        found, bounded = operations.find(name)
        assert found is op and callable(bounded)
    else:
        found, plain = operations.find_vaultless(name)
        assert found is op and plain is function
        with pytest.raises(BadInput, match="unknown operation"):
            operations.find(name)


def test_each_operation_is_declared_once_and_found_from_its_declaration() -> None:
    """The Ops of app/api are the whole table: every `NAME = Op(...)` in those modules, read from
    the source, is an operation `find` knows, under the name it declares, and no name is twice."""
    constants = {}
    for path in sorted(Path(api.__file__).parent.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            call = node.value if isinstance(node, ast.Assign) else None
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "Op":
                name = call.args[0]
                assert isinstance(name, ast.Constant) and name.value not in constants, ast.unparse(node)
                constants[name.value] = (path.stem, node.targets[0].id)  # type: ignore[attr-defined]
    ops = operations.every_op()
    assert sorted(constants) == sorted(ops)
    for name, (module, constant) in constants.items():
        assert getattr(importlib.import_module(f"tiered_memory.app.api.{module}"), constant) is ops[name]
    assert {op.name for op in ops.values() if not op.needs_vault} == {
        "init", "config", "config_approve", "restore_backup",
    }  # fmt: skip
    assert operations.every_op()["ingest"].unbounded == ("text",)


def test_an_unknown_operation_is_one_clear_error() -> None:
    with pytest.raises(BadInput, match="unknown operation 'nope'"):
        operations.find("nope")


def test_keyword_search_without_a_daemon_loads_no_vectors_and_no_other_operations(
    vault_path: Path,
) -> None:
    note = vault_path / "memory" / "long-term" / "zebra.md"
    note.write_text("# Zebra crossing\n\nThe zebra crossing near the station was repainted.\n")
    code = (
        "import json, sys\n"
        "from tiered_memory.cli.main import cli\n"
        "try:\n"
        f"    cli(['--vault', {str(vault_path)!r}, 'search', '--mode', 'keyword', '--json', 'zebra'])\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "memory/long-term/zebra.md" in proc.stdout  # it did search, and found the note
    loaded = set(json.loads(proc.stderr.strip().splitlines()[-1]))
    heavy = {"torch", "sentence_transformers", "transformers", "onnxruntime", "hnswlib", "git", "mcp"}
    assert sorted(m for m in loaded if m.split(".")[0] in heavy) == []
    others = ("sessions", "syncing", "maintain", "importers", "encryption", "export", "projects", "conflicts")
    assert sorted(m for m in loaded if m.startswith("tiered_memory.app.") and m.split(".")[2] in others) == []
    assert not client.socket_path(vault_path).exists()  # a keyword search starts no daemon


def _modules_of_a_keyword_search(vault_path: Path, query: str) -> tuple[set[str], int]:
    """The modules a keyword search in a fresh process loaded, and how many of the patterns that
    are compiled on first use it compiled (redaction's and chunking's, which a search does not
    need, and the tokenizer's Unicode ones, which ASCII text does not need)."""
    code = (
        "import json, sys\n"
        "from tiered_memory.cli.main import cli\n"
        "try:\n"
        f"    cli(['--vault', {str(vault_path)!r}, 'search', '--mode', 'keyword', '--json', {query!r}])\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        "from tiered_memory.model.lazy_re import LazyPattern\n"
        "ours = [m for n, m in list(sys.modules.items()) if n.startswith('tiered_memory.')]\n"
        "lazy = [v for m in ours for v in vars(m).values() if isinstance(v, LazyPattern)]\n"
        "chunking = sys.modules.get('tiered_memory.index.chunking')\n"
        "compiled = sum(p._compiled is not None for p in lazy)\n"
        "compiled += chunking._patterns.cache_info().currsize if chunking else 0\n"
        "print(json.dumps([sorted(sys.modules), compiled]), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "zebra.md" in proc.stdout
    loaded, compiled = json.loads(proc.stderr.strip().splitlines()[-1])
    return set(loaded), compiled


def test_a_repeat_keyword_search_loads_no_validation_no_yaml_and_no_other_records(vault_path: Path) -> None:
    """What a search on an unchanged vault must not pay for at start-up: pydantic and its bounds
    (the config was checked by the first run), PyYAML (no note changed, and a hit's passage is
    read without its frontmatter), numpy (keyword scores are added up in plain Python), the
    writing side and its patterns, and the records of operations other than search."""
    (vault_path / "memory" / "long-term" / "zebra.md").write_text(
        "# Zebra\n\nThe zebra crossing was repainted.\n"
    )
    first, _ = _modules_of_a_keyword_search(vault_path, "zebra")
    assert "yaml" in first and "pydantic" in first  # the first run read the notes and checked tmem.yaml
    # This vault was made without `.tmem/`, where the checked config is kept: the first run made it.
    _modules_of_a_keyword_search(vault_path, "zebra")
    again, compiled = _modules_of_a_keyword_search(vault_path, "zebra")
    unwanted = {"pydantic", "annotated_types", "yaml", "socket", "numpy"}
    assert sorted(m for m in again if m.split(".")[0] in unwanted) == []
    records = ("notes", "agents", "lifecycle", "projects", "sync", "sessions")
    assert (
        sorted(m for m in again if m.startswith("tiered_memory.app.api.") and m.split(".")[3] in records)
        == []
    )
    assert "tiered_memory.app.entities" not in again and "tiered_memory.cli.sessions" not in again
    # The writing side, the embedding side and the in-memory index of encrypted notes: an
    # unchanged vault without encryption needs none of them. Nor whoosh's searcher and queries.
    unused = (
        "model.redact", "storage.transaction", "index.graph", "index.identity", "index.fts_writer",
        "index.vectors", "index.embeddings", "index.in_memory", "app.api.session_list",
    )  # fmt: skip
    assert sorted(m for m in unused if f"tiered_memory.{m}" in again) == []
    assert "whoosh.searching" not in again and "whoosh.query" not in again
    assert "tiered_memory.index.fts" in again  # it did search
    assert compiled == 0
