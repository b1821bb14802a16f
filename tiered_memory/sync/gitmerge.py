"""Integrating another machine's commits: `git merge` with tmem's driver, then whatever git leaves.

Git runs the note-aware merge driver on notes both sides changed; what it still leaves unmerged is
settled here so that no edit is lost: both sides present (the driver could not run) -> our own
merge; deleted on one side and changed on the other -> the change is kept, merged into the moved
copy when the deleting side had moved the note (same `id`) where git's rename detection missed it.
Any other file both sides changed (editor settings, attachments) never stops a sync: JSON merges
key by key when no value was changed both ways, text by lines when the edits do not overlap, and
otherwise both versions are kept side by side (`name (other machine).ext`) and reported.
Also here: registering the driver and the post-merge hook in a vault's .git (per machine).

This is the one writer of the vault that works outside `Memory.change()`, on purpose (see
docs/architecture.md): git's merge writes the tree and the index itself and must end in one commit
with both parents, and its undo is `git merge --abort`, not a journal putting old bytes back. It
runs under the `sync` and `write` locks; each file settled here is written atomically without
following links (`transaction.write_file`) and staged with `git add`; any failure aborts the merge,
and a kill leaves a merge in progress, which the next writer or sync aborts (`storage.merging`:
tmem's own merges only; one a person started is refused until they finish or abort it).
"""

from __future__ import annotations

__all__ = [
    "HOOK_MARK",
    "Merged",
    "STAGE_BASE",
    "STAGE_OURS",
    "STAGE_THEIRS",
    "adopt_vault",
    "ensure_merge_driver",
    "install_hook",
    "merge_remote",
    "settle_other",
    "settle_unmerged",
]

import contextlib
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tiered_memory.errors import GitError, SyncConflict, TmemError, VaultError
from tiered_memory.model import envelope, layout, sealed_merge
from tiered_memory.model import note as notes
from tiered_memory.model.folders import is_editor_state
from tiered_memory.model.merge3 import MergeResult, labelled, merge_file, merge_plain
from tiered_memory.storage import crypto, merging, sealing
from tiered_memory.storage.git import Git, last_line
from tiered_memory.storage.locate import looks_like_vault, refuse_linked_state
from tiered_memory.storage.transaction import write_file
from tiered_memory.storage.vault import (
    SCRATCH_DIR,
    Vault,
    adopt_folder,
    atomic_write,
    install_merge_driver,
    keep_state_ignored,
    merge_driver_command,
)
from tiered_memory.sync.appends import appended_both, with_appends
from tiered_memory.sync.merge_labels import sides

if TYPE_CHECKING:
    from tiered_memory.storage.git import Completed

HOOK_MARK = "# tmem post-merge hook"
_NEUTRAL_NAME = re.compile(r"n-[0-9a-f]{12}\.md")  # an encrypted note's file (transaction.neutral_name)
# The stages of an unmerged path in git's index (`git ls-files -u`): the common ancestor's version,
# this branch's and the merged-in branch's.
STAGE_BASE, STAGE_OURS, STAGE_THEIRS = 1, 2, 3


@dataclass
class Merged:
    """What a merge settled beyond git's own work (paths, for the sync report)."""

    conflicts: list[str] = field(default_factory=list)  # both versions kept, `conflict: true`
    kept_edits: list[str] = field(default_factory=list)  # deleted on one side, edited on the other
    moved_and_edited: list[str] = field(default_factory=list)
    kept_both: list[str] = field(default_factory=list)  # "path -> copy": non-notes changed both ways
    waiting: list[str] = field(default_factory=list)  # encrypted, no key: theirs kept beside ours
    appends: list[str] = field(default_factory=list)  # only appended to on both sides: both kept, in order
    # git refused before writing anything: a file it must write has edits not committed yet
    blocked: str = ""


def merge_remote(vault: Vault, label: str, theirs: str) -> Merged:
    """Merge `theirs` into HEAD; what the merge driver cannot settle is settled here, or aborted."""
    git = vault.git
    merging.started(vault, theirs)  # a kill from here to the commit is undone by the next writer
    try:
        return _merge(vault, label, theirs)
    finally:
        if git.rev("MERGE_HEAD") is None:
            merging.ended(vault)


