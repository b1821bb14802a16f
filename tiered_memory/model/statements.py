"""Simple statements and when two of them contradict each other. Pure: no I/O.

A one-sentence memory such as "The project uses CGCS2000" or "我叫 Alice" is read as
`subject + relation + value [+ qualifier]`, with a negation flag. Two statements contradict when
they share subject, relation and qualifier and either

- say opposite things about the same value ("uses Docker" / "does not use Docker"), or
- give different values for a relation that holds one value at a time: a name, where someone
  lives or works, what something *is* ("the deadline is Friday" / "... is Monday"), or
- give different values of the same kind for a relation that may hold several (uses, prefers):
  the values share a word ("PostgreSQL 14" / "PostgreSQL 16", "the WGS84 coordinate system" /
  "the CGCS2000 coordinate system"), or both are bare names ("WGS84" / "CGCS2000"), which is
  read as a restatement of the whole answer.

Anything longer than one sentence, or whose subject is a pronoun ("it is slow"), is not a
statement: superseding it would hide more than the one fact, or guess at what "it" meant.
Values that differ in kind ("uses PostgreSQL for storage" / "uses React for the UI") never clash.
"""

from __future__ import annotations

__all__ = ["FUNCTIONAL", "STOPWORDS", "Statement", "contradiction", "parse", "same_fact", "words"]

import re
from dataclasses import dataclass

FUNCTIONAL = {"name", "location", "employer", "is"}
_CJK = re.compile(r"[\u3400-\u9fff]")
_WORDS = re.compile(r"[a-z0-9][a-z0-9.+#_-]*|[\u3400-\u9fff]+")
STOPWORDS = frozenset(
    "a an the this that these those our your my their his her its of to in on at for with and or by as "
    "is are was were be been am it we i you they he she there from into over about very really just "
    "now also still currently anymore".split()
)
_PRONOUNS = {
    "it",
    "this",
    "that",
    "these",
    "those",
    "there",
    "he",
    "she",
    "they",
    "them",
    "它",
    "这",
    "那",
    "他",
    "她",
}

_NEG = r"(?P<neg>(?:does|do|did|will|would|should|can)\s+not\s+|no\s+longer\s+|never\s+|not\s+)?"
# (family, pattern) in English; the relation starts where the first one matches (longest wins).
_RELATIONS_EN: list[tuple[str, str]] = [
    ("name", r"(?:(?:'s|s')\s+)?\bname\s+is\b"),
    ("name", r"\b(?:am|is|are)\s+(?:called|named)\b"),
    ("location", rf"\b{_NEG}(?:lives?|living|reside[sd]?|stays?)\s+in\b"),
    ("location", r"\b(?:is|am|are|'m|'s)\s+(?P<neg>not\s+)?(?:based|located)\s+in\b"),
    ("employer", rf"\b{_NEG}works?\s+(?:at|for)\b"),
    ("uses", rf"\b{_NEG}(?:uses?|using|switched\s+to|migrated\s+to|relies\s+on|depends\s+on|runs\s+on)\b"),
    ("uses", r"\b(?:is|are|am|'re|'m)\s+(?P<neg>not\s+)?(?:using|built\s+(?:with|on)|written\s+in)\b"),
    ("prefers", rf"\b{_NEG}(?:prefers?|likes?|loves?|wants?)\b"),
    ("prefers", r"\b(?P<neg>hates?|dislikes?)\b"),
    ("is", r"\b(?:is|are|was|am)(?P<neg>\s+not|\s+no\s+longer)?\b"),
]
_RELATIONS_ZH: list[tuple[str, str]] = [
    ("name", r"(?:的名字是|名叫|叫做|叫)"),
    ("location", r"(?P<neg>不再|不)?(?:住在|位于|居住在)"),
    ("uses", r"(?P<neg>不再|不|没有|没)?(?:使用|采用|改用|换成|用的是|用)"),
    ("prefers", r"(?P<neg>不再|不)?(?:偏好|更喜欢|喜欢|倾向于)"),
    ("is", r"(?:(?P<neg>不再|不)是|是)"),
]
_COMPILED_EN = [(f, re.compile(p)) for f, p in _RELATIONS_EN]
_COMPILED_ZH = [(f, re.compile(p)) for f, p in _RELATIONS_ZH]
_LEADING = re.compile(
    r"^(?:(?:note|remember|fyi|actually|update|correction|also|so|ok|okay|now|from now on|going forward|"
    r"we decided(?: that)?|i decided(?: that)?|please remember(?: that)?|remember that|note that)[\s,:：]+)+"
    r"|^(?:记住|注意|更正|更新|现在|以后)[\s,:：，]*"
)
_QUALIFIER_EN = re.compile(r"\s+(?P<q>(?:for|as|in|on|at|to|when|because|since|while|during)\s.+)$")
_COMPARISON_EN = re.compile(r"\s+(?:over|instead\s+of|rather\s+than|than|not)\s.+$")
_QUALIFIER_ZH = re.compile(r"(?P<q>(?:作为|来|用于|做|当作|在).+)$")
_ZH_EMPLOYER = re.compile(r"^(?P<s>.{1,12}?)(?P<neg>不再|不)?在(?P<v>.{1,20}?)(?:工作|上班)$")


