"""The names a query gives, and near spellings of a name (index/names.py)."""

from __future__ import annotations

import pytest

from tiered_memory.index.fts import analyze
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
