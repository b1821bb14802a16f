"""The note model: parse a file's text into a Note and render it back. Pure: no I/O.

A note is a Markdown file with optional YAML frontmatter. The frontmatter is kept as the
mapping the file holds (unknown keys and their order survive a rewrite) and the body is kept
byte for byte; typed views of the known fields are computed on demand, with defaults taken from
the path, the first heading and the file times, so a hand-written note needs no frontmatter.
"""

from __future__ import annotations

__all__ = [
    "ATTACHMENT",
    "CATEGORIES",
    "FILED_BY",
    "FM_CLOSE",
    "FM_OPEN",
    "Note",
    "NAME_BYTES",
    "REPORT",
    "SLUG_BYTES_PER_CHAR",
    "STATE_SUFFIX",
    "STATUSES",
    "TMEM_MARK",
    "body_of",
    "cut_to_bytes",
    "ID_BYTES",
    "default_id",
    "id_slug",
    "legacy_id",
    "is_note_path",
    "is_report",
    "is_state_file",
    "json_text",
    "new_id",
    "parse",
    "one_line",
    "render",
    "settled_slug",
    "slugify",
    "str_list",
    "tier_of_path",
    "written_by_tmem",
]

import json
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from tiered_memory.model import file_names, obsidian, yaml_dialect
from tiered_memory.model.dates import from_epoch, to_datetime
from tiered_memory.model.layout import DAILY, MEMORY_DIR, NOTE_SUFFIXES, tier_of_path

CATEGORIES = (
    "discovery",
    "decision",
    "pattern",
    "preference",
    "error",
    "fact",
    "profile",
    "project",
    "session",
    "note",
    "report",  # tmem's daily maintenance report: searched only when asked for (`--category report`)
)
REPORT = "report"
# The mark of a note tmem filed in a person's folders (`filed_by: tmem`): there, `id` and
# `created` alone are no sign of tmem, since plugins and other agents write them too.
FILED_BY = "filed_by"
SLUG_BYTES_PER_CHAR = 3  # a slug of n characters has at most 3n bytes: a Chinese character's size
# A file name tmem makes from a title has at most this many bytes in UTF-8: most file systems take
# 255, and room is left for a counter (`-2`), a conflict's copy (` (other machine)`), the suffix.
NAME_BYTES = 200
TMEM_MARK = "tmem"
STATUSES = ("active", "completed", "cancelled", "superseded")
# Not a note's category: what a search calls a file it found by its name (an image, a PDF).
ATTACHMENT = "attachment"

FM_OPEN = re.compile(r"\A(?:\ufeff)?---[ \t]*\r?\n")
FM_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.MULTILINE)
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*\r?$", re.MULTILINE)
# What redaction leaves where a secret was (model.redact): no word of a name made from the text.
_REDACTION = re.compile(r"\[REDACTED:[a-z0-9-]+\]")


