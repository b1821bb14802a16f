"""The record that this machine's sync is between `git merge` and its merge commit.

A sync merges under the write lock, and what git cannot merge by itself is settled file by file
before the commit. A kill -9 in that window leaves git's merge in progress (MERGE_HEAD, unmerged
index entries), and then every writer's commit fails ("cannot do a partial commit during a
merge") and every sync refuses to build on it. A merge a person started and left is theirs to
finish; one tmem started and was killed in is tmem's to undo. This record tells them apart: it
names the commit being merged, is written before `git merge` and removed once the merge is
committed or aborted. Whoever next holds the write lock finds it only if that sync died (it held
the lock for the whole merge), and aborts the merge when MERGE_HEAD is still the commit it names:
the tree and the index go back to HEAD, nothing is lost (the other machine's commits stay on the
remote and are merged again by the next sync).
"""

from __future__ import annotations

__all__ = ["abort_interrupted", "ended", "started"]

import contextlib
import os
from collections.abc import Callable

from tiered_memory.errors import GitError
from tiered_memory.storage.vault import Vault

RECORD = "merging"  # .tmem/merging: the commit this machine's sync is merging


def started(vault: Vault, theirs: str, tree: str = "") -> None:
    """Record, before the merge, that a sync merges `theirs` (call holding the write lock), and,
    once known, the `tree` it checks out: the bytes a kill may leave in files the index does not
    yet name, which are the merge's, not a person's edits."""
    vault.state_dir.mkdir(parents=True, exist_ok=True)
    path = vault.state_dir / RECORD
    temp = path.with_name(f"{RECORD}.{os.getpid()}.tmp")
    temp.write_text(f"{theirs}\n{tree}\n" if tree else theirs + "\n", encoding="ascii")
    os.replace(temp, path)


def ended(vault: Vault) -> None:
    """The merge was committed or aborted (or never began): nothing left to undo."""
    (vault.state_dir / RECORD).unlink(missing_ok=True)


def abort_interrupted(
    vault: Vault, warn: Callable[[str], None], put_back: Callable[[str, bytes | None], None]
) -> list[str]:
    """Undo the merge a killed sync left in progress (call holding the write lock); the paths it
    put back as HEAD has them, for reindexing. A merge without tmem's record is left alone.
    `put_back(path, bytes)` writes a file as HEAD has it (None: HEAD has none)."""
    path = vault.state_dir / RECORD
    try:
        theirs, _, tree = path.read_text(encoding="ascii").strip().partition("\n")
    except (OSError, UnicodeDecodeError):
        return []
    git = vault.git
    target = tree.strip()
    if git.rev("MERGE_HEAD") != theirs:
        # No merge in progress: the merge was committed or aborted, or the kill came before it
        # began or during a fast-forward's checkout (which writes no MERGE_HEAD): then HEAD is not
        # yet theirs, and the files that checkout got to are put back.
        put = []
        if git.rev("MERGE_HEAD") is None and git.rev(theirs) and not git.is_ancestor(theirs, "HEAD"):
            with contextlib.suppress(GitError):
                git.clear_stale_index_lock(warn)
            put = _left_by(vault, target or f"{theirs}^{{tree}}")
            for rel, data in put:
                put_back(rel, data)
            if put:
                git.run("reset", "--quiet", "HEAD", "--", *(rel for rel, _ in put), check=False)
                warn(
                    f"a sync killed while checking out {theirs[:8]} was undone "
                    f"({len(put)} file(s) put back); the next `tmem sync` merges again"
                )
        ended(vault)  # only the record outlived it
        return [rel for rel, _ in put]
    touched = git.out("diff", "--name-only", "--relative", "-z", "HEAD").split("\0")
    # The kill may have taken a git command of the merge with it, and its index.lock with it
    # would make the abort fail; one a live git holds is waited for (and then the abort reports it).
    with contextlib.suppress(GitError):
        git.clear_stale_index_lock(warn)
    aborted = git.run("merge", "--abort", check=False)
    if aborted.returncode != 0:
        why = (aborted.stderr.strip().splitlines() or ["git merge --abort failed"])[-1]
        warn(
            f"a sync was killed while merging {theirs[:8]} and git cannot undo that merge ({why}): "
            "finish it (`git commit`) or abort it (`git merge --abort`)"
        )
        return []
    # A kill while the merge was being checked out can leave files written, cut short or
    # removed (git unlinks a file before writing its new version) while the index does not yet
    # name the merge: the abort keeps those as edits by hand, which the next commit would take
    # (a note deleted that neither machine deleted). They go back to HEAD's bytes, and the next
    # sync merges them again.
    leftovers = _left_by(vault, target) if target else []
    for rel, data in leftovers:
        put_back(rel, data)
    ended(vault)
    warn(f"a sync killed while merging {theirs[:8]} was undone; the next `tmem sync` merges again")
    return list(dict.fromkeys([p for p in touched if p] + [rel for rel, _ in leftovers]))


def _left_by(vault: Vault, tree: str) -> list[tuple[str, bytes | None]]:
    """(path, HEAD's bytes or None) of the files the checkout of `tree` changes that it left as
    only that checkout leaves them: holding the merged bytes (and not HEAD's), a part of them
    (a write cut short: empty, or the start of them and not of HEAD's), or gone where HEAD has
    them (unlinked to be rewritten or removed). Sync commits every edit before it merges, and git
    refuses to check out over one made since, so these are the checkout's, not a person's."""
    git = vault.git
    changed = [p for p in git.out("diff", "--name-only", "--no-renames", "-z", "HEAD", tree).split("\0") if p]
    merged, head = _blobs(vault, tree, changed), _blobs(vault, "HEAD", changed)
    wanted = {sha for sha in (*merged.values(), *head.values())}
    data = vault.git.blobs(wanted)
    found: list[tuple[str, bytes | None]] = []
    for rel in changed:
        file = vault.abspath(rel)
        before = data.get(head[rel]) if rel in head else None
        if not os.path.lexists(file):
            if before is not None:
                found.append((rel, before))
            continue
        if rel not in merged or not os.path.isfile(file) or os.path.islink(file):
            continue
        after = data.get(merged[rel])
        try:
            with open(file, "rb") as handle:
                now = handle.read(len(after) + 1 if after is not None else 0)
        except OSError:
            continue
        if after is None or now == before:
            continue
        cut_short = len(now) < len(after) and after.startswith(now) and not (before or b"").startswith(now)
        if now == after or cut_short or (not now and after and before):
            found.append((rel, before))
    return found


def _blobs(vault: Vault, rev: str, paths: list[str]) -> dict[str, str]:
    if not paths:
        return {}
    out = vault.git.out("ls-tree", "-r", "-z", rev, "--", *paths)
    found = {}
    for entry in out.split("\0"):
        info, _, rel = entry.partition("\t")
        if rel and info.split()[1:2] == ["blob"]:
            found[rel] = info.split()[2]
    return found
