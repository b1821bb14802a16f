"""Three-way merge of vault files for the git merge driver (`tmem merge-driver %O %A %B %P`).

Pure: no git, no I/O. Note frontmatter merges field by field (lists as sets, later timestamps,
summed access counts, ...), the body merges by lines with our own diff3, and the JSON state files
merge key by key. Text either side added is never dropped: overlapping body edits are kept side by
side between git-style markers and the note is flagged `conflict: true` so it can be found later.

A merged note is committed and travels to every machine, so what a marker says of its version must
hold wherever the file is read: the caller names each side for good (`Sides`: a machine and a
commit), and without names the markers say "one version" / "the other version". Never "this
machine" or "incoming", which are true only on the machine that ran the merge.
"""

from __future__ import annotations

__all__ = [
    "MISSING",
    "MergeResult",
    "OURS_MARKER",
    "SEPARATOR",
    "Sides",
    "THEIRS_MARKER",
    "TIME_KEYS",
    "UNLABELLED",
    "has_markers",
    "is_marker",
    "labelled",
    "merge3_lines",
    "merge_file",
    "merge_json",
    "merge_note",
    "merge_plain",
    "split_lines",
]

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from tiered_memory.errors import NoteParseError
from tiered_memory.model import note_stats, profile_facts
from tiered_memory.model.dates import to_datetime
from tiered_memory.model.frontmatter import edit_frontmatter
from tiered_memory.model.layout import PROFILE, STATS_FILE
from tiered_memory.model.note import Note, body_of, parse, render

# The marks that open and close a block of kept versions; a label follows after a space (`Sides`).
OURS_MARKER = "<<<<<<<"
SEPARATOR = "======="
THEIRS_MARKER = ">>>>>>>"

TIME_KEYS = ("updated", "last_accessed", "moved_at")
# Inside JSON objects these decide which side wins a scalar both sides changed.
_JSON_TIME_KEYS = ("updated", "updated_at")


