"""Obsidian's conventions read from a note's body: inline #tags, links, Dataview inline fields,
daily-note dates. Pure: no I/O.

Rules (chosen to match what Obsidian itself shows in its tag pane, graph and backlinks):
- A tag is `#` at the start of a line or after whitespace, then letters, digits, `_`, `-` or `/`,
  with at least one non-digit (`#1984` is not a tag). Headings (`# Title`), URL fragments
  (`page#part`), `[[note#heading]]`, escaped `\\#x` and hex colours (`#fff`, `#a1b2c3`: 3, 4, 6 or 8
  hex digits with a digit in them, or one letter repeated) are not tags. Nothing inside fenced code,
  inline code, `<!-- -->` or `%% %%` comments counts: not tags, links or fields.
- Nested tags keep their full name (`geodesy/datum`). For filtering, `expand_tags` adds every
  ancestor (`geodesy`), as Obsidian's `tag:#geodesy` search finds `#geodesy/datum`; lists and
  results show only the tags as written.
- Tags are case-insensitive (Obsidian's tag pane folds case): the first spelling seen is kept.
- Links: `[[target]]`, `[[target|shown]]`, `[[target#heading]]`, `[[target#^block]]`, `![[embed]]`
  and Markdown links `[text](path.md)` / `[text](<path with spaces.md>)` to files in the vault
  (URLs with a scheme such as https: or mailto: are not links to notes). The target is kept as
  written, without the heading; `index.graph` resolves it to a note.
- Properties link too: a frontmatter value (or an item of a list value) holding `[[target]]`
  (`related: "[[Python MOC]]"`) is a wikilink, as Obsidian's properties show it and count it in
  backlinks; they come before the body's links.
- Dataview inline fields: `key:: value` on its own line (also as a list item or in bold,
  `**key**:: value`), and `[key:: value]` / `(key:: value)` inside text. Repeated keys collect
  every value.
"""

from __future__ import annotations

__all__ = [
    "Link",
    "date_of_name",
    "expand_tags",
    "inline_fields",
    "inline_tags",
    "link_text",
    "links",
    "merge_tags",
    "property_links",
    "shown_text",
    "title_of_name",
    "without_code",
    "without_inline_data",
]

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote

from tiered_memory.model.lazy_re import LazyPattern

# Regions whose text is code or comment: blanked (same length, newlines kept) before any scan.
_FENCE_OPEN = LazyPattern(r"^[ \t]{0,3}(`{3,}|~{3,})", re.MULTILINE)
# A code span may wrap onto the next line but never crosses a blank line (a paragraph break).
_INLINE_CODE = LazyPattern(r"(`+)(?!`)(?:[^\n]|\n(?![ \t]*\r?\n))+?(?<!`)\1(?!`)")
_NOT_BREAK = LazyPattern(r"[^\r\n]")
_COMMENTS = LazyPattern(r"<!--.*?(?:-->|\Z)|%%.*?(?:%%|\Z)", re.DOTALL)

# Patterns start with a literal so the regex engine skips ahead to it; what may stand before the
# match (whitespace before a tag, `!` before an embed) is checked by hand.
_TAG = LazyPattern(r"#([\w/-]+)")
_HEX_COLOUR = LazyPattern(r"(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})")

