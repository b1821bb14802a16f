"""`tmem sync`: share a vault between machines through any git remote without losing an edit.

One sync: commit pending edits, fetch, merge the remote branch (git runs tmem's note-aware merge
driver on every note both sides changed), settle what git still leaves unmerged (an edit wins over
a delete; a note moved on one side and edited on the other ends up moved and edited), push, and
when someone pushed in between, integrate again and retry. It never rebases and never
force-pushes, so every commit of every machine stays in the history. The indexes then update from
the paths the merge changed (`git diff --name-status -M`), not by a full rebuild.
"""

from __future__ import annotations

__all__ = [
    "MAX_PUSH_ATTEMPTS",
    "MERGE_ATTEMPTS",
    "NETWORK_TIMEOUT",
    "commit_pending",
    "diff_changes",
    "pending_paths",
    "reindex_range",
    "profile_overridden",
    "renumbered_tasks",
    "sync",
]

import contextlib
import json
import os
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from tiered_memory.errors import GitError, GitTimedOut, RemoteUnavailable, SyncConflict, TmemError
from tiered_memory.model import layout, profile_facts
from tiered_memory.model import note as notes
from tiered_memory.model.local_state import private_reason
from tiered_memory.model.sync_result import SyncChange, SyncCommit, SyncResult
from tiered_memory.storage import locks
from tiered_memory.storage.git import Git, last_line, name_status_entries, safe_url, status_entries
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.walk import is_temp_name
from tiered_memory.sync.conflicts import is_conflicted
from tiered_memory.sync.gitmerge import Merged, ensure_merge_driver, merge_remote
from tiered_memory.sync.incoming import refuse_private
from tiered_memory.sync.twins import settle_twins
from tiered_memory.sync.workspace import Workspace

if TYPE_CHECKING:
    from tiered_memory.storage.git import Completed

MAX_PUSH_ATTEMPTS = 5
MERGE_ATTEMPTS = 3  # merges refused for a file saved meanwhile, each after committing it
NETWORK_TIMEOUT = 120  # seconds for one fetch or push


# ---- sync -----------------------------------------------------------------------------------


def sync(
    memory: Workspace,
    remote: str | None = None,
    *,
    before_push: Callable[[int], None] | None = None,
) -> SyncResult:
    """Commit, fetch, merge, push (retrying a rejected push); see the module docstring.

    `before_push(attempt)` runs right before each push (tests use it to push from another clone
    in between, which is exactly the race a rejected push comes from).
    """
    vault = memory.vault
    git = vault.git
    with locks.hold(vault.state_dir, "sync", wait=vault.config.git.lock_wait_seconds):
        git_dir, _, branch = git.layout()
        if not branch:
            raise GitError("HEAD is detached: check out a branch (`git switch main`) before syncing")
        if os.path.exists(os.path.join(git_dir, "MERGE_HEAD")):
            # A sync killed while merging left it: undone by the recovery every writer runs.
            with locks.hold(vault.state_dir, "write", wait=vault.config.git.lock_wait_seconds):
                memory.recover()
        if os.path.exists(os.path.join(git_dir, "MERGE_HEAD")):
            raise GitError(
                "a merge is in progress: finish it (`git commit`) or abort it (`git merge --abort`)"
            )
        ensure_merge_driver(vault)
        name = remote or vault.config.git.remote
        cfg = git.config()
        target = branch
        if cfg.get(f"branch.{branch}.remote") == name:
            target = cfg.get(f"branch.{branch}.merge", branch).removeprefix("refs/heads/")
        report = SyncResult(remote=name, branch=branch, remote_branch=target)
        with memory.change("sync: pending edits") as tx:
            pending = commit_pending(tx, report.too_large)
        report.committed = tx.sha
        start = git.head()
        try:
            url = cfg.get(f"remote.{name}.url")
            if not url:
                raise RemoteUnavailable(
                    f"no git remote '{name}' (add one: `git remote add {name} URL`); local commits are kept"
                )
            _exchange(memory, report, name, url, branch, target, before_push)
        finally:
            _reindex(memory, git, start, pending, report)
    return report


