"""The user profile's facts (`- key: value` lines) and how two versions of the profile merge.

A fact is a key with one value. `profile set` records when it last wrote each key in the
frontmatter (`fact_set_at`, key casefolded -> time), never in the line a person reads or wrote,
for the facts the profile still has, the latest KEPT_TIMES of them (`trimmed`).
When both machines changed one key to different values, the one `profile set` wrote later wins and
the other value is named in the merge's remarks (and in the sync report, `overridden`); when a
person changed the key by hand on either side, nothing tells which is newer, so both are kept for
a person to choose, as in any other note. A time later than the merging machine's clock (by more
than `SKEW`) is no `profile set` that happened: a pulled commit could hold the year 2999 and win
every such merge. Such a key is settled as a hand edit (both values kept for a person), said in
the remarks, and its time is dropped from the merged field. Pure: no git, no I/O (the merge's
time, when not given, is the clock's).
"""

from __future__ import annotations

__all__ = [
    "FACT",
    "KEPT_TIMES",
    "SET_AT",
    "SKEW",
    "fact_lines",
    "facts",
    "overridden",
    "set_times",
    "mark_twice_set",
    "settle",
    "stamp",
    "trimmed",
]

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from tiered_memory.errors import NoteParseError
from tiered_memory.model.dates import to_datetime
from tiered_memory.model.frontmatter import edit_frontmatter
from tiered_memory.model.note import Note, parse

SET_AT = "fact_set_at"
SKEW = timedelta(days=1)  # two machines' clocks differ by minutes; a day later is no clock's time
# The most keys `fact_set_at` keeps a time for, the latest set: a time decides only a merge of two
# machines that both set the key since their common version, and `profile set` stamps the key it
# sets, so the keys that matter are those set since the last sync (a handful). Bounded, the
# field stays far inside what frontmatter may hold (64 KiB): a key and its time take at most ~90
# bytes, and one time kept per fact ever set passed that at ~1,200 facts, after which every
# `profile set` was refused.
KEPT_TIMES = 256
FACT = re.compile(r"^(?P<lead>[ \t]*[-*][ \t]+)(?P<key>[^:\n]{1,60}?)[ \t]*:[ \t]*(?P<value>.*?)[ \t]*$")


def fact_lines(body: str) -> list[tuple[int, str, str]]:
    """(line number, key, value) of each `- key: value` line outside HTML comments."""
    out: list[tuple[int, str, str]] = []
    in_comment = False
    for number, line in enumerate(body.split("\n")):
        if in_comment:
            in_comment = "-->" not in line
            continue
        if "<!--" in line and "-->" not in line.split("<!--", 1)[1]:
            in_comment = True
            continue
        match = FACT.match(line.rstrip("\r"))
        if match:
            out.append((number, match.group("key").strip(), match.group("value")))
    return out


def facts(body: str) -> dict[str, tuple[int, str, str]]:
    """Casefolded key -> (line number, key as written, value) of each key's first line."""
    out: dict[str, tuple[int, str, str]] = {}
    for number, key, value in fact_lines(body):
        out.setdefault(key.casefold(), (number, key, value))
    return out


def set_times(meta: dict[str, Any]) -> dict[str, str]:
    """`fact_set_at` as key -> time, what of it is readable (a hand-edited field may hold anything)."""
    found = meta.get(SET_AT)
    if not isinstance(found, dict):
        return {}
    times: dict[str, str] = {}
    for key, value in found.items():
        when = to_datetime(value)
        if when is not None:
            times[str(key).casefold()] = stamp(when)
    return times


def trimmed(times: dict[str, str], body: str, just_set: str = "") -> dict[str, str]:
    """`times` of the facts `body` still has (a fact removed takes its time with it), the latest
    KEPT_TIMES of them, `just_set` (a casefolded key) always among them. A key whose time is
    dropped reads, to a merge, as one edited by hand: both values kept for a person, never one
    lost."""
    present = facts(body)
    return _latest({key: when for key, when in times.items() if key in present}, just_set)


