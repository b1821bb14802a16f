"""Which files of a vault are notes, and which tier each note is in. Pure: no I/O.

A vault may be any folder (an Obsidian vault adopted in place), not only `memory/<tier>/`:
- Notes are Markdown files (`.md`, `.markdown`) matched by an `include` glob and no `exclude`
  glob; JSON files are notes only inside the four tier folders (elsewhere JSON is app data).
  The four tier folders are always included: `include` narrows the person's own folders, never
  the notes tmem itself files.
- Hidden files and folders (`.obsidian/`, `.trash/`, `.git/`, `.tmem/`) are never notes.
- A note's tier: the four tier folders (`memory/short-term/` ...) always mean their own tier,
  because tmem's lifecycle moves notes between them; any other folder takes the first matching
  glob of the `tiers` mapping (`Daily/**: short`), and everything else `default_tier` (long-term:
  a person's notes are kept, not expired).

Globs are matched against the vault-relative path with `/` separators: `*` and `?` stay inside
one folder, `**` crosses folders, and a glob naming a folder (`Templates`, `Archive/Old`) covers
everything under it.
"""

from __future__ import annotations

__all__ = [
    "ATTACHMENT_SUFFIXES",
    "DEFAULT_EXCLUDE",
    "DEFAULT_INCLUDE",
    "DEFAULT_TIER",
    "FolderRules",
    "MARKDOWN_SUFFIXES",
    "GlobMatcher",
    "fixed_prefix",
    "glob_matcher",
    "glob_regex",
    "is_attachment",
    "is_editor_code",
    "is_editor_state",
    "stretching",
    "template_folder",
    "within",
]

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Protocol

from tiered_memory.model import layout
from tiered_memory.model.layout import tier_of_path

DEFAULT_INCLUDE = ("**",)
# Excalidraw drawings are JSON in a `.md` file: no text a person would search.
DEFAULT_EXCLUDE = ("**/*.excalidraw.md",)
DEFAULT_TIER = "long"
_MEMORY_PREFIX = layout.MEMORY_DIR + "/"
MARKDOWN_SUFFIXES = (".md", ".markdown")
# Files a note embeds or links (`![[diagram.png]]`): committed and synced with the notes, found by
# their file names, never indexed as text.
ATTACHMENT_SUFFIXES = (
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".bmp", ".avif", ".heic",
    ".pdf", ".mp3", ".m4a", ".wav", ".ogg", ".webm", ".mp4", ".mov", ".canvas", ".excalidraw",
)  # fmt: skip


def is_attachment(rel: str) -> bool:
    """An attachment by its name: a known suffix, nothing hidden on its path."""
    if rel.startswith(".") or "/." in rel:
        return False
    return rel.lower().endswith(ATTACHMENT_SUFFIXES)


# Editor UI state (open panes, the active note): per machine, rewritten on every click. A vault
# adopted with these files already tracked keeps tracking them (tmem never untracks a file).
_EDITOR_STATE = re.compile(r"\.obsidian/(?:workspace[^/]*\.json|cache)")


def is_editor_state(rel: str) -> bool:
    """Obsidian's UI state at the vault's root, the files `.gitignore` leaves out of a new vault."""
    return _EDITOR_STATE.fullmatch(rel) is not None


# What Obsidian runs when it opens the vault: its community plugins' files, and the list of the
# enabled ones. A vault that tracks `.obsidian/` receives them from the other machines' commits.
_EDITOR_CODE = re.compile(r"\.obsidian/(?:plugins/.+|community-plugins\.json)")


def is_editor_code(rel: str) -> bool:
    """A file of the editor's plugins, or the list of the ones it enables (Obsidian's)."""
    return _EDITOR_CODE.fullmatch(rel) is not None