def _merge(vault: Vault, label: str, theirs: str) -> Merged:
    """Merge without `git merge`: on a strategy's failure (a file it must write was being
    edited) it puts every tracked file back as HEAD has it and then re-applies only the edits it
    saw when it began, so a person's save made while it merged went back to the committed bytes.
    Here the merge is made without the work tree (`git merge-tree`, the same merge, drivers and
    all) and then checked out as a switch of commits is (`git read-tree -m -u`), which refuses,
    before writing anything, to write over a file with edits not committed, and leaves every
    other file alone; a fast-forward is `git merge --ff-only`, which behaves the same."""
    git = vault.git
    message = f"sync: merge {label}"
    merged = Merged()
    if git.is_ancestor("HEAD", theirs):
        proc = git.run("merge", "--ff-only", "--no-edit", theirs, check=False)
        if proc.returncode != 0:
            merged.blocked = _blocked_by(proc)
            if not merged.blocked:
                raise GitError(f"git merge failed: {last_line(proc)}")
        return merged
    if not git.run("merge-base", "HEAD", theirs, check=False).stdout.strip():
        raise SyncConflict(
            "the remote's history is unrelated to this vault's (two separate `tmem init`s?): "
            "clone the remote instead (`git clone URL`, then `tmem init --adopt`)"
        )
    # The merge driver names the versions in its markers after the commit merged in, which git's
    # variable named after it tells.
    proc = git.run(
        "merge-tree", "--write-tree", "-z", "HEAD", theirs, check=False, env={f"GITHEAD_{theirs}": label}
    )
    if proc.returncode not in (0, 1):
        if proc.returncode == 129 and "--write-tree" not in proc.stderr:  # a git before 2.38
            return _merge_in_work_tree(vault, message, theirs)
        raise GitError(f"git merge failed: {last_line(proc)}")
    tree, stages = _merge_tree_output(proc.stdout)
    tree = _ordered_appends(vault, theirs, tree, stages, merged)
    merging.started(vault, theirs, tree)
    # MERGE_HEAD makes the commit below a merge of both and lets `git merge --abort` (and the
    # recovery of a killed sync) undo what is checked out from here on.
    git.run("update-ref", "--no-deref", "MERGE_HEAD", theirs)
    checkout = git.run(
        "read-tree", "-m", "-u", "--exclude-per-directory=.gitignore", "HEAD", tree, check=False
    )
    if checkout.returncode != 0:
        git.run("update-ref", "-d", "MERGE_HEAD", check=False)
        merged.blocked = last_line(checkout)
        return merged
    if stages:
        lines = [f"0 {'0' * len(theirs)}\t{path}" for path in stages]
        lines += [
            f"{mode} {sha} {stage}\t{path}"
            for path, entries in stages.items()
            for stage, mode, sha in entries
        ]
        git.run("update-index", "--index-info", input="\n".join(lines) + "\n")
        _settle(vault, theirs, merged)
    git.run("commit", "--quiet", "--no-verify", "-m", message, commit=True)
    return merged


def _ordered_appends(
    vault: Vault, theirs: str, tree: str, stages: dict[str, list[tuple[int, str, str]]], merged: Merged
) -> str:
    """The merged tree with every note both sides only appended to merged in the order the
    additions were written, and every note both moved to one path merged with its base where that
    needs no choice (`sync.appends`); those notes are no longer conflicted."""
    found = appended_both(vault.git, "HEAD", theirs)
    if not found:
        return tree
    scratch = vault.state_dir / SCRATCH_DIR / f"{os.getpid()}-appends.tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        tree = with_appends(vault.git, tree, found, str(scratch / "index"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for append in found:
        stages.pop(append.path, None)
        if append.appended:
            merged.appends.append(append.path)
    return tree


def _merge_in_work_tree(vault: Vault, message: str, theirs: str) -> Merged:
    """`git merge` itself, where git has no `merge-tree --write-tree`: such a git (before 2.38)
    did not yet put every file back on a strategy's failure when it had one strategy to try."""
    git = vault.git
    merged = Merged()
    proc = git.run("merge", "--no-edit", "--no-verify", "-m", message, theirs, check=False, commit=True)
    if proc.returncode == 0:
        return merged
    if not _unmerged(git):
        with contextlib.suppress(GitError):
            git.run("merge", "--abort", check=False)
        merged.blocked = _blocked_by(proc)
        if not merged.blocked:
            raise GitError(f"git merge failed: {last_line(proc)}")
        return merged
    _settle(vault, theirs, merged)
    git.run("commit", "--quiet", "--no-verify", "-m", message, commit=True)
    return merged


