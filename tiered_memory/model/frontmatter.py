"""Format-preserving frontmatter edits: change a few keys of a note's text and nothing else. Pure: no I/O.

`edit_frontmatter(text, {"status": "completed", "confidence": None})` returns the file's new text.
Every byte outside the changed keys stays as the person wrote it: other keys with their quoting,
flow or block lists, indentation and comments, the key order, the UTF-8 BOM, the line endings
(CRLF or LF) and the body. A note without frontmatter gets a block only when a key is set.

How: PyYAML's composer (libyaml when available: cheap for a typical block) gives every top-level
entry's first and last line; changed entries are re-emitted and spliced in, deleted ones are cut out.
A round-trip YAML library was measured for this job and rejected: ruamel.yaml 0.19 in round-trip mode
re-indents block lists, respaces flow lists (`[a,b]` -> `[a, b]`) and aligns `key:   value`, so
"untouched" keys would still change, and it is slow to import and to parse.
The spliced block is parsed again and must load to exactly the expected mapping; if it does not
(anchors shared between keys, a flow-style top-level mapping, keys YAML reads as non-strings), the
block is re-emitted whole instead: still correct, though untouched keys then lose their formatting.
"""

from __future__ import annotations

__all__ = ["edit_frontmatter"]

import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

import yaml

from tiered_memory.errors import NoteParseError
from tiered_memory.model import yaml_dialect
from tiered_memory.model.note import FM_CLOSE, FM_OPEN
from tiered_memory.model.yaml_dialect import loader

_BOM = "\ufeff"
# YAML's line breaks (1.1, which PyYAML and libyaml count in their marks): CRLF, CR, LF, NEL, LS, PS.
_LINE = re.compile(r"[^\r\n\x85\u2028\u2029]*(?:\r\n|[\r\n\x85\u2028\u2029])|[^\r\n\x85\u2028\u2029]+\Z")
_FIRST_EOL = re.compile(r"\r\n|\n")


def edit_frontmatter(text: str, changes: Mapping[str, Any]) -> str:
    """`text` with these frontmatter keys set (a value of None deletes the key).

    Setting a key to the value it already holds changes nothing, so an edit that changes no value
    returns `text` itself. Raises NoteParseError when the frontmatter cannot be read (no closing
    fence, malformed YAML, not a mapping): tmem never rewrites what it cannot parse.
    """
    opening = FM_OPEN.match(text)
    if opening is None:
        return _add_block(text, changes)
    closing = FM_CLOSE.search(text, opening.end())
    if closing is None:
        raise NoteParseError("frontmatter has no closing ---; fix it by hand before tmem changes it")
    raw = text[opening.end() : closing.start()]
    before, root = _load(raw)
    sets = {k: v for k, v in changes.items() if v is not None and not (k in before and _same(before[k], v))}
    deletes = {k for k, v in changes.items() if v is None and k in before}
    if not sets and not deletes:
        return text
    expected = {k: v for k, v in before.items() if k not in deletes}
    expected.update(sets)
    eol = "\r\n" if text[: opening.end()].endswith("\r\n") else "\n"
    new_raw = _splice(raw, root, sets, deletes, eol)
    if new_raw is None or not _loads_to(new_raw, expected):
        new_raw = _emit(expected, eol, indent=0, flow=False) if expected else ""
    if not new_raw.strip() and before:
        # The edit removed the last key: an empty `---`/`---` pair is noise in a person's note.
        bom = _BOM if text.startswith(_BOM) else ""
        return bom + text[closing.end() :]
    return text[: opening.end()] + new_raw + text[closing.start() :]


def _add_block(text: str, changes: Mapping[str, Any]) -> str:
    sets = {k: v for k, v in changes.items() if v is not None}
    if not sets:
        return text
    bom = _BOM if text.startswith(_BOM) else ""
    body = text[len(bom) :]
    found = _FIRST_EOL.search(body)
    eol = found.group() if found else "\n"
    return f"{bom}---{eol}{_emit(sets, eol, indent=0, flow=False)}---{eol}{body}"


def _load(raw: str) -> tuple[dict[str, Any], yaml.MappingNode | None]:
    if not raw.strip():
        return {}, None
    try:
        data = yaml_dialect.load(raw)  # within the bounds, so composing it again is cheap
    except yaml_dialect.YamlTooLarge as exc:
        raise NoteParseError(f"frontmatter ignored ({exc}); fix it by hand before tmem changes it") from None
    except yaml_dialect.YamlError:
        raise NoteParseError("malformed YAML frontmatter; fix it by hand before tmem changes it") from None
    # Composed apart from the load: building the value folds merge keys (`<<`) into the nodes.
    root = yaml.compose(raw, Loader=loader())  # noqa: S506 - SafeLoader subclass
    if data is None:
        return {}, None
    if not isinstance(data, dict) or not isinstance(root, yaml.MappingNode):
        raise NoteParseError("frontmatter is not a mapping; fix it by hand before tmem changes it")
    return {str(k): v for k, v in data.items()}, root