def _latest(times: dict[str, str], just_set: str = "") -> dict[str, str]:
    """The KEPT_TIMES latest of `times` (at one time, by key; `just_set` first), in their order."""
    if len(times) <= KEPT_TIMES:
        return times
    ranked = sorted(
        times.items(), key=lambda item: (item[0] == just_set, _when(item[1]), item[0]), reverse=True
    )
    kept = {key for key, _when_set in ranked[:KEPT_TIMES]}
    return {key: when for key, when in times.items() if key in kept}


def stamp(when: datetime) -> str:
    """A time as `fact_set_at` holds it: ISO 8601, UTC as Z (a string, so YAML keeps it as written)."""
    return when.isoformat().replace("+00:00", "Z")


def _by_set(side: dict[str, str], base: dict[str, str], key: str) -> bool:
    """Whether this side's value of `key` was written by `profile set` since the common version: its
    time there changed (a hand edit leaves it as it was). Times are kept to the second, so a set in
    the same second as the common version's looks like a hand edit: both kept, never one lost."""
    return key in side and side[key] != base.get(key)


def _when(stamped: str) -> datetime:
    """A time from set_times() (which keeps only readable ones)."""
    when = to_datetime(stamped)
    assert when is not None
    return when


def _lines(text: str) -> list[str]:
    """Lines with their endings, split on \\n only ("".join gives the text back)."""
    return [line for line in re.split(r"(?<=\n)", text) if line]


def _with_body_lines(text: str, note: Note, edit: dict[int, str | None]) -> str:
    """`text` with body lines replaced (a line) or removed (None); every other byte kept."""
    lines = _lines(note.body)
    for number, line in edit.items():
        if number < len(lines):
            ending = lines[number][len(lines[number].rstrip("\r\n")) :]
            lines[number] = "" if line is None else line + ending
    return text[: len(text) - len(note.body)] + "".join(lines)


def _believed(times: dict[str, str], latest: datetime, unbelieved: set[str]) -> dict[str, str]:
    """`times` without those after `latest` (their keys added to `unbelieved`)."""
    kept = {}
    for key, when in times.items():
        if _when(when) > latest:
            unbelieved.add(key)
        else:
            kept[key] = when
    return kept


def settle(
    base: str | None, ours: str, theirs: str, path: str, now: datetime | None = None
) -> tuple[str, str, list[str]]:
    """The two versions of the profile with one value per key both sides set: the later `profile
    set` wins, its line in both versions, and both carry every key's latest `fact_set_at`; what
    lost, as remarks. The note's own merge (merge3.merge_note) then takes them as any note.
    `now`: the merge's time (default: the clock's); a time past it by more than SKEW is not taken."""
    if base is None or ours == theirs or base in (ours, theirs):
        return ours, theirs, []
    b_note, o_note, t_note = (parse(text, path) for text in (base, ours, theirs))
    if any(n.parse_warning for n in (b_note, o_note, t_note)):
        return ours, theirs, []
    latest = (now or datetime.now(UTC)) + SKEW
    unbelieved: set[str] = set()
    b_times, o_times, t_times = (
        _believed(set_times(n.meta), latest, unbelieved) for n in (b_note, o_note, t_note)
    )
    b_facts, o_facts, t_facts = (facts(n.body) for n in (b_note, o_note, t_note))
    o_edit: dict[int, str | None] = {}
    t_edit: dict[int, str | None] = {}
    remarks: list[str] = []
    for key in o_facts.keys() & t_facts.keys():
        o_line, o_key, o_value = o_facts[key]
        t_line, t_key, t_value = t_facts[key]
        was = b_facts.get(key)
        if o_value == t_value or (was is not None and was[2] in (o_value, t_value)):
            continue  # the same, or changed on one side only
        if key in unbelieved:
            remarks.append(f"profile {o_key}: set at a time still to come; both values kept")
        if not (_by_set(o_times, b_times, key) and _by_set(t_times, b_times, key)):
            continue  # changed by hand: both kept for a person, as in any note
        o_when, t_when = _when(o_times[key]), _when(t_times[key])
        theirs_wins = t_when > o_when or (t_when == o_when and t_value > o_value)
        if theirs_wins:
            win, lose, edit, number = t_value, o_value, o_edit, o_line
            line = _lines(t_note.body)[t_line].rstrip("\r\n")
        else:
            win, lose, edit, number = o_value, t_value, t_edit, t_line
            line = _lines(o_note.body)[o_line].rstrip("\r\n")
        # A key the common version had: both sides now change that line alike. A key both added:
        # only the winner's line is added.
        edit[number] = line if was is not None else None
        remarks.append(f"profile {o_key}: kept {win!r}, set later; {lose!r} lost")
    new_ours = _with_body_lines(ours, o_note, o_edit)
    new_theirs = _with_body_lines(theirs, t_note, t_edit)
    if unbelieved or (o_times != b_times and t_times != b_times and o_times != t_times):
        # Both sides set facts: each key's latest time, on both sides, so the field merges cleanly
        # (the note's own merge would keep both values of a key set on both sides).
        times = dict(o_times)
        for key, when in t_times.items():
            if key not in times or _when(when) > _when(times[key]):
                times[key] = when
        # Bounded as `profile set` keeps it: the union of two sides' times could be twice that.
        times = _latest({k: v for k, v in times.items() if k in o_facts or k in t_facts})
        try:
            new_ours, new_theirs = (edit_frontmatter(t, {SET_AT: times}) for t in (new_ours, new_theirs))
        except NoteParseError:
            pass  # left to the note's own merge, which keeps both values
    return new_ours, new_theirs, remarks


