"""Questions with no answer where they are asked: the recall harness's unanswerable probes.

A question of one conversation becomes a probe by being asked of another conversation of its set,
one that cannot answer it:

- it shares no person with the question's own (a speaker of every conversation, such as "User",
  is a role, not a person): REALTALK's chats pair the same people again and again;
- among those, it is the one whose words are least like the question's own conversation's: three
  of BEAM's chats build a web app, and each answers the others' "which libraries do I use".

A question that no conversation of its set may be asked has a question of another set asked in
its place, written in the same script (Latin or Chinese) where another set has one, so each set
keeps one probe per question. That holds for every question of a set of one conversation (MADial),
and of a set whose questions are filed under topics (PrefEval): there each conversation is a person
stating preferences, and any of them may bear on another's request whatever its topic (a user
who eats no gluten answers a request for restaurants in Rome filed under travel).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from typing import Any

__all__ = ["hosts_by_distance", "probes", "same_script"]

_WORD = re.compile(r"[^\W\d_]{3,}|[\u3400-\u9fff]")
_HAN = re.compile(r"[\u3400-\u9fff]")


def same_script(a: str, b: str) -> bool:
    """Whether two questions are both written in Chinese characters or both not."""
    return bool(_HAN.search(a)) == bool(_HAN.search(b))


def _profiles(docs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Each conversation's words weighted by tf-idf over conversations, unit length."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for doc in docs:
        counts[doc["conversation"]].update(_WORD.findall(str(doc.get("text") or "").lower()))
    held = Counter(word for words in counts.values() for word in words)
    n = len(counts)
    out: dict[str, dict[str, float]] = {}
    for conv, words in counts.items():
        weights = {w: (1 + math.log(c)) * math.log(n / held[w]) for w, c in words.items() if held[w] < n}
        norm = math.sqrt(sum(v * v for v in weights.values())) or 1.0
        out[conv] = {w: v / norm for w, v in weights.items()}
    return out


def hosts_by_distance(docs: list[dict[str, Any]]) -> dict[str, list[str]]:
    """For each conversation, the others that share no person with it, least alike first (ties in
    name order)."""
    speakers: dict[str, set[str]] = defaultdict(set)
    for doc in docs:
        speakers[doc["conversation"]].add(str(doc.get("speaker") or "").strip().lower())
    roles = set.intersection(*speakers.values()) if speakers else set()
    profiles = _profiles(docs)

    def likeness(a: str, b: str) -> float:
        small, large = sorted((profiles[a], profiles[b]), key=len)
        return sum(v * large.get(w, 0.0) for w, v in small.items())

    return {
        conv: sorted(
            (other for other in speakers if other != conv and not (speakers[conv] & speakers[other]) - roles),
            key=lambda other: (likeness(conv, other), other),
        )
        for conv in sorted(speakers)
    }


def probes(
    queries: list[dict[str, Any]], docs: list[dict[str, Any]], foreign: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One probe per question: the question with `conversation` naming where it is asked, or a
    question of another set (`foreign`) in the same script in its place, spread over the set's
    conversations and asked without a date."""
    hosts: dict[str, list[str]] = {} if any(q.get("topic") for q in queries) else hosts_by_distance(docs)
    asked: list[dict[str, Any]] = []
    missing = 0
    for q in queries:
        host = hosts.get(q["conversation"])
        if host:
            asked.append({**q, "conversation": host[0]})
        else:
            missing += 1
    convs = sorted({q["conversation"] for q in queries})
    script = queries[0]["question"] if queries else ""
    fitting = [q for q in foreign if same_script(q["question"], script)] or foreign
    if missing and fitting and convs:
        step = max(1, len(fitting) // missing)
        stand_ins = fitting[::step][:missing]
        asked += [
            {**q, "conversation": convs[i % len(convs)], "question_date": None}
            for i, q in enumerate(stand_ins)
        ]
    return asked