def _settle(vault: Vault, theirs: str, merged: Merged) -> None:
    """Settle what the merge left unmerged in the index, or abort it."""
    git = vault.git
    unmerged = _unmerged(git)
    others = sorted(p for p in unmerged if not notes.is_note_path(p))
    try:
        for path in others:
            settle_other(vault, path, unmerged.pop(path), merged)
        settle_unmerged(vault, unmerged, theirs, merged)
    except TmemError:
        git.run("merge", "--abort", check=False)
        raise


def _merge_tree_output(out: str) -> tuple[str, dict[str, list[tuple[int, str, str]]]]:
    """`git merge-tree --write-tree -z`: the merged tree, and each conflicted path's index
    entries as (stage, mode, blob) (what `git merge` would leave unmerged in the index)."""
    fields = out.split("\0")
    stages: dict[str, list[tuple[int, str, str]]] = {}
    for entry in fields[1:]:
        if not entry:
            break  # the informational messages follow
        info, _, path = entry.partition("\t")
        mode, sha, stage = info.split()
        stages.setdefault(path, []).append((int(stage), mode, sha))
    return fields[0].strip(), stages


def _blocked_by(proc: Completed) -> str:
    """git's reason when it refused to merge over a file edited (or created) in the work tree,
    which committing the pending edits settles; empty for any other failure."""
    return last_line(proc) if "would be overwritten" in proc.stderr else ""


def _unmerged(git: Git) -> dict[str, dict[int, str]]:
    """Unmerged index entries: path -> {stage (STAGE_BASE, STAGE_OURS, STAGE_THEIRS): blob sha}."""
    stages: dict[str, dict[int, str]] = {}
    for entry in git.out("ls-files", "-u", "-z").split("\0"):
        if "\t" not in entry:
            continue
        info, path = entry.split("\t", 1)
        _mode, sha, stage = info.split()
        stages.setdefault(path, {})[int(stage)] = sha
    return stages


def settle_unmerged(vault: Vault, unmerged: dict[str, dict[int, str]], theirs: str, report: Merged) -> None:
    """Resolve what git left unmerged under memory/, keeping every edit.

    Both sides present (the driver could not run, or git never called it): our own merge.
    One side deleted, the other changed: the change is kept; when the deleting side moved the note
    (same `id`, a new path git did not pair as a rename), the edit is merged into the moved copy.
    """
    git = vault.git
    done: set[str] = set()
    for path in sorted(unmerged):
        if path in done:
            continue
        stages = unmerged[path]
        if (
            STAGE_OURS in stages
            and STAGE_THEIRS in stages
            and _settle_sealed(vault, path, stages, theirs, report)
        ):
            done.add(path)
            continue
        base = _text(git, stages.get(STAGE_BASE))
        if STAGE_OURS in stages and STAGE_THEIRS in stages:
            ours_text, theirs_text = (
                _text(git, stages[STAGE_OURS]) or "",
                _text(git, stages[STAGE_THEIRS]) or "",
            )
            result = _merge_named(git, base, ours_text, theirs_text, path, theirs)
            write_file(vault, path, result.text.encode("utf-8"))
            _stage(git, path)
            if result.conflict:
                report.conflicts.append(path)
            done.add(path)
            continue
        if STAGE_OURS not in stages and STAGE_THEIRS not in stages:  # gone on both sides
            git.run("rm", "--cached", "--quiet", "--ignore-unmatch", "--", path)
            done.add(path)
            continue
        kept_side = STAGE_OURS if STAGE_OURS in stages else STAGE_THEIRS
        edited = _text(git, stages[kept_side]) or ""
        moved = _moved_copy(vault, path, edited, "HEAD" if kept_side == STAGE_THEIRS else theirs, unmerged)
        if moved is not None:
            current = vault.read_text(moved)
            pair = (edited, current) if kept_side == STAGE_OURS else (current, edited)
            result = _merge_named(git, base, *pair, moved, theirs)
            write_file(vault, moved, _sealed_as(vault, moved, result.text))
            with contextlib.suppress(FileNotFoundError):
                vault.abspath(path).unlink()
            git.run("rm", "--cached", "--quiet", "--ignore-unmatch", "--", path)
            _stage(git, moved)
            report.moved_and_edited.append(moved)
            if result.conflict:
                report.conflicts.append(moved)
            done.update((path, moved))
            continue
        sealed_copy = _encrypted_copy(vault, path, "HEAD" if kept_side == STAGE_THEIRS else theirs)
        if sealed_copy is not None:
            _wait_beside(vault, sealed_copy, base, edited, report)
            git.run("rm", "--cached", "--quiet", "--ignore-unmatch", "--", path)
            with contextlib.suppress(FileNotFoundError):
                vault.abspath(path).unlink()
            done.add(path)
            continue
        write_file(vault, path, edited.encode("utf-8"))
        _stage(git, path)
        report.kept_edits.append(path)
        done.add(path)