def mark_twice_set(lines: list[str], bodies: tuple[str, str, str], markers: tuple[str, str, str]) -> bool:
    """Put markers around two adjacent lines of one key, one from each side (`bodies`: base, ours,
    theirs), that the merge kept: both sides added the key by hand with different values, so
    nothing tells which is newer, and a person chooses, as between any lines both sides changed.
    `lines` carry their endings; `markers` are (opening, separator, closing). Whether any were."""
    base, ours, theirs = ({(k.casefold(), v) for _n, k, v in fact_lines(b)} for b in bodies)
    opening, separator, closing = markers
    marked = False
    i = 0
    while i + 1 < len(lines):
        pair = [FACT.match(line.rstrip("\r\n")) for line in lines[i : i + 2]]
        facts_here = [(m.group("key").strip().casefold(), m.group("value")) for m in pair if m]
        if (
            len(facts_here) == 2
            and facts_here[0][0] == facts_here[1][0]
            and _one_each(facts_here, base, ours, theirs)
        ):
            eol = lines[i][len(lines[i].rstrip("\r\n")) :] or "\n"
            ending = "" if lines[i + 1].endswith("\n") else eol
            lines[i : i + 2] = [
                opening + eol,
                lines[i],
                separator + eol,
                lines[i + 1] + ending,
                closing + eol,
            ]
            marked = True
            i += 5
        else:
            i += 1
    return marked


def _one_each(
    pair: list[tuple[str, str]],
    base: set[tuple[str, str]],
    ours: set[tuple[str, str]],
    theirs: set[tuple[str, str]],
) -> bool:
    """Whether the first fact is only ours and the second only theirs, both new since the base."""
    first, second = pair
    return first != second and first in ours - theirs - base and second in theirs - ours - base


def overridden(base: str | None, ours: str, theirs: str, merged: str, path: str) -> list[str]:
    """For a sync report: each key both sides changed to different values of which the merge kept
    one (and only one), as "key: 'kept' replaced 'lost'"."""
    b_facts = facts(parse(base, path).body) if base is not None else {}
    o_facts, t_facts = facts(parse(ours, path).body), facts(parse(theirs, path).body)
    kept_lines: dict[str, list[tuple[str, str]]] = {}
    for _n, k, v in fact_lines(parse(merged, path).body):
        kept_lines.setdefault(k.casefold(), []).append((k, v))
    found: list[str] = []
    for key in sorted(o_facts.keys() & t_facts.keys()):
        o_value, t_value = o_facts[key][2], t_facts[key][2]
        was = b_facts.get(key)
        if o_value == t_value or (was is not None and was[2] in (o_value, t_value)):
            continue
        kept = kept_lines.get(key, [])
        if len(kept) == 1 and kept[0][1] in (o_value, t_value):
            lost = t_value if kept[0][1] == o_value else o_value
            found.append(f"{kept[0][0]}: {kept[0][1]!r} replaced {lost!r}")
    return found
