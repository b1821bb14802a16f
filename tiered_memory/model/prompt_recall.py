"""Which memories a prompt should bring along (`tmem hook user-prompt-submit`): pure rules.

A search always returns its best notes, however weakly they match: its scores are relative (the
best keyword score is 1 by construction), so a cut on them alone would add memories to "thanks"
or "run the tests". What says a hit bears on the prompt is evidence in the hit itself: the
prompt's content words (not its function words, not chat) found in the hit's title and in the
passage that matched. A hit needs one such word for a prompt of one or two content words, two
up to eight, three beyond; it must also score within half of the best hit. Nothing passing is
the common case, and the hook then says nothing.
"""

from __future__ import annotations

__all__ = [
    "MAX_HITS",
    "MAX_QUERY_WORDS",
    "SCORE_SHARE",
    "SKIPPED_CATEGORIES",
    "STOPWORDS",
    "content_words",
    "needed",
    "query_for",
    "relevant",
    "stem",
]

import re

from tiered_memory.model.search import Hit

MAX_HITS = 3  # memories added to one prompt at most
MAX_QUERY_WORDS = 32  # a long prompt is searched by its first content words
SCORE_SHARE = 0.5  # a hit must score at least this share of the best one
SKIPPED_CATEGORIES = frozenset({"session", "attachment"})  # logs and files, not memories

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Function words and the words of any request to an agent: they say nothing of the subject.
STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been before
    being below between both but by can cannot could did didn do does doesn doing don down during
    each few for from further get got had has have having he her here hers herself him himself his
    how i if in into is isn it its itself just let like me more most my myself no nor not now of
    off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under
    until up very was wasn we were what when where which while who whom why will with would you
    your yours yourself yourselves
    please thanks thank ok okay yes yeah sure hi hello hey go going want need make made use used
    using try look see show tell know think help run runs check fix add change update write read
    do done again now next one two new way thing things something anything everything work works
    """.split()
)


def stem(word: str) -> str:
    """A crude English stem, enough to meet "caches" and "cached" at "cach"."""
    word = word.lower()
    for suffix in ("ies", "ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def content_words(text: str, most: int | None = None) -> list[str]:
    """The words of `text` that carry its subject, lower-cased, in order, each once; the first
    `most` of them when it is given (the rest of the text is not read: a prompt may be a
    megabyte of pasted log)."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text):
        lower = match.group().lower()
        if len(lower) >= 3 and not lower.isdigit() and lower not in STOPWORDS:
            seen.setdefault(lower)
            if most is not None and len(seen) >= most:
                break
    return list(seen)


def query_for(prompt: str) -> str | None:
    """What to search for a prompt: its first content words; None when there is nothing to look up
    (an empty prompt, a slash command, a prompt of function words only)."""
    text = prompt.strip()
    if not text or text.startswith("/"):
        return None
    words = content_words(text, MAX_QUERY_WORDS)
    return " ".join(words) or None


def needed(prompt_words: int) -> int:
    """Content words of the prompt a hit must show for a prompt of that many."""
    return 1 if prompt_words <= 2 else 2 if prompt_words <= 8 else 3


def relevant(hits: list[Hit], query: str, limit: int = MAX_HITS) -> list[Hit]:
    """The hits (best first) that bear on the prompt `query` was made from (see the module)."""
    wanted = {stem(w) for w in query.split()}
    if not wanted or not hits:
        return []
    need = needed(len(wanted))
    best = max(h.score for h in hits)
    out: list[Hit] = []
    for hit in hits:
        if len(out) >= limit:
            break
        if hit.category in SKIPPED_CATEGORIES or hit.path.endswith(".json"):
            continue
        if hit.score < SCORE_SHARE * best:
            continue
        shown = {stem(w) for w in content_words(f"{hit.title} {hit.passage or hit.snippet}")}
        if len(wanted & shown) >= need:
            out.append(hit)
    return out
