#!/usr/bin/env python3
"""Recall and false-positive rate of the redactor on the seeded corpus (scripts/redact_corpus.py).

A secret counts as caught when no 10-character piece of it survives redaction (a match that
covers only part of a token leaks the rest). A look-alike counts as a false positive when
redaction changes it at all. Prints one row per kind, then the totals; exits 1 when recall is
under --min-recall or the false-positive rate over --max-fp.

    python scripts/eval_redact.py              # table
    python scripts/eval_redact.py --json       # machine-readable
    python scripts/eval_redact.py --misses     # also list what was missed or wrongly changed
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from redact_corpus import Sample, build  # noqa: E402

from tiered_memory.model.redact import redact  # noqa: E402

WINDOW = 10


@dataclass
class Row:
    kind: str
    total: int = 0
    hit: int = 0  # secrets caught, or look-alikes changed

    @property
    def rate(self) -> float:
        return self.hit / self.total if self.total else 0.0


@dataclass
class Report:
    secrets: dict[str, Row] = field(default_factory=dict)
    look_alikes: dict[str, Row] = field(default_factory=dict)
    recall_labelled: float = 0.0
    recall_unlabelled: float = 0.0
    recall: float = 0.0
    false_positive_rate: float = 0.0
    n_secrets: int = 0
    n_look_alikes: int = 0
    misses: list[dict[str, str]] = field(default_factory=list)
    held_out_recall: float = 0.0
    held_out_false_positive_rate: float = 0.0


def leaked(secret: str, redacted: str) -> bool:
    if len(secret) <= WINDOW:
        return secret in redacted
    return any(secret[i : i + WINDOW] in redacted for i in range(len(secret) - WINDOW + 1))


def evaluate(samples: list[Sample]) -> Report:
    report = Report()
    by_label: dict[bool, list[int]] = defaultdict(lambda: [0, 0])
    held: dict[bool, list[int]] = defaultdict(lambda: [0, 0])  # is a secret -> [n, caught or changed]
    for sample in samples:
        out, found = redact(sample.text)
        if sample.secret is not None:
            row = report.secrets.setdefault(sample.kind, Row(sample.kind))
            caught = not leaked(sample.secret, out)
            by_label[sample.labelled][0] += 1
            by_label[sample.labelled][1] += caught
        else:
            row = report.look_alikes.setdefault(sample.kind, Row(sample.kind))
            caught = bool(found)
        row.total += 1
        row.hit += caught
        if sample.context.startswith("held-out"):
            held[sample.secret is not None][0] += 1
            held[sample.secret is not None][1] += caught
        if caught == (sample.secret is None):
            report.misses.append(
                {"id": sample.id, "context": sample.context, "text": sample.text, "out": out}
            )
    report.n_secrets = sum(r.total for r in report.secrets.values())
    report.n_look_alikes = sum(r.total for r in report.look_alikes.values())
    report.recall = sum(r.hit for r in report.secrets.values()) / max(1, report.n_secrets)
    report.false_positive_rate = sum(r.hit for r in report.look_alikes.values()) / max(
        1, report.n_look_alikes
    )
    report.recall_labelled = by_label[True][1] / max(1, by_label[True][0])
    report.recall_unlabelled = by_label[False][1] / max(1, by_label[False][0])
    report.held_out_recall = held[True][1] / max(1, held[True][0])
    report.held_out_false_positive_rate = held[False][1] / max(1, held[False][0])
    return report


def print_table(report: Report, misses: bool) -> None:
    print(f"{'secret kind':<22}{'n':>5}{'caught':>8}{'recall':>9}")
    for row in sorted(report.secrets.values(), key=lambda r: (r.rate, r.kind)):
        print(f"{row.kind:<22}{row.total:>5}{row.hit:>8}{row.rate:>9.1%}")
    print(f"\n{'look-alike kind':<22}{'n':>5}{'changed':>8}{'FP rate':>9}")
    for row in sorted(report.look_alikes.values(), key=lambda r: (-r.rate, r.kind)):
        print(f"{row.kind:<22}{row.total:>5}{row.hit:>8}{row.rate:>9.1%}")
    print(
        f"\nrecall {report.recall:.1%} on {report.n_secrets} secrets "
        f"(with a label {report.recall_labelled:.1%}, without {report.recall_unlabelled:.1%}); "
        f"false positives {report.false_positive_rate:.1%} on {report.n_look_alikes} look-alikes"
    )
    print(
        f"held-out contexts (never tuned on): recall {report.held_out_recall:.1%}, "
        f"false positives {report.held_out_false_positive_rate:.1%}"
    )
    if misses:
        for miss in report.misses:
            print(
                f"\n{miss['id']} [{miss['context']}]\n  in:  {miss['text'][:200]}\n  out: {miss['out'][:200]}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--misses", action="store_true")
    parser.add_argument("--min-recall", type=float, default=0.95)
    parser.add_argument("--max-fp", type=float, default=0.05)
    args = parser.parse_args()
    report = evaluate(build(args.seed))
    if args.json:
        data = asdict(report)
        if not args.misses:
            data.pop("misses")
        print(json.dumps(data, indent=2))
    else:
        print_table(report, args.misses)
    return 0 if report.recall >= args.min_recall and report.false_positive_rate <= args.max_fp else 1


if __name__ == "__main__":
    sys.exit(main())
