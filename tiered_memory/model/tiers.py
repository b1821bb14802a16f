"""The lifecycle rules of the tiers' flow table, as a pure function: notes + config + clock -> moves.

No I/O and no vault: `lifecycle` applies the moves, `maintain` decides when. Every rule reads its
threshold from `FlowRules` (tmem.yaml's `lifecycle:` section has that shape), so a test can fire
(or not fire) each one with a fixed clock.

| from  | to      | when                                                          | kind              |
|-------|---------|---------------------------------------------------------------|-------------------|
| short | mid     | tied to an active project (field, tag, or id/title in text)   | short-to-project  |
| short | archive | its session ended (a session record is in the archive)        | session-ended     |
| short | archive | not updated for short_term_ttl_hours, or its `expires` passed | short-expired     |
| mid   | long    | its project is completed: decisions, lessons (error), patterns| project-completed |
| mid   | long    | importance >= promote_importance                              | important         |
| mid   | archive | its project is cancelled, completed (the rest) or idle N days | project-*         |
| long  | archive | superseded (status or superseded_by)                          | superseded        |
| archive | (deleted) | archive_retention_days set and passed                     | retention         |

A note moved by one rule can be moved again by the next in the same plan (a short-term note that
joins a project and is important goes on to long-term), so one run reaches a fixed point and a
second run at the same time plans nothing.
"""

from __future__ import annotations

__all__ = [
    "DISTILLED",
    "M",
    "Move",
    "NoteInfo",
    "ProjectInfo",
    "TIER_ORDER",
    "archive_path",
    "as_info",
    "derive_projects",
    "ended_sessions_of",
    "is_fixed",
    "long_term_path",
    "match_project",
    "mid_term_path",
    "plan",
    "project_of_path",
    "restore_path",
    "unique",
]

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import PurePosixPath
from typing import Any, Protocol

from tiered_memory.model import dates, layout
from tiered_memory.model import note as notes
from tiered_memory.model.layout import (
    ARCHIVE_PROJECTS,
    ARCHIVE_SESSIONS,
    FIXED_FILES,
    FIXED_FOLDERS,
    LONG_TERM_DEFAULT,
    LONG_TERM_HOMES,
    MEMORY_DIR,
    PROJECT_FILES,
    PROJECTS,
    SHORT_TEMP,
)

M = MEMORY_DIR
# Categories a completed project hands on to long-term knowledge.
DISTILLED = ("decision", "error", "pattern")
_DATED = re.compile(r"^\d{4}-\d{2}-\d{2}_")
TIER_ORDER = {"short": 0, "mid": 1, "long": 2, "archive": 3}


class FlowRules(Protocol):
    """The thresholds the rules read (`config.LifecycleConfig` has them; model/ never imports it)."""

    @property
    def short_term_ttl_hours(self) -> float: ...

    @property
    def project_idle_days(self) -> int: ...

    @property
    def promote_importance(self) -> float: ...

    @property
    def archive_retention_days(self) -> int | None: ...


@dataclass(frozen=True)
class NoteInfo:
    """What the rules need to know about one note (built from a Note, or by hand in tests)."""

    path: str
    id: str
    title: str = ""
    category: str = "note"
    status: str = "active"
    project: str = ""
    session: str = ""
    tags: tuple[str, ...] = ()
    importance: float = 0.5
    created: datetime | None = None
    updated: datetime | None = None
    moved_at: datetime | None = None
    expires: datetime | None = None
    last_accessed: datetime | None = None
    superseded_by: str = ""
    text: str = ""

    @property
    def tier(self) -> str | None:
        return notes.tier_of_path(self.path)

    @property
    def name(self) -> str:
        return PurePosixPath(self.path).name

    @classmethod
    def from_note(cls, note: notes.Note) -> NoteInfo:
        meta = note.meta
        return cls(
            path=note.path,
            id=note.id,
            title=note.title,
            category=note.category,
            status=note.status,
            project=note.project,
            session=str(meta.get("session") or ""),
            tags=tuple(note.tags),
            importance=note.importance,
            created=note.created,
            updated=note.updated,
            moved_at=dates.to_datetime(meta.get("moved_at")),
            expires=dates.to_datetime(meta.get("expires")),
            last_accessed=dates.to_datetime(meta.get("last_accessed")),
            superseded_by=note.superseded_by,
            text=note.text,
        )


@dataclass(frozen=True)
class ProjectInfo:
    id: str
    title: str
    status: str  # active, completed or cancelled (from status.md)
    tags: tuple[str, ...]
    last_touched: datetime | None

    @property
    def folder(self) -> str:
        return f"{PROJECTS}/{self.id}"