class _Missing:
    """A key absent on one side. Distinct from None, which a bare `key:` in YAML gives."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

# (base start, base end, side start, side end, side) -- side 0 is ours, 1 is theirs.
_Hunk = tuple[int, int, int, int, int]


@dataclass
class MergeResult:
    text: str  # the merged file content
    conflict: bool = False  # both versions of something kept for a person to choose (markers or values)
    notes: list[str] = field(default_factory=list)  # human-readable remarks on what was decided


@dataclass
class _Kept:
    """A value both sides changed with nothing to tell which is newer: both are kept, visibly."""

    where: str
    ours: Any
    theirs: Any


@dataclass
class _Merge:
    """What one merge of values noticed: remarks for the report, values kept both ways."""

    remarks: list[str] = field(default_factory=list)
    kept: list[_Kept] = field(default_factory=list)


@dataclass(frozen=True)
class Sides:
    """What the markers say of the two versions they keep. Labels must stay true on every machine
    that reads the merged file later; the defaults claim nothing."""

    ours: str = "one version"
    theirs: str = "the other version"

    def markers(self) -> tuple[str, str]:
        return _marker(OURS_MARKER, self.ours), _marker(THEIRS_MARKER, self.theirs)


UNLABELLED = Sides()


def _marker(mark: str, label: str) -> str:
    label = " ".join(label.split())  # one line, whatever the label held
    return f"{mark} {label}" if label else mark


def is_marker(line: str) -> bool:
    """Whether a line opens or closes a block of kept versions, whatever its label: bare, named by
    `Sides`, an older tmem's `ours (this machine)` / `theirs (incoming)`, or git's own."""
    line = line.rstrip("\r\n")
    return any(line == mark or line.startswith(mark + " ") for mark in (OURS_MARKER, THEIRS_MARKER))


def _marks_a_conflict(lines: list[str]) -> bool:
    return any(is_marker(line) or line.rstrip("\r\n") == SEPARATOR for line in lines)


def has_markers(text: str) -> bool:
    return any(is_marker(line) for line in text.split("\n"))


def labelled(merge: Callable[[Sides], MergeResult], sides: Callable[[], Sides] | None) -> MergeResult:
    """`merge` unlabelled, and again with `sides()` when it kept both versions of something:
    naming the sides costs git lookups that only a conflict needs."""
    result = merge(UNLABELLED)
    if result.conflict and sides is not None and (names := sides()) != UNLABELLED:
        result = merge(names)
    return result


# ---- lines -------------------------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split on \\n only, so ''.join() gives the text back byte for byte."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def merge3_lines(
    base: list[str], ours: list[str], theirs: list[str], sides: Sides = UNLABELLED
) -> tuple[list[str], bool]:
    """Three-way line merge; overlapping different changes are emitted both, between markers.

    Lines either carry their endings (as from split_lines(); markers then get the same ending)
    or none do (markers are then bare strings too, for a caller that joins with a newline).
    """
    lines, conflicted, _ = _merge3(base, ours, theirs, sides=sides)
    return lines, conflicted


def _hunks(base: list[str], other: list[str], side: int) -> list[_Hunk]:
    # autojunk off: blank lines are "popular" in long notes and would otherwise be ignored.
    ops = SequenceMatcher(None, base, other, autojunk=False).get_opcodes()
    return [(i1, i2, j1, j2, side) for tag, i1, i2, j1, j2 in ops if tag != "equal"]


def _clash(h: _Hunk, g: _Hunk) -> bool:
    """Hunks of opposite sides clash when they touch the same base lines or insert at one spot.

    Edits of adjacent lines do not clash (unlike git): in prose they are independent, and both
    are applied in base order, so nothing is lost.
    """
    return (h[0] < g[1] and g[0] < h[1]) or h[0] == h[1] == g[0] == g[1]


def _apply(base: list[str], start: int, end: int, hunks: list[_Hunk], side: list[str]) -> list[str]:
    out: list[str] = []
    pos = start
    for i1, i2, j1, j2, _ in hunks:
        out += base[pos:i1] + side[j1:j2]
        pos = i2
    return out + base[pos:end]


def _merge3(
    base: list[str],
    ours: list[str],
    theirs: list[str],
    text: bool = False,
    sides: Sides = UNLABELLED,
    keep_insertions: bool = False,
) -> tuple[list[str], bool, list[str]]:
    """diff3 with remarks. `text`: lines come from split_lines(), so markers always need a newline.
    `keep_insertions`: lines both sides only added at one spot are both kept, ours first, without
    markers (neither side replaced a line the other saw, so there is nothing to choose)."""
    hunks = sorted(_hunks(base, ours, 0) + _hunks(base, theirs, 1), key=lambda h: (h[0], h[1]))
    # Group hunks that clash (transitively); sorted by base start, only the last group can grow.
    groups: list[list[_Hunk]] = []
    for hunk in hunks:
        if groups and any(g[4] != hunk[4] and _clash(g, hunk) for g in groups[-1]):
            groups[-1].append(hunk)
        else:
            groups.append([hunk])
    eol = _eol(base, ours, theirs) or ("\n" if text else "")
    opening, closing = sides.markers()
    out: list[str] = []
    remarks: list[str] = []
    conflicted = False
    pos = 0
    for group in groups:
        start, end = min(h[0] for h in group), max(h[1] for h in group)
        out += base[pos:start]
        pos = end
        if len(group) == 1:  # only one side touched these lines
            _, _, j1, j2, side = group[0]
            out += (ours if side == 0 else theirs)[j1:j2]
            continue
        mine = _apply(base, start, end, [h for h in group if h[4] == 0], ours)
        other = _apply(base, start, end, [h for h in group if h[4] == 1], theirs)
        if mine == other:
            out += mine
            continue
        # Lines common to both versions at the edges go outside the markers (like zdiff3), but not
        # those of an earlier conflict: its markers and separator are never merged as text (two
        # separators both sides added would count once, leaving a block nothing closes).
        marked = _marks_a_conflict(mine + other)
        pre = 0
        while not marked and pre < min(len(mine), len(other)) and mine[pre] == other[pre]:
            pre += 1
        suf = 0
        while not marked and suf < min(len(mine), len(other)) - pre and mine[-1 - suf] == other[-1 - suf]:
            suf += 1
        mine_mid, other_mid = mine[pre : len(mine) - suf], other[pre : len(other) - suf]
        spot = f"after line {start}" if start else "at the start"
        if start == end and not (mine_mid and other_mid):
            # Both only inserted here and one insertion contains the other: take the larger one.
            out += mine if len(mine) > len(other) else other
            remarks.append(f"both sides added lines {spot}; one addition contains the other")
            continue
        if start == end and keep_insertions and not marked:
            out += mine[: len(mine) - suf] + _not_in(other_mid, mine_mid) + mine[len(mine) - suf :]
            remarks.append(f"both sides added lines {spot}; kept both, ours first")
            continue
        conflicted = True
        if start == end:
            remarks.append(f"both sides added different lines {spot}; kept both")
        else:
            where = f"lines {start + 1}-{end}" if end > start + 1 else f"line {end}"
            remarks.append(f"both sides changed {where}; kept both")
        out += mine[:pre]
        out += [opening + eol, *mine_mid, SEPARATOR + eol, *other_mid, closing + eol]
        out += mine[len(mine) - suf :]
    out += base[pos:]
    if eol:
        # A side's last line may lack its newline; when merged text follows it, give it one.
        out = [ln if i == len(out) - 1 or ln.endswith("\n") else ln + eol for i, ln in enumerate(out)]
    return out, conflicted, remarks


def _not_in(theirs: list[str], ours: list[str]) -> list[str]:
    """Theirs' lines less the runs ours also added (blank lines alone are no shared run): a line
    both sides got from a third machine is kept once."""
    blocks = SequenceMatcher(None, ours, theirs, autojunk=False).get_matching_blocks()
    shared: set[int] = set()
    for _, j, size in blocks:
        if any(line.strip() for line in theirs[j : j + size]):
            shared.update(range(j, j + size))
    return [line for j, line in enumerate(theirs) if j not in shared]


def _eol(*sides: list[str]) -> str:
    """The line ending in use ('' when lines come without endings, as plain string lists)."""
    for lines in sides:
        for line in lines:
            if line.endswith("\n"):
                return "\r\n" if line.endswith("\r\n") else "\n"
    return ""


def _text_merge(base: str | None, ours: str, theirs: str, why: str, sides: Sides = UNLABELLED) -> MergeResult:
    lines, conflicted, remarks = _merge3(
        split_lines(base or ""), split_lines(ours), split_lines(theirs), True, sides
    )
    return MergeResult("".join(lines), conflicted, [why, *remarks])


# ---- values (frontmatter fields and JSON) ------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    # Type check so that `true` and `1`, or `1` and `1.0`, count as a change, at every depth: `==`
    # on two lists or maps would compare their items loosely again.
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _later(a: Any, b: Any) -> bool:
    """Whether timestamp `a` is strictly later than `b` (unparseable or missing: not later)."""
    da, db = to_datetime(a), to_datetime(b)
    return da is not None and db is not None and da > db


def _merge_value(b: Any, o: Any, t: Any, prefer_theirs: bool | None, where: str, state: _Merge) -> Any:
    """The generic rule: one side changed -> take it; both -> merge containers, else the later side.
    `prefer_theirs` None means no timestamp tells which side is newer: then ours stays in place and
    theirs is kept beside it (`state.kept`), never silently dropped."""
    remarks = state.remarks
    if _same(o, t):
        return o
    if _same(o, b):
        return t
    if _same(t, b):
        return o
    label = where or "top level"
    if o is MISSING or t is MISSING:
        kept = "theirs" if o is MISSING else "ours"
        remarks.append(f"{label}: deleted on one side, changed on the other; kept the change ({kept})")
        return t if o is MISSING else o
    if isinstance(o, dict) and isinstance(t, dict):
        return _merge_dict(b if isinstance(b, dict) else {}, o, t, prefer_theirs, where, state)
    if isinstance(o, list) and isinstance(t, list):
        return _merge_list(b if isinstance(b, list) else [], o, t, prefer_theirs, where, state)
    if prefer_theirs is None:
        remarks.append(f"{label}: both sides changed it and neither is newer; kept both values")
        state.kept.append(_Kept(label, o, t))
        return o
    why = "later updated" if prefer_theirs else "ours updated later"
    remarks.append(f"{label}: both sides changed; took {'theirs' if prefer_theirs else 'ours'} ({why})")
    return t if prefer_theirs else o


def _key_order(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    return list(ours) + [k for k in theirs if k not in ours]


def _merge_dict(
    b: dict[str, Any],
    o: dict[str, Any],
    t: dict[str, Any],
    prefer_theirs: bool | None,
    where: str,
    state: _Merge,
) -> dict[str, Any]:
    for key in _JSON_TIME_KEYS:  # an object's own timestamp decides its fields' conflicts
        if key in o and key in t and not _same(o[key], t[key]):
            prefer_theirs = _newer(t[key], o[key])
            break
    out: dict[str, Any] = {}
    for key in _key_order(o, t):
        sub = f"{where}.{key}" if where else str(key)
        value = _merge_value(
            b.get(key, MISSING), o.get(key, MISSING), t.get(key, MISSING), prefer_theirs, sub, state
        )
        if value is not MISSING:
            out[key] = value
    return out


def _identity(sides: tuple[list[Any], ...]) -> str | None:
    """The field that names a list's entries: `uid` (random, never assigned twice) when every entry
    has one, else `id`; None when entries have neither (the list then merges as a set)."""
    for field_name in ("uid", "id"):
        if all(isinstance(x, dict) and field_name in x for side in sides for x in side):
            keys = [[json.dumps(x[field_name], sort_keys=True, default=str) for x in side] for side in sides]
            # Duplicate identities would collapse into one entry and lose data.
            if all(len(set(k)) == len(k) for k in keys):
                return field_name
    return None


def _number(item: Any) -> int | None:
    number = item.get("id") if isinstance(item, dict) else None
    return number if isinstance(number, int) and not isinstance(number, bool) else None


def _unique_numbers(
    items: list[Any], in_base: set[str], key_of: Callable[[Any], str], where: str, remarks: list[str]
) -> list[Any]:
    """Entries matched by `uid` that share a number (`id`, what people type: a task added as #2 on
    two machines): the one the base had keeps it, else the one created first (then the smaller
    uid); each other one gets the next number free after the largest, in the same order."""

    def rank(item: dict[str, Any]) -> tuple[bool, float, str]:
        created = to_datetime(item.get("created"))
        return (key_of(item) not in in_base, created.timestamp() if created else math.inf, key_of(item))

    groups: dict[int, list[dict[str, Any]]] = {}
    for item in items:
        if (number := _number(item)) is not None:
            groups.setdefault(number, []).append(item)
    last = max(groups, default=0)
    new_numbers: dict[str, int] = {}
    for number, group in sorted(groups.items()):
        for item in sorted(group, key=rank)[1:]:
            last += 1
            new_numbers[key_of(item)] = last
            text = item.get("text", item.get("title", ""))
            remarks.append(
                f"{where or 'top level'}: both sides numbered an entry #{number}; "
                f"#{number} {str(text)[:60]!r} is now #{last}"
            )
    if not new_numbers:
        return items
    return [{**x, "id": new_numbers[key_of(x)]} if key_of(x) in new_numbers else x for x in items]


def _merge_list(
    b: list[Any], o: list[Any], t: list[Any], prefer_theirs: bool | None, where: str, state: _Merge
) -> list[Any]:
    sides = (b, o, t)
    remarks = state.remarks
    name = _identity(sides)
    if name is not None:

        def key_of(item: dict[str, Any]) -> str:
            return json.dumps(item[name], sort_keys=True, default=str)

        bm, om, tm = ({key_of(x): x for x in side} for side in sides)
        out = []
        renumber: list[dict[str, Any]] = []
        for key in _key_order(om, tm):
            bv, ov, tv = bm.get(key, MISSING), om.get(key, MISSING), tm.get(key, MISSING)
            if bv is MISSING and ov is not MISSING and tv is not MISSING and not _same(ov, tv):
                # Both machines added an entry and gave it the same number: two entries, not one.
                out.append(ov)
                renumber.append(tv)
                continue
            value = _merge_value(bv, ov, tv, prefer_theirs, f"{where}[{name}={key}]", state)
            if value is not MISSING:
                out.append(value)
        for item in renumber:
            old = item[name]
            numbers = [x[name] for x in out if isinstance(x.get(name), int) and not isinstance(x[name], bool)]
            if isinstance(old, int) and not isinstance(old, bool):
                item = {**item, name: max(numbers, default=0) + 1}
                remarks.append(
                    f"{where or 'top level'}: both sides added {name} {old}; theirs is now {item[name]}"
                )
            else:
                remarks.append(f"{where or 'top level'}: both sides added {name} {old!r}; kept both")
            out.append(item)
        if name == "uid":
            out = _unique_numbers(out, set(bm), key_of, where, remarks)
        return out
    # Set semantics against the base: (b & o & t) | (o - b) | (t - b), ours' order first.
    # Membership by equality, not hashing, so lists of dicts work too.
    merged: list[Any] = []
    for x in o:
        if (x not in b or x in t) and x not in merged:
            merged.append(x)
    for x in t:
        if x not in b and x not in merged:
            merged.append(x)
    remarks.append(f"{where or 'top level'}: both sides changed the list; merged additions and removals")
    return merged


# ---- notes -------------------------------------------------------------------------------


def _superseded(value: Any) -> bool:
    return isinstance(value, str) and value.strip().lower() == "superseded"


def _merge_count(b: Any, o: Any, t: Any) -> Any:
    """base + both deltas (a missing count is 0); MISSING when a value is not a count."""
    counts: list[int] = []
    for value in (b, o, t):
        if value is MISSING or value is None:
            counts.append(0)
        elif isinstance(value, int) and not isinstance(value, bool):
            counts.append(value)
        elif isinstance(value, str) and value.strip().isdigit():
            counts.append(int(value))
        else:
            return MISSING
    nb, no, nt = counts
    return max(0, nb + (no - nb) + (nt - nb))


def _newer(theirs: Any, ours: Any) -> bool | None:
    """True when `theirs` is the later timestamp, False when `ours` is, None when nothing tells."""
    if _later(theirs, ours):
        return True
    if _later(ours, theirs):
        return False
    return None


def _merge_meta(
    base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any], state: _Merge
) -> dict[str, Any]:
    remarks = state.remarks
    prefer_theirs = _newer(theirs.get("updated"), ours.get("updated"))
    o_sup, t_sup = _superseded(ours.get("status")), _superseded(theirs.get("status"))
    sup = ours if o_sup and not t_sup else theirs if t_sup and not o_sup else None
    out: dict[str, Any] = {}
    for key in _key_order(ours, theirs):
        b, o, t = base.get(key, MISSING), ours.get(key, MISSING), theirs.get(key, MISSING)
        value = MISSING
        # Counts first: equal counts on both sides still mean two separate sets of accesses.
        if key == "access_count" and (count := _merge_count(b, o, t)) is not MISSING:
            value = count
        elif _same(o, t):
            value = o
        elif sup is not None and key == "status":
            value = sup["status"]
            remarks.append(f"status: superseded on {'ours' if sup is ours else 'theirs'} wins")
        elif sup is not None and key == "superseded_by" and key in sup:
            value = sup[key]
        elif key in TIME_KEYS and o is not MISSING and t is not MISSING and to_datetime(o) and to_datetime(t):
            value = t if _later(t, o) else o
        else:
            value = _merge_value(b, o, t, prefer_theirs, key, state)
        if value is not MISSING:
            out[key] = value
    return out


def merge_note(
    base: str | None, ours: str, theirs: str, path: str = "", sides: Sides = UNLABELLED
) -> MergeResult:
    """Merge a Markdown note: frontmatter field by field, body by lines. `base` None: added on both
    sides. `sides` names the versions in the markers of lines both changed. The profile first keeps
    one value per fact both sides set (profile_facts.settle)."""
    settled: list[str] = []
    if path == PROFILE:
        ours, theirs, settled = profile_facts.settle(base, ours, theirs, path)
    if ours == theirs or base == theirs:
        return MergeResult(ours, notes=settled)
    if base == ours:
        return MergeResult(theirs, notes=settled)
    # parse() reads a .json path as JSON; this function is for Markdown whatever the name.
    parse_path = path if path and not path.endswith(".json") else "note.md"
    o_note, t_note = parse(ours, parse_path), parse(theirs, parse_path)
    b_note = parse(base, parse_path) if base is not None else Note(path=parse_path)
    bad = [
        (n, note)
        for n, note in (("base", b_note), ("ours", o_note), ("theirs", t_note))
        if note.parse_warning
    ]
    if bad:
        why = "; ".join(f"{name}: {note.parse_warning}" for name, note in bad)
        return _text_merge(
            base, ours, theirs, f"frontmatter unreadable ({why}); merged the whole file as text", sides
        )
    state = _Merge(remarks=settled)
    meta = _merge_meta(b_note.meta, o_note.meta, t_note.meta, state)
    remarks = state.remarks
    # In a note both sides had, lines each side added at one spot (two appends, two facts, two
    # list items) are both kept; a note added on both sides is two versions of one text: a choice.
    lines, conflicted, body_remarks = _merge3(
        split_lines(b_note.body),
        split_lines(o_note.body),
        split_lines(t_note.body),
        True,
        sides,
        keep_insertions=base is not None,
    )
    remarks += [f"body: {r}" for r in body_remarks]
    if path == PROFILE and base is not None:
        opening, closing = sides.markers()
        if profile_facts.mark_twice_set(
            lines, (b_note.body, o_note.body, t_note.body), (opening, SEPARATOR, closing)
        ):
            remarks.append("body: both sides added one fact by hand with different values; kept both")
            conflicted = True
    if state.kept:
        # Ours stays in the field; theirs waits beside it until a person resolves the note.
        meta["conflict_values"] = {k.where: {"ours": k.ours, "theirs": k.theirs} for k in state.kept}
        conflicted = True
    if conflicted:
        meta["conflict"] = True  # so `tmem` (and grep) can list notes that need a person
    merged = Note(
        path=parse_path,
        meta=meta,
        body="".join(lines),
        has_frontmatter=o_note.has_frontmatter or t_note.has_frontmatter or bool(meta),
    )
    return MergeResult(_merged_text((ours, o_note), (theirs, t_note), merged), conflicted, remarks)


def _merged_text(ours: tuple[str, Note], theirs: tuple[str, Note], merged: Note) -> str:
    """The merged note's text. Its frontmatter is a side's own bytes when the merge kept that side's
    keys, else ours with only the keys the merge changed written again: a person's note edited on two
    machines keeps their empty `key:` values, quoting, comments, BOM and line endings, which a
    re-rendered block would rewrite."""
    for text, note in (ours, theirs):
        if note.has_frontmatter == merged.has_frontmatter and _same(note.meta, merged.meta):
            return text[: len(text) - len(note.body)] + merged.body
    text, note = ours
    changes: dict[str, Any] = {
        k: v for k, v in merged.meta.items() if not _same(note.meta.get(k, MISSING), v)
    }
    # edit_frontmatter reads None as "delete the key": a null the merge chose is written by render.
    if any(v is None for v in changes.values()):
        return render(merged)
    changes |= {k: None for k in note.meta if k not in merged.meta}
    try:
        edited = edit_frontmatter(text, changes)
    except NoteParseError:
        return render(merged)
    return edited[: len(edited) - len(body_of(edited, merged.path))] + merged.body


# ---- JSON --------------------------------------------------------------------------------


def merge_json(base: str | None, ours: str, theirs: str, sides: Sides = UNLABELLED) -> MergeResult:
    """Merge JSON state files (tasks, contexts) key by key; lists of {"id": ...} objects by id."""
    if ours == theirs or base == theirs:
        return MergeResult(ours)
    if base == ours:
        return MergeResult(theirs)
    try:
        b = json.loads(base) if base is not None and base.strip() else MISSING
        o, t = json.loads(ours), json.loads(theirs)
    except (ValueError, RecursionError):
        return _text_merge(base, ours, theirs, "invalid JSON; merged as text", sides)
    state = _Merge()
    merged = _merge_value(b, o, t, None, "", state)
    if state.kept and isinstance(merged, dict):
        # Ours stays in place; theirs is listed beside it until a person settles it.
        found = merged.get("conflicts")
        previous: list[Any] = found if isinstance(found, list) else []
        merged["conflicts"] = [
            *previous,
            *({"at": k.where, "ours": k.ours, "theirs": k.theirs} for k in state.kept),
        ]
        merged["conflict"] = True
    return MergeResult(
        json.dumps(merged, indent=2, ensure_ascii=False) + "\n", bool(state.kept), state.remarks
    )


def merge_plain(base: bytes | None, ours: bytes, theirs: bytes, path: str) -> bytes | None:
    """Merge a file that is not a note (an editor's settings, a text file) when that needs no
    choice: JSON key by key with no value changed both ways, text by lines with no overlapping
    edits. None when a person has to choose (or the file is binary): keep both then."""
    if path.rsplit("/", 1)[-1] == STATS_FILE:  # git could not run the driver: merge it here
        return note_stats.merge(
            base.decode("utf-8") if base else None, ours.decode(), theirs.decode()
        ).encode()
    try:
        b = base.decode("utf-8") if base else None
        o, t = ours.decode("utf-8"), theirs.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if path.lower().endswith(".json"):
        try:
            bj = json.loads(b) if b is not None and b.strip() else MISSING
            oj, tj = json.loads(o), json.loads(t)
        except (ValueError, RecursionError):
            return None
        state = _Merge()
        value = _merge_value(bj, oj, tj, None, "", state)
        if state.kept:
            return None
        indent = 2 if "\n  " in o else None
        return (
            json.dumps(value, indent=indent, ensure_ascii=False) + ("\n" if o.endswith("\n") else "")
        ).encode()
    lines, conflicted = merge3_lines(split_lines(b or ""), split_lines(o), split_lines(t))
    return None if conflicted else "".join(lines).encode("utf-8")


def merge_file(base: str | None, ours: str, theirs: str, path: str, sides: Sides = UNLABELLED) -> MergeResult:
    """Dispatch by suffix: .json files merge as JSON, everything else as a note."""
    if path.rsplit("/", 1)[-1] == STATS_FILE:
        return MergeResult(note_stats.merge(base, ours, theirs))
    if path.lower().endswith(".json"):
        return merge_json(base, ours, theirs, sides)
    return merge_note(base, ours, theirs, path, sides)
