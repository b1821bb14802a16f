"""Long-term memory: the user profile, domain knowledge, decisions, lessons and patterns.

The profile is `long-term/user_profile.md`; its facts are `- key: value` lines in the body, so
they are searchable and readable like the rest of the file. `profile set` replaces the one line of
that key (or adds it after the last such line) and never touches any other text.
"""

from __future__ import annotations

__all__ = [
    "DOMAINS",
    "PROFILE",
    "decide",
    "knowledge_add",
    "lesson_add",
    "pattern_add",
    "profile_set",
    "profile_show",
]

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from tiered_memory.app import filing
from tiered_memory.app.api import Empty
from tiered_memory.app.api.longterm import (
    DecideRequest,
    KnowledgeRequest,
    LongTermRequest,
    Profile,
    ProfileSetRequest,
)
from tiered_memory.app.api.notes import NoteView
from tiered_memory.app.filing import NewNote
from tiered_memory.app.memory import Memory
from tiered_memory.app.notes import note_view
from tiered_memory.app.project_files import require
from tiered_memory.errors import BadInput, NoteParseError
from tiered_memory.model import layout
from tiered_memory.model import note as notes
from tiered_memory.model.profile_facts import FACT, SET_AT, fact_lines, set_times, stamp, trimmed

if TYPE_CHECKING:
    from tiered_memory.storage.transaction import Transaction
    from tiered_memory.storage.vault import Vault

PROFILE = layout.PROFILE
DOMAINS = layout.DOMAINS
_KEY = re.compile(r"^[^\s:\-*#][^:\n]{0,59}$")


# ---- profile ----------------------------------------------------------------------------------


def _profile(source: Vault | Transaction) -> notes.Note:
    """The profile note, read from the vault or, to change it, through the unit of work."""
    if not source.exists(PROFILE):
        meta = {"id": "user-profile", "title": "User profile", "category": "profile", "importance": 0.9}
        return notes.Note(PROFILE, meta, "# User profile\n", True)
    note = source.read_note(PROFILE)
    if note.parse_warning:
        raise NoteParseError(f"{PROFILE}: {note.parse_warning}; fix it by hand before tmem changes it")
    return note


def profile_show(memory: Memory, request: Empty) -> Profile:
    note = _profile(memory.vault)
    facts: dict[str, str] = {}
    for _n, key, value in fact_lines(note.body):
        facts.setdefault(key, value)
    return Profile(PROFILE, facts, note.body, note.updated)


def profile_set(memory: Memory, request: ProfileSetRequest) -> Profile:
    """Replace the one `- key: value` line of that key (or add one after the last such line)."""
    key, value = request.key.strip(), request.value
    if not _KEY.match(key):
        raise BadInput(f"invalid profile key '{key}': 1-60 characters, no ':' or line breaks")
    value = " ".join(memory.redact(value).split())
    if not value:
        raise BadInput("the profile value is empty")
    with memory.change(f"profile set: {key}") as tx:
        note = _profile(tx)
        lines = note.body.split("\n")
        facts = fact_lines(note.body)
        same = [n for n, k, _v in facts if k.casefold() == key.casefold()]
        if same:
            match = FACT.match(lines[same[0]].rstrip("\r"))
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
        # When each key was set, for a merge with another machine's `set` of it (profile_facts):
        # kept in the frontmatter, not in the line a person reads.
        now = memory.now()
        times = trimmed({**set_times(note.meta), key.casefold(): stamp(now)}, body, key.casefold())
        updated = replace(note, body=body).with_meta(updated=now, **{SET_AT: times})
        tx.write_note(updated)
    return profile_show(memory, Empty())


# ---- knowledge, decisions, lessons, patterns ---------------------------------------------------


def _project_folder(memory: Memory, project: str) -> str:
    pid = require(memory.vault, project)
    return f"{layout.PROJECTS}/{pid}"


def knowledge_add(memory: Memory, request: KnowledgeRequest) -> NoteView:
    """A piece of domain knowledge: knowledge_base/domains/{domain}/."""
    domain = request.domain
    if not domain.strip():
        raise BadInput("a domain is needed (--domain), e.g. geodesy or python")
    slug = notes.slugify(domain, 40)
    new = NewNote(
        text=request.text,
        title=request.title,
        tier="long",
        category="fact",
        tags=list(request.tags),
        extra={"domain": domain.strip()},
        folder=f"{DOMAINS}/{slug}",
    )
    return note_view(filing.add(memory, new))


def decide(memory: Memory, request: DecideRequest) -> NoteView:
    """A decision and its reason: long-term/decisions/YYYY-MM-DD_slug.md, or the project's folder."""
    decision, why, project = request.decision, request.why, request.project
    if not decision.strip():
        raise BadInput("the decision is empty")
    if not why.strip():
        raise BadInput("say why (--why): a decision without its reason is hard to revisit")
    heading = request.title or decision.strip().splitlines()[0]
    new = NewNote(
        text=f"{decision.strip()}\n\n## Why\n\n{why.strip()}\n",
        title=heading[:80].strip(),
        tier="long",
        category="decision",
        tags=list(request.tags),
    )
    note = filing.prepare(memory, new)
    if project:
        folder = _project_folder(memory, project)
        pid = folder.rsplit("/", 1)[1]
        note.meta["project"] = pid
        day = note.created or memory.now()
        note.path = f"{folder}/{day:%Y-%m-%d}_{notes.slugify(note.title, 40)}.md"
    return note_view(filing.write(memory, note))


def _knowledge(memory: Memory, request: LongTermRequest, category: str) -> NoteView:
    new = NewNote(
        text=request.text, title=request.title, tier="long", category=category, tags=list(request.tags)
    )
    note = filing.prepare(memory, new)
    if request.project:
        folder = _project_folder(memory, request.project)
        note.meta["project"] = folder.rsplit("/", 1)[1]
        note.path = f"{folder}/{note.id}.md"
    return note_view(filing.write(memory, note))


def lesson_add(memory: Memory, request: LongTermRequest) -> NoteView:
    """A lesson learned (category error): knowledge_base/lessons/, or the project's folder."""
    return _knowledge(memory, request, "error")


def pattern_add(memory: Memory, request: LongTermRequest) -> NoteView:
    """A recurring pattern: knowledge_base/patterns/, or the project's folder."""
    return _knowledge(memory, request, "pattern")