def template_folder(value: object) -> str | None:
    """The vault-relative folder an editor's settings name for its note templates (Obsidian's
    `templates.json` `folder`, Templater's `templates_folder`: `Templates`, `Meta/Templates/`),
    or None for anything else. The settings come through git from other machines, so the value
    may only name a folder inside the vault: relative text (nothing absolute), no `..` or `.`
    part, no backslash or NUL, nothing hidden, nothing of tmem's `memory/` (a pulled setting
    must not take every memory out of the index); an empty value names no folder."""
    if not isinstance(value, str) or "\x00" in value or "\\" in value:
        return None
    folder = value.strip()
    if folder.startswith("/") or (len(folder) > 1 and folder[1] == ":"):  # /x, C:/x
        return None
    folder = folder.rstrip("/")
    parts = folder.split("/")
    if not folder or any(p.strip() in ("", ".", "..") or p.startswith(".") for p in parts):
        return None
    if parts[0] == layout.MEMORY_DIR:  # tmem's own notes are no editor's templates
        return None
    return folder


class GlobMatcher(Protocol):
    """What a glob is matched with: a compiled regex, or `_Stepped` for a glob a regex would take
    too long on."""

    def fullmatch(self, string: str) -> object: ...


# Wildcards that stretch: `**/` (any folders, or none), `**` (anything) and `*` (within a folder).
_DSLASH, _DSTAR, _STAR, _ONE = "**/", "**", "*", "?"
_REGEX = {_DSLASH: "(?:.*/)?", _DSTAR: ".*", _STAR: "[^/]*", _ONE: "[^/]"}
# A regex tries, when a path does not match, every way of sharing it out among a glob's
# stretching wildcards: for one or two that is quick, for `**/**/**/**/**/**/**/**/x` on a path of
# 30 folders it took 2 s, with four more `**/` over a minute (a glob comes from tmem.yaml, which a
# pull brings, and from a search's `--in` or an agent's `folder`). Past this many, the glob is
# matched in steps instead.
_MOST_STRETCHING = 2


def _tokens(pattern: str) -> list[str]:
    """A glob's wildcards and characters, each run of stretching wildcards made the one it
    amounts to: `**/**/` is `**/`, and `**` beside any other is `**`."""
    glob = pattern.strip().replace("\\", "/").strip("/")
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith(_DSLASH, i):
            token, i = _DSLASH, i + 3
        elif glob.startswith(_DSTAR, i):
            token, i = _DSTAR, i + 2
        else:
            token, i = glob[i], i + 1
        stretching = token in (_DSLASH, _DSTAR, _STAR)
        if stretching and out and out[-1] in (_DSLASH, _DSTAR, _STAR):
            before = out[-1]
            if _DSTAR in (before, token):
                out[-1] = _DSTAR
                continue
            if before == token == _DSLASH:
                continue
        out.append(token)
    return out


def stretching(pattern: str) -> int:
    """How many wildcards of a glob stretch (`*`, `**`, `**/`, runs of them counted once): what
    matching it costs, a step each."""
    return sum(t in (_DSLASH, _DSTAR, _STAR) for t in _tokens(pattern))


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a regex over a path and, for folder globs, everything under it."""
    parts = [_REGEX.get(t) or re.escape(t) for t in _tokens(pattern)]
    return re.compile("".join(parts) + "(?:/.*)?", re.DOTALL)


def glob_matcher(pattern: str) -> GlobMatcher:
    """How to match a glob (`fullmatch(path)`): its regex, unless it holds more stretching
    wildcards than a regex takes in bounded time; then `_Stepped`, linear in the path's length."""
    tokens = _tokens(pattern)
    if sum(t in (_DSLASH, _DSTAR, _STAR) for t in tokens) <= _MOST_STRETCHING:
        return glob_regex(pattern)
    return _Stepped(tuple(tokens))


