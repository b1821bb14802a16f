"""`tmem status`: what is in the vault and how fresh its indexes are, without changing anything."""

from __future__ import annotations

__all__ = ["status", "tier_counts"]

import json

from tiered_memory.app.api import Empty
from tiered_memory.app.api.notes import GitState, IndexState, Skipped, StatusResult
from tiered_memory.app.memory import Memory
from tiered_memory.config import unapproved_fresh
from tiered_memory.errors import GitError
from tiered_memory.index.indexer import EDITOR_TEMPLATE, UNTOUCHED_TEMPLATE, index_dir_size
from tiered_memory.storage import editor_templates
from tiered_memory.sync.conflicts import find_conflicts
from tiered_memory.sync.incoming import tracked_private


def status(memory: Memory, request: Empty) -> StatusResult:
    """What is in the vault and how fresh its indexes are, without changing anything."""
    vault = memory.vault
    catalog = memory.indexer.catalog
    on_disk = {f.path: f for f in vault.iter_files()}
    known = catalog.stats()
    new = [p for p in on_disk if p not in known]
    changed = [
        p for p, f in on_disk.items() if p in known and (known[p][0], known[p][1]) != (f.mtime, f.size)
    ]
    deleted = [p for p in known if p not in on_disk]
    cfg = vault.config.embeddings
    model = cfg.model if cfg.model != "default" else "all-MiniLM-L6-v2 (packaged, offline)"
    memory_bytes = sum(f.size for f in on_disk.values())
    skipped = catalog.skipped()
    nested = vault.nested_repos()
    return StatusResult(
        vault=str(vault.root),
        # Notes as `tmem list` has them: JSON state (tasks, the context stack) is not one.
        notes=memory.note_count(),
        tiers=tier_counts(memory),
        categories=catalog.counts("category", notes_only=True),
        index=IndexState(
            new_files=len(new),
            changed_files=len(changed),
            deleted_files=len(deleted),
            fresh=not (new or changed or deleted),
            vectors_pending=len(catalog.pending_vectors()),
            vector_drafts=catalog.count_drafts(),
            vector_model=catalog.get_meta("vector_model"),
            skipped=[Skipped(p, w) for p, w in skipped if w not in (UNTOUCHED_TEMPLATE, EDITOR_TEMPLATE)],
            templates=sum(1 for _p, w in skipped if w == UNTOUCHED_TEMPLATE),
            editor_templates=sum(1 for _p, w in skipped if w == EDITOR_TEMPLATE),
            template_folders=list(editor_templates.folders(vault.root)),
            bytes=index_dir_size(vault),
        ),
        embedder=f"{cfg.provider}: {model}" if cfg.provider != "none" else "none (keyword search only)",
        size_bytes=memory_bytes,
        git=_git_state(memory),
        conflicts=_conflicts(memory),
        links=vault.links(),
        # Read afresh: the daemon answering this may have loaded the config before a pull.
        not_approved=[
            f"{i.key}: {json.dumps(i.value, ensure_ascii=False)}" for i in unapproved_fresh(vault.root)
        ],
        nested_repos=nested,
        submodules=[folder for folder in nested if vault.git.is_submodule(folder)],
        private_tracked=_private_tracked(memory),
        malformed=[Skipped(p, w) for p, w in catalog.warnings()],
    )


def tier_counts(memory: Memory) -> dict[str, int]:
    """Notes per tier as the index has them (the folder rules give a note outside `memory/` its
    tier): what `status` shows, and what maintenance reports after its moves."""
    return memory.indexer.catalog.counts("tier", notes_only=True)  # JSON state is no note


def _private_tracked(memory: Memory) -> list[str]:
    """Files only this machine may write that git tracks anyway (a repository carrying another
    machine's `.tmem/`): sync refuses to merge them and no journal among them is replayed."""
    try:
        return tracked_private(memory.vault.git)
    except GitError:
        return []


def _conflicts(memory: Memory) -> list[str]:
    """Notes a sync merged with both versions kept (`conflict: true`); `tmem resolve` clears them."""
    try:
        return find_conflicts(memory.vault)
    except GitError:
        return []


def _git_state(memory: Memory) -> GitState:
    vault = memory.vault
    try:
        branch = vault.git.out("rev-parse", "--abbrev-ref", "HEAD").strip()
        last = vault.git.out("log", "-1", "--format=%h %cs %s").strip()
        dirty = [line for line in vault.git.out("status", "--porcelain").splitlines() if line.strip()]
        remotes = vault.git.out("remote").split()
    except GitError as exc:
        return GitState(error=str(exc))
    state = GitState(branch=branch, last_commit=last, uncommitted=len(dirty), remotes=remotes)
    try:
        counts = vault.git.out("rev-list", "--left-right", "--count", "HEAD...@{upstream}").split()
        state.ahead, state.behind = int(counts[0]), int(counts[1])
    except GitError:
        pass
    return state
