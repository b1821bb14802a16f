"""Sharing and protecting a vault: sync, resolve, log, restore, backup, and the post-merge hook."""

from __future__ import annotations

__all__ = [
    "BACKUP",
    "BackupRequest",
    "BackupResult",
    "LOG",
    "LogEvent",
    "LogRequest",
    "LogResult",
    "POST_MERGE",
    "PostMergeRequest",
    "PostMergeResult",
    "RESOLVE",
    "RESTORE",
    "RESTORE_BACKUP",
    "ResolveRequest",
    "Resolved",
    "RestoreBackupRequest",
    "RestoreRequest",
    "Restored",
    "RestoredVault",
    "SYNC",
    "SyncRequest",
    "SyncResult",
]

from dataclasses import dataclass, field

from tiered_memory.app.api import Op
from tiered_memory.model.records import Record
from tiered_memory.model.sync_result import SyncResult

# ---- sync ---------------------------------------------------------------------------------------


@dataclass
class SyncRequest(Record):
    remote: str | None = None  # default: git.remote in tmem.yaml


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
SYNC = Op("sync", SyncRequest, SyncResult, runs="tiered_memory.app.syncing:sync", writes=True, where="local")
RESOLVE = Op("resolve", ResolveRequest, Resolved, runs="tiered_memory.app.conflicts:resolve", writes=True)
LOG = Op("log", LogRequest, LogResult, runs="tiered_memory.app.syncing:log")
RESTORE = Op("restore", RestoreRequest, Restored, runs="tiered_memory.app.syncing:restore", writes=True)
BACKUP = Op("backup", BackupRequest, BackupResult, runs="tiered_memory.app.syncing:backup")
RESTORE_BACKUP = Op(
    "restore_backup",
    RestoreBackupRequest,
    RestoredVault,
    runs="tiered_memory.app.syncing:restore_backup",
    where="local",
    needs_vault=False,
)
POST_MERGE = Op("post_merge", PostMergeRequest, PostMergeResult, runs="tiered_memory.app.syncing:post_merge")
