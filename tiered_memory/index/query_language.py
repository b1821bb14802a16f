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
"""

from __future__ import annotations

__all__ = ["LANGUAGES", "MIN_FUNCTION_WORDS", "foreign_function_words"]

import functools
import re

from whoosh.lang import stopwords_for_language

# The languages whose function words a query is checked for (whoosh has lists for these).
LANGUAGES = ("es", "it", "de", "fr", "pt", "nl", "ru", "sv", "da", "no", "fi", "hu", "tr")
# A query is taken to be in another language only with at least this many of its function words:
# an English question naming "Casa de Campo" holds one.
MIN_FUNCTION_WORDS = 2
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
