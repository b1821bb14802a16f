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

__all__ = ["CALENDAR_WORDS", "near_spelling", "named_words"]

import re

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
_VOWELS = re.compile(r"[aeiouy]")
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
        before = text[: match.start()].rstrip()
        if not before or before.endswith(_SENTENCE_END):
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
    return term[:1] + _DOUBLED.sub(r"\1", _VOWELS.sub("", term[1:]))


def near_spelling(term: str, other: str) -> bool:
    """Whether two stemmed terms may be one name spelt two ways: the same first letter, and a few
    letters apart (one in a word of up to five, two up to eight, three beyond), or one's consonant
    skeleton a start of the other's with at most half their letters and two in length apart."""
    if not term or not other or term[0] != other[0]:
        return False
    limit = 1 if len(term) <= 5 else 2 if len(term) <= 8 else 3
    if _distance(term, other, limit) <= limit:
        return True
    if abs(len(term) - len(other)) > 2:
        return False
    mine, theirs = _skeleton(term), _skeleton(other)
    if min(len(mine), len(theirs)) < 3 or not (mine.startswith(theirs) or theirs.startswith(mine)):
        return False
    return 2 * _distance(term, other, max(len(term), len(other))) <= max(len(term), len(other))
