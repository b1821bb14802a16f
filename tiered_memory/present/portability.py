"""Renderings of export and import results."""

from __future__ import annotations

__all__ = ["exported_text", "imported_text"]

from tiered_memory.app.api.portability import ExportResult, ImportResult


def exported_text(result: ExportResult) -> str:
    what = f"{result.notes} note(s), {result.sessions} session(s) ({result.messages} message(s))"
    where = "stdout" if result.output == "-" else result.output
    lines = [f"exported {what} to {where} ({result.format})"]
    if result.replaced or result.kept:
        lines.append(
            f"  updated in place: {result.replaced}, new: {result.appended}, kept from before: {result.kept}"
        )
    if result.since:
        lines.append(f"  changed since {result.since.isoformat()}")
    if result.left_out:
        lines.append(
            f"  left out {result.left_out} sensitive or encrypted note(s) (--include-sensitive exports them)"
        )
    return "\n".join(lines)


def imported_text(result: ImportResult) -> str:
    head = "would import" if result.dry_run else "imported"
    lines = [
        f"{head} {result.format} from {result.path}: {result.added} added, {result.merged} merged, "
        f"{result.updated} updated, {result.skipped} skipped"
    ]
    for item in result.items:
        where = f" -> {item.path}" if item.path else ""
        why = f" ({item.why})" if item.why else ""
        lines.append(f"  {item.action:<10} {item.title or item.source}{where}{why}")
    if result.commit:
        lines.append(f"commit {result.commit[:8]}")
    elif not result.dry_run:
        lines.append("nothing new")
    return "\n".join(lines)
