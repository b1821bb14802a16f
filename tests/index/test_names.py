"""The names a query gives, and near spellings of a name (index/names.py)."""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_memory.index import names
from tiered_memory.index.fts import FtsDoc, FtsIndex, analyze
from tiered_memory.index.names import named_words, near_spelling


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("What cities did Kevin visit?", ["Kevin"]),
        # A sentence's first word is capitalised by grammar, "I" always.
        ("Kevin said I should go. Then what did Paola say?", ["Paola"]),
        # Months and weekdays by convention, in English and German.
        ("When did Caroline attend a pride parade in August, on a Sunday?", ["Caroline"]),
        ("Was hat Anna im Januar gekauft?", ["Anna"]),
        # A possessive names the person.
        ("How long was Muhammad's shift?", ["Muhammad"]),
        # A quoted title is quoted from memory, closed or not.
        ('What memory does "Fifty Shades of Grey" bring to Tim?', ["Tim"]),
        ("When did Joanna first watch “Eternal Sunshine of the Spotless Mind", ["Joanna"]),
        ("where did we put the config file", []),
        ("Berlin", []),
        ("Quarterly Planning Recap", []),  # Title Case: capitals of style
        ("Notes On The Berlin Offsite", []),
        ("Trip to Lisbon", ["Lisbon"]),
    ],
)
def test_the_names_of_a_query_are_its_words_capitalised_where_grammar_does_not(
    query: str, names: list[str]
) -> None:
    assert named_words(query) == names


@pytest.mark.parametrize(
    ("asked", "held", "near"),
    [
        ("Muhammad", "Muhhamed", True),  # the stems "muhammad" and "muhham" keep one skeleton
        ("Nebras", "Nebraas", True),
        ("Jonh", "John", True),
        ("Kevin", "Kin", False),  # two letters of five are too many
        ("Kevin", "Devin", False),  # not the same first letter
        ("Caroline", "Carolina", True),
        ("Barcelona", "Bangalore", False),
    ],
)
def test_a_name_spelt_a_little_otherwise_is_near(asked: str, held: str, near: bool) -> None:
    assert near_spelling(analyze(asked)[0], analyze(held)[0]) is near


def _capitalised_query(size: int) -> str:
    """`size` characters of which every third word is a name: not Title Case, so each is judged."""
    words = [f"Name{chr(97 + i % 26)}x" if i % 3 == 0 else "and" for i in range(size // 4)]
    return " ".join(words)[:size]


def _fastest(work: Callable[[], object], times: int = 3) -> float:
    best = float("inf")
    for _ in range(times):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def test_the_names_of_a_query_of_megabytes_are_found_in_linear_time() -> None:
    """A query may be as long as a note (megabytes, an agent's paste): each word's look back for a
    sentence's end went over all the text before it, 5 s for 2 MB. Eight times the text now takes
    about eight times as long, not sixty-four."""
    small, large = _capitalised_query(250_000), _capitalised_query(2_000_000)
    assert len(named_words(large)) > 100_000
    ratio = _fastest(lambda: named_words(large)) / _fastest(lambda: named_words(small))
    assert ratio < 24, ratio


def _old_near_spelling(term: str, other: str) -> bool:
    """near_spelling as first written, without its shortcut: the reference the shortcut must agree with."""
    if not term or not other or term[0] != other[0]:
        return False
    limit = 1 if len(term) <= 5 else 2 if len(term) <= 8 else 3
    if names._distance(term, other, limit) <= limit:
        return True
    if abs(len(term) - len(other)) > 2:
        return False

    def skeleton(t: str) -> str:
        return t[:1] + re.sub(r"(.)\1+", r"\1", re.sub(r"[aeiouy]", "", t[1:]))

    mine, theirs = skeleton(term), skeleton(other)
    if min(len(mine), len(theirs)) < 3 or not (mine.startswith(theirs) or theirs.startswith(mine)):
        return False
    return 2 * names._distance(term, other, max(len(term), len(other))) <= max(len(term), len(other))


@settings(max_examples=3000, deadline=None)
@given(st.text("kaeiouymnrst", min_size=1, max_size=11), st.text("kaeiouymnrst", min_size=0, max_size=12))
def test_near_spelling_with_its_shortcut_judges_as_before(term: str, other: str) -> None:
    assert near_spelling("k" + term, "k" + other) == _old_near_spelling("k" + term, "k" + other)
    assert near_spelling(term, other) == _old_near_spelling(term, other)


def test_a_hundred_thousand_names_of_one_initial_cost_a_bounded_look(tmp_path: Path) -> None:
    """A vault (or a pulled note) holding 10^5 names that all start with K: each name a keyword
    query gives was compared letter by letter with every one of them, 9 s a search. The look is
    bounded (`names.MAX_WORK`); a name it could not settle counts as held."""
    rng = random.Random(3)
    held: set[str] = set()
    while len(held) < 100_000:
        held.add("K" + "".join(rng.choices("aeioulmnrst", k=rng.randint(5, 8))))
    ordered = sorted(held)
    docs = [
        FtsDoc(
            f"n{i}.md",
            f"n{i}",
            f"People {i}",
            " ".join(ordered[i * 1000 : (i + 1) * 1000]),
            [],
            [],
            "",
            "long",
            "knowledge",
            "active",
        )
        for i in range(100)
    ]
    asked = ["Kzqxwvbp", "Kxxxxyy", "Kbcdfgh", "Kqqqqqq", "Kwwwwww", "Kzzzzzz", "Kpppppp", "Kvvvvvv"]
    with FtsIndex.open(tmp_path / "ix") as index:
        index.upsert(docs, new=True)
        index.unheard(["Kappa"])  # the lexicon's K terms, read once per generation
        took = _fastest(lambda: index.unheard(asked), times=1)
        assert index.unheard(asked)[:1] == ["Kzqxwvbp"]  # the first names are looked for in full
        assert index.unheard(["Kalimerx"]) == []  # held exactly
    assert took < 3.0, took
    budget = names.Budget()
    assert names.held_near("kzqxwvbp", [t.lower() for t in ordered], budget) and budget.left <= 0
