"""The frontmatter keys tmem knows, what each may hold, and how a value typed as `KEY=VALUE` reads.

One table (`KNOWN`) says, for each known key, what it accepts; `checked` applies it to the fields
an operation is asked to set (`update`, through every door: the CLI's `--set`, MCP, the daemon),
so a bad value is refused in one line naming the key and what is allowed, before anything is
written. Keys the table does not name are a person's own and take any value.

The rules are those the note model reads the keys by (`model.note`): importance and confidence
are numbers from 0 to 1, the category and status are words of fixed lists, tags and entities
are lists (a string is split at its commas, as a note's `tags: a, b` is read), aliases a list
(one string is one alias), dates are dates. Values are normalised to what the model reads back
unchanged (a category in lower case, a date string as a date), so the file holds a value, not
text that looks like one.

Plain checks rather than pydantic: its lax coercions (True as 1.0, 5 as a time in 1970, a date
string as midnight) are what a check of typed values must refuse.
"""

from __future__ import annotations

__all__ = [
    "DATE",
    "FIXED",
    "Field",
    "KNOWN",
    "MAX_KEY_CHARS",
    "MAX_VALUE_CHARS",
    "MAX_VALUE_DEPTH",
    "MAX_VALUE_ITEMS",
    "Refused",
    "checked",
    "read_value",
]

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from tiered_memory.errors import BadInput
from tiered_memory.model import yaml_dialect
from tiered_memory.model.note import CATEGORIES, STATUSES

# What one `--set` value may be: one line of a command, far below a note's frontmatter bounds.
MAX_VALUE_CHARS = 16 * 1024
# A key is a name: one line of a commit's subject (`update: X (fields.KEY)`) and of the frontmatter.
MAX_KEY_CHARS = 100
MAX_VALUE_ITEMS = 1_000


class Refused(ValueError):
    """A value a known key does not take (the table's `allowed` says what it does)."""


@dataclass(frozen=True)
class Field:
    """A known key: `allowed` says what it takes (the refusal's words), `check` returns the value
    to store or raises Refused; `text` keys read a typed value as the text it is."""

    allowed: str
    check: Callable[[Any], Any]
    text: bool = False


def _unit(value: Any) -> float:
    if isinstance(value, bool):
        raise Refused
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise Refused from None
    if not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:  # NaN fails both
        raise Refused
    return value


def _one_of(words: tuple[str, ...]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        word = value.strip().lower() if isinstance(value, str) else None
        if word not in words:
            raise Refused
        return word

    return check


def _line(value: Any) -> str:
    """One line of text; a number read from `KEY=VALUE` (a title `2024`) is its text."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip() or "\n" in value or "\r" in value:
        raise Refused
    return value.strip()


def _project(value: Any) -> str:
    # A project id names a folder (mid-term/projects/<id>/): no path characters.
    name = _line(value)
    if name in (".", "..") or name.startswith(".") or any(c in name for c in "/\\\x00"):
        raise Refused
    return name


def _words(*, split: bool) -> Callable[[Any], list[str]]:
    """A list of text items; a single string is a list of one (`split`: of its comma-separated parts)."""

    def check(value: Any) -> list[str]:
        if isinstance(value, str):
            items: list[Any] = value.split(",") if split else [value]
        elif isinstance(value, (list, tuple)):
            items = list(value)
        else:
            raise Refused
        out: dict[str, None] = {}
        for item in items:
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                item = str(item)
            if not isinstance(item, str) or "\n" in item or "\r" in item:
                raise Refused
            word = item.strip().lstrip("#") if split else item.strip()
            if word:
                out.setdefault(word, None)
        return list(out)

    return check


def _when(value: Any) -> date | datetime:
    if isinstance(value, (date, datetime)):
        return value
    if not isinstance(value, str):
        raise Refused
    text = value.strip()
    try:
        return date.fromisoformat(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise Refused from None


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Refused
    return value


DATE = "a date (YYYY-MM-DD) or an ISO time"
KNOWN: dict[str, Field] = {
    "title": Field("one line of text", _line, text=True),
    "category": Field(f"one of {', '.join(CATEGORIES)}", _one_of(CATEGORIES)),
    "status": Field(f"one of {', '.join(STATUSES)}", _one_of(STATUSES)),
    "importance": Field("a number from 0 to 1", _unit),
    "confidence": Field("a number from 0 to 1", _unit),
    "tags": Field("a list of words, e.g. [cooking, italian]", _words(split=True)),
    "entities": Field("a list of names, e.g. [Alice, Acme]", _words(split=True)),
    "aliases": Field("a list of names, e.g. [Bob, Robert]", _words(split=False)),
    "project": Field("a project id (no path characters)", _project, text=True),
    "superseded_by": Field("a note id", _line, text=True),
    "source": Field("one line of text", _line, text=True),
    "session": Field("a session id", _line, text=True),
    "updated": Field(DATE, _when),
    "expires": Field(DATE, _when),
    "sensitive": Field("true or false", _flag),
}
# Keys no operation sets: tmem keeps them, or the note's place says them.
FIXED: dict[str, str] = {
    "id": "id cannot be changed (tmem keeps it)",
    "created": "created cannot be changed (tmem keeps it)",
    "tier": "tier cannot be set: a note's tier is its folder (use promote or archive)",
}


def checked(fields: Mapping[str, Any]) -> dict[str, Any]:
    """`fields` with each known key's value checked and normalised (None, which removes a key,
    passes); BadInput naming the first key refused and what it allows."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key in FIXED:
            raise BadInput(FIXED[key])
        if (
            not isinstance(key, str)
            or not key.strip()
            or len(key) > MAX_KEY_CHARS
            or any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in key)
        ):
            raise BadInput(
                f"a frontmatter key is a name of one line, at most {MAX_KEY_CHARS} characters (got {_shown(key)})"
            )
        known = KNOWN.get(key)
        if known is None:
            _check_shape(key, value)
            out[key] = _as_written(value)
            continue
        if value is None:
            out[key] = value
            continue
        try:
            out[key] = known.check(value)
        except Refused:
            raise BadInput(f"{key} must be {known.allowed} (got {_shown(value)})") from None
    return out