def _exchange(
    memory: Workspace,
    report: SyncResult,
    name: str,
    url: str,
    branch: str,
    target: str,
    before_push: Callable[[int], None] | None,
) -> None:
    vault = memory.vault
    git = vault.git
    set_upstream = f"branch.{branch}.remote" not in git.config()
    remote_ref = f"refs/remotes/{name}/{target}"
    seen_in: set[str] = set()
    for attempt in range(1, MAX_PUSH_ATTEMPTS + 1):
        fetched = _network(git, name, url, "fetch", "--quiet", name)
        if fetched.returncode != 0:
            raise RemoteUnavailable(
                f"cannot reach remote '{name}' ({safe_url(url)}): {safe_url(last_line(fetched))}; "
                "local commits are kept"
            )
        theirs = git.rev(remote_ref)
        if theirs:
            for commit in _commits(git, f"HEAD..{theirs}"):
                if commit.sha not in seen_in:
                    seen_in.add(commit.sha)
                    report.incoming.append(commit)
            if not git.is_ancestor(theirs, "HEAD"):
                before = git.head()
                with locks.hold(vault.state_dir, "write", wait=vault.config.git.lock_wait_seconds):
                    refuse_private(git, theirs, f"{name}/{target}")
                    merged = _merge_committed(memory, report, f"{name}/{target}", theirs)
                    for line in settle_twins(memory, before, git.head()):
                        if line not in report.twins:
                            report.twins.append(line)
                report.conflicts += merged.conflicts
                report.kept_edits += merged.kept_edits
                report.moved_and_edited += merged.moved_and_edited
                report.kept_both += merged.kept_both
                report.waiting += merged.waiting
                report.appends += [p for p in merged.appends if p not in report.appends]
                after = git.head()
                for line in profile_overridden(git, before, theirs, after):
                    if line not in report.profile_overridden:
                        report.profile_overridden.append(line)
                for old in (before, theirs):
                    for line in renumbered_tasks(git, old, after):
                        if line not in report.renumbered:
                            report.renumbered.append(line)
        ours = git.head()
        if theirs == ours:
            return
        report.outgoing = _commits(git, f"{theirs}..{ours}" if theirs else ours)
        report.notes_out = diff_changes(git, theirs, ours)
        if before_push is not None:
            before_push(attempt)
        report.push_attempts = attempt
        args = ["push", "--porcelain"] + (["--set-upstream"] if set_upstream else [])
        proc = _network(git, name, url, *args, name, f"refs/heads/{branch}:refs/heads/{target}")
        if proc.returncode == 0:
            report.pushed = True
            return
        rejected = [ln for ln in proc.stdout.splitlines() if ln.startswith("!")]
        raced = any(_lost_ref_race(ln) for ln in rejected)
        if not raced and not any("[rejected]" in ln for ln in rejected):
            why = rejected[0].split("\t")[-1] if rejected else safe_url(last_line(proc))
            raise RemoteUnavailable(f"push to '{name}' failed: {why}; local commits are kept")
        if raced and attempt < MAX_PUSH_ATTEMPTS:
            # Another push holds the branch right now: let it finish, and not all retry at once.
            time.sleep(random.uniform(0.1, 0.5) * attempt)
    raise SyncConflict(
        f"push to '{name}' was rejected {MAX_PUSH_ATTEMPTS} times (others keep pushing, or the "
        "remote's branch stays locked); local commits are kept, run `tmem sync` again"
    )


def _merge_committed(memory: Workspace, report: SyncResult, label: str, theirs: str) -> Merged:
    """Commit pending edits, then merge; again while git refuses to write over a file saved in
    an editor since (no lock holds a person's editor back), which the next commit carries."""
    for _ in range(MERGE_ATTEMPTS):
        big: list[str] = []
        with memory.change("sync: pending edits") as tx:
            commit_pending(tx, big)
        report.too_large += [p for p in big if p not in report.too_large]
        merged = merge_remote(memory.vault, label, theirs)
        if not merged.blocked:
            return merged
    raise GitError(
        f"git merge failed: {merged.blocked} (a file kept changing while sync merged); "
        "your edits are kept, run `tmem sync` again"
    )