@dataclass
class Note:
    """One memory file. `path` is vault-relative and POSIX-style (memory/<tier>/...)."""

    path: str
    meta: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    has_frontmatter: bool = False
    # Set when the file's frontmatter could not be parsed: the whole text is then the body,
    # the note is indexed as plain text, and tmem refuses to rewrite it.
    parse_warning: str | None = None
    mtime: float | None = None
    is_json: bool = False
    # The id the vault settled on for a note without an `id:` key whose default id another note
    # has too (model.note_ids): never written into the file.
    given_id: str = ""

    # ---- typed views of the known fields -------------------------------------------------
    @property
    def tier(self) -> str | None:
        return tier_of_path(self.path)

    @property
    def id(self) -> str:
        value = self.meta.get("id")
        if value not in (None, ""):
            return str(value)
        return self.given_id or default_id(self.path)

    @property
    def title(self) -> str:
        """The `title:` key, else the file name without its suffix, as Obsidian names a note (a
        heading inside it is text: `heading` is searched like an alias). A JSON state file's
        name reads as words."""
        value = self.meta.get("title")
        if value not in (None, ""):
            return one_line(str(value))
        if self.is_json:
            return obsidian.title_of_name(self.path)
        return PurePosixPath(self.path).stem

    @property
    def heading(self) -> str:
        """The first level-one heading of the body ("" when none). A `# comment` inside fenced
        code (Python's, a shell's) is code, not a heading, as Obsidian shows it."""
        if self.is_json:
            return ""
        # Code is blanked in place, so a heading found there is at the same offset in the body.
        found = _H1.search(obsidian.without_code(self.body))
        match = _H1.match(self.body, found.start()) if found else None
        return match.group(1).strip() if match else ""

    @property
    def category(self) -> str:
        value = str(self.meta.get("category") or "").strip().lower()
        return value if value in CATEGORIES else "note"

    @property
    def status(self) -> str:
        value = str(self.meta.get("status") or "").strip().lower()
        return value if value in STATUSES else "active"

    @property
    def tags(self) -> list[str]:
        return str_list(self.meta.get("tags"))

    @property
    def aliases(self) -> list[str]:
        """Obsidian's `aliases` (or the older `alias`): a list, or one string as one alias."""
        value = self.meta.get("aliases", self.meta.get("alias"))
        if isinstance(value, str):
            return [value.strip()] if value.strip() else []
        return str_list(value) if isinstance(value, (list, tuple)) else []

    @property
    def inline_tags(self) -> list[str]:
        """`#tags` written in the body (never in code or comments); see model.obsidian."""
        return [] if self.is_json else obsidian.inline_tags(self.body)

    @property
    def all_tags(self) -> list[str]:
        """Frontmatter tags, then the body's inline tags: what search, lists and filters use.
        `tags` stays the frontmatter's own list, the one tmem may write back."""
        return obsidian.merge_tags(self.tags, self.inline_tags)

    @property
    def links(self) -> list[obsidian.Link]:
        """Wikilinks in properties, then the body's wikilinks, embeds and Markdown links to other
        files of the vault, as written."""
        return [] if self.is_json else obsidian.property_links(self.meta) + obsidian.links(self.body)

    @property
    def inline_fields(self) -> dict[str, list[str]]:
        """Dataview `key:: value` fields of the body (every value of a repeated key)."""
        return {} if self.is_json else obsidian.inline_fields(self.body)

    @property
    def entities(self) -> list[str]:
        return str_list(self.meta.get("entities"))

    @property
    def project(self) -> str:
        value = self.meta.get("project")
        return str(value) if value not in (None, "") else ""

    @property
    def importance(self) -> float:
        return _unit(self.meta.get("importance"), 0.5)

    @property
    def confidence(self) -> float:
        return _unit(self.meta.get("confidence"), 1.0)

    @property
    def created(self) -> datetime | None:
        return (
            to_datetime(self.meta.get("created"))
            # Quartz, Jekyll and Hugo sites, and many Obsidian templates, date a note by `date:`.
            or to_datetime(self.meta.get("date"))
            or obsidian.date_of_name(self.path)  # a daily note is dated by its name
            or from_epoch(self.mtime)
        )

    @property
    def updated(self) -> datetime | None:
        return to_datetime(self.meta.get("updated")) or self.created

    @property
    def superseded_by(self) -> str:
        value = self.meta.get("superseded_by")
        return str(value) if value not in (None, "") else ""

    @property
    def access_count(self) -> int:
        try:
            return max(0, int(self.meta.get("access_count") or 0))
        except (TypeError, ValueError, OverflowError):  # OverflowError: `.inf` in hand-written YAML
            return 0

    @property
    def sensitive(self) -> bool:
        return self.meta.get("sensitive") is True

    @property
    def text(self) -> str:
        """What search reads: the body (JSON notes: their keys and values, one per line)."""
        return json_text(self.body) if self.is_json else self.body

    def with_meta(self, **updates: Any) -> Note:
        """A copy with frontmatter keys set (None removes a key); body and other keys untouched."""
        meta = dict(self.meta)
        for key, value in updates.items():
            if value is None:
                meta.pop(key, None)
            else:
                meta[key] = value
        return Note(
            path=self.path,
            meta=meta,
            body=self.body,
            has_frontmatter=True,
            parse_warning=self.parse_warning,
            mtime=self.mtime,
            is_json=self.is_json,
            given_id=self.given_id,
        )


