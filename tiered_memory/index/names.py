"""The names a query gives, and whether a word the vault holds is one of them spelt otherwise.

A question about someone or something the vault never mentions ("What cities did Kevin visit?"
asked of a vault with no Kevin) is about something else, however many of its other words some note
shares: in an archive of chat, "cities" and "visit" are in some turn. A keyword search has no
meaning to judge that by, only words, and the name is the word that says it. What counts as a
name here is a word written with a capital inside the sentence, which in English marks people,
places, works and products; a word at the start of a sentence is capitalised by grammar, and a
month or a weekday by convention. A name in quotation marks is left out: titles are quoted from
memory ("Fifty Shades of Grey" against a turn that says "that Fifty Shades movie").

People misspell names, the vault's as much as the question's ("Muhammad" asked of a chat that
spells him "Muhhamed"): a name counts as held when the vault holds a near spelling of it
(`near_spelling`), on the index's stemmed terms.
"""

from __future__ import annotations

__all__ = ["CALENDAR_WORDS", "MAX_WORK", "Budget", "held_near", "near_spelling", "named_words"]

import re
from collections.abc import Iterable
from dataclasses import dataclass

# Capitalised by convention rather than because they name what a question is about, in the
# languages whose calendar words are written with a capital (English, German).
CALENDAR_WORDS = frozenset(
    """january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday
    saturday sunday mon tue tues wed thu thur thurs fri sat sun januar februar märz mai juni juli
    oktober dezember montag dienstag mittwoch donnerstag freitag samstag sonntag""".split()
)

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_SENTENCE_END = (".", "?", "!", ":", ";", "\n", "(", "[", "-", "–", "—", "*", "#", ">")
_QUOTES = {'"': '"', "“": "”", "„": "“", "«": "»", "‘": "’", "「": "」"}
_NO_VOWELS = str.maketrans("", "", "aeiouy")
_DOUBLED = re.compile(r"(.)\1+")


def _unquoted(query: str) -> str:
    """The query with every quoted span blanked (an unclosed quotation runs to the end)."""
    out: list[str] = []
    closing: str | None = None
    for char in query:
        if closing is not None:
            if char == closing:
                closing = None
            out.append(" ")
        elif char in _QUOTES:
            closing = _QUOTES[char]
            out.append(" ")
        else:
            out.append(char)
    return "".join(out)


def named_words(query: str) -> list[str]:
    """The words of `query` that name someone or something: capitalised where grammar does not
    capitalise (not a sentence's first word, not "I"), not a calendar word (CALENDAR_WORDS), not
    inside quotation marks; each without a possessive ending ("Kevin's" -> "Kevin"). None in a
    query written in Title Case, where most words are capitalised whatever they are."""
    text = _unquoted(query)
    later = [m.group() for m in _WORD.finditer(text)][1:]
    if len(later) >= 2 and 2 * sum(w[0].isupper() for w in later) > len(later):
        return []  # Title Case ("Quarterly Planning Recap"): capitals of style, not of names
    names: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group()
        if not word[0].isupper() or len(word) < 2:
            continue
        # The character before the word, past any space (found backwards over that space alone:
        # slicing the text before every word was quadratic in a query of megabytes).
        end = match.start()
        while end and text[end - 1].isspace():
            end -= 1
        if not end or text[end - 1] in _SENTENCE_END:
            continue
        bare = re.split(r"['’]", word)[0]
        lowered = bare.lower()
        if lowered in CALENDAR_WORDS or lowered == "i" or len(bare) < 2:
            continue
        names.append(bare)
    return names


def _distance(a: str, b: str, limit: int) -> int:
    """The letters `a` and `b` are apart, a swap of two neighbours counted as one (the optimal
    string alignment distance: "jonh" is one from "john"), or `limit + 1` once it must exceed `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        if min(current) > limit and min(previous) > limit:
            return limit + 1
        before, previous = previous, current
    return previous[-1]


def _skeleton(term: str) -> str:
    """The term's first letter and its later consonants, each run of one letter once: what two
    spellings of one name keep ("muhammad" and "muhham", the stem of "Muhhamed": "mhmd", "mhm")."""
    consonants = term[1:].translate(_NO_VOWELS)  # asked of every term of an initial: kept cheap
    return term[:1] + (_DOUBLED.sub(r"\1", consonants) if _DOUBLED.search(consonants) else consonants)


# What looking for one query's names among the index's terms may cost, in units of one term looked
# at (`_DISTANCE_COST` for one letter-by-letter comparison): a vault, or a pulled note, of a hundred
# thousand names of one initial made every keyword search naming someone take seconds. Past it, a
# name counts as held: unsure, the search answers as it would without the rule.
MAX_WORK = 100_000
_DISTANCE_COST = 25


@dataclass
class Budget:
    """What is left of MAX_WORK for one query's names."""

    left: int = MAX_WORK


def near_spelling(term: str, other: str) -> bool:
    """Whether two stemmed terms may be one name spelt two ways: the same first letter, and a few
    letters apart (one in a word of up to five, two up to eight, three beyond), or one's consonant
    skeleton a start of the other's with at most half their letters and two in length apart."""
    return held_near(term, [other], Budget(left=1 << 62))


def held_near(term: str, held: Iterable[str], budget: Budget) -> bool:
    """Whether `held` (stemmed terms) has a near spelling of `term` (`near_spelling`), or
    `budget` ran out looking (then the name is taken as held)."""
    if not term:
        return False
    mine = _Spelling(term, set(term), 1 if len(term) <= 5 else 2 if len(term) <= 8 else 3, _skeleton(term))
    for other in held:
        if abs(len(other) - len(term)) > 3:
            continue
        budget.left -= 1
        if budget.left <= 0 or _near(mine, other, budget):
            return True
    return False


@dataclass(frozen=True)
class _Spelling:
    """What `_near` asks of the name looked for, worked out once for all the terms it is held against."""

    term: str
    letters: set[str]
    limit: int  # the letters it may be apart from a term
    skeleton: str


def _near(mine: _Spelling, other: str, budget: Budget) -> bool:
    term = mine.term
    if not other or term[0] != other[0]:
        return False
    # Each edit adds or drops at most two letters of the set of letters two words are made of: so
    # many letters apart is more edits than the limit, told without comparing letter by letter.
    if len(mine.letters ^ set(other)) <= 2 * mine.limit:
        budget.left -= _DISTANCE_COST
        if _distance(term, other, mine.limit) <= mine.limit:
            return True
    if abs(len(term) - len(other)) > 2:
        return False
    theirs = _skeleton(other)
    if min(len(mine.skeleton), len(theirs)) < 3 or not (
        mine.skeleton.startswith(theirs) or theirs.startswith(mine.skeleton)
    ):
        return False
    budget.left -= _DISTANCE_COST
    longest = max(len(term), len(other))
    return 2 * _distance(term, other, longest) <= longest
