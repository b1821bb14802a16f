"""Sharing and protecting a vault, as operations: sync, log, restore, backup, post-merge.

The git mechanics live in `sync/` (gitsync, history, backup); these functions run them on the
operation's Memory and turn their reports into the result records every door renders.
"""

from __future__ import annotations

__all__ = ["backup", "log", "post_merge", "restore", "restore_backup", "sync"]

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tiered_memory.app import sealed
from tiered_memory.app.api.sync import (
    BackupRequest,
    BackupResult,
    LogEvent,
    LogRequest,
    LogResult,
    PostMergeRequest,
    PostMergeResult,
    RestoreBackupRequest,
    Restored,
    RestoredVault,
    RestoreRequest,
    SyncRequest,
    SyncResult,
)
from tiered_memory.app.memory import Memory
from tiered_memory.config import changed_unapproved
from tiered_memory.errors import BadInput, ConfigError, NoteNotFound
from tiered_memory.model import yaml_dialect
from tiered_memory.model.folders import is_editor_code
from tiered_memory.model.layout import CONFIG_NAME
from tiered_memory.storage import safe_path
from tiered_memory.sync import backup as backups
from tiered_memory.sync import gitsync, history


def sync(memory: Memory, request: SyncRequest) -> SyncResult:
    """Commit pending edits, merge others' commits note by note, push (see sync/gitsync.py).

    A pulled tmem.yaml that gives an outward setting (config.OUTWARD) a value this machine has not
    approved changes nothing here: the result names it instead."""
    for folder in memory.vault.nested_repos():  # its files would never reach the other machine
        memory.vault.git.tell_nested(folder, memory.warn)
    before = _config_bytes(memory.root)
    result = gitsync.sync(memory, request.remote)
    result.editor_code = _editor_code(memory, [c.sha for c in result.incoming])
    if _config_bytes(memory.root) != before:
        try:
            left_out = changed_unapproved(memory.root, before)
        except ConfigError as exc:
            # Said now, where it came from: every later command refuses to run under it.
            memory.warn(f"pulled {exc} (every command refuses it until it is fixed)")
            left_out = []
        result.not_applied = [
            f"{item.key}: {json.dumps(item.value, ensure_ascii=False)}" for item in left_out
        ]
    return result


def _editor_code(memory: Memory, commits: list[str]) -> list[str]:
    """The files of the editor's plugins (`folders.is_editor_code`) these pulled commits change."""
    if not commits:
        return []
    listed = memory.vault.git.run(
        "diff-tree",
        "--stdin",
        "-r",
        "-z",
        "--no-commit-id",
        "--name-only",
        "--root",
        "--",
        ".obsidian",
        input="\n".join(commits) + "\n",
        check=False,
    ).stdout
    return sorted({p for p in listed.split("\0") if p and is_editor_code(p)})


def _config_bytes(root: Path) -> bytes | None:
    # A pulled tmem.yaml is read as load_config reads it: no link followed, no more than it may hold.
    try:
        return safe_path.read_regular(root / CONFIG_NAME, 4 * yaml_dialect.MAX_CONFIG_CHARS)
    except OSError:
        return None


def log(memory: Memory, request: LogRequest) -> LogResult:
    if request.limit is not None and request.limit < 1:
        raise BadInput("the limit must be at least 1")
    if request.ref is None:
        events = history.vault_log(memory.vault, request.limit or 20)
        return LogResult([LogEvent.from_dict(e.to_dict()) for e in events])
    with _near_notes(memory, request.ref):
        found = history.note_history(memory, _current(memory, request.ref), request.limit)
    return LogResult(
        events=[LogEvent.from_dict(e.to_dict()) for e in found.events],
        id=found.id,
        path=found.path,
        paths=list(found.paths),
    )


def restore(memory: Memory, request: RestoreRequest) -> Restored:
    """Bring back a forgotten note, or an older version of one, as a new commit."""
    with _near_notes(memory, request.ref):
        return Restored.from_dict(
            history.restore(memory, _current(memory, request.ref), request.at).to_dict()
        )


@contextmanager
def _near_notes(memory: Memory, ref: str) -> Iterator[None]:
    """An id that no note has now or had: the one line names the notes it comes close to."""
    try:
        yield
    except NoteNotFound as exc:
        hint = memory.near_hint(ref) if str(exc).startswith("no note with id") else ""
        if not hint:
            raise
        raise NoteNotFound(f"{exc}{hint}") from None


def _current(memory: Memory, ref: str) -> str:
    """An encrypted note's path for its id while unlocked (the catalog knows it by path only),
    else `ref` as given: a history lookup by id alone would take such a note for a forgotten one
    and bring back its last plain-text version, from before it was encrypted."""
    try:
        return sealed.resolve(memory, ref)
    except NoteNotFound:
        return ref


def backup(memory: Memory, request: BackupRequest) -> BackupResult:
    """The vault's whole history as a dated git bundle, keeping the newest ones."""
    if request.dest is not None and not Path(request.dest).expanduser().is_absolute():
        raise BadInput(f"the backup folder must be an absolute path, not '{request.dest}'")
    vault = memory.vault
    bundle = backups.backup(vault, Path(request.dest) if request.dest else None, request.keep)
    kept = backups.list_backups(bundle.parent, vault)
    return BackupResult(str(bundle), [str(p) for p in kept], backups.uncommitted(vault))


def restore_backup(request: RestoreBackupRequest) -> RestoredVault:
    """A new working vault cloned from a bundle (no vault is open for this)."""
    return RestoredVault(str(backups.restore_backup(Path(request.bundle), Path(request.target))))


def post_merge(memory: Memory, request: PostMergeRequest) -> PostMergeResult:
    """Update the indexes from what a plain `git pull` or `git merge` changed."""
    return PostMergeResult(gitsync.reindex_range(memory, request.old, request.new))