_WIKILINK = LazyPattern(r"\[\[([^\[\]\n|]*?)(?:\|([^\[\]\n]*))?\]\]")
_MD_LINK = LazyPattern(r"\[([^\[\]\n]*)\]\(\s*(<[^<>\n]+>|[^()\s]+)(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)")
_SCHEME = LazyPattern(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")

_FIELD_LINE = LazyPattern(
    r"^[ \t]*(?:[-*+][ \t]+|\d+[.)][ \t]+)?(?:>[ \t]*)*(\*\*|__)?([^\s:*_\[\]()`][^:\n\[\]()`]*?)\1?::[ \t]*(.*?)[ \t]*\r?$",
    re.MULTILINE,
)
_FIELD_INLINE = LazyPattern(r"[\[(]([^\s:\[\]()][^:\n\[\]()]*?)::[ \t]*([^\n\[\]()]*?)[ \t]*[\])]")

_DATE_STEM = LazyPattern(r"^(\d{4})-(\d{2})-(\d{2})(?![\d])")

# What a reader never sees as text: a plugin's query block (Obsidian shows its result, not its
# source; often inside a callout, so each line may open with `>`), a Templater command and an HTML
# tag outside code (its text between tags stays).
_QUERY_FENCE = LazyPattern(
    r"^([ \t>]*)(`{3,}|~{3,})[ \t]*(?:dataviewjs|dataview|tasks|query|base|datacorejsx?|datacore)"
    r"[ \t]*\r?\n.*?(?:^[ \t>]*\2[`~]*[ \t]*\r?$|\Z)",
    re.MULTILINE | re.DOTALL | re.IGNORECASE,
)
_TEMPLATER = LazyPattern(r"<%.*?(?:%>|\Z)", re.DOTALL)
_HTML_TAG = LazyPattern(r"</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>")


# A picture pasted into a note as a data URI (`![Pasted image](data:image/png;base64,iVBOR...)`,
# as some paste and publishing plugins write it): up to megabytes of base64 a reader sees as an
# image. Its scheme and type stay; the payload goes.
_DATA_URI = LazyPattern(
    r"(\bdata:[\w.+-]+/[\w.+-]+(?:;[\w.+-]+=[\w.+-]*)*;base64,)[A-Za-z0-9+/=]+", re.IGNORECASE
)


@dataclass(frozen=True)
class Link:
    """One link in a note's body. `target` is as written (no heading, `.md` kept if written)."""

    target: str
    kind: str  # "wikilink", "embed" (![[...]] or ![..](..)) or "markdown"
    heading: str = ""  # after `#` (a block reference keeps its `^`)
    shown: str = ""  # the text after `|`, or a Markdown link's text


def without_code(body: str) -> str:
    """`body` with code blocks, inline code and comments blanked to spaces (newlines kept), so
    offsets and line structure stay and nothing inside them reads as a tag, link or field."""
    if "`" not in body and "~~~" not in body and "<!--" not in body and "%%" not in body:
        return body  # most notes: nothing to blank, no copy
    pieces: list[str] = []
    pos = 0
    while True:
        opening = _FENCE_OPEN.search(body, pos)
        if opening is None:
            break
        fence = opening.group(1)
        # A closing fence: the same character, at least as long, alone on its line.
        closer = re.compile(rf"^[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*\r?$", re.MULTILINE)
        line_end = body.find("\n", opening.end())
        closing = closer.search(body, len(body) if line_end < 0 else line_end + 1)
        end = len(body) if closing is None else closing.end()
        pieces += [body[pos : opening.start()], _NOT_BREAK.sub(" ", body[opening.start() : end])]
        pos = end
    text = "".join(pieces) + body[pos:]
    for pattern in (_COMMENTS, _INLINE_CODE):
        text = pattern.sub(lambda m: _NOT_BREAK.sub(" ", m.group()), text)
    return text


def without_inline_data(text: str) -> str:
    """`text` without the base64 payload of its data URIs: it holds no words, and whole it would
    swamp what is indexed of the note (thousands of meaningless words in the full-text index,
    and a vector build that embeds it passage by passage). Text without one is returned as it is."""
    if "base64," not in text and "BASE64," not in text:
        return text
    return _DATA_URI.sub(r"\1", text)


def shown_text(body: str) -> str:
    """`body` without what Obsidian draws rather than shows as words: Dataview, Tasks and search
    query blocks, Templater commands and HTML tags outside code. A dashboard note of queries and
    markup otherwise reads, to an embedding model, as code rather than as its subject."""
    if "```" not in body and "~~~" not in body and "<" not in body:
        return body
    text = _QUERY_FENCE.sub("", body)
    if "<%" in text:
        text = _TEMPLATER.sub("", text)
    if "<" not in text:
        return text
    code_free = without_code(text)  # same offsets: a tag found here is outside code in `text`
    pieces, pos = [], 0
    for match in _HTML_TAG.finditer(code_free):
        pieces.append(text[pos : match.start()])
        pos = match.end()
    return "".join(pieces) + text[pos:]


def inline_tags(body: str, *, code_free: str | None = None) -> list[str]:
    """The `#tags` written in the body, in order of first appearance, case-folded duplicates dropped."""
    text = without_code(body) if code_free is None else code_free
    found: list[str] = []
    if "#" not in text:
        return found
    for match in _TAG.finditer(text):
        if match.start() and not text[match.start() - 1].isspace():
            continue
        tag = match.group(1).strip("/")
        if not tag.strip("0123456789/-") or _is_colour(tag):
            continue
        found.append(tag)
    return merge_tags(found)


def _is_colour(tag: str) -> bool:
    if not _HEX_COLOUR.fullmatch(tag):
        return False
    return any(c.isdigit() for c in tag) or len(set(tag.lower())) == 1


def merge_tags(*groups: Iterable[str]) -> list[str]:
    """Tags from several sources, first spelling kept, duplicates differing in case dropped."""
    seen: dict[str, str] = {}
    for group in groups:
        for tag in group:
            clean = tag.strip().lstrip("#").strip()
            if clean:
                seen.setdefault(clean.casefold(), clean)
    return list(seen.values())


def expand_tags(tags: Iterable[str]) -> list[str]:
    """Tags plus every ancestor of a nested tag (`a/b/c` adds `a/b` and `a`), for filters."""
    out: dict[str, str] = {}
    for tag in tags:
        parts = [p for p in tag.split("/") if p]
        for i in range(len(parts), 0, -1):
            name = "/".join(parts[:i])
            out.setdefault(name.casefold(), name)
    return list(out.values())


def link_text(text: str) -> str:
    """`text` with each wikilink written as Obsidian shows it in reading view: `[[a|b]]` and
    `[[a\\|b]]` (the pipe escaped inside a table) as `b`, `[[a]]` as `a`, `[[a#part]]` as
    `a > part` (a block reference `#^id` shows the note's name alone). For text handed on to be
    read, not stored: an agent's prompt, a result's passage. Embeds (`![[x.png]]`) and anything
    inside code or a comment are left as written."""
    if "[[" not in text:
        return text
    code_free = without_code(text)
    pieces, pos = [], 0
    for match in _WIKILINK.finditer(code_free):
        if _after_bang(code_free, match.start()):
            continue
        target, _, part = match.group(1).partition("#")
        target, part = target.strip().rstrip("\\").strip(), part.strip()
        shown = (match.group(2) or "").strip()
        if not shown:
            part = "" if part.startswith("^") else part
            shown = f"{target} > {part}" if target and part else target or part
        if not shown:
            continue
        pieces += [text[pos : match.start()], shown]
        pos = match.end()
    return "".join(pieces) + text[pos:]


def links(body: str, *, code_free: str | None = None) -> list[Link]:
    """Every link to another file in the vault, in order of appearance (duplicates kept)."""
    text = without_code(body) if code_free is None else code_free
    found: list[tuple[int, Link]] = []
    if "[" not in text:
        return []
    for match in _WIKILINK.finditer(text):
        inner = match.group(1).strip()
        target, _, heading = inner.partition("#")
        target = target.strip().rstrip("\\")  # `[[a\|b]]`: the pipe escaped inside a table
        if not target and not heading:
            continue
        kind = "embed" if _after_bang(text, match.start()) else "wikilink"
        found.append((match.start(), Link(target, kind, heading.strip(), (match.group(2) or "").strip())))
    for match in _MD_LINK.finditer(text):
        raw = match.group(2)
        raw = raw[1:-1] if raw.startswith("<") else raw
        if _SCHEME.match(raw):
            continue
        target, _, heading = unquote(raw).partition("#")
        if not target.strip():
            continue  # a link to a heading of the same note
        kind = "embed" if _after_bang(text, match.start()) else "markdown"
        found.append((match.start(), Link(target.strip(), kind, heading.strip(), match.group(1).strip())))
    found.sort(key=lambda item: item[0])
    return [link for _, link in found]


def property_links(meta: dict[str, Any]) -> list[Link]:
    """The wikilinks in frontmatter values: a string, or the strings of a list (Obsidian's
    properties hold no Markdown links and no embeds)."""
    found: list[Link] = []
    for value in meta.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and "[[" in item:
                found += [
                    Link(link.target, "wikilink", link.heading, link.shown)
                    for link in links(item, code_free=item)
                    if link.kind != "markdown"
                ]
    return found


def _after_bang(text: str, start: int) -> bool:
    return start > 0 and text[start - 1] == "!"


def inline_fields(body: str, *, code_free: str | None = None) -> dict[str, list[str]]:
    """Dataview inline fields: key -> every value given, in order."""
    if "::" not in body:
        return {}
    text = without_code(body) if code_free is None else code_free
    found: list[tuple[int, str, str]] = []
    for match in _FIELD_LINE.finditer(text):
        found.append((match.start(), match.group(2), match.group(3)))
    for match in _FIELD_INLINE.finditer(text):
        found.append((match.start(), match.group(1), match.group(2)))
    fields: dict[str, list[str]] = {}
    for _, key, value in sorted(found, key=lambda item: item[0]):
        key = key.strip()
        if key:
            fields.setdefault(key, []).append(value.strip())
    return fields


def date_of_name(path: str) -> datetime | None:
    """The date a daily note's file name starts with (`2026-11-20.md`, `2026-11-20 Standup.md`)."""
    match = _DATE_STEM.match(PurePosixPath(path).stem)
    if match is None:
        return None
    try:
        return datetime(int(match.group(1)), int(match.group(2)), int(match.group(3)), tzinfo=UTC)
    except ValueError:  # 2026-02-31
        return None


def title_of_name(path: str) -> str:
    """A title from a file name: `_` and `-` read as spaces, except inside a leading ISO date."""
    stem = PurePosixPath(path).stem
    match = _DATE_STEM.match(stem) if date_of_name(path) else None
    head, rest = (match.group(0), stem[match.end() :]) if match else ("", stem)
    return (head + rest.replace("_", " ").replace("-", " ")).strip()