# What a git server answers when two pushes to one branch meet: the later one cannot take the
# ref's lock, or finds it moved under it. Like a non-fast-forward rejection, fetching and merging
# again is the answer; a hook's refusal or a protected branch is not retried.
_REF_RACE = ("failed to update ref", "cannot lock ref", "failed to lock", "incorrect old value")


def _lost_ref_race(line: str) -> bool:
    return "[remote rejected]" in line and any(why in line for why in _REF_RACE)


def _network(git: Git, name: str, url: str, *args: str) -> Completed:
    """A fetch or push, bounded in time: an ssh host that never answers must not hang a daemon."""
    try:
        return git.run(*args, check=False, timeout=NETWORK_TIMEOUT)
    except GitTimedOut:
        raise RemoteUnavailable(
            f"remote '{name}' ({safe_url(url)}) did not answer within {NETWORK_TIMEOUT} s; "
            "local commits are kept"
        ) from None


def _commits(git: Git, spec: str) -> list[SyncCommit]:
    out = git.out("log", "--no-merges", "--format=%H%x00%s", spec, "--")
    return [SyncCommit(*line.split("\0", 1)) for line in out.splitlines() if "\0" in line]


def renumbered_tasks(git: Git, old: str, new: str) -> list[str]:
    """Tasks (matched by `uid`) whose number changed between two commits: a merge gave one of
    two tasks added under one number on two machines the next free number."""
    out = git.out("diff", "--name-only", "--no-renames", "-z", old, new, "--", layout.MEMORY_DIR)
    found: list[str] = []
    for path in out.split("\0"):
        if not path.endswith("/tasks.json"):
            continue
        before = _task_numbers(git, old, path)
        for uid, (number, text) in _task_numbers(git, new, path).items():
            was = before.get(uid)
            if was is not None and was[0] != number:
                found.append(f"{path}: #{was[0]} {text[:60]!r} is now #{number}")
    return found


def profile_overridden(git: Git, ours: str, theirs: str, merged: str) -> list[str]:
    """Profile facts both machines set to different values, of which the merge kept the later:
    "key: 'kept' replaced 'lost'"."""
    base = git.run("merge-base", ours, theirs, check=False).stdout.strip()
    texts = [_text_at(git, rev, layout.PROFILE) if rev else None for rev in (base, ours, theirs, merged)]
    b, o, t, m = texts
    if o is None or t is None or m is None:
        return []
    return profile_facts.overridden(b, o, t, m, layout.PROFILE)


def _text_at(git: Git, rev: str, path: str) -> str | None:
    proc = git.run("show", f"{rev}:{path}", check=False)
    return proc.stdout if proc.returncode == 0 else None


def _task_numbers(git: Git, rev: str, path: str) -> dict[str, tuple[int, str]]:
    """uid -> (number, text) of the tasks in `path` at `rev` (none when absent or unreadable)."""
    proc = git.run("show", f"{rev}:{path}", check=False)
    if proc.returncode != 0:
        return {}
    try:
        data = json.loads(proc.stdout)
    except (ValueError, RecursionError):
        return {}
    tasks = data.get("tasks") if isinstance(data, dict) else data
    found: dict[str, tuple[int, str]] = {}
    for task in tasks if isinstance(tasks, list) else []:
        if not isinstance(task, dict):
            continue
        uid, number = task.get("uid"), task.get("id")
        if isinstance(uid, str) and isinstance(number, int) and not isinstance(number, bool):
            found[uid] = (number, str(task.get("text", task.get("title", ""))))
    return found


# ---- committing pending edits ----------------------------------------------------------------


def pending_paths(git: Git) -> list[tuple[str, str]]:
    """(status letter, path) of every uncommitted change, editors' temp files left out, and so is
    whatever only this machine may write (`.tmem/`...), even where .gitignore does not say so."""
    out = git.out("status", "--porcelain=v1", "-z", "--untracked-files=all")
    found: list[tuple[str, str]] = []
    for xy, path, old in status_entries(out):
        if old is not None and _committable(old):
            found.append(("D", old))
        if _committable(path):
            letter = "D" if "D" in xy else "A" if xy == "??" or "A" in xy else "M"
            found.append((letter, path))
    return found


