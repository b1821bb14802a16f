"""Sharing and protecting a vault: sync, resolve, log, restore, backup, and the post-merge hook."""

from __future__ import annotations

from dataclasses import dataclass, field

from tiered_memory.app.api import Op
from tiered_memory.model.records import Record

# ---- sync ---------------------------------------------------------------------------------------


@dataclass
class SyncRequest(Record):
    remote: str | None = None  # default: git.remote in tmem.yaml


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
    kept_edits: list[str] = field(default_factory=list)  # deleted on one side, edited on the other
    moved_and_edited: list[str] = field(default_factory=list)
    kept_both: list[str] = field(default_factory=list)  # non-notes changed both ways: "path -> copy"
    too_large: list[str] = field(default_factory=list)  # over git.attachment_max_mb: not committed
    waiting: list[str] = field(default_factory=list)  # encrypted, no key: theirs kept beside ours
    renumbered: list[str] = field(
        default_factory=list
    )  # tasks given a free number: "path: #2 'text' is now #3"
    reindexed: int = 0
    # Outward settings (config.OUTWARD) the pulled tmem.yaml changed to values this machine has not
    # approved, as "key: value" (JSON): left at their defaults here.
    not_applied: list[str] = field(default_factory=list)


# ---- resolve ------------------------------------------------------------------------------------


@dataclass
class ResolveRequest(Record):
    """Clear a note's `conflict: true` once a person merged its two versions by hand."""

    ref: str
    force: bool = False  # even with conflict markers still in it
    text: str | None = None  # the resolved note (an encrypted one, edited outside the vault)
    open: bool = False  # only bring in what waits (an encrypted note's other version); return the text


@dataclass
class Resolved(Record):
    path: str
    commit: str | None = None
    text: str | None = None  # with `open`: the note's (plain) text to resolve


# ---- history ------------------------------------------------------------------------------------


@dataclass
class LogRequest(Record):
    ref: str | None = None  # a note's history; none: the vault's recent commits
    limit: int | None = None


@dataclass
class LogEvent(Record):
    commit: str
    date: str
    author: str  # the machine or person that made the commit (its author name)
    subject: str
    changes: list[dict[str, str]] = field(default_factory=list)  # {"change", "path", "old_path"?}
    email: str = ""
    agent: str = ""  # the agent whose call made the change, "" when none did


@dataclass
class LogResult(Record):
    """A note's history (`id` set) or the vault's recent commits (`id` None)."""

    events: list[LogEvent] = field(default_factory=list)  # newest first
    id: str | None = None
    path: str | None = None  # where the note is now; None when it was forgotten
    paths: list[str] = field(default_factory=list)  # every path it had


@dataclass
class RestoreRequest(Record):
    ref: str
    at: str | None = None  # a commit; none: the last version of a forgotten note


@dataclass
class Restored(Record):
    id: str
    path: str
    commit: str | None
    source: str  # the commit whose text was brought back
    was_forgotten: bool


# ---- backups ------------------------------------------------------------------------------------


@dataclass
class BackupRequest(Record):
    dest: str | None = None  # an absolute folder; none: backup.directory
    keep: int | None = None  # bundles to keep; none: backup.keep


@dataclass
class BackupResult(Record):
    bundle: str
    kept: list[str] = field(default_factory=list)
    uncommitted: int = 0  # changes not in the bundle because they are not committed


@dataclass
class RestoreBackupRequest(Record):
    bundle: str
    target: str


@dataclass
class RestoredVault(Record):
    vault: str


# ---- after a plain git pull ---------------------------------------------------------------------


@dataclass
class PostMergeRequest(Record):
    old: str = "ORIG_HEAD"
    new: str = "HEAD"


@dataclass
class PostMergeResult(Record):
    reindexed: int = 0


# Sync runs in the caller's process: git may need its ssh agent, credential helper or terminal.
SYNC = Op("sync", SyncRequest, SyncResult, writes=True, where="local")
RESOLVE = Op("resolve", ResolveRequest, Resolved, writes=True)
LOG = Op("log", LogRequest, LogResult)
RESTORE = Op("restore", RestoreRequest, Restored, writes=True)
BACKUP = Op("backup", BackupRequest, BackupResult)
RESTORE_BACKUP = Op("restore_backup", RestoreBackupRequest, RestoredVault, where="local")
POST_MERGE = Op("post_merge", PostMergeRequest, PostMergeResult)
