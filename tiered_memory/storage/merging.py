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
    if git.rev("MERGE_HEAD") != theirs:
        ended(vault)  # the merge was committed or aborted; only the record outlived it
        return []
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
    # A kill while the merge was being checked out can leave files written and the index not
    # yet naming them: the abort keeps those as edits by hand. Those holding exactly the merge's
    # bytes are the merge's: they go back to HEAD's, and the next sync merges them again.
    leftovers = _left_by(vault, tree.strip()) if tree.strip() else []
    for rel, data in leftovers:
        put_back(rel, data)
    ended(vault)
    warn(f"a sync killed while merging {theirs[:8]} was undone; the next `tmem sync` merges again")
    return list(dict.fromkeys([p for p in touched if p] + [rel for rel, _ in leftovers]))


def _left_by(vault: Vault, tree: str) -> list[tuple[str, bytes | None]]:
    """(path, HEAD's bytes or None) of the files the merge of `tree` changes whose bytes on disk
    are the merged ones (and not HEAD's)."""
    git = vault.git
    changed = [p for p in git.out("diff", "--name-only", "--no-renames", "-z", "HEAD", tree).split("\0") if p]
    merged, head = _blobs(vault, tree, changed), _blobs(vault, "HEAD", changed)
    found: list[tuple[str, bytes | None]] = []
    for rel in changed:
        file = vault.abspath(rel)
        if rel not in merged or not os.path.isfile(file) or os.path.islink(file):
            continue
        now = git.run("hash-object", "--", rel, check=False).stdout.strip()
        if now == merged[rel] and now != head.get(rel):
            found.append((rel, git.blob(head[rel]) if rel in head else None))
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
