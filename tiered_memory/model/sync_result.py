"""What one `tmem sync` did: the record the git side (`sync.gitsync`) fills in and every door
returns as it is (`app.api.sync.SYNC`)."""

from __future__ import annotations

__all__ = ["SyncCommit", "SyncChange", "SyncResult"]

from dataclasses import dataclass, field

from tiered_memory.model.records import Record


@dataclass
class SyncCommit(Record):
    sha: str
    subject: str


@dataclass
class SyncChange(Record):
    status: str  # added, changed, deleted, moved
    path: str
    old_path: str | None = None


@dataclass
class SyncResult(Record):
    remote: str
    branch: str  # the local branch
    remote_branch: str = ""
    committed: str | None = None  # the commit of pending edits made before syncing
    incoming: list[SyncCommit] = field(default_factory=list)
    outgoing: list[SyncCommit] = field(default_factory=list)
    notes_in: list[SyncChange] = field(default_factory=list)
    notes_out: list[SyncChange] = field(default_factory=list)
    pushed: bool = False
    push_attempts: int = 0
    conflicts: list[str] = field(default_factory=list)  # notes now marked `conflict: true`
    kept_edits: list[str] = field(default_factory=list)  # deleted on one side, edited on the other: kept
    moved_and_edited: list[str] = field(default_factory=list)
    kept_both: list[str] = field(default_factory=list)  # non-notes changed both ways: "path -> copy"
    too_large: list[str] = field(default_factory=list)  # over git.attachment_max_mb: not committed
    waiting: list[str] = field(default_factory=list)  # encrypted, no key: theirs kept beside ours
    # Notes both machines only appended to: both additions kept, the one written first first.
    appends: list[str] = field(default_factory=list)
    renumbered: list[str] = field(
        default_factory=list
    )  # tasks given a free number: "path: #2 'text' is now #3"
    # Profile facts both machines set to different values: "key: 'kept' replaced 'lost'" (the later
    # `profile set` is kept).
    profile_overridden: list[str] = field(default_factory=list)
    # Notes the merge left in two files (moved on one machine, restored on the other), settled:
    # "id: ... kept <path> (changed last), removed <path>" (`sync.twins`).
    twins: list[str] = field(default_factory=list)
    reindexed: int = 0
    # Outward settings (config.OUTWARD) the pulled tmem.yaml changed to values this machine has not
    # approved, as "key: value" (JSON): left at their defaults here (filled in by `app.syncing`).
    not_applied: list[str] = field(default_factory=list)
    # Files of the editor's plugins the pulled commits changed: code Obsidian runs when it opens
    # the vault, which tmem neither runs nor vets (filled in by `app.syncing`).
    editor_code: list[str] = field(default_factory=list)