def _committable(path: str) -> bool:
    return not is_temp_name(os.path.basename(path)) and private_reason(path) is None


def commit_pending(tx: Transaction, too_large: list[str] | None = None) -> list[str]:
    """Add every pending edit to the unit of work, with a message listing the notes' titles.
    Files over `git.attachment_max_mb` stay out (listed in `too_large`)."""
    vault = tx.vault
    limit = vault.config.git.attachment_max_mb * 1024 * 1024
    pending = []
    for letter, path in pending_paths(vault.git):
        try:
            big = letter != "D" and os.lstat(vault.abspath(path)).st_size > limit
        except OSError:
            big = False
        if big:
            if too_large is not None:
                too_large.append(path)
            continue
        pending.append((letter, path))
    tx.include(p for _, p in pending)
    # What the unit of work took: a symbolic link (never committed) stays out of the message too.
    taken = set(tx.touched)
    pending = [(letter, p) for letter, p in pending if p in taken]
    paths = [p for _, p in pending]
    if not pending:
        return paths
    words = {"A": "added", "M": "edited", "D": "deleted"}
    items: list[str] = []
    titles: list[str] = []
    for letter, path in pending:
        title = os.path.basename(path)
        if letter != "D" and notes.is_note_path(path):
            with contextlib.suppress(TmemError, OSError):
                title = vault.read_note(path).title
        titles.append(title)
        items.append(f"- {words[letter]}: {title} ({path})")
    shown = ", ".join(titles[:3]) + (f" and {len(titles) - 3} more" if len(titles) > 3 else "")
    tx.message = f"sync: pending edits to {shown}\n\n" + "\n".join(items) + "\n"
    return paths


# ---- after the merge: indexes ------------------------------------------------------------------


def diff_changes(git: Git, old: str | None, new: str) -> list[SyncChange]:
    """Note files changed between two commits, renames paired (`old` None: everything in `new`)."""
    if old is None:
        out = git.out("ls-tree", "-r", "-z", "--name-only", new, "--", layout.MEMORY_DIR)
        return [SyncChange("added", p) for p in out.split("\0") if notes.is_note_path(p)]
    out = git.out("diff", "--name-status", "-M", "-z", old, new, "--")
    changes: list[SyncChange] = []
    for status, path, src in name_status_entries(out.split("\0")):
        if src is not None:
            if notes.is_note_path(path) or notes.is_note_path(src):
                kind = "moved" if status[0] == "R" else "added"
                changes.append(SyncChange(kind, path, src if status[0] == "R" else None))
        elif notes.is_note_path(path):
            kind = {"A": "added", "D": "deleted"}.get(status[0], "changed")
            changes.append(SyncChange(kind, path))
    return changes


def _reindex(memory: Workspace, git: Git, start: str, pending: list[str], report: SyncResult) -> None:
    """Update the indexes for the paths the sync changed; a full refresh only if the diff fails."""
    try:
        end = git.head()
        changes = diff_changes(git, start, end) if end != start else []
    except GitError:
        memory.refresh()
        return
    report.notes_in = changes
    paths = list(pending)
    for change in changes:
        paths.append(change.path)
        if change.old_path:
            paths.append(change.old_path)
    paths = [p for p in dict.fromkeys(paths) if notes.is_note_path(p)]
    # Edits made here are indexed by the next search's refresh (or the daemon) anyway: reindexing
    # them alone is not worth opening the full-text index for in a fresh process.
    if changes and paths:
        memory.indexer.update_paths(paths, vectors=memory.indexer.vectors_loaded)
        report.reindexed = len(paths)
    flagged = set(report.conflicts)
    for change in changes:
        if (
            change.status != "deleted"
            and change.path not in flagged
            and is_conflicted(memory.vault, change.path)
        ):
            report.conflicts.append(change.path)
            flagged.add(change.path)


def reindex_range(memory: Workspace, old: str, new: str) -> int:
    """Update the indexes for what changed between two commits (after a plain `git pull`)."""
    report = SyncResult(remote="", branch="")
    _reindex(memory, memory.vault.git, old, [], report)
    return report.reindexed