def _splice(
    raw: str, root: yaml.MappingNode | None, sets: dict[str, Any], deletes: set[str], eol: str
) -> str | None:
    """The block with changed entries replaced, deleted ones cut and new ones appended; None when
    the block's shape does not allow a line-exact edit."""
    lines = _LINE.findall(raw)
    spans: list[tuple[str, int, int, yaml.Node]] = []  # key, first line, line after the last, value
    indent = 0
    if root is not None:
        if root.flow_style:
            return None
        for key_node, value_node in root.value:
            if not isinstance(key_node, yaml.ScalarNode):
                return None
            first = key_node.start_mark.line
            indent = key_node.start_mark.column
            if first >= len(lines) or lines[first][:indent].strip():
                return None  # an explicit `? key`, or a key sharing its line with something else
            last = max(first, _last_line(value_node))
            while last > first and not lines[last].strip():
                last -= 1  # blank lines a block scalar swallowed stay between the entries
            spans.append((str(key_node.value), first, last + 1, value_node))
    for (_k, _f, end, _v), (_k2, start, _e, _v2) in zip(spans, spans[1:], strict=False):
        if end > start:
            return None
    last_of = {key: i for i, (key, *_rest) in enumerate(spans)}
    out: list[str] = []
    cursor = 0
    for i, (key, first, end, value_node) in enumerate(spans):
        out.extend(lines[cursor:first])
        cursor = end
        if key in deletes or (key in sets and last_of[key] != i):
            continue  # deleted, or an earlier duplicate of a key being set (YAML keeps the last)
        if key in sets:
            # A flow list stays one; the entry itself is never a flow mapping (`{a: 1}`).
            flow = (
                isinstance(value_node, yaml.CollectionNode)
                and bool(value_node.flow_style)
                and isinstance(sets[key], (list, tuple, dict))
            )
            out.append(_emit({key: sets[key]}, eol, indent=indent, flow=flow))
        else:
            out.extend(lines[first:end])
    out.extend(lines[cursor:])
    missing = {k: v for k, v in sets.items() if k not in last_of}
    if missing:
        if out and not out[-1].endswith(("\n", "\r")):
            out[-1] += eol
        out.append(_emit(missing, eol, indent=indent, flow=False))
    return "".join(out)


def _last_line(node: yaml.Node) -> int:
    """The last line holding any of this value's text (comments after it are not part of it)."""
    if isinstance(node, yaml.ScalarNode) or (isinstance(node, yaml.CollectionNode) and node.flow_style):
        end = node.end_mark
        # A block scalar's end mark sits at the start of the line after it.
        return end.line - 1 if end.column == 0 and end.line > node.start_mark.line else end.line
    children: list[yaml.Node] = []
    if isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    elif isinstance(node, yaml.MappingNode):
        children = [part for pair in node.value for part in pair]
    if not children:
        return int(node.start_mark.line)
    return max(_last_line(child) for child in children)


def _emit(mapping: dict[str, Any], eol: str, *, indent: int, flow: bool) -> str:
    """YAML for these entries, in render()'s style; a list that was a flow list stays one."""
    dumped = yaml_dialect.dump(mapping, flow=flow)
    if dumped.endswith("\n...\n"):  # PyYAML's document end after a `|+` scalar: the fence ends it too
        dumped = dumped[:-4]
    if indent:
        dumped = "".join(" " * indent + line for line in dumped.splitlines(keepends=True))
    return dumped.replace("\n", eol) if eol != "\n" else dumped


def _loads_to(raw: str, expected: dict[str, Any]) -> bool:
    try:
        data = yaml_dialect.load(raw) if raw.strip() else {}
    except yaml_dialect.YamlError:
        return False
    data = data or {}
    return isinstance(data, dict) and _same({str(k): v for k, v in data.items()}, expected)


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same YAML type: 1, 1.0 and True are different frontmatter values."""
    if isinstance(a, datetime) or isinstance(b, datetime):
        return type(a) is type(b) and a == b and a.tzinfo == b.tzinfo
    if isinstance(a, date) or isinstance(b, date):
        return type(a) is type(b) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if type(a) is not type(b):
        return False
    return bool(a == b) or (a != a and b != b)  # NaN equals NaN here