# ---- parse / render ----------------------------------------------------------------------


def parse(text: str, path: str, mtime: float | None = None) -> Note:
    """Parse a file's text. Never raises for bad frontmatter: it sets `parse_warning` instead."""
    if path.endswith(".json"):
        return Note(path=path, body=text, mtime=mtime, is_json=True)
    opening = FM_OPEN.match(text)
    if not opening:
        return Note(path=path, body=text, mtime=mtime)
    closing = FM_CLOSE.search(text, opening.end())
    if not closing:
        return Note(path=path, body=text, mtime=mtime, parse_warning="frontmatter has no closing ---")
    raw = text[opening.end() : closing.start()]
    try:
        meta = yaml_dialect.load(raw) if raw.strip() else {}
    except yaml_dialect.YamlTooLarge as exc:
        # Read as plain text: what it holds is never built, so nothing downstream expands it.
        return Note(path=path, body=text, mtime=mtime, parse_warning=f"frontmatter ignored: {exc}")
    except yaml_dialect.YamlError as exc:
        where = f" (line {exc.line + 2})" if exc.line is not None else ""
        return Note(path=path, body=text, mtime=mtime, parse_warning=f"malformed YAML frontmatter{where}")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return Note(path=path, body=text, mtime=mtime, parse_warning="frontmatter is not a mapping")
    meta = {str(k): v for k, v in meta.items()}
    return Note(path=path, meta=meta, body=text[closing.end() :], has_frontmatter=True, mtime=mtime)


def body_of(text: str, path: str) -> str:
    """The body of a file's text, found by its fences alone: what `parse` gives when the frontmatter
    is well formed. Search reads each hit's body for its passage, and parsing YAML it does not use
    would cost more than the rest of the reading."""
    if path.endswith(".json"):
        return text
    opening = FM_OPEN.match(text)
    closing = FM_CLOSE.search(text, opening.end()) if opening else None
    return text[closing.end() :] if closing else text


def render(note: Note) -> str:
    """The file text for a note: frontmatter (if any) then the body, byte for byte."""
    if note.is_json or (not note.has_frontmatter and not note.meta):
        return note.body
    dumped = yaml_dialect.dump(note.meta)
    if not note.meta:
        dumped = ""
    elif dumped.endswith("\n...\n"):
        # PyYAML ends the document with `...` after a keep-chomped (`|+`) scalar; parse would take
        # that line as the closing fence. The `---` that follows ends the scalar just as well.
        dumped = dumped[:-4]
    return f"---\n{dumped}---\n{note.body}"


# ---- helpers shared by the rest of the package -------------------------------------------

# JSON state in the tier folders (tasks, the context stack) is indexed so search finds it, but it
# is no note: listings and note counts leave it out, one rule for all (`is_state_file`).
STATE_SUFFIX = ".json"


def is_state_file(path: str) -> bool:
    """Whether an indexed file is JSON state rather than a note a listing or a count shows."""
    return path.endswith(STATE_SUFFIX)


def is_note_path(path: str) -> bool:
    """Files tmem may read as notes, by name alone: Markdown anywhere in the vault, JSON only in
    the tier folders (elsewhere it is some app's data), nothing hidden (`.obsidian/`, `.trash/`).
    The vault's `folders:` include/exclude globs narrow this further (model.folders)."""
    if not path.endswith(NOTE_SUFFIXES) or path.endswith(".excalidraw.md"):
        return False
    if path.endswith(".json") and tier_of_path(path) is None:
        return False
    return not any(part.startswith(".") for part in PurePosixPath(path).parts)