@dataclass(frozen=True)
class Statement:
    subject: str
    relation: str
    value: str
    qualifier: str = ""
    negated: bool = False

    @property
    def value_words(self) -> frozenset[str]:
        return frozenset(words(self.value))


def words(text: str) -> list[str]:
    """Content words: lowercase ASCII words and CJK bigrams, stopwords left out."""
    out: list[str] = []
    for token in _WORDS.findall(text.lower()):
        if _CJK.match(token):
            out += [token[i : i + 2] for i in range(max(1, len(token) - 1))]
        elif token not in STOPWORDS:
            out.append(token.strip(".-_"))
    return [w for w in out if w]


def _core(text: str) -> str | None:
    """The one sentence of a short note (headings dropped), or None for anything longer."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    body = [ln for ln in lines if not ln.startswith("#")] or [ln.lstrip("#").strip() for ln in lines]
    flat = " ".join(body).strip().strip("*_` ")
    flat = re.sub(r"^[-*+]\s+", "", flat)
    flat = flat.rstrip(" .!。！")
    if not flat or len(flat) > 200 or re.search(r"[.!?;]\s+\S|[。！？；]\s*\S", flat):
        return None
    return flat


def parse(text: str) -> Statement | None:
    core = _core(text)
    if core is None:
        return None
    core = _LEADING.sub("", core).strip()
    if _CJK.search(core):
        return _parse_zh(core)
    return _parse_en(core.lower())


def _normalize_subject(subject: str) -> str | None:
    subject = re.sub(r"^(?:the|this|our|a|an)\s+", "", subject.strip(" ,:"))
    subject = {"my": "i", "me": "i", "我": "i", "我的": "i", "我们": "we", "我们的": "we"}.get(
        subject, subject
    )
    if not subject or subject in _PRONOUNS or len(subject.split()) > 6:
        return None
    return subject


def _normalize_value(value: str) -> str:
    value = value.strip(" ,:：\"'`*")
    value = re.sub(r"^(?:the|a|an|one\s+of|our|its|their)\s+", "", value)
    return " ".join(re.sub(r"[\"'`*()]", "", value).split())


def _qualifier(q: str) -> str:
    return " ".join(w for w in q.split() if w not in STOPWORDS or w in ("for", "as", "in", "on", "at", "to"))


def _best(compiled: list[tuple[str, re.Pattern[str]]], text: str) -> tuple[str, re.Match[str]] | None:
    found: tuple[str, re.Match[str]] | None = None
    for family, pattern in compiled:
        for match in pattern.finditer(text):
            if match.end() == match.start() or match.start() == 0:
                continue
            if found is None or (match.start(), -len(match.group(0))) < (
                found[1].start(),
                -len(found[1].group(0)),
            ):
                found = (family, match)
            break
    return found


_NOT = re.compile(r"\b(can|won|don|doesn|didn|isn|aren|wasn|weren)'t\b")
_NOT_STEM = {"can": "can", "won": "will", "weren": "were"}
_IS = re.compile(r"\b(it|that|he|she|there|what)'s\b")
_CONTRACTION = re.compile(r"(?<=[a-z])(n't|'m|'re|'ve)\b")
_EXPANDED = {"n't": " not", "'m": " am", "'re": " are", "'ve": " have"}


def _expand(core: str) -> str:
    """Contractions spelled out, so "doesn't use" reads as "does not use"."""
    core = core.replace("\u2019", "'")
    core = _NOT.sub(lambda m: _NOT_STEM.get(m.group(1), m.group(1)[:-1]) + " not", core)
    core = _IS.sub(r"\1 is", core)
    return _CONTRACTION.sub(lambda m: _EXPANDED[m.group(1)], core)


def _parse_en(core: str) -> Statement | None:
    core = _expand(core)
    found = _best(_COMPILED_EN, core)
    if found is None:
        return None
    family, match = found
    subject = _normalize_subject(re.sub(r"(?:'s|s')$", "", core[: match.start()].strip()))
    if subject is None:
        return None
    rest = core[match.end() :].strip()
    negated = bool(match.groupdict().get("neg")) or rest.startswith(("not ", "no longer "))
    rest = re.sub(r"^(?:not|no\s+longer)\s+", "", rest)
    rest = re.sub(r"\s+(?:any\s*more|anymore|now|these days|from now on|going forward)$", "", rest)
    rest = _COMPARISON_EN.sub("", rest)
    qualifier = ""
    found_q = _QUALIFIER_EN.search(rest)
    if found_q and found_q.start() > 0:
        qualifier = _qualifier(found_q.group("q"))
        rest = rest[: found_q.start()]
    if family == "is" and re.match(r"(?:a|an|one\s+of)\s", rest):
        family = "is-a"  # "Alice is a designer": a class she is in, one of possibly many
    value = _normalize_value(rest)
    if not value or len(value.split()) > 6:
        return None
    if family == "is" and subject.endswith("name"):  # "my name is X" said as a plain "is"
        family, subject = "name", _normalize_subject(subject.removesuffix("name").strip() or "i") or "i"
    return Statement(subject, family, value, qualifier, negated)


def _parse_zh(core: str) -> Statement | None:
    compact = re.sub(r"\s+", " ", core).strip()
    employer = _ZH_EMPLOYER.match(compact)
    if employer:
        subject = _normalize_subject(employer.group("s"))
        if subject is None:
            return None
        value = _normalize_value(employer.group("v").lower())
        return Statement(subject, "employer", value, "", bool(employer.group("neg")))
    found = _best(_COMPILED_ZH, compact)
    if found is None:
        return None
    family, match = found
    subject = _normalize_subject(compact[: match.start()].lower())
    if subject is None:
        return None
    rest = compact[match.end() :].strip().lower()
    qualifier = ""
    found_q = _QUALIFIER_ZH.search(rest)
    if found_q and found_q.start() > 0:
        qualifier = found_q.group("q")
        rest = rest[: found_q.start()]
    value = _normalize_value(rest)
    if not value or len(value) > 40:
        return None
    if family == "is" and subject.endswith("名字"):
        family, subject = "name", "i"
    return Statement(subject, family, value, qualifier, bool(match.groupdict().get("neg")))


def _key(value: str) -> str:
    return re.sub(r"[\W_]+", "", value)


def _same_value(a: Statement, b: Statement) -> bool:
    """Equal values, ignoring punctuation ("WGS-84" is "WGS84") and word order."""
    return _key(a.value) == _key(b.value) or (bool(a.value_words) and a.value_words == b.value_words)


def same_fact(a: Statement, b: Statement) -> bool:
    return (a.subject, a.relation, a.qualifier, a.negated) == (
        b.subject,
        b.relation,
        b.qualifier,
        b.negated,
    ) and (_same_value(a, b))


def contradiction(old: Statement, new: Statement) -> str | None:
    """Why `new` contradicts `old`, in words a person can check; None when it does not."""
    if (old.subject, old.relation, old.qualifier) != (new.subject, new.relation, new.qualifier):
        return None
    about = f"same subject and relation ({new.subject} / {new.relation})"
    if _same_value(old, new):
        if old.negated != new.negated:
            return f"{about}, one negated: '{new.value}'"
        return None
    if old.negated or new.negated:
        return None  # "does not use X" and "uses Y" can both be true
    change = f"'{old.value}' -> '{new.value}'"
    if new.relation in FUNCTIONAL:
        return f"{about} that holds one value: {change}"
    if old.value_words <= new.value_words or new.value_words <= old.value_words:
        return None  # "Python" and "Python and PostgreSQL": one restates part of the other
    if old.value_words & new.value_words:
        return f"{about}, values of the same kind: {change}"
    if len(old.value_words) == 1 and len(new.value_words) == 1:
        return f"{about}, bare values: {change}"
    return None
