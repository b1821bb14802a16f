"""Long-term memory: the user profile, domain knowledge, decisions, lessons and patterns.

The profile is `long-term/user_profile.md`; its facts are `- key: value` lines in the body, so
they are searchable and readable like the rest of the file. `profile set` replaces the one line of
that key (or adds it after the last such line) and never touches any other text.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tiered_memory.app import filing
from tiered_memory.app.filing import NewNote
from tiered_memory.app.project_files import require
from tiered_memory.errors import BadInput, NoteParseError
from tiered_memory.model import layout
from tiered_memory.model import note as notes

if TYPE_CHECKING:
    from tiered_memory.app.memory import Memory

PROFILE = layout.PROFILE
DOMAINS = layout.DOMAINS
_FACT = re.compile(r"^(?P<lead>[ \t]*[-*][ \t]+)(?P<key>[^:\n]{1,60}?)[ \t]*:[ \t]*(?P<value>.*?)[ \t]*$")
_KEY = re.compile(r"^[^\s:\-*#][^:\n]{0,59}$")


# ---- profile ----------------------------------------------------------------------------------


def _profile(memory: Memory) -> notes.Note:
    vault = memory.vault
    if not vault.abspath(PROFILE).is_file():
        meta = {"id": "user-profile", "title": "User profile", "category": "profile", "importance": 0.9}
        return notes.Note(PROFILE, meta, "# User profile\n", True)
    note = vault.read_note(PROFILE)
    if note.parse_warning:
        raise NoteParseError(f"{PROFILE}: {note.parse_warning}; fix it by hand before tmem changes it")
    return note


def _fact_lines(body: str) -> list[tuple[int, str, str]]:
    """(line number, key, value) of each `- key: value` line outside HTML comments."""
    out: list[tuple[int, str, str]] = []
    in_comment = False
    for number, line in enumerate(body.split("\n")):
        if in_comment:
            in_comment = "-->" not in line
            continue
        if "<!--" in line and "-->" not in line.split("<!--", 1)[1]:
            in_comment = True
            continue
        match = _FACT.match(line.rstrip("\r"))
        if match:
            out.append((number, match.group("key").strip(), match.group("value")))
    return out


def profile_show(memory: Memory) -> dict[str, Any]:
    note = _profile(memory)
    facts: dict[str, str] = {}
    for _n, key, value in _fact_lines(note.body):
        facts.setdefault(key, value)
    return {"path": PROFILE, "facts": facts, "body": note.body, "updated": note.updated}


def profile_set(memory: Memory, key: str, value: str) -> dict[str, Any]:
    key = key.strip()
    if not _KEY.match(key):
        raise BadInput(f"invalid profile key '{key}': 1-60 characters, no ':' or line breaks")
    value = " ".join(memory.redact(value).split())
    if not value:
        raise BadInput("the profile value is empty")
    with memory.change(f"profile set: {key}") as tx:
        note = _profile(memory)
        lines = note.body.split("\n")
        facts = _fact_lines(note.body)
        same = [n for n, k, _v in facts if k.casefold() == key.casefold()]
        if same:
            match = _FACT.match(lines[same[0]].rstrip("\r"))
            assert match is not None
            ending = "\r" if lines[same[0]].endswith("\r") else ""
            lines[same[0]] = f"{match.group('lead')}{match.group('key').strip()}: {value}{ending}"
        elif facts:
            lines.insert(facts[-1][0] + 1, f"- {key}: {value}")
        else:
            while lines and lines[-1] == "":
                lines.pop()
            lines += ["", f"- {key}: {value}", ""]
        body = "\n".join(lines)
        updated = replace(note, body=body).with_meta(updated=memory.now())
        tx.write_note(updated)
    return profile_show(memory)


# ---- knowledge, decisions, lessons, patterns ---------------------------------------------------


def _write(memory: Memory, note: notes.Note) -> notes.Note:
    tier = layout.TIER_DIRS.get(note.tier or "", "")
    with memory.change(f"remember: {note.title} [{tier}/{note.category}]") as tx:
        tx.create_note(note)
    return memory.vault.read_note(note.path)


def _project_folder(memory: Memory, project: str) -> str:
    pid = require(memory.vault, project)
    return f"{layout.PROJECTS}/{pid}"


def knowledge_add(
    memory: Memory, text: str, domain: str, *, title: str | None = None, tags: list[str] | None = None
) -> notes.Note:
    if not domain.strip():
        raise BadInput("a domain is needed (--domain), e.g. geodesy or python")
    slug = notes.slugify(domain, 40)
    new = NewNote(
        text=text,
        title=title,
        tier="long",
        category="fact",
        tags=tags or [],
        extra={"domain": domain.strip()},
        folder=f"{DOMAINS}/{slug}",
    )
    return filing.add(memory, new)


def decide(
    memory: Memory,
    decision: str,
    why: str,
    *,
    project: str | None = None,
    title: str | None = None,
    tags: list[str] | None = None,
) -> notes.Note:
    """A decision and its reason: long-term/decisions/YYYY-MM-DD_slug.md, or the project's folder."""
    if not decision.strip():
        raise BadInput("the decision is empty")
    if not why.strip():
        raise BadInput("say why (--why): a decision without its reason is hard to revisit")
    heading = title or decision.strip().splitlines()[0]
    new = NewNote(
        text=f"{decision.strip()}\n\n## Why\n\n{why.strip()}\n",
        title=heading[:80].strip(),
        tier="long",
        category="decision",
        tags=tags or [],
    )
    note = filing.prepare(memory, new)
    if project:
        folder = _project_folder(memory, project)
        pid = folder.rsplit("/", 1)[1]
        note.meta["project"] = pid
        day = note.created or memory.now()
        note.path = f"{folder}/{day:%Y-%m-%d}_{notes.slugify(note.title, 40)}.md"
    return _write(memory, note)


def _knowledge(
    memory: Memory, text: str, category: str, project: str | None, title: str | None, tags: list[str] | None
) -> notes.Note:
    new = NewNote(text=text, title=title, tier="long", category=category, tags=tags or [])
    note = filing.prepare(memory, new)
    if project:
        folder = _project_folder(memory, project)
        note.meta["project"] = folder.rsplit("/", 1)[1]
        note.path = f"{folder}/{note.id}.md"
    return _write(memory, note)


def lesson_add(
    memory: Memory,
    text: str,
    *,
    project: str | None = None,
    title: str | None = None,
    tags: list[str] | None = None,
) -> notes.Note:
    """A lesson learned (category error): knowledge_base/lessons/, or the project's folder."""
    return _knowledge(memory, text, "error", project, title, tags)


def pattern_add(
    memory: Memory,
    text: str,
    *,
    project: str | None = None,
    title: str | None = None,
    tags: list[str] | None = None,
) -> notes.Note:
    """A recurring pattern: knowledge_base/patterns/, or the project's folder."""
    return _knowledge(memory, text, "pattern", project, title, tags)