def written_by_tmem(note: Note) -> bool:
    """Whether tmem created this note (filing writes `id`, `created` and `updated`; temp notes `expires`).
    Every other note is a person's: tmem changes its bytes only when a command names it.

    Those keys say so only in tmem's own tree (`memory/`). In a person's folders a note-taking
    plugin or another agent writes `id` and `created` just as well, so a note there is tmem's only
    with the mark filing puts on the notes it files there (`FILED_BY`); one that an earlier tmem
    filed there without it is taken for the person's, which only means tmem leaves it alone."""
    meta = note.meta
    if meta.get("id") in (None, ""):
        return False
    if not any(meta.get(key) not in (None, "") for key in ("created", "updated", "expires")):
        return False
    return note.path.startswith(MEMORY_DIR + "/") or meta.get(FILED_BY) == TMEM_MARK


def is_report(path: str, title: str, category: str) -> bool:
    """A maintenance report: `category: report`, or one an earlier version wrote as a plain note
    (`memory/archive/daily/DATE.md` titled "Maintenance DATE"). Such files stay as they are, but
    search leaves them out unless asked for reports."""
    if category == REPORT:
        return True
    folder, _, name = path.rpartition("/")
    return folder == DAILY and title == f"Maintenance {PurePosixPath(name).stem}"


def default_id(path: str) -> str:
    """Id of a note with no `id` key: its path below the tier folder, slugged (`id_slug`)."""
    parts = PurePosixPath(path).with_suffix("").parts
    tail = parts[2:] if len(parts) > 2 and parts[0] == MEMORY_DIR else parts
    return "-".join(id_slug(p, 80) for p in tail if p) or "note"


def legacy_id(path: str) -> str:
    """The id `default_id` gave before names in every script kept their letters (Latin and CJK
    words only): what a note indexed then goes by, which the index keeps for it."""
    parts = PurePosixPath(path).with_suffix("").parts
    tail = parts[2:] if len(parts) > 2 and parts[0] == MEMORY_DIR else parts
    return "-".join(settled_slug(p, 80) for p in tail if p) or "note"


