"""Daily maintenance (`tmem maintain`, and the daemon once a day): everything in ONE commit.

1. expired short-term keys go, expired temp files move to the archive;
2. search accesses recorded in `.tmem-access.jsonl` are folded into `access_count` /
   `last_accessed`, and recalled notes gain `access_boost` confidence;
   (tmem's own notes keep these fields, and decay's, in their frontmatter; a hand-written note's
   go to the tracked side file `.tmem-stats.json`, so maintenance never changes a byte of it;
   near-duplicate merging, which rewrites notes, only ever merges tmem's own notes)
3. near-duplicate long-term notes are merged: the kept one lists both sources (`merged_from`,
   `sources`), the other is marked superseded by it and archived (never deleted);
4. the flow-table rules of `tiers.plan` move notes between tiers;
5. notes not recalled for `decay_after_days` lose confidence (x decay_factor, floor
   confidence_floor), at most once per that many days (`decayed_at`);
6. archive retention, if configured (a rule of `tiers.plan`);
7. the commit message sums the run up, and a report `YYYY-MM-DD.md` in `lifecycle.report_folder`
   (`.tmem-reports/`: hidden, so no note list or search shows it) lists every real change.

`plan_maintenance` only reads; `apply_maintenance` re-reads each file right before changing it
and leaves alone (and reports) any note edited by hand since it was planned. A second run at the
same time finds nothing to do and writes nothing.
"""

from __future__ import annotations

__all__ = [
    "MESSAGE_LINES",
    "MaintenancePlan",
    "apply_maintenance",
    "maintain",
    "plan_maintenance",
    "run_maintenance",
]

import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from tiered_memory.app import filing
from tiered_memory.app.api.lifecycle import (
    ConfidenceChange,
    MaintainRequest,
    MaintainResult,
    Merged,
    Recalled,
    unchanged_recalls,
)
from tiered_memory.app.api.notes import Skipped
from tiered_memory.app.lifecycle import Applied, apply_moves, file_digest, load_notes, planned
from tiered_memory.app.maintain_report import report_path, write_report
from tiered_memory.app.memory import Memory
from tiered_memory.app.merging import Merge, find_merges, writable
from tiered_memory.app.shortterm import Expiry, apply_expiry, plan_expiry
from tiered_memory.app.status import tier_counts
from tiered_memory.config import LifecycleConfig
from tiered_memory.errors import NoteParseError
from tiered_memory.model import dates, layout, note_ids, note_stats, tiers
from tiered_memory.model import note as notes
from tiered_memory.model.folders import FolderRules
from tiered_memory.model.frontmatter import edit_frontmatter
from tiered_memory.model.layout import STATS_FILE
from tiered_memory.model.note_ids import IdMove
from tiered_memory.model.tiers import Move, NoteInfo
from tiered_memory.storage import access, locks, sealing
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import ENCRYPTED, Vault

MESSAGE_LINES = 200  # changes listed in the commit message; the daily report lists all of them


@dataclass
class MaintenancePlan:
    now: datetime
    expiry: Expiry
    moves: list[Move]
    merges: list[Merge]
    decays: list[ConfidenceChange]
    boosts: list[ConfidenceChange]
    edits: dict[str, dict[str, Any]]  # path -> frontmatter changes (tmem's own notes)
    stats: dict[str, dict[str, Any]]  # note id -> side-file changes (hand-written notes)
    stat_paths: dict[str, str]  # note id -> path, for the notes `stats` changes
    stale: set[str]  # side-file entries of notes the index leaves out: dropped when it is written
    hashes: dict[str, str]  # path -> hash of the bytes the plan was made from
    tier_counts: dict[str, int]  # notes per tier before the run, as `status` counts them
    indexed: dict[str, str]  # path -> tier the index gives it, for every note a move may take
    folders: FolderRules  # which paths the index takes as notes, and their tiers
    most_recalled: list[Recalled]
    accessed: bool  # the access side file had entries
    logs: list[Path] = field(default_factory=list)  # the recall logs folded (deleted after the commit)
    # Notes whose id changed (model.note_ids): their side-file entries and recalls go with them.
    id_moves: list[IdMove] = field(default_factory=list)