_ISO_TIME = re.compile(r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)?)?")


MAX_VALUE_DEPTH = 16  # lists and mappings within each other: frontmatter, not a data dump


def _check_shape(key: str, value: Any) -> None:
    """A person's own key takes any value, within what `--set` would read (MAX_VALUE_CHARS of
    text, MAX_VALUE_ITEMS values) and MAX_VALUE_DEPTH levels: an agent's mapping nested a thousand
    deep would exhaust the recursion of every reader after it. Walked without recursion."""
    items, chars = 0, 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        items += 1
        if depth > MAX_VALUE_DEPTH or items > MAX_VALUE_ITEMS:
            raise BadInput(
                f"{key} must be a value of at most {MAX_VALUE_ITEMS} items nested at most "
                f"{MAX_VALUE_DEPTH} deep"
            )
        if isinstance(item, str):
            chars += len(item)
        elif isinstance(item, dict):
            stack.extend((part, depth + 1) for pair in item.items() for part in pair)
        elif isinstance(item, (list, tuple)):
            stack.extend((part, depth + 1) for part in item)
        if chars > MAX_VALUE_CHARS:
            raise BadInput(f"{key} must be a value of at most {MAX_VALUE_CHARS} characters of text")


def _as_written(value: Any) -> Any:
    """A person's own key takes any value; an ISO date or time given as a string is that date
    (the daemon's wire carries `--set due=2026-12-01` as text), as it reads unquoted in YAML."""
    if isinstance(value, str) and _ISO_TIME.fullmatch(value):
        try:
            return _when(value)
        except Refused:
            return value  # 2026-13-45: text that only looks like a date
    return value


def _shown(value: Any) -> str:
    text = value.isoformat() if isinstance(value, (date, datetime)) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_NULLS = ("~", "null", "Null", "NULL")


def read_value(key: str, raw: str) -> Any:
    """The value `KEY=VALUE` gives `key`: "" (or a YAML null) removes it (None); `[a, b]` and
    `{a: 1}` are YAML flow collections; a number, a boolean or a date is that value; anything else
    is the text as typed. A known text key (title, project...) always takes the text as typed:
    a title `2024` or `no` is that title. BadInput when a flow collection is not one."""
    if raw == "":
        return None
    field = KNOWN.get(key)
    if field is not None and field.text:
        return raw
    stripped = raw.strip()
    try:
        value = yaml_dialect.load(raw, max_chars=MAX_VALUE_CHARS, max_values=MAX_VALUE_ITEMS)
    except yaml_dialect.YamlTooLarge as exc:
        raise BadInput(f"{key}: {exc}") from None
    except yaml_dialect.YamlError:
        if stripped.startswith(("[", "{")):
            what = "list, e.g. [a, b]" if stripped.startswith("[") else "mapping, e.g. {a: 1}"
            raise BadInput(f"{key}: {_shown(raw)} is not a YAML flow {what}") from None
        return raw
    if value is None:
        return None if stripped in _NULLS else raw  # `#draft` is a YAML comment, not a null
    if isinstance(value, (list, dict)):
        # Only the flow forms: `- a` or `a: b` typed on a command line is text.
        return value if stripped.startswith(("[", "{")) else raw
    if isinstance(value, str):
        # A string YAML read differently from what was typed (`a  #b`, folded lines) stays as
        # typed, unless quoted: quotes are how one asks for a YAML string (`'007'`).
        return value if stripped.startswith(("'", '"')) else raw
    return value