_SETTLED_WORD = re.compile(r"[0-9a-z\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
ID_BYTES = 200  # an id is a file name's worth at most (a name may have 255 bytes)


def id_slug(text: str, max_len: int = 80) -> str:
    """A name as part of an id: its words, lowercased, joined by '-'. A name of Latin and CJK
    words goes by `settled_slug`, the rule ids were made by first, so no id a note goes by changes;
    a name with letters of any other script (Cyrillic, Greek, Arabic, Hebrew, Devanagari, Thai,
    a Latin `ß` or `ł`...) keeps them: Unicode letters, digits and the marks words are written
    with, NFC, nothing else (no character a file system reserves, none that ends a [[link]]),
    where `settled_slug` left a near-empty id that many such notes shared. At most `max_len`
    characters and ID_BYTES bytes, cut at a word boundary where there is one."""
    folded = _fold_accents(text).lower()
    lossy = any(unicodedata.category(ch)[0] in "LN" and not _SETTLED_WORD.fullmatch(ch) for ch in folded)
    if not lossy:
        return settled_slug(text, max_len)
    slug = unicodedata.normalize("NFC", "-".join(_words(folded)))
    if len(slug) > max_len or len(slug.encode("utf-8")) > ID_BYTES:
        cut = cut_to_bytes(slug[:max_len], ID_BYTES)
        slug = cut.rsplit("-", 1)[0] or cut
    return slug.strip("-") or "note"


def _words(text: str) -> list[str]:
    """The runs of letters and digits of `text`, with the combining marks written within a word
    (Devanagari's vowel signs); anything else separates them."""
    words: list[str] = []
    word: list[str] = []
    for ch in text:
        kind = unicodedata.category(ch)[0]
        if kind in "LN" or (kind == "M" and word):
            word.append(ch)
        elif word:
            words.append("".join(word))
            word = []
    if word:
        words.append("".join(word))
    return words


def one_line(text: str) -> str:
    """A title as one line: a title is a commit message's subject, a heading, a listing's row, and
    one with line breaks (a YAML `|` block, a pulled note, an agent's argument) would write lines
    of its own there, an `Agent:` trailer among them. Text of one line is kept as it is."""
    return " ".join(text.split()) if len(text.splitlines()) > 1 else text


def cut_to_bytes(text: str, limit: int) -> str:
    """`text` cut to at most `limit` bytes in UTF-8, between two characters."""
    if len(text.encode("utf-8")) <= limit:
        return text
    end = size = 0
    for ch in text:
        size += len(ch.encode("utf-8"))
        if size > limit:
            break
        end += 1
    return text[:end]


def slugify(text: str, max_len: int = 48) -> str:
    """The words of `text`, lowercased and joined by '-': a name for a file or an id.

    Letters and digits of every script are kept (Chinese, Japanese, Korean, Cyrillic, Greek,
    Arabic...: a person browsing the vault reads their notes' names in their own language), with
    the combining marks some scripts write words with (Devanagari's vowel signs); accented Latin
    letters lose their marks (é -> e). Anything else separates words, so no character a file
    system reserves (`<>:"/\\|?*`, controls) and no trailing dot or space is ever in a slug, and
    case-insensitive file systems see the same name as the others; a slug that is a Windows device
    name (`con`, `aux`, `com1`...) gets `-note` after it (`file_names.portable`). NFKC, hence NFC: the name is
    spelled the same way whatever the text's normalisation. At most `max_len` characters and
    `SLUG_BYTES_PER_CHAR` x `max_len` bytes in UTF-8 (a file name may have 255 bytes, a Chinese
    character takes 3 and some letters 4), cut at a word boundary where there is one. A redaction
    marker (`[REDACTED:github]`) is left out: it says nothing of the note, only that a secret was.
    """
    words = _words(_fold_accents(_REDACTION.sub(" ", text)).lower())
    slug = unicodedata.normalize("NFC", "-".join(words))  # lowercasing may leave a mark apart
    budget = SLUG_BYTES_PER_CHAR * max_len
    if len(slug) > max_len or len(slug.encode("utf-8")) > budget:
        cut = cut_to_bytes(slug[:max_len], budget)
        slug = cut.rsplit("-", 1)[0] or cut
    # A folder or file named `con` or `com1` is a device on Windows: a clone there would fail.
    return file_names.portable(slug.strip("-") or "note")


def settled_slug(text: str, max_len: int = 48) -> str:
    """The slug of what is named after a name that already exists (a note's id when it has no
    `id:` key, from its path; a vault's backups, from its folder): Latin and CJK words only, by
    the rule tmem named with before `slugify` kept every script, so that no id a note goes by and
    no bundle already written changes its name."""
    normal = _fold_accents(text).lower()
    words = re.findall(r"[0-9a-z]+|[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+", normal)
    slug = "-".join(words)
    if len(slug) > max_len:
        slug = slug[:max_len].rsplit("-", 1)[0] or slug[:max_len]
    return slug.strip("-") or "note"


def _fold_accents(text: str) -> str:
    """NFKC, then accented Latin letters lose their marks (é -> e) so slugs keep whole words.

    Per character: Hangul and other scripts whose decomposition is not ASCII are left as they are.
    """
    out: list[str] = []
    for ch in unicodedata.normalize("NFKC", text):
        if not ch.isascii():
            base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
            if base and base.isascii():
                ch = base
        out.append(ch)
    return "".join(out)


def new_id(title: str) -> str:
    """A readable, unique id: the title's words (in its own script) plus four random hex digits."""
    import secrets  # new notes only

    return f"{slugify(title, 40)}-{secrets.token_hex(2)}"


def json_text(text: str) -> str:
    """JSON files are indexed as text: their keys and values, one per line, easy to match."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text
    lines: list[str] = []

    def walk(value: Any, prefix: str) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, f"{prefix}{key}: ")
        elif isinstance(value, list):
            for inner in value:
                walk(inner, prefix)
        elif value is not None:
            lines.append(f"{prefix}{value}")

    walk(data, "")
    return "\n".join(lines)


def str_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple, set)):
        items = [str(v).strip() for v in value if v is not None]
    else:
        items = [str(value).strip()]
    seen: dict[str, None] = {}
    for item in items:
        if item:
            seen.setdefault(item.lstrip("#"), None)
    return list(seen)


def _unit(value: Any, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    if number != number:  # NaN
        return default
    return min(1.0, max(0.0, number))
