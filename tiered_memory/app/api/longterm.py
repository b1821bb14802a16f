"""Operations on long-term memory: the user profile, domain knowledge, decisions, lessons and
patterns."""

from __future__ import annotations

__all__ = [
    "DECIDE",
    "DecideRequest",
    "KNOWLEDGE_ADD",
    "KnowledgeRequest",
    "LESSON_ADD",
    "LongTermRequest",
    "PATTERN_ADD",
    "PROFILE_SET",
    "PROFILE_SHOW",
    "Profile",
    "ProfileSetRequest",
]

from dataclasses import dataclass, field
from datetime import datetime

from tiered_memory.app.api import Empty, Op
from tiered_memory.app.api.notes import NoteView
from tiered_memory.model.records import Record


@dataclass
class Profile(Record):
    """The profile file: its `- key: value` facts (the first line of each key) and its whole body."""

    path: str
    facts: dict[str, str]
    body: str
    updated: datetime | None = None


@dataclass
class ProfileSetRequest(Record):
    key: str
    value: str


@dataclass
class KnowledgeRequest(Record):
    text: str
    domain: str  # the field it belongs to, e.g. geodesy: its folder under knowledge_base/domains/
    title: str | None = None
    tags: list[str] = field(default_factory=list)


@dataclass
class DecideRequest(Record):
    decision: str
    why: str
    project: str | None = None  # kept in the project's folder until the project completes
    title: str | None = None
    tags: list[str] = field(default_factory=list)


@dataclass
class LongTermRequest(Record):
    """A lesson or a pattern."""

    text: str
    project: str | None = None  # kept in the project's folder until the project completes
    title: str | None = None
    tags: list[str] = field(default_factory=list)


PROFILE_SHOW = Op("profile_show", Empty, Profile, runs="tiered_memory.app.longterm:profile_show")
PROFILE_SET = Op(
    "profile_set", ProfileSetRequest, Profile, runs="tiered_memory.app.longterm:profile_set", writes=True
)
KNOWLEDGE_ADD = Op(
    "knowledge_add", KnowledgeRequest, NoteView, runs="tiered_memory.app.longterm:knowledge_add", writes=True
)
DECIDE = Op("decide", DecideRequest, NoteView, runs="tiered_memory.app.longterm:decide", writes=True)
LESSON_ADD = Op(
    "lesson_add", LongTermRequest, NoteView, runs="tiered_memory.app.longterm:lesson_add", writes=True
)
PATTERN_ADD = Op(
    "pattern_add", LongTermRequest, NoteView, runs="tiered_memory.app.longterm:pattern_add", writes=True
)
