"""`tmem status`: what is in the vault and how fresh its indexes are, without changing anything."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from tiered_memory.errors import GitError
from tiered_memory.index.indexer import index_dir_size

if TYPE_CHECKING:
    from tiered_memory.app.memory import Memory


def collect(memory: Memory) -> dict[str, Any]:
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
    return {
        "vault": str(vault.root),
        "notes": catalog.count(),
        "tiers": catalog.counts("tier"),
        "categories": catalog.counts("category"),
        "index": {
            "new_files": len(new),
            "changed_files": len(changed),
            "deleted_files": len(deleted),
            "fresh": not (new or changed or deleted),
            "vectors_pending": len(catalog.pending_vectors()),
            "vector_model": catalog.get_meta("vector_model"),
            "skipped": [{"path": p, "why": w} for p, w in catalog.skipped()],
            "bytes": index_dir_size(vault),
        },
        "embedder": f"{cfg.provider}: {model}" if cfg.provider != "none" else "none (keyword search only)",
        "size_bytes": memory_bytes,
        "git": _git_state(memory),
        "conflicts": _conflicts(memory),
    }


def _conflicts(memory: Memory) -> list[str]:
    """Notes a sync merged with both versions kept (`conflict: true`); `tmem resolve` clears them."""
    from tiered_memory.app.conflicts import find_conflicts

    try:
        return find_conflicts(memory.vault)
    except GitError:
        return []


def _git_state(memory: Memory) -> dict[str, Any]:
    vault = memory.vault
    try:
        branch = vault.git.out("rev-parse", "--abbrev-ref", "HEAD").strip()
        last = vault.git.out("log", "-1", "--format=%h %cs %s").strip()
        dirty = [line for line in vault.git.out("status", "--porcelain").splitlines() if line.strip()]
        remotes = vault.git.out("remote").split()
    except GitError as exc:
        return {"error": str(exc)}
    state: dict[str, Any] = {
        "branch": branch,
        "last_commit": last,
        "uncommitted": len(dirty),
        "remotes": remotes,
    }
    try:
        counts = vault.git.out("rev-list", "--left-right", "--count", "HEAD...@{upstream}").split()
        state["ahead"], state["behind"] = int(counts[0]), int(counts[1])
    except GitError:
        pass
    return state


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def render(data: dict[str, Any]) -> str:
    index = data["index"]
    tiers = ", ".join(f"{t} {n}" for t, n in sorted(data["tiers"].items())) or "none"
    categories = ", ".join(f"{c} {n}" for c, n in sorted(data["categories"].items())) or "none"
    if index["fresh"]:
        freshness = "up to date"
    else:
        freshness = (
            f"{index['new_files']} new, {index['changed_files']} changed, {index['deleted_files']} deleted "
            "since last indexed (any search or `tmem reindex` updates it)"
        )
    git = data["git"]
    if "error" in git:
        git_line = git["error"]
    else:
        git_line = f"{git['branch']}, last commit {git['last_commit']}, {git['uncommitted']} uncommitted"
        if "ahead" in git:
            git_line += f", {git['ahead']} ahead / {git['behind']} behind upstream"
        elif git["remotes"]:
            git_line += f", remotes: {', '.join(git['remotes'])}"
    lines = [
        f"vault:      {data['vault']}",
        f"notes:      {data['notes']} ({tiers})",
        f"categories: {categories}",
        f"index:      {freshness}; {index['vectors_pending']} awaiting vectors; {_size(index['bytes'])} on disk",
        f"embedder:   {data['embedder']}",
        f"size:       {_size(data['size_bytes'])} of notes",
        f"git:        {git_line}",
    ]
    for item in index["skipped"]:
        lines.append(f"skipped:    {item['path']}: {item['why']}")
    for path in data.get("conflicts", []):
        lines.append(f"conflict:   {path} (both versions kept; `tmem resolve` it)")
    return os.linesep.join(lines)