def _encrypted_copy(vault: Vault, path: str, deleting_side: str) -> str | None:
    """The envelope `tmem encrypt` moved the note at `path` to on the side that deleted it, when no
    key here can tell by its id: the one commit that removed `path` there added exactly one
    envelope under an encrypted note's neutral name and removed no other note."""
    git = vault.git
    base = git.run("merge-base", "HEAD", "MERGE_HEAD", check=False).stdout.strip()
    if not base:
        return None
    gone = git.out(
        "log", "--no-renames", "--diff-filter=D", "--format=%H", f"{base}..{deleting_side}", "--", path
    )
    commits = gone.split()
    if len(commits) != 1:
        return None
    changes = git.out(
        "show", "--no-renames", "--name-status", "-z", "--format=", commits[0], "--", layout.MEMORY_DIR
    )
    fields = [f for f in changes.split("\0") if f]
    pairs = list(zip(fields[::2], fields[1::2], strict=False))
    added = [p for status, p in pairs if status == "A" and _NEUTRAL_NAME.fullmatch(p.rpartition("/")[2])]
    deleted = [p for status, p in pairs if status == "D" and notes.is_note_path(p)]
    if len(added) != 1 or deleted != [path] or not sealing.on_disk(vault, added[0]):
        return None
    return added[0]


def _wait_beside(vault: Vault, rel: str, base: str | None, edited: str, report: Merged) -> None:
    """Keep an edit made to a note before it was encrypted as a version waiting beside the
    envelope (`tmem resolve` merges it in with the key), not as a second note with its id."""
    record = sealed_merge.conflict_path(rel)
    pending = [sealed_merge.Pending(None if base is None else base.encode("utf-8"), edited.encode("utf-8"))]
    with contextlib.suppress(FileNotFoundError, TmemError, sealed_merge.BadRecord):
        pending = sealed_merge.unpack(vault.read_bytes(record)) + pending
    _write_bytes(vault, record, sealed_merge.pack(rel, pending))
    _stage(vault.git, record)
    report.conflicts.append(rel)
    report.waiting.append(rel)


def _sealed_as(vault: Vault, rel: str, merged: str) -> bytes:
    """The bytes of a merged note going to `rel`: sealed again when the file there is an envelope
    (the note was encrypted on one side, as `tmem encrypt` moves it to a neutral name, and edited in
    plain text on the other), so the edit never lands in the vault or a commit unencrypted. Like
    `sealed_merge.merge_sealed`, it stays plain only when the merged note says `encrypt: false`."""
    data = merged.encode("utf-8")
    if not sealing.on_disk(vault, rel) or notes.parse(merged, rel).meta.get("encrypt") is False:
        return data
    return crypto.encrypt(vault.root, rel, data)


def _merge_named(
    git: Git, base: str | None, ours: str, theirs: str, path: str, merged_in: str
) -> MergeResult:
    """merge_file, with markers naming both versions for good when it keeps both (merge_labels)."""
    return labelled(
        lambda names: merge_file(base, ours, theirs, path, names), lambda: sides(git, path, merged_in)
    )


