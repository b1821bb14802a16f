"""Sync reports, note histories, restores and backups, as text and as JSON."""

from __future__ import annotations

__all__ = [
    "SHOWN",
    "backed_up_text",
    "event_line",
    "log_json",
    "log_text",
    "merge_conflict_line",
    "merged_json",
    "merge_no_key_line",
    "merge_unopened_line",
    "merge_unreadable_line",
    "post_merge_line",
    "resolved_text",
    "restored_text",
    "restored_vault_text",
    "sync_text",
    "uncommitted_warning",
]

from typing import TYPE_CHECKING, Any

from tiered_memory.app.api.sync import BackupResult, LogEvent, LogResult, Resolved, Restored, RestoredVault
from tiered_memory.config import PROTECTIVE
from tiered_memory.model import authors
from tiered_memory.model.sync_result import SyncChange, SyncCommit, SyncResult

if TYPE_CHECKING:  # the merge itself is loaded only by the merge driver
    from tiered_memory.model.merge3 import MergeResult

SHOWN = 20  # commits and notes listed per direction


def sync_text(report: SyncResult) -> str:
    where = f"{report.remote}/{report.remote_branch or report.branch}"
    lines = [f"synced {report.branch} with {where}"]
    if report.committed:
        lines.append(f"committed pending edits as {report.committed[:8]}")
    lines += _direction("in", report.incoming, report.notes_in)
    lines += _direction("out", report.outgoing, report.notes_out)
    if not report.pushed and not report.outgoing:
        lines.append("out: nothing to push")
    if report.push_attempts > 1:
        lines.append(f"push retried: someone pushed meanwhile ({report.push_attempts} attempts)")
    if report.appends:
        shown = ", ".join(report.appends[:3]) + (
            f" and {len(report.appends) - 3} more" if len(report.appends) > 3 else ""
        )
        lines.append(
            f"appends merged: {len(report.appends)} note(s) both machines appended to, "
            f"each addition kept in the order written ({shown})"
        )
    for path in report.moved_and_edited:
        lines.append(f"moved and edited: {path} (moved on one side, edited on the other)")
    for path in report.kept_edits:
        lines.append(f"kept edit: {path} (deleted on one side, edited on the other)")
    for path in report.conflicts:
        if path in report.waiting:
            lines.append(
                f"conflict: {path} (encrypted, no key here: the other version is kept beside it; "
                "`tmem resolve` it once unlocked)"
            )
        else:
            lines.append(f"conflict: {path} (both versions kept; `tmem resolve` it)")
    for line in report.renumbered:
        lines.append(f"renumbered task: {line} (both machines used the number)")
    for line in report.profile_overridden:
        lines.append(f"profile: {line} (both machines set it; the later `profile set` wins)")
    for line in report.twins:
        lines.append(f"one note, two files: {line}")
    for pair in report.kept_both:
        lines.append(f"kept both: {pair} (changed on both machines; keep the one you want)")
    for path in report.too_large:
        lines.append(f"not committed: {path} (larger than git.attachment_max_mb)")
    for setting in report.not_applied:
        key = setting.split(":", 1)[0]
        why = (
            "which lowers the protection this machine gave your notes"
            if key in PROTECTIVE
            else "which reaches outside the vault"
        )
        lines.append(
            f"not applied: tmem.yaml now says {setting}, {why} (`tmem config approve {key}` applies it)"
        )
    if report.editor_code:
        first = report.editor_code[0]
        more = f" and {len(report.editor_code) - 1} more" if len(report.editor_code) > 1 else ""
        lines.append(
            f"pulled plugin code: {first}{more}, which Obsidian runs when it opens this vault; "
            "look at it first (`git log -p -- .obsidian/plugins .obsidian/community-plugins.json`)"
        )
    return "\n".join(lines)


