"""Part of a note's body: the section under a heading, and a literal find and replace. Pure: no I/O.

- A heading is an ATX heading (`## Tasks`, up to three spaces before it, an optional closing run
  of `#`). Nothing inside fenced code, inline code or a comment is a heading (`obsidian.without_code`).
- A section is the text under its heading: every line after the heading line up to the next
  heading (of any level) or the end of the body. A subheading starts a section of its own, so an
  edit of `## Tasks` never moves, merges or removes the `### Done` below it.
- A heading is named by its text, case and runs of spaces aside (and, when no heading's text is
  exactly that, its emphasis and code marks: `Tasks` names `## **Tasks**`); `## Tasks` (with its
  `#`s) names only a level-two heading, for a text that several headings share.
- Lines keep the body's line endings (`\\r\\n` when it has them); nothing outside the section moves.
"""

from __future__ import annotations

__all__ = ["Heading", "OPERATIONS", "edit_section", "find", "headings", "replace_text"]

from dataclasses import dataclass

from tiered_memory.errors import BadInput
from tiered_memory.model.lazy_re import LazyPattern
from tiered_memory.model.obsidian import without_code

OPERATIONS = ("append", "prepend", "replace")

_HEADING = LazyPattern(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*\r?\n?$")
_GIVEN = LazyPattern(r"^(#{1,6})[ \t]+(.*)$")
# A list item: two of them in a row stay one list (no blank line between).
_LIST_ITEM = LazyPattern(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]")
_MARKS = LazyPattern(r"[*_`~=]+")


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    line: int  # index of its line in the body (0-based)


def headings(body: str) -> list[Heading]:
    """The body's headings, in order (none inside code or comments)."""
    found: list[Heading] = []
    if "#" not in body:
        return found
    code_free = without_code(body).splitlines(keepends=True)
    for index, (line, blanked) in enumerate(zip(body.splitlines(keepends=True), code_free, strict=True)):
        if "#" not in blanked or _HEADING.match(blanked) is None:
            continue
        match = _HEADING.match(line)
        if match is not None:
            found.append(Heading(len(match.group(1)), (match.group(2) or "").strip(), index))
    return found


def find(body: str, heading: str) -> tuple[Heading, int]:
    """The heading `heading` names and the index of the line after its section (BadInput, one
    line, when no heading or more than one has that name)."""
    wanted = heading.strip()
    level = None
    given = _GIVEN.match(wanted)
    if given is not None:
        level, wanted = len(given.group(1)), given.group(2).strip().rstrip("#").strip()
    if not wanted:
        raise BadInput("a section is named by its heading's text, e.g. 'Tasks' or '## Tasks'")
    every = headings(body)
    leveled = [h for h in every if level is None or h.level == level]
    matches = [h for h in leveled if _key(h.text) == _key(wanted)]
    if not matches:
        matches = [h for h in leveled if _key(_plain(h.text)) == _key(_plain(wanted))]
    if not matches:
        known = ", ".join(f"'{h.text}'" for h in every[:8]) + (", ..." if len(every) > 8 else "")
        raise BadInput(
            f"no heading '{heading.strip()}' in the body" + (f" (its headings: {known})" if every else "")
        )
    if len(matches) > 1:
        lines = ", ".join(str(h.line + 1) for h in matches)
        levels = {h.level for h in matches}
        hint = (
            f"; name it with its level, e.g. '{'#' * min(levels)} {wanted}'"
            if level is None and len(levels) > 1
            else "; edit it with find and replace instead"
        )
        raise BadInput(f"{len(matches)} headings '{heading.strip()}' in the body (lines {lines}){hint}")
    found = matches[0]
    later = [h.line for h in every if h.line > found.line]
    return found, later[0] if later else len(body.splitlines(keepends=True))


def edit_section(body: str, heading: str, operation: str, text: str) -> str:
    """`body` with `text` appended to the section under `heading`, put before its content
    (`prepend`), or in place of its content (`replace`: the heading line stays)."""
    if operation not in OPERATIONS:
        raise BadInput(f"unknown section operation '{operation}' (one of: {', '.join(OPERATIONS)})")
    found, end = find(body, heading)
    newline = "\r\n" if "\r\n" in body else "\n"
    lines = body.splitlines(keepends=True)
    start = found.line + 1
    first, last = start, end  # the section's content without its blank lines at either end
    while first < end and not lines[first].strip():
        first += 1
    while last > first and not lines[last - 1].strip():
        last -= 1
    new = (
        [line + newline for line in text.replace("\r\n", "\n").strip("\n").split("\n")]
        if text.strip()
        else []
    )
    head = [*lines[:start]]
    head[-1] = _ended(head[-1], newline)
    followed = end < len(lines)
    if first == last:  # an empty section: the text is its content, a blank line either side
        between = [newline] if new else []
        return "".join([*head, *between, *new, *([newline] if new and followed else []), *lines[end:]])
    content = [*lines[first:last]]
    content[-1] = _ended(content[-1], newline)
    lead, trail = lines[start:first], lines[last:end]
    if operation == "replace":
        if not new:
            return "".join([*head, *([newline] if followed else []), *lines[end:]])
        return "".join([*head, *lead, *new, *trail, *lines[end:]])
    if operation == "append":
        gap = [] if _one_list(content[-1], new[0]) else [newline]
        return "".join([*head, *lead, *content, *gap, *new, *trail, *lines[end:]])
    gap = [] if _one_list(new[-1], content[0]) else [newline]
    return "".join([*head, *lead, *new, *gap, *content, *trail, *lines[end:]])


def replace_text(body: str, find_text: str, replacement: str, count: int) -> str:
    """`body` with every occurrence of `find_text` replaced, when it occurs exactly `count` times
    (else BadInput, one line: a find that matches more or less than the caller saw is refused)."""
    if not find_text:
        raise BadInput("find needs the text to look for")
    if count < 1:
        raise BadInput(f"count must be 1 or more (got {count})")
    found = body.count(find_text)
    if found != count:
        shown = find_text if len(find_text) <= 40 else find_text[:40] + "..."
        shown = shown.replace("\n", "\\n")
        raise BadInput(f"'{shown}' occurs {found} time(s) in the body, not {count}; nothing was changed")
    return body.replace(find_text, replacement)


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def _plain(text: str) -> str:
    """A heading's text without its emphasis and code marks."""
    return _MARKS.sub("", text)


def _ended(line: str, newline: str) -> str:
    return line if line.endswith("\n") else line + newline


def _one_list(before: str, after: str) -> bool:
    return _LIST_ITEM.match(before) is not None and _LIST_ITEM.match(after) is not None