@dataclass(frozen=True)
class Move:
    """Move `src` to `dst` (None: delete, for archive retention) because of `reason`."""

    src: str
    dst: str | None
    reason: str
    kind: str
    note_id: str
    # Moves of one project go together: if one of its files changed under maintenance, none move.
    group: str = ""
    # Frontmatter set on the moved note besides promoted_from / moved_at / move_reason.
    meta: Mapping[str, Any] = field(default_factory=dict)


def as_info(item: NoteInfo | notes.Note) -> NoteInfo:
    return item if isinstance(item, NoteInfo) else NoteInfo.from_note(item)


def is_fixed(path: str) -> bool:
    return path in FIXED_FILES or path.startswith(FIXED_FOLDERS)


def project_of_path(path: str) -> str | None:
    if path.startswith(PROJECTS + "/"):
        parts = path[len(PROJECTS) + 1 :].split("/")
        if len(parts) >= 2:
            return parts[0]
    return None


def derive_projects(infos: Iterable[NoteInfo]) -> dict[str, ProjectInfo]:
    """The mid-term projects: one per folder under mid-term/projects/, status from its status.md."""
    status: dict[str, NoteInfo] = {}
    touched: dict[str, datetime | None] = {}
    for info in infos:
        pid = project_of_path(info.path)
        if pid is None:
            continue
        if info.path == f"{PROJECTS}/{pid}/status.md":
            status[pid] = info
        # JSON files carry no dates of their own (only file times, reset by every checkout);
        # `tmem task` bumps status.md's `updated` instead.
        if not info.path.endswith(".json"):
            when = info.updated or info.created
            best = touched.get(pid)
            touched[pid] = when if best is None or (when is not None and when > best) else best
        else:
            touched.setdefault(pid, None)
    out: dict[str, ProjectInfo] = {}
    for pid, last in touched.items():
        info_ = status.get(pid)
        state = info_.status if info_ is not None else "active"
        out[pid] = ProjectInfo(
            id=pid,
            title=info_.title if info_ is not None else pid,
            status=state if state in ("active", "completed", "cancelled") else "active",
            tags=info_.tags if info_ is not None else (),
            last_touched=last,
        )
    return out


def ended_sessions_of(infos: Iterable[NoteInfo]) -> set[str]:
    """Sessions whose record (a `session` note written when a session ends) is in the archive."""
    return {i.session for i in infos if i.tier == "archive" and i.category == "session" and i.session}


# ---- destinations ------------------------------------------------------------------------------


def _rest(path: str) -> str:
    """The path below the tier folder: memory/<tier>/<rest>."""
    return path.split("/", 2)[2]


def _day(info: NoteInfo, now: datetime) -> datetime:
    return info.created or info.updated or now


def archive_path(info: NoteInfo, now: datetime) -> str:
    """Where a note goes when archived: sessions/YYYY/MM/DD, projects/{id}, or the tier's mirror."""
    tier = info.tier
    rest = _rest(info.path)
    if tier == "short":
        day = _day(info, now)
        return f"{ARCHIVE_SESSIONS}/{day:%Y/%m/%d}/{rest}"
    if tier == "mid" and project_of_path(info.path):
        return f"{M}/archive/{rest}"  # projects/{id}/... keeps its layout
    return f"{M}/archive/{layout.TIER_DIRS[tier or 'long']}/{rest}"


def long_term_path(info: NoteInfo) -> str:
    folder = LONG_TERM_HOMES.get(info.category, LONG_TERM_DEFAULT)
    name = info.name
    if info.category == "decision" and not info.path.endswith(".json") and not _DATED.match(name):
        day = info.created or info.updated
        stamp = f"{day:%Y-%m-%d}_" if day else ""
        name = f"{stamp}{notes.slugify(info.title, 40)}{PurePosixPath(name).suffix}"
    return f"{M}/{folder}/{name}"


def mid_term_path(info: NoteInfo, projects: Mapping[str, ProjectInfo]) -> str:
    if info.project and info.project in projects:
        return f"{PROJECTS}/{info.project}/{info.name}"
    return f"{M}/mid-term/{info.name}"


def restore_path(info: NoteInfo, promoted_from: str | None) -> str:
    """Where an archived note goes back to: where it came from, else the folder its archive path mirrors."""
    if promoted_from and notes.tier_of_path(promoted_from) not in (None, "archive"):
        return promoted_from
    rest = _rest(info.path)
    head, _, tail = rest.partition("/")
    if head == "projects" and tail:
        return f"{PROJECTS}/{tail}"
    if head == "sessions":
        return f"{M}/short-term/{info.name}"
    if head in layout.DIR_TIERS and head != "archive" and tail:
        return f"{M}/{head}/{tail}"
    return f"{M}/long-term/{info.name}"