def _direction(label: str, commits: list[SyncCommit], changes: list[SyncChange]) -> list[str]:
    if not commits and not changes:
        return [f"{label}: nothing new"] if label == "in" else []
    counts: dict[str, int] = {}
    for change in changes:
        counts[change.status] = counts.get(change.status, 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in counts.items()) or "no files"
    lines = [f"{label}: {len(commits)} commit(s), {len(changes)} note(s) ({summary})"]
    lines += [f"  {c.sha[:8]} {c.subject}" for c in commits[:SHOWN]]
    if len(commits) > SHOWN:
        lines.append(f"  ... and {len(commits) - SHOWN} more commits")
    marks = {"added": "+", "changed": "~", "deleted": "-", "moved": ">"}
    for change in changes[:SHOWN]:
        moved = f"{change.old_path} -> " if change.old_path else ""
        lines.append(f"  {marks.get(change.status, '?')} {moved}{change.path}")
    if len(changes) > SHOWN:
        lines.append(f"  ... and {len(changes) - SHOWN} more notes")
    return lines


# ---- history ------------------------------------------------------------------------------------


def event_line(event: LogEvent) -> str:
    who = authors.printable(f"{event.author} ({event.agent})" if event.agent else event.author)
    head = f"{event.commit[:8]} {event.date[:10]} {who:<10} {event.subject}"
    parts = []
    for change in event.changes:
        if change.get("old_path"):
            parts.append(f"    moved {change['old_path']} -> {change['path']}")
        else:
            parts.append(f"    {change['change']} {change['path']}")
    return "\n".join([head, *parts])


def log_json(result: LogResult) -> Any:
    """A note's history as an object; the vault's log as the list of its commits."""
    events = [e.to_dict() for e in result.events]
    if result.id is None:
        return events
    return {"id": result.id, "path": result.path, "paths": result.paths, "events": events}


def log_text(result: LogResult) -> str:
    if result.id is None:
        return "\n".join(event_line(e) for e in result.events) or "no commits yet"
    where = result.path or "forgotten (bring it back with `tmem restore`)"
    return "\n".join([f"{result.id}: {where}", *(event_line(e) for e in result.events)])


def restored_text(restored: Restored) -> str:
    what = "brought back" if restored.was_forgotten else "restored the version of"
    sha = f" in {restored.commit[:8]}" if restored.commit else " (already identical: nothing to commit)"
    return f"{what} {restored.id} from {restored.source[:8]} at {restored.path}{sha}"


def resolved_text(path: str, done: Resolved) -> str:
    return f"resolved {path}" + (f" ({done.commit[:8]})" if done.commit else " (nothing to commit)")


def backed_up_text(made: BackupResult) -> str:
    return f"backed up to {made.bundle} ({len(made.kept)} kept)"


def uncommitted_warning(made: BackupResult) -> str:
    return f"{made.uncommitted} uncommitted change(s) are not in the backup (`tmem sync` commits them)"


def restored_vault_text(restored: RestoredVault) -> str:
    return f"restored vault at {restored.vault} (add a remote to sync it)"


def post_merge_line(count: int) -> str:
    """git's post-merge hook, on stderr: the indexes caught up with what a pull changed."""
    return f"tmem: indexes updated for {count} changed note(s)"


# ---- git's merge driver: one line on stderr per note it could not merge, or merged with markers ----


def merge_unreadable_line(path: str, error: Exception) -> str:
    """A file the driver cannot read as text: git merges it its own way."""
    return f"tmem merge-driver: {path}: cannot merge as text ({error}); left for git"


def merge_no_key_line(path: str) -> str:
    return (
        f"tmem merge-driver: {path}: an encrypted note and no key here; left unmerged "
        "(`tmem sync` keeps both versions until `tmem resolve`)"
    )


def merge_unopened_line(path: str, error: Exception) -> str:
    """An encrypted note whose envelope does not open (tampered with, or not an envelope)."""
    return f"tmem merge-driver: {path}: {error}; left unmerged"


def merged_json(path: str, result: MergeResult) -> dict[str, Any]:
    """`merge-driver --json`: the note, whether both versions were kept, and what was decided
    (never the merged text: git has it in the file)."""
    return {"path": path, "conflict": result.conflict, "notes": result.notes}


def merge_conflict_line(path: str) -> str:
    return (
        f"tmem: {path}: both sides changed the same lines; kept both, marked conflict: true "
        "(`tmem resolve` it)"
    )
