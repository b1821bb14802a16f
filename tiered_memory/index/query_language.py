"""The function words of a query asked in a European language other than English.

The full-text index stops English function words only ("what", "the", "of"): notes in any
language share one index, and stopping another language's words at index time would stop
English words that happen to be spelled like them ("die", "come", "also"). A question asked in
Spanish, Italian, German, French, Portuguese, Dutch, Russian or the Nordic languages is then
searched for its "de", "la", "que", "come", "per" too: words every note of that language holds,
which lift whatever note holds the most of them and count in the share of the question a note
holds (the evidence cut, and the confidence that a search has an answer at all). So a query
whose words are mostly another language's function words, and more of them than English ones,
is searched without them. Whoosh ships the lists (`whoosh.lang.stopwords_for_language`).

The same lists say which notes and queries the default embedding model (English-only MiniLM)
cannot read (`other_language`, `asked_in_other_language`): those also get the multilingual
model's vectors where it is installed (index.cjk_vectors).
"""

from __future__ import annotations

__all__ = [
    "LANGUAGES",
    "MIN_FUNCTION_WORDS",
    "MIN_NOTE_FUNCTION_WORDS",
    "OTHER_SCRIPT_SHARE",
    "asked_in_other_language",
    "english_function_words",
    "foreign_function_words",
    "other_language",
]

import functools
import re

from whoosh.lang import stopwords_for_language

# The languages whose function words a query is checked for (whoosh has lists for these).
LANGUAGES = ("es", "it", "de", "fr", "pt", "nl", "ru", "sv", "da", "no", "fi", "hu", "tr")
# A query is taken to be in another language only with at least this many of its function words:
# an English question naming "Casa de Campo" holds one.
MIN_FUNCTION_WORDS = 2
# A note is read as written in one of LANGUAGES with at least this many of its function words, two
# of them different: a short English turn holds one or two by chance ("ha ha funny.", "WALL-E,
# Bolt, and Kung Fu Panda": Italian "e" and "fu").
MIN_NOTE_FUNCTION_WORDS = 3
# Text whose letters are at least this much of a script other than Latin (Cyrillic, Greek,
# Arabic, Hebrew, Devanagari, Thai, CJK, ...) is another language's, whatever its words.
OTHER_SCRIPT_SHARE = 0.3
# Enough of a long note to tell its language; the rest would only cost time.
_SAMPLE_CHARS = 20_000
_WORD = re.compile(r"[^\W\d_]+")


@functools.lru_cache(maxsize=1)
def _lists() -> tuple[frozenset[str], dict[str, frozenset[str]]]:
    english = frozenset(stopwords_for_language("en"))
    return english, {lang: frozenset(stopwords_for_language(lang)) - english for lang in LANGUAGES}


@functools.lru_cache(maxsize=16)
def foreign_function_words(query: str) -> frozenset[str]:
    """The lowercased words of `query` that are function words of the language it is asked in,
    when that is one of LANGUAGES (at least MIN_FUNCTION_WORDS of them, and more than its English
    function words); none for an English, Chinese or other query."""
    words = _WORD.findall(query.lower())
    if len(words) < MIN_FUNCTION_WORDS:
        return frozenset()
    english, lists = _lists()
    in_english = sum(word in english for word in words)
    best, found = 0, frozenset[str]()
    for stop in lists.values():
        held = frozenset(word for word in words if word in stop)
        count = sum(word in held for word in words)
        if count > best:
            best, found = count, held
    if best < MIN_FUNCTION_WORDS or best <= in_english:
        return frozenset()
    return found


def english_function_words(text: str) -> int:
    """How many of the words of `text` are English function words."""
    english = _lists()[0]
    return sum(word in english for word in _WORD.findall(text.lower()))


def _other_script_share(text: str) -> float:
    """The share of the letters of `text` outside the Latin script (Basic Latin to Latin
    Extended-B, and the Latin Extended Additional block Vietnamese uses)."""
    letters = other = 0
    for char in text:
        if char.isalpha():
            letters += 1
            code = ord(char)
            other += code > 0x24F and not 0x1E00 <= code <= 0x1EFF
    return other / letters if letters else 0.0


def other_language(text: str) -> bool:
    """Whether `text` (a note's) is mostly in a language other than English: its letters mostly
    of another script, or more function words of one of LANGUAGES than of English (at least
    MIN_NOTE_FUNCTION_WORDS of them, two different)."""
    sample = text[:_SAMPLE_CHARS]
    if _other_script_share(sample) >= OTHER_SCRIPT_SHARE:
        return True
    words = _WORD.findall(sample.lower())
    english, lists = _lists()
    in_english = sum(word in english for word in words)
    for stop in lists.values():
        held = [word for word in words if word in stop]
        if len(held) >= MIN_NOTE_FUNCTION_WORDS and len(held) > in_english and len(set(held)) >= 2:
            return True
    return False


def asked_in_other_language(query: str) -> bool:
    """Whether a query is asked in a language other than English: mostly letters of another
    script, or the function words `foreign_function_words` finds."""
    return _other_script_share(query) >= OTHER_SCRIPT_SHARE or bool(foreign_function_words(query))
