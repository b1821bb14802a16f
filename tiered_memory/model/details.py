"""The details that make two similar memories different facts. Pure: no I/O.

Word overlap and embedding cosine both say "Use port 8081 for the tile server" and "Use port 8082
for the tile server" are the same memory; they are not. Before two memories are merged as
duplicates, their *details* are compared: numbers (ports, versions, dates, times, amounts),
words that carry digits (`WGS84`, `v2`, `py311`), names (capitalised words inside a sentence,
all-caps words), quoted strings, and negation ("not", "no longer", "never", 不, 没). Two memories
whose details differ are never merged: the difference is exactly the fact the newer one adds.
"""

from __future__ import annotations

__all__ = ["Details", "details", "difference", "says_it_changed"]

import re
from dataclasses import dataclass

# A run of letters, digits and the separators of versions, dates and times: "WGS-84", "10:30",
# "2026-11-02", "v2.4.1", "py311". One with a digit in it is one detail.
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9.:/_\-]*")
_QUOTED = re.compile(r"\"([^\"]{1,80})\"|'([^'\s][^']{0,79})'|`([^`]{1,80})`|“([^”]{1,80})”")
_WORD = re.compile(r"[A-Za-z][\w'\-]*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*(?:[-*+]\s+)?|^#+\s*)$")
_NEGATION_EN = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot|no\s+longer|any\s*more)\b|n't\b",
    re.IGNORECASE,
)
_NEGATION_ZH = re.compile(r"不再|不|没有|没|别|未|无")
# Markers of a change of mind: with them, a memory that differs only in details replaces the old one.
_CHANGE_EN = re.compile(
    r"\b(?:now|instead|changed|moved|switched|updated|renamed|replaced|from\s+now\s+on|going\s+forward|"
    r"no\s+longer|any\s*more|correction|actually)\b",
    re.IGNORECASE,
)
_CHANGE_ZH = re.compile(r"改为|改成|换成|现在|以后|不再|更正|更新为")
# Capitalised words that start no name: sentence words people capitalise for emphasis or habit.
_COMMON = frozenset(
    "i a an the this that these those we you he she it they our your my his her its their "
    "use run always never do don't please note remember keep make set add".split()
)


@dataclass(frozen=True)
class Details:
    numbers: frozenset[str]
    names: frozenset[str]
    quoted: frozenset[str]
    negated: bool

    @property
    def facts(self) -> frozenset[str]:
        return self.numbers | self.names | self.quoted


def _names(text: str) -> set[str]:
    out: set[str] = set()
    for match in _WORD.finditer(text):
        word = match.group(0)
        if word.lower() in _COMMON or any(c.isdigit() for c in word):
            continue
        if word.isupper() and len(word) > 1:
            out.add(_key(word))  # an acronym anywhere is a name: AWS, GDAL
        elif word[0].isupper() and not _SENTENCE_START.search(text[: match.start()]):
            out.add(_key(word))  # "... owned by Alice": a name; "Alice owns ..." reads as any first word
    return out


def _key(token: str) -> str:
    return re.sub(r"[\W_]+", "", token.lower())


def details(text: str) -> Details:
    numbers = {_key(m.group(0)) for m in _TOKEN.finditer(text) if any(c.isdigit() for c in m.group(0))}
    quoted = {next(g for g in m.groups() if g).strip().lower() for m in _QUOTED.finditer(text)}
    negated = bool(_NEGATION_EN.search(text) or _NEGATION_ZH.search(text))
    return Details(frozenset(numbers), frozenset(_names(text)), frozenset(quoted), negated)


def difference(old: str, new: str) -> str | None:
    """How `new` differs from `old` in its details, in words a person can check; None if it does not.

    Details the new memory leaves out are no difference ("pin numpy to 1.26" restates "pin numpy
    to 1.26 because 2.0 broke the build"); details it adds or changes are.
    """
    a, b = details(old), details(new)
    if a.negated != b.negated:
        return "one of them is negated" if b.negated else "the old one is negated"
    added = sorted(b.facts - a.facts)
    if not added:
        return None
    dropped = sorted(a.facts - b.facts)
    if dropped:
        return f"{', '.join(dropped[:3])} -> {', '.join(added[:3])}"
    return f"adds {', '.join(added[:3])}"


def says_it_changed(text: str) -> bool:
    """Whether a memory announces a change ("now", "switched to", "no longer", 改为)."""
    return bool(_CHANGE_EN.search(text) or _CHANGE_ZH.search(text))