def maintain(memory: Memory, request: MaintainRequest) -> MaintainResult:
    """`tmem maintain`: the daily maintenance run by hand, or only planned with `dry_run`."""
    return run_maintenance(memory, now=request.now, dry_run=request.dry_run)


def run_maintenance(memory: Memory, *, now: datetime | None = None, dry_run: bool = False) -> MaintainResult:
    """The daily maintenance. The daemon calls this once a day."""
    when = now or memory.now()
    with locks.hold(memory.vault.state_dir, "maintain", wait=0):
        logs = None if dry_run else _recall_logs(memory, take=True)
        plan = plan_maintenance(memory, when, logs)
        if dry_run:
            report = _report(plan, dry_run=True)
            if report.changed:
                report.report = report_path(memory.config.lifecycle, when)
                _count_report(report, plan.folders, report.report, new=not memory.vault.exists(report.report))
            return report
        return apply_maintenance(memory, plan)


# ---- planning ---------------------------------------------------------------------------------


def _recall_logs(memory: Memory, *, take: bool) -> list[Path]:
    """The recall logs a run folds: the live log moved aside first when `take` (`access.take`),
    else read where it is; and the logs earlier runs moved aside, but those a commit already names
    (a run killed between its commit and deleting them), which are deleted when `take`."""
    root, state = memory.root, memory.vault.state_dir
    aside = access.take(root, state) if take else access.moved_aside(state)
    named = [p for p in aside if _folded_in_a_commit(memory, p.name)]
    if take:
        access.done(named)
    return [*(p for p in aside if p not in named), *([] if take else [root / layout.ACCESS_LOG])]


def _folded_in_a_commit(memory: Memory, name: str) -> bool:
    found = memory.vault.git.run(
        "log",
        "-n",
        "1",
        "--format=%H",
        "--fixed-strings",
        f"--grep={access.FOLDED_TRAILER}: {name}",
        check=False,
    )
    return found.returncode == 0 and bool(found.stdout.strip())  # no history yet: nothing folded