def unique(path: str, taken: set[str]) -> str:
    """`path`, or with a -2, -3... suffix before the extension when that name is taken."""
    candidate = PurePosixPath(path)
    counter = 2
    while candidate.as_posix() in taken:
        candidate = candidate.with_name(f"{PurePosixPath(path).stem}-{counter}{PurePosixPath(path).suffix}")
        counter += 1
    return candidate.as_posix()


def _unique_folder(folder: str, taken: set[str]) -> str:
    """An archive folder for a whole project: `{id}`, or `{id}-2`... when that folder is in use."""
    candidate, counter = folder, 2
    while any(p.startswith(candidate + "/") for p in taken):
        candidate = f"{folder}-{counter}"
        counter += 1
    return candidate


# ---- the rules ---------------------------------------------------------------------------------


def plan(
    items: Sequence[NoteInfo | notes.Note],
    rules: FlowRules,
    now: datetime,
    *,
    projects: Mapping[str, ProjectInfo] | None = None,
    ended_sessions: Iterable[str] | None = None,
) -> list[Move]:
    """Every move the rules make at `now`, in a stable order. Pure: nothing is read or written.

    `projects` defaults to the projects the notes themselves describe; `ended_sessions` to the
    sessions whose record is in the archive.
    """
    state = {i.path: i for i in (as_info(n) for n in items)}
    taken = set(state)
    ended = set(ended_sessions) if ended_sessions is not None else ended_sessions_of(state.values())
    origin: dict[str, str] = {}  # current path -> path at the start of the plan
    chains: dict[str, list[Move]] = {}
    given = dict(projects) if projects is not None else None
    for _ in range(len(TIER_ORDER) + 1):
        known = given if given is not None else derive_projects(state.values())
        step = _plan_once(state, rules, now, known, ended, taken)
        if not step:
            break
        for move in step:
            start = origin.pop(move.src, move.src)
            chains.setdefault(start, []).append(move)
            info = state.pop(move.src)
            if move.dst is not None:
                moved = replace(info, path=move.dst, moved_at=now)
                if "project" in move.meta:
                    moved = replace(moved, project=str(move.meta["project"]))
                state[move.dst] = moved
                origin[move.dst] = start
        if given is not None:
            # Projects given by the caller do not change as notes move; the notes do.
            given = {k: v for k, v in given.items() if any(project_of_path(p) == k for p in state)}
    return [_chain(start, steps) for start, steps in sorted(chains.items())]


def _chain(start: str, steps: list[Move]) -> Move:
    if len(steps) == 1:
        return steps[0]
    meta: dict[str, Any] = {}
    for step in steps:
        meta.update(step.meta)
    return Move(
        src=start,
        dst=steps[-1].dst,
        reason="; then ".join(s.reason for s in steps),
        kind="+".join(s.kind for s in steps),
        note_id=steps[0].note_id,
        group=next((s.group for s in steps if s.group), ""),
        meta=meta,
    )


def _plan_once(
    state: dict[str, NoteInfo],
    rules: FlowRules,
    now: datetime,
    projects: Mapping[str, ProjectInfo],
    ended: set[str],
    taken: set[str],
) -> list[Move]:
    moves: list[Move] = []
    moving: set[str] = set()

    def add(info: NoteInfo, dst: str | None, reason: str, kind: str, group: str = "", **meta: Any) -> None:
        target = None
        if dst is not None:
            target = unique(dst, taken)
            taken.add(target)
        moves.append(Move(info.path, target, reason, kind, info.id, group, meta))
        moving.add(info.path)

    ordered = sorted(state.values(), key=lambda i: i.path)
    surviving = _project_rules(ordered, rules, now, projects, taken, add)
    for info in ordered:
        if info.path in moving or is_fixed(info.path):
            continue
        tier = info.tier
        if tier == "short" and not info.path.startswith(SHORT_TEMP + "/"):
            _short_rules(info, rules, now, surviving, ended, add)
        elif tier == "mid" and _important(info, rules, projects):
            add(
                info,
                long_term_path(info),
                f"importance {info.importance:g} >= {rules.promote_importance:g}",
                "important",
            )
        elif tier == "long" and (info.status == "superseded" or info.superseded_by):
            by = f" by {info.superseded_by}" if info.superseded_by else ""
            add(info, archive_path(info, now), f"superseded{by}", "superseded")
        elif tier == "archive" and rules.archive_retention_days is not None:
            since = info.moved_at or info.updated or info.created
            if since is not None and now - since >= timedelta(days=rules.archive_retention_days):
                add(info, None, f"archived more than {rules.archive_retention_days} days ago", "retention")
    return moves


def _important(info: NoteInfo, rules: FlowRules, projects: Mapping[str, ProjectInfo]) -> bool:
    return (
        not info.path.endswith(".json")
        and info.importance >= rules.promote_importance
        and _promotable(info, projects)
    )


