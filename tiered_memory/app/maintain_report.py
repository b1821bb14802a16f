"""The daily maintenance report `archive/daily/YYYY-MM-DD.md`: one section per run that changed
something (counts per tier, every move with its reason, merges, decays, recalls, skipped notes)."""

from __future__ import annotations

from tiered_memory.app.api.lifecycle import MaintainResult
from tiered_memory.model import layout
from tiered_memory.model import note as notes
from tiered_memory.storage.transaction import Transaction

DAILY = layout.DAILY


def render_run(report: MaintainResult) -> str:
    """The Markdown section of one run."""
    counts = ", ".join(f"{tier} {n}" for tier, n in report.tier_counts.items())
    lines = [f"## Run at {report.now:%H:%M:%S %Z}".rstrip(), "", f"Notes per tier: {counts}.", ""]

    def section(title: str, items: list[str]) -> None:
        if items:
            lines.extend([f"### {title} ({len(items)})", "", *items, ""])

    section(
        "Moves",
        [f"- `{m.src}` -> `{m.dst or '(deleted)'}`: {m.reason} [{m.kind}]" for m in report.moves],
    )
    section(
        "Merges",
        [
            f"- kept `{m.kept_id}` ({m.kept}); `{m.dropped_id}` archived as superseded by it "
            f"(similarity {m.similarity:.2f}, {m.method})"
            for m in report.merges
        ],
    )
    section(
        "Confidence decayed",
        [f"- `{c.id}`: {c.before:g} -> {c.after:g} (not recalled lately)" for c in report.decays],
    )
    section(
        "Recalled since the last run",
        [
            f"- `{c.id}`: {c.accesses} recall(s), confidence {c.before:g} -> {c.after:g}"
            for c in report.boosts
        ],
    )
    section("Expired short-term keys", [f"- `{k}`" for k in report.expired_keys])
    section(
        "Temp files archived",
        [f"- `{m.src}` -> `{m.dst}`: {m.reason}" for m in report.temp_archived],
    )
    section(
        "Most recalled",
        [
            f"{i}. {r.title} (`{r.id}`): {r.recalls} recall(s), {r.total} in all"
            for i, r in enumerate(report.most_recalled, 1)
        ],
    )
    section("Skipped", [f"- `{s.path}`: {s.why}" for s in report.skipped])
    return "\n".join(lines).rstrip() + "\n"


def write_report(tx: Transaction, report: MaintainResult) -> str:
    """Create today's report, or add this run's section to it. Returns its path."""
    day = f"{report.now:%Y-%m-%d}"
    rel = f"{DAILY}/{day}.md"
    section = tx.scrub(render_run(report))  # the notes it moved or changed: sealed ones by id
    if tx.exists(rel):
        current = tx.read_note(rel)
        if not current.parse_warning:
            body = current.body.rstrip("\n") + "\n\n" + section
            tx.write_note(
                notes.Note(rel, dict(current.meta), body, current.has_frontmatter).with_meta(
                    updated=report.now
                )
            )
            return rel
    meta = {
        "id": f"daily-{day}",
        "title": f"Maintenance {day}",
        "category": "note",
        "tags": ["maintenance"],
        "created": report.now,
        "updated": report.now,
    }
    return tx.create_note(notes.Note(rel, meta, f"# Maintenance {day}\n\n{section}", True))
