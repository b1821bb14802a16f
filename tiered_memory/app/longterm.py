"""Long-term memory: the user profile, domain knowledge, decisions, lessons and patterns.

The profile is `long-term/user_profile.md`; its facts are `- key: value` lines in the body, so
they are searchable and readable like the rest of the file. `profile set` replaces the one line of
that key (or adds it after the last such line) and never touches any other text.

A profile whose frontmatter grew (by hand) past what tmem reads of YAML (64 KiB) has no fields
tmem can read or rewrite; refusing every `profile set` until a person trimmed it left the
profile unusable for an agent. Its facts are in the body, which tmem reads by the fences alone:
`profile set` writes the fact's line there and leaves the frontmatter byte for byte as it is
(no `updated`, no set time), and says so in a line naming the file and the size of its
frontmatter. Nothing of the person's text is moved or lost; what to trim stays their choice.
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
from tiered_memory.model import layout, yaml_dialect
from tiered_memory.model import note as notes
from tiered_memory.model.profile_facts import FACT, SET_AT, fact_lines, set_times, stamp, trimmed
from tiered_memory.storage import sealing

if TYPE_CHECKING:
    from tiered_memory.storage.transaction import Transaction
    from tiered_memory.storage.vault import Vault

PROFILE = layout.PROFILE
DOMAINS = layout.DOMAINS
_KEY = re.compile(r"^[^\s:\-*#][^:\n]{0,59}$")


# ---- profile ----------------------------------------------------------------------------------


def _profile(source: Vault | Transaction) -> notes.Note:
    """The profile note, read from the vault or, to change it, through the unit of work. One
    whose frontmatter is too long to read comes back as read (`_oversized`: its body is the
    whole file); one that is otherwise unreadable is refused."""
    if not source.exists(PROFILE):
        meta = {"id": "user-profile", "title": "User profile", "category": "profile", "importance": 0.9}
        return notes.Note(PROFILE, meta, "# User profile\n", True)
    note = source.read_note(PROFILE)
    if note.parse_warning and _oversized(note) is None:
        raise NoteParseError(f"{PROFILE}: {note.parse_warning}; fix it by hand before tmem changes it")
    return note


def _oversized(note: notes.Note) -> tuple[str, str] | None:
    """(frontmatter block, body) of a profile whose frontmatter is longer than tmem reads YAML:
    split by its fences alone, never parsed. None for any other profile."""
    if not note.parse_warning:
        return None
    body = notes.body_of(note.body, PROFILE)  # unread, the note's body is its whole text
    head = note.body[: len(note.body) - len(body)]
    return (head, body) if len(head) > yaml_dialect.MAX_CHARS else None


def profile_show(memory: Memory, request: Empty) -> Profile:
    note = _profile(memory.vault)
    split = _oversized(note)
    body = split[1] if split else note.body
    facts: dict[str, str] = {}
    for _n, key, value in fact_lines(body):
        facts.setdefault(key, value)
    return Profile(PROFILE, facts, body, note.updated)


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
        split = _oversized(note)
        if split is not None:
            _set_in_body(memory, tx, note, split, key, value)
            return profile_show(memory, Empty())
        body = _with_fact(note.body, key, value)
        # When each key was set, for a merge with another machine's `set` of it (profile_facts):
        # kept in the frontmatter, not in the line a person reads.
        now = memory.now()
        times = trimmed({**set_times(note.meta), key.casefold(): stamp(now)}, body, key.casefold())
        updated = replace(note, body=body).with_meta(updated=now, **{SET_AT: times})
        tx.write_note(updated)
    return profile_show(memory, Empty())


def _with_fact(body: str, key: str, value: str) -> str:
    """`body` with the one `- key: value` line of that key replaced (or one added after the last
    such line, or at the end)."""
    lines = body.split("\n")
    facts = fact_lines(body)
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
    return "\n".join(lines)


def _set_in_body(
    memory: Memory, tx: Transaction, note: notes.Note, split: tuple[str, str], key: str, value: str
) -> None:
    """`profile set` on a profile whose frontmatter is too long to read (see the module's
    docstring): the fact's line in the body, the frontmatter's bytes as they are."""
    head, body = split
    if sealing.sealed(memory.vault, note) or sealing.might_seal(memory.vault, PROFILE, head.encode("utf-8")):
        # Whether it is to be stored encrypted is in the frontmatter tmem cannot read: never
        # guessed, as a plain write of a note meant to be sealed would leak it.
        raise NoteParseError(f"{PROFILE}: {note.parse_warning}; fix it by hand before tmem changes it")
    tx.write_text(PROFILE, head + _with_fact(body, key, value))
    memory.warn(
        f"{PROFILE}: its frontmatter is {len(head.encode('utf-8')) // 1024} KiB, past the "
        f"{yaml_dialect.MAX_CHARS // 1024} KiB tmem reads: '{key}' is set in the body and the "
        "frontmatter is left as it is (trim it by hand for tmem to read its fields again)"
    )


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
