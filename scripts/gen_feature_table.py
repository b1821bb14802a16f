#!/usr/bin/env python3
"""Write docs/architecture.md's "where each feature lives" tables from the declarations.

    .venv/bin/python scripts/gen_feature_table.py           # rewrite the tables in place
    .venv/bin/python scripts/gen_feature_table.py --check   # exit 1 if the doc is stale

The operations come from their `Op`s (app/api: name, contract, `runs`), the commands from the
CLI's table (cli/main.py COMMANDS), so the doc says what the code declares. Only the text between
the two marker lines is written; tests/test_feature_table.py fails when it is stale.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- where each feature lives: written by scripts/gen_feature_table.py, do not edit by hand -->"
END = "<!-- end of the generated tables -->"


def _path(module: str) -> str:
    """`tiered_memory.app.notes` -> `app/notes.py` (a package -> its folder)."""
    relative = module.removeprefix("tiered_memory.").replace(".", "/")
    return f"{relative}/" if (ROOT / "tiered_memory" / relative).is_dir() else f"{relative}.py"


def operations_table() -> list[str]:
    """One row per contract module and implementation module: the operations they carry."""
    from tiered_memory.app import operations

    rows: dict[tuple[str, str], list[str]] = defaultdict(list)
    for contract, op in operations.declared():
        rows[(contract, op.runs.partition(":")[0])].append(f"`{op.name}`")
    lines = ["| operations | contract (`Op`s) | implementation (`runs`) |", "|---|---|---|"]
    for (contract, implementation), names in rows.items():
        lines.append(f"| {', '.join(names)} | `app/api/{contract}.py` | `{_path(implementation)}` |")
    return lines


def commands_table() -> list[str]:
    """One row per door module: the `tmem` commands it defines (second names after a slash)."""
    from tiered_memory.cli import main

    seconds = defaultdict(list)
    for alias, name in main.ALIASES.items():
        seconds[name].append(alias)
    rows: dict[str, list[str]] = defaultdict(list)
    for name, (runs, _help) in main.COMMANDS.items():
        rows[runs.partition(":")[0]].append("/".join(f"`{n}`" for n in [name, *seconds[name]]))
    lines = ["| `tmem` commands | door (`cli/main.py` COMMANDS) |", "|---|---|"]
    lines += [f"| {', '.join(names)} | `{_path(module)}` |" for module, names in sorted(rows.items())]
    return lines


def generated() -> str:
    return "\n".join([BEGIN, "", *operations_table(), "", *commands_table(), "", END])


def rewritten(text: str) -> str:
    """The doc's text with the part between the markers replaced by what the code declares."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{DOC}: the marker lines of the generated tables are missing")
    return text[:start] + generated() + text[end + len(END) :]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the doc is stale, write nothing")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    text = DOC.read_text(encoding="utf-8")
    new = rewritten(text)
    if args.check:
        if new != text:
            print(f"{DOC.relative_to(ROOT)} is stale: run scripts/gen_feature_table.py", file=sys.stderr)
            return 1
        return 0
    if new != text:
        DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
