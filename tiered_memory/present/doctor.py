"""`tmem doctor`'s report as text."""

from __future__ import annotations

__all__ = ["doctor_text"]

from tiered_memory.app.api.doctor import DoctorReport


def doctor_text(report: DoctorReport) -> str:
    lines = [f"{'fixed':<8} {line}" for line in report.fixed]
    for f in report.findings:
        # A finding that is no problem but names files (names a clone elsewhere cannot check
        # out) is a note, with its examples.
        label = "PROBLEM" if not f.ok else "note" if f.examples else "ok"
        lines.append(f"{label:<8} {f.check:<8} {f.message}")
        lines += [f"{'':<17}e.g. {example}" for example in f.examples]
        if not f.ok:
            if f.fix:
                hint = "`tmem doctor --fix` will" if f.action else "to fix:"
                lines.append(f"{'':<17}{hint} {f.fix}")
    return "\n".join(lines)
