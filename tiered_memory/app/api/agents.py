"""What agents ask for: the context block, entity profiles, forgetting an entity, the secret scan."""

from __future__ import annotations

__all__ = [
    "CONTEXT",
    "CONTEXT_FORMATS",
    "ContextBlock",
    "ContextMemory",
    "ContextRequest",
    "ContextSection",
    "ENTITY_ADD",
    "ENTITY_KINDS",
    "ENTITY_LIST",
    "ENTITY_SHOW",
    "ENTITY_UPDATE",
    "EntityAddRequest",
    "EntityList",
    "EntityListRequest",
    "EntityRequest",
    "EntityUpdateRequest",
    "EntityView",
    "FORGET_ENTITY",
    "Finding",
    "ForgetEntityRequest",
    "ForgetEntityResult",
    "RemovedNote",
    "SCAN",
    "ScanRequest",
    "ScanResult",
]

from dataclasses import dataclass, field

from tiered_memory.app.api import Op
from tiered_memory.app.api.notes import NoteSummary
from tiered_memory.model.records import Record

CONTEXT_FORMATS = ("markdown", "json")
ENTITY_KINDS = ("person", "organization", "project", "place", "thing")


# ---- context ------------------------------------------------------------------------------------


@dataclass
class ContextRequest(Record):
    query: str | None = None  # what the session is about; none: recent and important memories
    project: str | None = None  # default: the active one
    entity: str | None = None  # a person or thing the session is about
    budget: int | None = None  # tokens; default: context.budget_tokens
    include_sensitive: bool = False
    fmt: str = "markdown"  # markdown: the <project-memory> block; json: the block without the wrapper


@dataclass
class ContextSection(Record):
    name: str
    title: str
    lines: list[str] = field(default_factory=list)
    tokens: int = 0
    truncated: bool = False

    @property
    def text(self) -> str:
        return "\n".join([f"## {self.title}", *self.lines])


@dataclass
class ContextMemory(Record):
    id: str
    title: str
    category: str
    tier: str
    path: str
    date: str
    source: str
    score: float | None
    line: str = ""  # as it appears in the block
    trimmed: bool = False  # cut to fit the budget


@dataclass
class ContextBlock(Record):
    text: str
    tokens: int
    budget: int
    tokenizer: str
    fmt: str
    query: str | None = None
    project: str | None = None
    entity: str | None = None
    sections: list[ContextSection] = field(default_factory=list)
    memories: list[ContextMemory] = field(default_factory=list)
    omitted: int = 0
    notices: list[str] = field(default_factory=list)


# ---- entities -----------------------------------------------------------------------------------


@dataclass
class EntityView(Record):
    id: str
    name: str
    kind: str
    aliases: list[str]
    path: str
    preferences: list[str] = field(default_factory=list)
    avoid_topics: list[str] = field(default_factory=list)
    personality: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    last_seen: str = ""
    interaction_count: int = 0
    sensitive: bool = False
    related: list[NoteSummary] = field(default_factory=list)  # filled by `entity show`


@dataclass
class EntityList(Record):
    entities: list[EntityView] = field(default_factory=list)


@dataclass
class EntityAddRequest(Record):
    name: str
    kind: str = "person"
    aliases: list[str] = field(default_factory=list)
    preferences: list[str] = field(default_factory=list)
    avoid: list[str] = field(default_factory=list)
    personality: str | None = None
    note: str | None = None
    sensitive: bool = False


@dataclass
class EntityUpdateRequest(Record):
    name: str
    add_preferences: list[str] = field(default_factory=list)
    remove_preferences: list[str] = field(default_factory=list)
    add_avoid: list[str] = field(default_factory=list)
    remove_avoid: list[str] = field(default_factory=list)
    personality: str | None = None
    note: str | None = None
    aliases: list[str] = field(default_factory=list)
    kind: str | None = None
    seen: bool = False  # an interaction now: last seen, interaction count + 1
    sensitive: bool | None = None


@dataclass
class EntityRequest(Record):
    name: str
    limit: int = 20  # related notes listed


@dataclass
class EntityListRequest(Record):
    kind: str | None = None


@dataclass
class ForgetEntityRequest(Record):
    name: str
    reason: str | None = None
    mentions: bool = False  # also notes that only mention the name in their text


@dataclass
class RemovedNote(Record):
    path: str
    title: str


@dataclass
class ForgetEntityResult(Record):
    entity: str
    removed: list[RemovedNote] = field(default_factory=list)
    mentioned_not_removed: list[str] = field(default_factory=list)
    commit: str | None = None


# ---- scan ---------------------------------------------------------------------------------------


@dataclass
class ScanRequest(Record):
    history: bool = False  # also every commit on every branch


@dataclass
class Finding(Record):
    """A secret found: its kind, where, and a mask (never the secret itself)."""

    kind: str
    file: str
    line: int
    masked: str
    commit: str | None = None  # None: the file as it is now


@dataclass
class ScanResult(Record):
    found: int = 0
    files_scanned: int = 0
    commits_scanned: int | None = None  # None: history not scanned
    files: list[Finding] = field(default_factory=list)
    history: list[Finding] | None = None


CONTEXT = Op("context", ContextRequest, ContextBlock, runs="tiered_memory.app.context:context")
ENTITY_ADD = Op(
    "entity_add", EntityAddRequest, EntityView, runs="tiered_memory.app.entities:entity_add", writes=True
)
ENTITY_UPDATE = Op(
    "entity_update",
    EntityUpdateRequest,
    EntityView,
    runs="tiered_memory.app.entities:entity_update",
    writes=True,
)
ENTITY_SHOW = Op("entity_show", EntityRequest, EntityView, runs="tiered_memory.app.entities:entity_show")
ENTITY_LIST = Op("entity_list", EntityListRequest, EntityList, runs="tiered_memory.app.entities:entity_list")
FORGET_ENTITY = Op(
    "forget_entity",
    ForgetEntityRequest,
    ForgetEntityResult,
    runs="tiered_memory.app.entities:entity_forget",
    writes=True,
)
SCAN = Op("scan", ScanRequest, ScanResult, runs="tiered_memory.app.scan:scan")