class _Stepped:
    """A glob matched one wildcard at a time over the set of places in the path it may have
    reached (a regex's meaning, without its backtracking). The set is an integer's bits (bit i:
    the glob so far can end before the path's character i), so a wildcard is a few operations on
    one integer whatever the path's length, and the characters between two wildcards (`?` among
    them) are one step."""

    def __init__(self, tokens: tuple[str, ...]) -> None:
        self.tokens = tokens
        steps: list[str | tuple[str, ...]] = []
        run: list[str] = []
        for token in (*tokens, ""):
            if token in (_DSLASH, _DSTAR, _STAR, ""):
                if run:
                    steps.append(tuple(run))
                    run = []
                if token:
                    steps.append(token)
            else:
                run.append(token)
        self.steps = tuple(steps)
        # The runs of plain characters every path it matches holds: a path without one of them
        # is refused by a search for it, before any step.
        self.words = tuple(
            dict.fromkeys(
                word
                for step in steps
                if isinstance(step, tuple)
                for word in "".join(step).split(_ONE)
                if word
            )
        )

    def fullmatch(self, string: str) -> bool:
        for word in self.words:
            if word not in string:
                return False
        end = len(string)
        slash = _places(string, "/")
        free = ((1 << end) - 1) & ~slash  # places whose character is not a `/`
        reached = 1
        places: dict[str, int] = {_ONE: free}
        for step in self.steps:
            if not reached:
                return False
            if isinstance(step, tuple):  # characters and `?`: where the whole run fits
                starts = reached
                for offset, char in enumerate(step):
                    if char not in places:
                        places[char] = _places(string, char)
                    starts &= places[char] >> offset
                    if not starts:
                        return False
                reached = starts << len(step)
                continue
            lowest = reached & -reached
            if step == _DSTAR:  # anything: every place from the first one reached on
                reached = ((1 << (end + 1)) - 1) & ~(lowest - 1)
            elif step == _DSLASH:  # nothing, or up to and past any later `/`
                reached |= (slash << 1) & ~((lowest << 1) - 1)
            else:  # `*`: on to every place up to the next `/`
                # Adding `free` to the reached places among them carries each one along its run
                # of characters that are not `/`, up to the place after the run.
                within = reached & free
                reached |= within | ((free + within) ^ free)
        # A folder glob covers everything under it: `(?:/.*)?` after the glob.
        return bool(reached >> end & 1 or reached & slash)


def _places(string: str, char: str) -> int:
    """The places of `char` in `string`, as an integer's bits."""
    found = 0
    at = string.find(char)
    while at >= 0:
        found |= 1 << at
        at = string.find(char, at + 1)
    return found