def _settle_sealed(vault: Vault, path: str, stages: dict[int, str], merged_in: str, report: Merged) -> bool:
    """An encrypted note changed on both sides: merged as plaintext with the key (sealed again),
    else ours stays in place and theirs waits beside it for `tmem resolve`. False: not encrypted."""
    git = vault.git
    base = git.blob(stages[STAGE_BASE]) if STAGE_BASE in stages else None
    ours, theirs = git.blob(stages[STAGE_OURS]), git.blob(stages[STAGE_THEIRS])
    if not sealed_merge.any_sealed(base, ours, theirs):
        return False
    try:
        key = crypto.key_for(vault.root)
    except TmemError:
        key = None
    result = None
    if key is not None:
        with contextlib.suppress(envelope.Tampered, envelope.EnvelopeError, UnicodeDecodeError):
            result = labelled(
                lambda names: sealed_merge.merge_sealed(base, ours, theirs, path, key, names),
                lambda: sides(git, path, merged_in),
            )
    if result is not None:
        _write_bytes(vault, path, result.text.encode("utf-8"))
        _stage(git, path)
        if result.conflict:
            report.conflicts.append(path)
        return True
    # No key (or a version that does not open): nothing is merged, nothing is lost.
    if _vault_key_seals(vault, theirs) and not _vault_key_seals(vault, ours):
        # The other machine sealed the note again under the vault's new key (`tmem rekey`): its
        # version stays in place, readable with the new passphrase, and ours (under the old key)
        # waits beside it; else a note every clone's key fails to open would be the merge's.
        ours, theirs = theirs, ours
    record = sealed_merge.conflict_path(path)
    pending = [sealed_merge.Pending(base, theirs)]
    with contextlib.suppress(FileNotFoundError, TmemError, sealed_merge.BadRecord):
        pending = sealed_merge.unpack(vault.read_bytes(record)) + pending
    _write_bytes(vault, path, ours)
    _write_bytes(vault, record, sealed_merge.pack(path, pending))
    _stage(git, path, record)
    report.conflicts.append(path)
    report.waiting.append(path)
    return True


def _vault_key_seals(vault: Vault, data: bytes) -> bool:
    """Whether `data` is an envelope sealed under the key the vault's settings name (as merged)."""
    try:
        settings = crypto.load_settings(vault.root)
        return settings is not None and envelope.decode(data).key_id == settings.key_id
    except (TmemError, envelope.EnvelopeError):
        return False


def _stage(git: Git, *paths: str) -> None:
    """`git add` of files the merge settled. Forced: a person's .gitignore may name a folder whose
    files they track all the same (`.obsidian`), and git refuses a conflicted path there as ignored
    (exit 1, though it staged it), which stopped the sync; what is settled here is tracked already
    or the other version of a tracked file, kept beside it."""
    git.run("add", "--force", "--", *paths)


def settle_other(vault: Vault, path: str, stages: dict[int, str], report: Merged) -> None:
    """Settle a file that is not a note, changed on both sides, without stopping the sync."""
    git = vault.git
    blobs = {stage: git.blob(sha) for stage, sha in stages.items()}
    if STAGE_OURS not in blobs or STAGE_THEIRS not in blobs:
        kept = blobs.get(STAGE_OURS, blobs.get(STAGE_THEIRS))
        if kept is None:
            git.run("rm", "--cached", "--quiet", "--ignore-unmatch", "--", path)
            return
        _write_bytes(vault, path, kept)  # deleted on one side, changed on the other: the change stays
        _stage(git, path)
        report.kept_edits.append(path)
        return
    if path.endswith(sealed_merge.CONFLICT_SUFFIX):  # versions of an encrypted note waiting: all kept
        with contextlib.suppress(sealed_merge.BadRecord):
            union = sealed_merge.unpack(blobs[STAGE_OURS])
            union += [v for v in sealed_merge.unpack(blobs[STAGE_THEIRS]) if v not in union]
            _write_bytes(vault, path, sealed_merge.pack(sealed_merge.note_of(path), union))
            _stage(git, path)
            return
    merged = merge_plain(blobs.get(STAGE_BASE), blobs[STAGE_OURS], blobs[STAGE_THEIRS], path)
    if merged is not None:
        _write_bytes(vault, path, merged)
        _stage(git, path)
        return
    if is_editor_state(path):
        # This machine's open panes stay: a copy of the other's beside it would come back on
        # every sync of a vault that tracks its UI state, and nobody wants to choose between them.
        _write_bytes(vault, path, blobs[STAGE_OURS])
        _stage(git, path)
        return
    copy = vault.unique_path(_side_name(path))
    _write_bytes(vault, path, blobs[STAGE_OURS])
    _write_bytes(vault, copy, blobs[STAGE_THEIRS])
    _stage(git, path, copy)
    report.kept_both.append(f"{path} -> {copy}")


