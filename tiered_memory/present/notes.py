"""Notes, listings, search results and the vault's status, as text and as JSON."""

from __future__ import annotations

__all__ = [
    "MALFORMED_SHOWN",
    "drafts_line",
    "format_hits",
    "hit_dict",
    "note_dict",
    "note_list_json",
    "note_list_text",
    "note_text",
    "note_warning",
    "reindex_text",
    "remembered_text",
    "result_dict",
    "status_text",
]

import os
from typing import TYPE_CHECKING, Any

from tiered_memory.model.obsidian import link_text
from tiered_memory.model.search import Hit, SearchResult
from tiered_memory.present import iso

if TYPE_CHECKING:
    from tiered_memory.app.api.notes import NoteList, NoteView, ReindexResult, RememberResult, StatusResult
    from tiered_memory.model import note as notes


def hit_dict(hit: Hit, explain: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": hit.id,
        "title": hit.title,
        "path": hit.path,
        "tier": hit.tier,
        "category": hit.category,
        "score": round(hit.score, 6),
        "updated": iso(hit.updated),
        "snippet": hit.snippet,
        "passage": hit.passage,
    }
    if explain:
        data["explain"] = hit.components
    return data


def result_dict(result: SearchResult, query: str, explain: bool = False) -> dict[str, Any]:
    return {
        "query": query,
        "mode": result.mode,
        "notice": result.notice,
        "results": [hit_dict(h, explain) for h in result.hits],
    }


def format_hits(result: SearchResult, explain: bool = False) -> str:
    if not result.hits:
        return "no matching memories"
    lines: list[str] = []
    for rank, hit in enumerate(result.hits, 1):
        day = iso(hit.updated)[:10]
        lines.append(f"{rank:>2}. {hit.score:.3f}  {hit.title}  [{hit.tier}/{hit.category}] {day}")
        lines.append(f"    id: {hit.id}   {hit.path}")
        if hit.passage or hit.snippet:
            lines.append(f"    {link_text(hit.passage or hit.snippet)}")
        if explain:
            parts = "  ".join(f"{k}={v}" for k, v in hit.components.items())
            lines.append(f"    explain: {parts}")
    return "\n".join(lines)


def note_dict(note: notes.Note) -> dict[str, Any]:
    return {
        "id": note.id,
        "title": note.title,
        "path": note.path,
        "tier": note.tier,
        "category": note.category,
        "status": note.status,
        "tags": note.tags,
        "project": note.project,
        "entities": note.entities,
        "importance": note.importance,
        "confidence": note.confidence,
        "created": note.created,
        "updated": note.updated,
        "frontmatter": note.meta,
        "body": note.body,
        "warning": note.parse_warning,
    }


# ---- the typed results of the note operations ---------------------------------------------------


def remembered_text(result: RememberResult) -> str:
    if result.action == "added":
        return f"remembered {result.note.id}  ({result.note.path})"
    return result.message


def note_text(view: NoteView) -> str:
    return f"# {view.path}  (id: {view.id})\n{view.text.rstrip()}"


def note_warning(view: NoteView) -> str:
    """What is wrong with a shown note (its frontmatter cannot be read, ...), with its path."""
    return f"{view.path}: {view.warning}"


def note_list_json(listing: NoteList) -> list[dict[str, Any]]:
    return [n.to_dict() for n in listing.notes]


def note_list_text(listing: NoteList) -> str:
    if not listing.notes:
        return "no notes"
    lines = []
    for n in listing.notes:
        tags = f"  #{' #'.join(n.tags)}" if n.tags else ""
        lines.append(f"{n.updated[:10]}  {n.tier:<7} {n.category:<10} {n.id}  {n.title}{tags}")
    return "\n".join(lines)


def reindex_text(report: ReindexResult) -> str:
    vectors = "" if report.vectors == "ok" else f"; vectors: {report.vectors}"
    # The file figures take in JSON state and templates not written in: the note count says apart
    # what `tmem list` and `tmem status` count.
    notes = f"{report.notes} note" + ("" if report.notes == 1 else "s")
    text = (
        f"indexed: {notes}; files: {report.added} added, {report.changed} changed, "
        f"{report.deleted} deleted, {report.unchanged} unchanged, {report.embedded} embedded{vectors}"
    )
    return text + ("\n" + drafts_line(report.drafts, report.refiner) if report.drafts else "")


def drafts_line(drafts: int, refiner: str) -> str:
    """What a build that drafted vectors leaves to do: its notes are searchable, and refined later."""
    by = (
        "the daemon refines them in the background"
        if refiner == "daemon"
        else "the daemon refines them when it runs, or the next `tmem reindex`"
    )
    return (
        f"{drafts:,} notes have int8 draft vectors (searchable; recall slightly lower until refined): "
        f"{by} to float32"
    )


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


MALFORMED_SHOWN = 10  # notes with unreadable frontmatter named one a line; the rest counted


def status_text(result: StatusResult) -> str:
    data = result.to_dict()
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
    drafts = f", {index['vector_drafts']} draft vectors to refine" if index.get("vector_drafts") else ""
    git = data["git"]
    if git["error"]:
        git_line = git["error"]
    else:
        git_line = f"{git['branch']}, last commit {git['last_commit']}, {git['uncommitted']} uncommitted"
        if git["ahead"] is not None:
            git_line += f", {git['ahead']} ahead / {git['behind']} behind upstream"
        elif git["remotes"]:
            git_line += f", remotes: {', '.join(git['remotes'])}"
    lines = [
        f"vault:      {data['vault']}",
        f"notes:      {data['notes']} ({tiers})",
        f"categories: {categories}",
        f"index:      {freshness}; {index['vectors_pending']} awaiting vectors{drafts}; {_size(index['bytes'])} on disk",
        f"embedder:   {data['embedder']}",
        f"size:       {_size(data['size_bytes'])} of notes",
        f"git:        {git_line}",
    ]
    if index.get("templates"):
        lines.append(f"templates:  {index['templates']} not indexed until you write in them")
    if index.get("template_folders"):
        folders = ", ".join(index["template_folders"])
        lines.append(
            f"templates:  {index.get('editor_templates', 0)} in the editor's templates folder ({folders}):"
            " not indexed (tmem show reads them)"
        )
    for item in index["skipped"]:
        lines.append(f"skipped:    {item['path']}: {item['why']}")
    malformed = data.get("malformed", [])
    for item in malformed[:MALFORMED_SHOWN]:
        lines.append(f"malformed:  {item['path']}: {item['why']} (indexed as plain text; fix it by hand)")
    if len(malformed) > MALFORMED_SHOWN:
        lines.append(
            f"malformed:  ... and {len(malformed) - MALFORMED_SHOWN} more (`tmem status --json` lists all)"
        )
    for path in data.get("links", []):
        lines.append(f"link:       {path} (a symbolic link: never read or committed)")
    submodules = set(data.get("submodules", []))
    for path in data.get("nested_repos", []):
        if path in submodules:
            lines.append(
                f"repository: {path} (a git submodule: synced as a pointer, its files in its own repository)"
            )
        else:
            lines.append(f"repository: {path} (a git repository of its own: never committed or synced)")
    for path in data.get("private_tracked", []):
        lines.append(
            f"private:    {path} is tracked by git, but only this machine may write it (git rm --cached)"
        )
    for path in data.get("conflicts", []):
        lines.append(f"conflict:   {path} (both versions kept; `tmem resolve` it)")
    for setting in data.get("not_approved", []):
        lines.append(f"not used:   tmem.yaml's {setting} (reaches outside the vault: `tmem config approve`)")
    return os.linesep.join(lines)
