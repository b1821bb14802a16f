"""The daily maintenance report `YYYY-MM-DD.md` in `lifecycle.report_folder` (`.tmem-reports/`: a
hidden folder, so neither tmem's index nor Obsidian shows it; tracked, so it travels with the vault).
One section per run that changed something: counts per tier, every move with its reason, merges,
and the confidences that changed. A value that stayed the same is no line: a recall that only adds
to a note's count is summed up in one."""

from __future__ import annotations

__all__ = ["render_run", "report_path", "write_report"]

from datetime import datetime

from tiered_memory.app.api.lifecycle import MaintainResult, unchanged_recalls
from tiered_memory.config import LifecycleConfig
from tiered_memory.model import note as notes
from tiered_memory.storage.transaction import Transaction


def report_path(rules: LifecycleConfig, now: datetime) -> str:
    """Where the report of a run at `now` goes (vault-relative)."""
    return f"{rules.report_folder}/{now:%Y-%m-%d}.md"


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
        [
            f"- `{c.id}`: {c.before:g} -> {c.after:g} (not recalled lately)"
            for c in report.decays
            if c.changed
        ],
    )
    raised = [c for c in report.boosts if c.changed]
    section(
        "Recalled since the last run",
        [f"- `{c.id}`: {c.accesses} recall(s), confidence {c.before:g} -> {c.after:g}" for c in raised],
    )
    if (quiet := unchanged_recalls(report.boosts)) is not None:
        lines.extend([quiet + ".", ""])
    section("Expired short-term keys", [f"- `{k}`" for k in report.expired_keys])
    section(
        "Temp files archived",
        [f"- `{m.src}` -> `{m.dst}`: {m.reason}" for m in report.temp_archived],
    )
    section(
        "Side-file entries dropped (notes the index leaves out)",
        [f"- `{i}`" for i in report.stale_stats],
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
    rel = report_path(tx.vault.config.lifecycle, report.now)
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
        "id": f"maintenance-{day}",
        "title": f"Maintenance {day}",
        # A report is no answer to a question: search shows it only when asked for reports.
        "category": notes.REPORT,
        "tags": ["maintenance"],
        "created": report.now,
        "updated": report.now,
    }
    return tx.create_note(notes.Note(rel, meta, f"# Maintenance {day}\n\n{section}", True))