def _side_name(path: str) -> str:
    folder, _, name = path.rpartition("/")
    stem, dot, suffix = name.partition(".") if not name.startswith(".") else (name, "", "")
    side = f"{stem} (other machine){dot}{suffix}"
    return f"{folder}/{side}" if folder else side


def _write_bytes(vault: Vault, rel: str, data: bytes) -> None:
    write_file(vault, rel, data)


def _text(git: Git, sha: str | None) -> str | None:
    if sha is None:
        return None
    data = git.blob(sha)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SyncConflict(
            f"a binary file under {layout.MEMORY_DIR}/ changed on both sides; merge it by hand"
        ) from None


def _moved_copy(
    vault: Vault, path: str, edited: str, deleting_side: str, unmerged: dict[str, dict[int, str]]
) -> str | None:
    """The path a note with the same id was added at by the side that deleted `path`, if any."""
    note_id = notes.parse(edited, path).meta.get("id")
    if not note_id or not notes.is_note_path(path):
        return None
    git = vault.git
    base = git.run("merge-base", "HEAD", "MERGE_HEAD", check=False).stdout.strip()
    if not base:
        return None
    added = git.out(
        "diff",
        "--name-only",
        "--no-renames",
        "--diff-filter=A",
        "-z",
        base,
        deleting_side,
        "--",
        layout.MEMORY_DIR,
    )
    for candidate in added.split("\0"):
        if not candidate or candidate == path or not notes.is_note_path(candidate):
            continue
        if candidate in unmerged and set(unmerged[candidate]) - {STAGE_BASE} != {
            STAGE_OURS if deleting_side == "HEAD" else STAGE_THEIRS
        }:
            continue
        try:
            text = vault.read_text(candidate)
        except TmemError:
            continue
        if notes.parse(text, candidate).meta.get("id") == note_id:
            return candidate
    return None


def ensure_merge_driver(vault: Vault) -> bool:
    """Register the merge driver in .git/config when missing or stale (a fresh clone has neither),
    with the post-merge hook, and see that git ignores tmem's per-machine state in this clone.

    Returns whether it had to be written. `.git/config` is per machine, so the command names this
    machine's tmem by absolute path (see `merge_driver_command`).
    """
    git = vault.git
    install_hook(vault)
    keep_state_ignored(vault)
    if git.config().get("merge.tmem.driver") == merge_driver_command():
        return False
    install_merge_driver(vault.root)
    return True


def install_hook(vault: Vault) -> bool:
    git = vault.git
    """A post-merge hook so a plain `git pull` updates the indexes from the diff too.

    Written only where no hook exists (or ours does): a person's own hooks are left alone, and so
    is a shared `core.hooksPath`.
    """
    if "core.hookspath" in git.config():
        return False
    hook = Path(git.layout()[1])
    program = merge_driver_command().removesuffix(" merge-driver %O %A %B %P")
    text = (
        f"#!/bin/sh\n{HOOK_MARK}: after `git pull` / `git merge`, update tmem's indexes from the diff.\n"
        '[ -n "$TMEM_SYNC" ] && exit 0\n'
        f'{program} --vault "$(pwd)" post-merge || true\n'
    )
    try:
        current = hook.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = None
    except (OSError, UnicodeDecodeError):
        return False
    if current == text or (current is not None and HOOK_MARK not in current):
        return False
    atomic_write(hook, text)
    hook.chmod(0o755)
    return True


def adopt_vault(root: Path) -> tuple[Path, list[str]]:
    """`tmem init --adopt`: make a cloned vault ready (merge driver and hook in its .git/config),
    or make any other folder a vault in place (storage.vault.adopt_folder). Returns the root and
    the files left uncommitted for their size."""
    root = root.expanduser().resolve()
    if not root.is_dir():
        raise VaultError(f"{root} is not a folder")
    refuse_linked_state(root)
    too_big: list[str] = []
    if not looks_like_vault(root) or not (root / ".git").exists():
        too_big = adopt_folder(root)[1]
    vault = Vault(root)
    git = vault.git
    if git.run("rev-parse", "--git-dir", check=False).returncode != 0:
        raise GitError(f"{root} is not a git repository (clone the vault with `git clone URL`)")
    ensure_merge_driver(vault)
    return root, too_big
