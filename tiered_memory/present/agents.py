"""The context block, entity profiles, forgetting an entity and the secret scan, as text and JSON."""

from __future__ import annotations

__all__ = [
    "context_dict",
    "entity_added_text",
    "entity_dict",
    "entity_list_json",
    "entity_list_text",
    "entity_text",
    "entity_updated_text",
    "forget_entity_question",
    "forget_entity_refused",
    "forgot_entity_text",
    "scan_text",
]

from typing import Any

from tiered_memory.app.api.agents import (
    ContextBlock,
    EntityList,
    EntityView,
    Finding,
    ForgetEntityResult,
    ScanResult,
)
from tiered_memory.model.session_format import plural


def context_dict(block: ContextBlock) -> dict[str, Any]:
    """`tmem context --format json`: the block, and what is in it."""
    return {
        "text": block.text,
        "format": block.fmt,
        "tokens": block.tokens,
        "budget": block.budget,
        "tokenizer": block.tokenizer,
        "query": block.query,
        "project": block.project,
        "entity": block.entity,
        "sections": [
            {"name": s.name, "title": s.title, "text": s.text, "tokens": s.tokens, "truncated": s.truncated}
            for s in block.sections
        ],
        "memories": [
            {
                "id": m.id,
                "title": m.title,
                "category": m.category,
                "tier": m.tier,
                "path": m.path,
                "date": m.date,
                "source": m.source,
                "score": m.score,
                "trimmed": m.trimmed,
            }
            for m in block.memories
        ],
        "omitted": block.omitted,
        "notices": block.notices,
    }


# ---- entities -----------------------------------------------------------------------------------


def entity_dict(entity: EntityView, *, related: bool = False) -> dict[str, Any]:
    data = entity.to_dict()
    if not related:
        data.pop("related")
    return data


def entity_list_json(listing: EntityList) -> list[dict[str, Any]]:
    return [entity_dict(e) for e in listing.entities]


def entity_text(entity: EntityView) -> str:
    lines = [f"{entity.name} ({entity.kind})  id: {entity.id}  {entity.path}"]
    if entity.aliases:
        lines.append(f"  also: {', '.join(entity.aliases)}")
    for items, label in (
        (entity.preferences, "likes"),
        (entity.avoid_topics, "avoid"),
        (entity.personality, "personality"),
    ):
        if items:
            lines.append(f"  {label}: {'; '.join(items)}")
    lines.append(f"  last seen: {entity.last_seen or 'never'}   interactions: {entity.interaction_count}")
    lines += [f"  - {n}" for n in entity.notes]
    if entity.related:
        lines += ["", f"notes about {entity.name}:"]
        for n in entity.related:
            tags = f"  #{' #'.join(n.tags)}" if n.tags else ""
            lines.append(f"{n.updated[:10]}  {n.tier:<7} {n.category:<10} {n.id}  {n.title}{tags}")
    return "\n".join(lines)


def entity_list_text(listing: EntityList) -> str:
    if not listing.entities:
        return "no entities (tmem entity add NAME)"
    return "\n".join(
        f"{(e.last_seen or 'never')[:10]:<10}  {e.kind:<12} {e.name}  ({plural(e.interaction_count, 'interaction')})"
        for e in listing.entities
    )


def forgot_entity_text(report: ForgetEntityResult) -> str:
    lines = [
        f"forgot {len(report.removed)} note(s) about {report.entity} in one commit ({(report.commit or '')[:8]}):"
    ]
    lines += [f"  {r.path}  {r.title}" for r in report.removed]
    if report.mentioned_not_removed:
        lines.append(
            f"kept {len(report.mentioned_not_removed)} note(s) that only mention the name "
            "(add --mentions to remove):"
        )
        lines += [f"  {path}" for path in report.mentioned_not_removed]
    lines.append("git history still has them: `tmem restore` can bring them back")
    return "\n".join(lines)


# ---- scan ---------------------------------------------------------------------------------------


def _finding(f: Finding) -> str:
    where = f"{f.commit[:10]}  " if f.commit else ""
    return f"{where}{f.file}:{f.line}  {f.kind}  {f.masked}"


def scan_text(report: ScanResult) -> str:
    history = report.history or []
    scanned_history = report.history is not None
    lines: list[str] = []
    if report.files:
        lines.append("in files:")
        lines += [f"  {_finding(f)}" for f in report.files]
    if history:
        lines.append("in git history (commit, file:line as added):")
        lines += [f"  {_finding(f)}" for f in history]
    scanned = f"{report.files_scanned} files" + (
        f" and {report.commits_scanned} commits" if scanned_history else ""
    )
    if not report.found:
        lines.append(f"no secrets found ({scanned} scanned)")
        return "\n".join(lines)
    where = f"{len(report.files)} in files" + (f", {len(history)} in git history" if scanned_history else "")
    lines.append(f"found {report.found} secret(s) ({where}; {scanned} scanned)")
    lines.append("rotate them: a secret in git history stays in every clone even after the file is fixed")
    return "\n".join(lines)


def entity_added_text(view: EntityView) -> str:
    return f"added {view.name} ({view.path})"


def entity_updated_text(view: EntityView) -> str:
    return f"updated {view.name} ({view.path})"


def forget_entity_question(name: str) -> str:
    return f"Forget every memory about '{name}'?"


def forget_entity_refused(name: str) -> str:
    """Why `tmem forget --entity NAME` without --yes does nothing where nobody can answer."""
    return f"refusing to forget everything about '{name}' without confirmation: pass --yes"
