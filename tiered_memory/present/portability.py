"""Renderings of export and import results."""

from __future__ import annotations

__all__ = ["exported_text", "imported_text"]

from tiered_memory.app.api.portability import ExportResult, ImportResult

# The reason an import gives for an item its ledger says an earlier import brought in.
_ALREADY_IMPORTED = "already imported"


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
    # What an earlier import of the same file brought in is counted, not listed: a second run
    # would otherwise print every item it left alone and hide what it did.
    again = [i for i in result.items if i.action == "skipped" and i.why == _ALREADY_IMPORTED]
    for item in result.items:
        if item in again:
            continue
        where = f" -> {item.path}" if item.path else ""
        why = f" ({item.why})" if item.why else ""
        lines.append(f"  {item.action:<10} {item.title or item.source}{where}{why}")
    if again:
        lines.append(f"  skipped    {len(again)} already imported (--json lists them)")
    if result.commit:
        lines.append(f"commit {result.commit[:8]}")
    elif not result.dry_run:
        lines.append("nothing new")
    return "\n".join(lines)