def _promotable(info: NoteInfo, projects: Mapping[str, ProjectInfo]) -> bool:
    """A mid-term note the importance rule may promote (not a project's own files, not superseded)."""
    pid = project_of_path(info.path)
    if pid is not None:
        if info.name in PROJECT_FILES and info.path == f"{PROJECTS}/{pid}/{info.name}":
            return False
        project = projects.get(pid)
        if project is not None and project.status == "cancelled":
            return False
    return info.status not in ("superseded", "cancelled") and not info.superseded_by


def _project_rules(
    ordered: list[NoteInfo],
    rules: FlowRules,
    now: datetime,
    projects: Mapping[str, ProjectInfo],
    taken: set[str],
    add: Callable[..., None],
) -> dict[str, ProjectInfo]:
    """Completed, cancelled and idle projects leave mid-term; returns the projects that stay."""
    members: dict[str, list[NoteInfo]] = {}
    for info in ordered:
        pid = project_of_path(info.path)
        if pid is not None:
            members.setdefault(pid, []).append(info)
    surviving: dict[str, ProjectInfo] = {}
    idle = timedelta(days=rules.project_idle_days)
    for pid, project in sorted(projects.items()):
        files = members.get(pid, [])
        if project.status == "cancelled":
            reason, kind = f"project {pid} cancelled", "project-cancelled"
        elif project.status == "completed":
            reason, kind = f"project {pid} completed", "project-completed"
        elif project.last_touched is not None and now - project.last_touched >= idle:
            reason = f"project {pid} untouched for {rules.project_idle_days} days"
            kind = "project-idle"
        else:
            surviving[pid] = project
            continue
        if not files:
            continue
        folder = _unique_folder(f"{ARCHIVE_PROJECTS}/{pid}", taken)
        group = f"project:{pid}"
        for info in files:
            rest = info.path[len(project.folder) + 1 :]
            own_file = rest in PROJECT_FILES
            if kind == "project-completed" and not own_file and not info.path.endswith(".json"):
                if info.category in DISTILLED and info.status not in ("superseded", "cancelled"):
                    add(
                        info,
                        long_term_path(info),
                        f"{reason}: its {info.category} goes to long-term",
                        kind,
                        group,
                        project=pid,
                    )
                    continue
                if info.importance >= rules.promote_importance and _promotable(info, projects):
                    why = f"{reason}; importance {info.importance:g} >= {rules.promote_importance:g}"
                    add(info, long_term_path(info), why, kind, group, project=pid)
                    continue
            add(info, f"{folder}/{rest}", reason, kind, group)
    return surviving


def _short_rules(
    info: NoteInfo,
    rules: FlowRules,
    now: datetime,
    projects: Mapping[str, ProjectInfo],
    ended: set[str],
    add: Callable[..., None],
) -> None:
    project, how = match_project(info, projects)
    if project is not None:
        add(
            info,
            f"{project.folder}/{info.name}",
            f"about project {project.id} ({how})",
            "short-to-project",
            project=project.id,
        )
        return
    if info.session and info.session in ended:
        add(info, archive_path(info, now), f"session {info.session} ended", "session-ended")
        return
    if info.expires is not None:  # an explicit expiry replaces the TTL, either way
        if info.expires <= now:
            add(info, archive_path(info, now), f"expired at {info.expires:%Y-%m-%d %H:%M}", "short-expired")
        return
    since = max((d for d in (info.updated, info.created, info.moved_at) if d is not None), default=now)
    if now - since >= timedelta(hours=rules.short_term_ttl_hours):
        add(
            info,
            archive_path(info, now),
            f"not updated for {rules.short_term_ttl_hours:g} h",
            "short-expired",
        )


def match_project(info: NoteInfo, projects: Mapping[str, ProjectInfo]) -> tuple[ProjectInfo | None, str]:
    """The one active project a note is about: its `project` field, a shared tag, or the project's
    id or title in its text. Two or more candidates and no field: none (a guess could misfile it)."""
    active = {pid: p for pid, p in projects.items() if p.status == "active"}
    if info.project:
        chosen = active.get(info.project)
        return (chosen, "project field") if chosen else (None, "")
    tags = {t.casefold() for t in info.tags}
    haystack = f"{info.title}\n{info.text}".casefold()
    found: dict[str, str] = {}
    for pid, project in sorted(active.items()):
        own_tags = {t.casefold() for t in project.tags} | {pid.casefold()}
        if tags & own_tags:
            found[pid] = "shared tag"
        elif len(pid) >= 3 and re.search(rf"(?<![\w-]){re.escape(pid.casefold())}(?![\w-])", haystack):
            found[pid] = "project id in text"
        elif len(project.title) >= 4 and project.title != pid and project.title.casefold() in haystack:
            found[pid] = "project title in text"
    if len(found) == 1:
        pid, how = found.popitem()
        return active[pid], how
    return None, ""
