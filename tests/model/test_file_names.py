"""File names every clone can check out: Windows' device names, the characters it refuses, trailing
dots and spaces, over-long names, and names differing only in case (one name on macOS and Windows)."""

from __future__ import annotations

import pytest

from tiered_memory.model import note as notes
from tiered_memory.model.file_names import (
    MAX_NAME_BYTES,
    MAX_PATH,
    fit_path,
    fold,
    kept,
    path_problem,
    portable,
    problem,
    unportable,
)


@pytest.mark.parametrize(
    "name",
    ["con", "CON", "Con.md", "aux.tar.gz", "nul .md", "PRN", "com1.md", "LPT9", "com\u00b9.md", "conin$"],
)
def test_a_device_name_in_any_case_and_with_any_suffix_is_refused_and_gets_a_suffix(name: str) -> None:
    assert problem(name) is not None
    made = portable(name)
    assert problem(made) is None
    assert made.split(".", 1)[0].endswith("-note")


def test_names_only_starting_like_a_device_are_fine() -> None:
    for name in ("console.md", "auxiliary", "com10.md", "nully", "con-note.md", "com.md"):
        assert problem(name) is None
        assert portable(name) == name


def test_a_device_name_keeps_its_case_and_suffix() -> None:
    assert portable("con.md") == "con-note.md"
    assert portable("Aux") == "Aux-note"
    assert portable("con.x.md") == "con-note.x.md"


@pytest.mark.parametrize(
    "name", ["a:b.md", "what?.md", "x<y>.md", 'say "hi".md', "a|b", "tab\there.md", "a\\b"]
)
def test_characters_windows_refuses_become_spaces(name: str) -> None:
    assert problem(name) is not None
    made = portable(name)
    assert problem(made) is None
    assert made.endswith(".md") == name.endswith(".md")


def test_trailing_dots_and_spaces_go() -> None:
    assert problem("Notes.") is not None
    assert problem("Notes ") is not None
    assert portable("Notes. ") == "Notes"
    assert portable("<>.md") == "note.md"  # nothing left of the stem


def test_a_name_too_long_is_cut_keeping_its_suffix() -> None:
    name = "\u6f22" * 120 + ".md"  # 363 bytes in UTF-8
    assert problem(name) is not None
    made = portable(name)
    assert made.endswith(".md")
    assert len(made.encode("utf-8")) <= MAX_NAME_BYTES
    assert problem(made) is None


def test_fold_is_the_same_for_names_differing_in_case_or_normalisation() -> None:
    assert fold("Rust.md") == fold("rust.md")
    assert fold("Caf\u00e9") == fold("cafe\u0301")
    assert fold("Rust.md") != fold("Rust2.md")


def test_unportable_names_each_bad_name_once_and_case_twins() -> None:
    paths = [
        "memory/long-term/ok.md",
        "aux/a.md",
        "aux/b.md",
        "Recipes/Con.md",
        "Recipes/Rust.md",
        "Recipes/rust.md",
        "Work/x.md",
        "work/y.md",
        "odd:name.md",
    ]
    found = dict(unportable(paths))
    assert set(found) == {"aux", "Recipes/Con.md", "Recipes/rust.md", "work", "odd:name.md"}
    assert "device" in found["aux"]
    assert found["Recipes/rust.md"] == "differs only in case from Recipes/Rust.md"


@pytest.mark.parametrize("text", ["Con", "AUX", "nul", "COM1", "Lpt9", "  con  "])
def test_a_slug_is_never_a_device_name(text: str) -> None:
    slug = notes.slugify(text)
    assert problem(slug) is None and problem(f"{slug}.md") is None
    assert slug == f"{text.strip().lower()}-note"
    assert notes.slugify("console") == "console"


def test_a_person_s_own_name_changes_only_where_a_clone_could_not_hold_it() -> None:
    assert kept("CON.md") == "CON-note.md"
    assert kept("Ideas.") == "Ideas"
    assert kept("What now?.md") == "What now?.md"  # theirs; only Windows' devices and endings change
    assert kept("Plan.md") == "Plan.md"
    long = kept("\u6f22" * 120 + ".md")
    assert long.endswith(".md") and len(long.encode("utf-8")) <= MAX_NAME_BYTES


def test_a_path_past_windows_length_has_its_file_name_cut() -> None:
    rel = "Deep/" + "a" * 100 + "/" + "b" * 100 + "/" + "c" * 80 + ".md"
    assert path_problem(rel) == f"its path is longer than {MAX_PATH} characters"
    fitted = fit_path(rel)
    assert fitted.startswith("Deep/" + "a" * 100 + "/" + "b" * 100 + "/c") and fitted.endswith(".md")
    assert len(fitted) <= MAX_PATH and path_problem(fitted) is None
    assert fit_path("Notes/short.md") == "Notes/short.md"
    assert dict(unportable([rel, "ok.md"])) == {rel: f"its path is longer than {MAX_PATH} characters"}