@dataclass(frozen=True)
class FolderRules:
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    tiers: Mapping[str, str] = field(default_factory=dict)
    default_tier: str = DEFAULT_TIER

    def __post_init__(self) -> None:
        bad = [t for t in (*self.tiers.values(), self.default_tier) if t not in layout.TIERS]
        if bad:
            raise ValueError(f"unknown tier {bad[0]!r}; expected one of {', '.join(layout.TIERS)}")

    @classmethod
    def of(
        cls,
        include: Iterable[str] = DEFAULT_INCLUDE,
        exclude: Iterable[str] = DEFAULT_EXCLUDE,
        tiers: Mapping[str, str] | None = None,
        default_tier: str = DEFAULT_TIER,
    ) -> FolderRules:
        """Rules from config values (`FolderRules.of(**to_dict(config.folders))`)."""
        return cls(tuple(include), tuple(exclude), dict(tiers or {}), default_tier)

    def is_note(self, rel: str) -> bool:
        """Is this vault-relative POSIX path a note tmem indexes? (Runs once per file on every
        scan: string tests first, then one regex per list.)"""
        if rel.endswith(".json"):
            if tier_of_path(rel) is None:
                return False
        elif not rel.endswith(MARKDOWN_SUFFIXES):
            return False
        return self.includes(rel)

    def is_attachment(self, rel: str) -> bool:
        """Is this path an attachment tmem finds by its name (a known suffix, the same globs)?"""
        return is_attachment(rel) and self.includes(rel)

    def includes(self, rel: str) -> bool:
        """Not hidden, in a tier folder or matched by an `include` glob, and matched by no
        `exclude` glob. `include` narrows the person's own folders: the notes tmem files in its
        tier folders are always in (a person's `include: [projects/**]` would otherwise take
        every memory tmem added out of search)."""
        if rel.startswith(".") or "/." in rel:
            return False
        include, exclude = _union(self.include), _union(self.exclude)
        return (
            include is None
            or bool(include.fullmatch(rel))
            or (rel.startswith(_MEMORY_PREFIX) and tier_of_path(rel) is not None)
        ) and not (exclude is not None and exclude.fullmatch(rel))

    def left_out_by(self, rel: str) -> str | None:
        """The setting that keeps this path out (`folders.exclude`, else `folders.include`), None
        when it is in: what a refusal to file a note there names."""
        if self.includes(rel):
            return None
        exclude = _union(self.exclude)
        return "folders.exclude" if exclude is not None and exclude.fullmatch(rel) else "folders.include"

    def excludes_folder(self, rel: str) -> bool:
        """Whether a whole folder is out (hidden, or named by an `exclude` glob): scans skip it."""
        if rel.startswith(".") or "/." in rel:
            return True
        exclude = _union(self.exclude)
        return exclude is not None and bool(exclude.fullmatch(rel))

    def tier_of(self, rel: str) -> str:
        """The tier of the note at this path: its tier folder, else the mapping, else the default."""
        tier = tier_of_path(rel)
        if tier is not None:
            return tier
        for matcher, mapped in self._tier_matchers:
            if matcher.fullmatch(rel):
                return mapped
        return self.default_tier

    @cached_property
    def _tier_matchers(self) -> tuple[tuple[GlobMatcher, str], ...]:
        # Made once per set of rules: asked of every file of every scan, a glob made again each
        # time (a cache of some hundred thrashed by a longer `tiers:`) cost minutes a scan.
        return tuple((glob_matcher(pattern), mapped) for pattern, mapped in self.tiers.items())


def within(rel: str, globs: Iterable[str]) -> bool:
    """Whether a vault-relative path is under one of these folders or matches one of these globs
    (`en`, `en/`, `Projects/**/*.md`): what a search's or a listing's folder filter keeps."""
    union = _union(tuple(globs))
    return union is None or bool(union.fullmatch(rel))


def fixed_prefix(pattern: str) -> str:
    """What every path a glob matches starts with ("" when it starts with a wildcard): `en/` for
    `en/**/*.md`, `Projects` for `Projects`."""
    glob = pattern.strip().replace("\\", "/").strip("/")
    return re.split(r"[*?]", glob, maxsplit=1)[0]


@lru_cache(maxsize=64)
def _union(patterns: tuple[str, ...]) -> GlobMatcher | None:
    """One matcher for a list of globs; None when the list matches everything (`**`)."""
    if "**" in patterns:
        return None
    matchers = [glob_matcher(p) for p in dict.fromkeys(patterns)]  # a glob listed twice is tried once
    regexes = [m.pattern for m in matchers if isinstance(m, re.Pattern)]
    stepped = [m for m in matchers if not isinstance(m, re.Pattern)]
    union = re.compile("|".join(f"(?:{r})" for r in regexes) if regexes else r"(?!)", re.DOTALL)
    return _Either(union, tuple(stepped)) if stepped else union


class _Either:
    """The globs of a list that one regex matches, and those matched in steps."""

    def __init__(self, union: re.Pattern[str], stepped: tuple[GlobMatcher, ...]) -> None:
        self.union, self.stepped = union, stepped

    def fullmatch(self, string: str) -> bool:
        return bool(self.union.fullmatch(string)) or any(m.fullmatch(string) for m in self.stepped)
