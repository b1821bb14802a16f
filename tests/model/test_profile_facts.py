"""The profile's merge keeps one value per fact both sides set, the later `profile set` winning."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from tiered_memory.model.layout import PROFILE
from tiered_memory.model.merge3 import OURS_MARKER, merge_note
from tiered_memory.model.note import parse
from tiered_memory.model.profile_facts import KEPT_TIMES, facts, overridden, set_times, settle


def _profile(body_facts: str, times: dict[str, str]) -> str:
    lines = "".join(f"  {k}: '{v}'\n" for k, v in times.items())
    block = f"fact_set_at:\n{lines}" if times else ""
    return f"---\nid: user-profile\ntitle: User profile\n{block}---\n# User profile\n\n{body_facts}"


BASE = _profile("- name: Ada\n", {})


def test_the_later_set_wins_whichever_side_it_is() -> None:
    vim = _profile("- name: Ada\n- editor: vim\n", {"editor": "2026-01-02T10:00:00Z"})
    emacs = _profile("- name: Ada\n- editor: emacs\n", {"editor": "2026-01-02T11:00:00Z"})
    for ours, theirs in ((vim, emacs), (emacs, vim)):
        merged = merge_note(BASE, ours, theirs, PROFILE)
        assert not merged.conflict and "- editor: emacs\n" in merged.text and "vim" not in merged.text
        assert "profile editor: kept 'emacs', set later; 'vim' lost" in merged.notes
        assert overridden(BASE, ours, theirs, merged.text, PROFILE) == ["editor: 'emacs' replaced 'vim'"]


def test_other_lines_and_other_keys_are_kept_byte_for_byte() -> None:
    ours = _profile(
        "- name: Ada\n- editor: vim\n\nFree text  a person wrote.\n", {"editor": "2026-01-02T10:00:00Z"}
    )
    theirs = _profile(
        "- name: Ada\n- editor: emacs\n- shell: zsh\n",
        {"editor": "2026-01-02T11:00:00Z", "shell": "2026-01-02T11:00:00Z"},
    )
    merged = merge_note(BASE, ours, theirs, PROFILE)
    found = {k: v for k, (_n, _k, v) in facts(merged.text).items()}
    assert found == {"name": "Ada", "editor": "emacs", "shell": "zsh"}
    assert "Free text  a person wrote.\n" in merged.text and not merged.conflict


def test_a_hand_edit_against_a_set_keeps_both_for_a_person() -> None:
    base = _profile("- editor: nano\n", {"editor": "2026-01-01T10:00:00Z"})
    by_hand = _profile("- editor: vim\n", {"editor": "2026-01-01T10:00:00Z"})
    by_set = _profile("- editor: emacs\n", {"editor": "2026-01-02T11:00:00Z"})
    merged = merge_note(base, by_hand, by_set, PROFILE)
    assert merged.conflict and OURS_MARKER in merged.text
    assert "- editor: vim\n" in merged.text and "- editor: emacs\n" in merged.text


def test_another_note_is_not_settled_by_facts() -> None:
    vim = _profile("- editor: vim\n", {"editor": "2026-01-02T10:00:00Z"})
    emacs = _profile("- editor: emacs\n", {"editor": "2026-01-02T11:00:00Z"})
    merged = merge_note(BASE.replace("- name: Ada\n", ""), vim, emacs, "memory/long-term/other.md")
    assert "- editor: vim\n" in merged.text and "- editor: emacs\n" in merged.text


def test_one_fact_added_by_hand_on_both_sides_is_marked_for_a_person() -> None:
    vim, emacs = _profile("- name: Ada\n- editor: vim\n", {}), _profile("- name: Ada\n- editor: emacs\n", {})
    merged = merge_note(BASE, vim, emacs, PROFILE)
    assert merged.conflict and "conflict: true" in merged.text
    assert (
        "- name: Ada\n<<<<<<< one version\n- editor: vim\n=======\n- editor: emacs\n>>>>>>> the other version\n"
        in merged.text
    )
    # Two different facts, or two lines one side wrote, are no choice.
    shell = _profile("- name: Ada\n- shell: zsh\n", {})
    assert not merge_note(BASE, vim, shell, PROFILE).conflict
    both = _profile("- name: Ada\n- todo: a\n- todo: b\n", {})
    assert not merge_note(BASE, both, shell, PROFILE).conflict


def test_a_time_still_to_come_is_not_believed() -> None:
    now = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    base = _profile("- editor: nano\n", {"editor": "2026-01-01T10:00:00Z"})
    here = _profile("- editor: vim\n", {"editor": "2026-11-28T11:00:00Z"})
    for forged in ("2999-01-01T00:00:00Z", "2026-11-30T00:00:00Z"):
        pulled = _profile("- editor: evil\n", {"editor": forged})
        ours, theirs, remarks = settle(base, here, pulled, PROFILE, now=now)
        assert remarks == ["profile editor: set at a time still to come; both values kept"]
        assert "- editor: vim\n" in ours and "- editor: evil\n" in theirs and forged not in theirs
    pulled = _profile("- editor: evil\n", {"editor": "2999-01-01T00:00:00Z"})
    merged = merge_note(base, here, pulled, PROFILE)  # at the clock's time
    assert merged.conflict and "- editor: vim\n" in merged.text and "- editor: evil\n" in merged.text
    assert "2999" not in merged.text
    # Another machine's clock a few hours ahead is still a clock.
    ahead = _profile("- editor: emacs\n", {"editor": "2026-11-28T18:00:00Z"})
    ours, theirs, remarks = settle(base, here, ahead, PROFILE, now=now)
    assert remarks == ["profile editor: kept 'emacs', set later; 'vim' lost"]


def test_thousands_of_facts_both_sides_set_are_reported_in_linear_time() -> None:
    """The sync report's look at each key both sides changed read the whole merged profile again
    for each: 4,000 such keys took two seconds, a profile of a pulled 2 MB many minutes."""
    keys = range(20_000)
    base = _profile("".join(f"- k{i}: b\n" for i in keys), {})
    ours = _profile("".join(f"- k{i}: o\n" for i in keys), {})
    theirs = _profile("".join(f"- k{i}: t\n" for i in keys), {})
    started = time.monotonic()
    assert overridden(base, ours, theirs, ours, PROFILE)[:1] == ["k0: 'o' replaced 't'"]
    assert time.monotonic() - started < 5


def test_the_merged_times_are_bounded_and_the_later_set_still_wins() -> None:
    """Each side keeps the latest KEPT_TIMES times; their union, which the merge writes on both
    sides, is bounded the same way, the keys both set among them."""
    body = "".join(f"- k{i}: b\n" for i in range(2 * KEPT_TIMES)) + "- editor: nano\n"
    base = _profile(body, {})
    ours_times = {f"k{i}": "2026-01-02T10:00:00Z" for i in range(KEPT_TIMES - 1)}
    theirs_times = {f"k{i}": "2026-01-02T09:00:00Z" for i in range(KEPT_TIMES, 2 * KEPT_TIMES - 1)}
    ours = _profile(body.replace("nano", "vim"), {**ours_times, "editor": "2026-01-02T10:00:00Z"})
    theirs = _profile(body.replace("nano", "emacs"), {**theirs_times, "editor": "2026-01-02T11:00:00Z"})
    new_ours, new_theirs, remarks = settle(base, ours, theirs, PROFILE, now=datetime(2026, 1, 3, tzinfo=UTC))
    assert remarks == ["profile editor: kept 'emacs', set later; 'vim' lost"]
    for text in (new_ours, new_theirs):
        times = set_times(parse(text, PROFILE).meta)
        assert len(times) == KEPT_TIMES and times["editor"] == "2026-01-02T11:00:00Z"
        assert "k0" in times and f"k{KEPT_TIMES}" not in times  # the later ones kept