def plan_maintenance(memory: Memory, now: datetime, logs: list[Path] | None = None) -> MaintenancePlan:
    """What a run would do, reading only. `logs`: the recall logs to fold (default: the live log
    and any moved aside and not yet folded, where they are)."""
    vault = memory.vault
    memory.fresh()  # the counts are the index's, as `status` shows them: first it reads every edit
    rules = vault.config.lifecycle
    found, hashes = load_notes(vault)
    # What the index leaves out (the editor's templates, tmem's untouched ones, a file too large)
    # is no memory: nothing to decay or recall, and no entry in the side file.
    left_out = {p for p, why in memory.indexer.catalog.skipped() if why != ENCRYPTED}
    kept_ids = {n.id for n in found if n.path not in left_out}
    id_moves = memory.indexer.settled_ids.moves()
    side = note_ids.carried(access.stats(vault.root), id_moves)
    stale = {n.id for n in found if n.path in left_out and n.id in side and n.id not in kept_ids}
    found = _without_late_marks(vault, [n for n in found if n.path not in left_out])
    by_path = {n.path: n for n in found}
    infos = {n.path: NoteInfo.from_note(n) for n in found}
    edits: dict[str, dict[str, Any]] = {}
    book = _Book(edits, {}, side)
    confidence = {
        n.path: n.confidence
        if notes.written_by_tmem(n)
        else note_stats.confidence(side.get(n.id), n.confidence)
        for n in found
    }
    for note in found:
        if not notes.written_by_tmem(note) and note_stats.time(side.get(note.id), "last_accessed"):
            infos[note.path] = replace(
                infos[note.path], last_accessed=note_stats.time(side.get(note.id), "last_accessed")
            )

    logs = _recall_logs(memory, take=False) if logs is None else logs
    log = access.load_files(logs, note_ids.renamer(id_moves) if id_moves else None)
    boosts, recalled = _fold_accesses(found, log, rules.access_boost, book, confidence)
    for boosted in boosts:
        infos[boosted.path] = replace(infos[boosted.path], last_accessed=book.get(boosted)["last_accessed"])

    # Merge among the notes that are long-term once the rules have run (notes promoted today
    # included), then plan again so that the merged-away ones go to the archive in this run too.
    first = {m.src: m.dst for m in tiers.plan(list(infos.values()), rules, now)}
    long_term = [
        n
        for n in found
        if notes.tier_of_path(first.get(n.path, n.path) or "") == "long" and notes.written_by_tmem(n)
    ]
    merges = find_merges(
        long_term,
        rules.merge_similarity,
        memory.embedder(),
        memory.warn,
        cache=vault.state_dir / "merge-vectors.npz",
    )
    for merge in merges:
        kept, dropped = by_path[merge.kept], by_path[merge.dropped]
        current = edits.setdefault(kept.path, {})
        sources = current.get("sources") or _sources(kept)
        merged_from = current.get("merged_from") or [str(x) for x in kept.meta.get("merged_from") or [] if x]
        current["sources"] = sources + [s for s in _sources(dropped) if s not in sources]
        current["merged_from"] = list(dict.fromkeys([*merged_from, dropped.id]))
        best = max(confidence[kept.path], confidence[dropped.path])
        if best != confidence[kept.path]:
            current["confidence"] = confidence[kept.path] = best
        edits.setdefault(dropped.path, {}).update({"status": "superseded", "superseded_by": kept.id})
        infos[dropped.path] = replace(infos[dropped.path], status="superseded", superseded_by=kept.id)

    moves = tiers.plan(list(infos.values()), rules, now)
    expiry = plan_expiry(vault, now)
    final = {m.src: m.dst for m in moves}
    decays = _decays(found, infos, final, rules, now, book, confidence)

    catalog = memory.indexer.catalog
    sources = [m.src for m in [*moves, *expiry.temp_moves]]
    indexed = {p: r.tier for p, r in catalog.rows(sources).items() if not r.skipped}
    by_id = {n.id: n for n in found}
    most = [
        Recalled(
            id=i,
            title=sealing.label(vault, by_id[i]) if i in by_id else i,
            recalls=n,
            total=_int(by_id[i].meta.get("access_count")) + note_stats.count(side.get(i)) + n
            if i in by_id
            else n,
        )
        for i, n in sorted(recalled.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    ]
    return MaintenancePlan(
        now=now,
        expiry=expiry,
        moves=moves,
        merges=merges,
        decays=decays,
        boosts=boosts,
        edits=edits,
        stats=book.stats,
        stat_paths={n.id: n.path for n in found if n.id in book.stats},
        stale=stale,
        hashes=hashes,
        tier_counts=tier_counts(memory),
        indexed=indexed,
        folders=memory.indexer.folders,
        most_recalled=most,
        accessed=bool(log),  # deleted after the commit, even entries of notes gone since
        logs=logs,
        id_moves=id_moves,
    )


def _without_late_marks(vault: Vault, found: list[notes.Note]) -> list[notes.Note]:
    """`found`, with tmem's mark taken, as maintenance reads them, from the notes that carry it
    but are still the person's (`filing.late_marks`): their bytes are left as they are."""
    late = filing.late_marks(vault, found)
    return [
        replace(n, meta={k: v for k, v in n.meta.items() if k != notes.FILED_BY}) if n.path in late else n
        for n in found
    ]


def _int(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError, OverflowError):
        return 0


@dataclass
class _Book:
    """Where a note's bookkeeping goes: tmem's own notes' frontmatter, or the side file."""

    edits: dict[str, dict[str, Any]]  # path -> frontmatter changes
    stats: dict[str, dict[str, Any]]  # id -> side-file changes
    side: note_stats.Stats  # the side file as it is

    def of(self, note: notes.Note) -> dict[str, Any]:
        if notes.written_by_tmem(note):
            return self.edits.setdefault(note.path, {})
        return self.stats.setdefault(note.id, {})

    def get(self, change: ConfidenceChange) -> dict[str, Any]:
        return self.edits.get(change.path) or self.stats.get(change.id) or {}

    def current(self, note: notes.Note, key: str) -> Any:
        if notes.written_by_tmem(note):
            return note.meta.get(key)
        return (self.side.get(note.id) or {}).get(key)


def _fold_accesses(
    found: list[notes.Note],
    log: dict[str, tuple[int, str]],
    boost: float,
    book: _Book,
    confidence: dict[str, float],
) -> tuple[list[ConfidenceChange], dict[str, int]]:
    boosts: list[ConfidenceChange] = []
    recalled: dict[str, int] = {}
    for note in found:
        if note.id not in log or not writable(note):
            continue
        count, last_text = log[note.id]
        last = dates.to_datetime(last_text)
        previous = dates.to_datetime(book.current(note, "last_accessed"))
        if last is None or (previous is not None and previous > last):
            last = previous
        before = confidence[note.path]
        after = round(min(1.0, before + boost), 4)
        total = _int(book.current(note, "access_count")) + count
        changes: dict[str, Any] = {"access_count": total, "last_accessed": last}
        if after != before:
            changes["confidence"] = confidence[note.path] = after
        book.of(note).update(changes)
        boosts.append(ConfidenceChange(note.path, note.id, before, after, count))
        recalled[note.id] = recalled.get(note.id, 0) + count
    return boosts, recalled


def _decays(
    found: list[notes.Note],
    infos: dict[str, NoteInfo],
    final: dict[str, str | None],
    rules: LifecycleConfig,
    now: datetime,
    book: _Book,
    confidence: dict[str, float],
) -> list[ConfidenceChange]:
    out: list[ConfidenceChange] = []
    window = timedelta(days=rules.decay_after_days)
    for note in found:
        where = final.get(note.path, note.path)
        if where is None or notes.tier_of_path(where) == "archive" or note.tier == "archive":
            continue
        own = notes.written_by_tmem(note)
        if not writable(note) or (own and not note.has_frontmatter) or tiers.is_fixed(note.path):
            continue
        info = infos[note.path]
        marks = [
            info.last_accessed,
            dates.to_datetime(book.current(note, "decayed_at")),
            info.updated,
            info.created,
        ]
        since = max((m for m in marks if m is not None), default=None)
        before = confidence[note.path]
        if since is None or now - since < window or before <= rules.confidence_floor:
            continue
        after = round(max(rules.confidence_floor, before * rules.decay_factor), 4)
        if after == before:  # (decay_factor 1): nothing would change
            continue
        book.of(note).update({"confidence": after, "decayed_at": now})
        confidence[note.path] = after
        out.append(ConfidenceChange(note.path, note.id, before, after))
    return out


def _sources(note: notes.Note) -> list[str]:
    out: list[str] = []
    for key in ("sources", "source"):
        value = note.meta.get(key)
        items = value if isinstance(value, list) else [value]
        out += [str(v) for v in items if v not in (None, "")]
    return list(dict.fromkeys(out or [note.id]))


# ---- applying ---------------------------------------------------------------------------------


def apply_maintenance(memory: Memory, plan: MaintenancePlan) -> MaintainResult:
    """Apply a plan in one commit, leaving alone every note that changed since it was planned."""
    with memory.change("maintain") as tx:
        report, done = _apply(tx, memory, plan)
        if report.changed:
            where = report_path(tx.vault.config.lifecycle, plan.now)
            _count_report(report, plan.folders, where, new=not tx.exists(where))
            report.report = write_report(tx, report)
            tx.message = _message(report) + _folded(plan)
    report.commit = tx.sha
    # Carried over in that commit (or nothing to carry): a second run, after a kill here too, finds
    # the old ids gone and changes nothing.
    memory.indexer.settled_ids.done(plan.id_moves)
    access.done(plan.logs)  # folded into that commit, which names them, or nothing to fold
    if plan.accessed:
        # Recalls of notes left alone this time wait for the next run.
        for boost in plan.boosts:
            if boost.path not in done:
                access.record(memory.root, [boost.id] * boost.accesses, plan.now)
    return report


def _folded(plan: MaintenancePlan) -> str:
    """The lines naming the moved-aside recall logs this commit folds: a run killed before deleting
    them leaves them to the next, which finds them named here and does not fold them twice."""
    names = [p.name for p in plan.logs if p.name != layout.ACCESS_LOG]
    return "\n\n" + "\n".join(f"{access.FOLDED_TRAILER}: {name}" for name in names) if names else ""


def _apply(tx: Transaction, memory: Memory, plan: MaintenancePlan) -> tuple[MaintainResult, set[str]]:
    vault = tx.vault
    now = plan.now
    changed = {
        p
        for p in {*plan.hashes, *plan.expiry.expected}
        if p in _planned_paths(plan) and _differs(memory, plan, p)
    }
    plan, skipped = _without(plan, changed)
    touched, removed, expiry_skipped = apply_expiry(tx, plan.expiry, now)
    skipped += expiry_skipped
    plan.expiry.keys = removed
    result = apply_moves(tx, plan.moves, now, expected=plan.hashes, edits=plan.edits)
    skipped += result.skipped
    touched += result.touched
    moved = {a.move.src for a in result.applied}
    for path, changes in sorted(plan.edits.items()):
        if path in moved or path in {p for p, _ in result.skipped}:
            continue
        if file_digest(vault, path) != plan.hashes.get(path):
            skipped.append((path, "changed while maintenance ran; left as it is"))
            continue
        # Only the keys that change are rewritten: the rest of the file keeps its exact bytes.
        text = tx.read_text(path)
        new = edit_frontmatter(text, changes)
        if new != text:
            tx.write_text(path, new)
        touched.append(path)
    stats_done, dropped = _write_stats(tx, plan)
    done = set(touched) | stats_done
    plan = replace(
        plan,
        stale=dropped,
        decays=[c for c in plan.decays if c.path in done],
        boosts=[c for c in plan.boosts if c.path in done],
        merges=[m for m in plan.merges if m.kept in done and m.dropped in done],
    )
    return _report(plan, dry_run=False, applied=result.applied, skipped=skipped), done


def _write_stats(tx: Transaction, plan: MaintenancePlan) -> tuple[set[str], set[str]]:
    """Fold the hand-written notes' changes into the side file (re-read now: a sync may have
    changed it since planning), the stale entries dropped; returns the paths of the notes whose
    entries changed and the ids of the stale entries dropped."""
    if not plan.stats and not plan.stale and not plan.id_moves:
        return set(), set()
    try:
        before: str | None = tx.read_bytes(STATS_FILE).decode("utf-8")
    except (OSError, UnicodeDecodeError, NoteParseError):
        before = None
    current = note_ids.carried(note_stats.loads(before), plan.id_moves)
    dropped = {i for i in plan.stale if current.pop(i, None) is not None}
    for note_id, changes in plan.stats.items():
        current.setdefault(note_id, {}).update(changes)
    if note_stats.dumps(current) != note_stats.dumps(note_stats.loads(before)):
        tx.write_text(STATS_FILE, note_stats.dumps(current, stamp=secrets.token_hex(4)))
    return {plan.stat_paths[i] for i in plan.stats if i in plan.stat_paths}, dropped


def _planned_paths(plan: MaintenancePlan) -> set[str]:
    out = {m.src for m in plan.moves} | set(plan.edits) | {m.src for m in plan.expiry.temp_moves}
    return out


def _differs(memory: Memory, plan: MaintenancePlan, path: str) -> bool:
    expected = plan.hashes.get(path) or plan.expiry.expected.get(path)
    return file_digest(memory.vault, path) != expected


def _without(plan: MaintenancePlan, changed: set[str]) -> tuple[MaintenancePlan, list[tuple[str, str]]]:
    """The plan minus everything that touches a note edited since planning, and why each was left.

    A merge drops both sides; a project's moves go together or not at all.
    """
    if not changed:
        return plan, []
    why = {p: "changed while maintenance ran; left as it is" for p in changed}
    merges = [m for m in plan.merges if m.kept not in changed and m.dropped not in changed]
    for merge in plan.merges:
        if merge not in merges:
            for side in (merge.kept, merge.dropped):
                why.setdefault(side, "its merge partner changed; merge left for the next run")
    groups = {m.group for m in plan.moves if m.src in why and m.group}
    for move in plan.moves:
        if move.group and move.group in groups:
            why.setdefault(move.src, "moves with its project")
    plan.expiry.temp_moves = [m for m in plan.expiry.temp_moves if m.src not in changed]
    left = replace(
        plan,
        moves=[m for m in plan.moves if m.src not in why],
        merges=merges,
        edits={p: e for p, e in plan.edits.items() if p not in why},
        decays=[c for c in plan.decays if c.path not in why],
        boosts=[c for c in plan.boosts if c.path not in why],
    )
    return left, sorted(why.items())


def _report(
    plan: MaintenancePlan,
    *,
    dry_run: bool,
    applied: list[Applied] | None = None,
    skipped: list[tuple[str, str]] | None = None,
) -> MaintainResult:
    moves = [planned(m) for m in plan.moves] if applied is None else [a.moved() for a in applied]
    left = {p for p, _ in skipped or []}
    temp_done = [planned(m) for m in plan.expiry.temp_moves if m.src not in left]
    merges = [Merged(m.kept, m.kept_id, m.dropped, m.dropped_id, m.similarity, m.method) for m in plan.merges]
    changed = bool(
        moves or merges or plan.decays or plan.boosts or plan.expiry.keys or temp_done or plan.stale
    )
    return MaintainResult(
        date=f"{plan.now:%Y-%m-%d}",
        now=plan.now,
        dry_run=dry_run,
        changed=changed,
        moves=moves,
        merges=merges,
        decays=plan.decays,
        boosts=plan.boosts,
        expired_keys=plan.expiry.keys,
        temp_archived=temp_done,
        stale_stats=sorted(plan.stale),
        skipped=[Skipped(p, w) for p, w in dict(skipped or []).items()],
        tier_counts=_counts_after(plan, [(m.src, m.dst) for m in [*moves, *temp_done]]),
        most_recalled=plan.most_recalled,
    )


def _counts_after(plan: MaintenancePlan, moved: Iterable[tuple[str, str | None]]) -> dict[str, int]:
    """Notes per tier once these moves are made: the index's counts before the run, each moved
    note taken from its tier and given the one the index will give it at its new path."""
    counts = {tier: 0 for tier in layout.TIERS}
    counts.update(plan.tier_counts)
    for src, dst in moved:
        tier = plan.indexed.get(src)
        if tier is None or notes.is_state_file(src):  # JSON state is no note `status` counts
            continue
        counts[tier] -= 1
        if dst is not None and plan.folders.is_note(dst):
            counts[plan.folders.tier_of(dst)] += 1
    return counts


def _count_report(report: MaintainResult, folders: FolderRules, where: str, *, new: bool) -> None:
    """In a report folder the person made visible, a new report is a note `status` counts."""
    if new and folders.is_note(where):
        report.tier_counts[folders.tier_of(where)] += 1


def _message(report: MaintainResult) -> str:
    """The commit message: the run summed up (the report file lists it all, in a folder no note
    list shows), then its changes, a value that stayed the same never among them."""
    parts = [
        f"{len(report.moves)} moved",
        f"{len(report.merges)} merged",
        f"{len(report.decays)} decayed",
        f"{len(report.boosts)} recalled",
        f"{len(report.expired_keys)} keys expired",
        f"{len(report.temp_archived)} temp archived",
    ]
    counts = ", ".join(f"{tier} {n}" for tier, n in report.tier_counts.items())
    head = [f"notes per tier: {counts}", f"report: {report.report}", ""]
    body = [f"{m.src} -> {m.dst or '(deleted)'}: {m.reason}" for m in report.moves + report.temp_archived]
    body += [
        f"merge: kept {m.kept_id}, archived {m.dropped_id} ({m.similarity:.2f}, {m.method})"
        for m in report.merges
    ]
    body += [
        f"confidence {c.id}: {c.before:g} -> {c.after:g} ({'recalled' if c.accesses else 'decayed'})"
        for c in report.decays + report.boosts
        if c.changed
    ]
    if (quiet := unchanged_recalls(report.boosts)) is not None:
        body.append(quiet)
    body += [f"expired key: {k}" for k in report.expired_keys]
    body += [f"side-file entry dropped (the index leaves the note out): {i}" for i in report.stale_stats]
    if len(body) > MESSAGE_LINES:
        # One argument to git must stay under 128 KiB; the report file has every line anyway.
        body = [*body[:MESSAGE_LINES], f"... and {len(body) - MESSAGE_LINES} more in {report.report}"]
    return "\n".join([f"maintain {report.now:%Y-%m-%d}: " + ", ".join(parts), "", *head, *body]).rstrip()
