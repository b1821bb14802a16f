"""docs/architecture.md's "where each feature lives" tables are written from the declarations (the
Ops of app/api and the CLI's COMMANDS) by scripts/gen_feature_table.py: a stale doc fails here."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gen_feature_table.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_feature_table", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_architecture_doc_lists_every_operation_and_command_as_declared() -> None:
    script = _script()
    text = script.DOC.read_text(encoding="utf-8")
    assert script.rewritten(text) == text, "docs/architecture.md is stale: run scripts/gen_feature_table.py"
    table = text[text.index(script.BEGIN) : text.index(script.END)]
    assert "| `remember`, `show`, `list`," in table and "`app/notes.py`" in table
    assert "| `add`/`remember`, `show`, `list`," in table


def test_the_script_mends_a_stale_doc_and_its_check_passes_on_this_one(tmp_path: Path) -> None:
    script = _script()
    text = script.DOC.read_text(encoding="utf-8")
    stale = text.replace("| `search` | `app/api/recall.py` | `app/recall.py` |\n", "")
    assert stale != text
    assert script.rewritten(stale) == text
    proc = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
