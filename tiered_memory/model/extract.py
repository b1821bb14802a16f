"""Candidate memories from a compaction summary, a transcript or free text. Pure: no I/O.

The default extractor is deterministic and explainable: every candidate says why it was taken
(`cue`). Two sources:

- sections of a compaction summary (``## Goal``, ``## Instructions``, ``## Discoveries``,
  ``## Accomplished``, ``## Relevant files``, Claude Code's numbered ``Errors and fixes:`` ...),
  each mapped to a category and a confidence;
- sentences carrying a cue phrase ("we decided", "always", "fixed by", "the cause was", "决定",
  "不要", "原因是", "decidimos", "prefiero", "la causa era"...). What a user says about rules and preferences counts; an assistant's
  "always" or "prefer" is mostly politeness, so assistant messages yield only decisions,
  lessons and discoveries, with less confidence.

The application's extraction step (`app/extraction.py`) chooses between these rules and an LLM.
"""

from __future__ import annotations

__all__ = [
    "ASSISTANT_PENALTY",
    "BOTH",
    "CATEGORIES",
    "Candidate",
    "FILE_SECTIONS",
    "MAX_TEXT",
    "SECTIONS",
    "USER",
    "extract",
    "from_cues",
    "from_sections",
    "has_sections",
    "sentences",
]

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tiered_memory.model.transcripts import Message

CATEGORIES = ("discovery", "decision", "pattern", "preference", "error", "fact")
MAX_TEXT = 400
ASSISTANT_PENALTY = 0.15


@dataclass
class Candidate:
    category: str
    text: str
    confidence: float
    source: str | None = None  # "session:<id>"
    cue: str = ""  # why it was taken: "section Discoveries", "cue 'we decided'"
    role: str | None = None


# ---- compaction-summary sections ----------------------------------------------------------------

# heading (lowercase) -> (category, confidence); None = a known section that holds nothing durable.
SECTIONS: dict[str, tuple[str, float] | None] = {
    "goal": ("decision", 0.9),
    "goals": ("decision", 0.9),
    "primary request and intent": ("decision", 0.8),
    "instructions": ("pattern", 0.7),
    "discoveries": ("discovery", 0.8),
    "key technical concepts": ("discovery", 0.6),
    "problem solving": ("discovery", 0.6),
    "accomplished": ("decision", 0.7),
    "decisions": ("decision", 0.85),
    "key decisions": ("decision", 0.85),
    "errors and fixes": ("error", 0.8),
    "errors": ("error", 0.75),
    "lessons": ("error", 0.8),
    "lessons learned": ("error", 0.8),
    "preferences": ("preference", 0.8),
    "user preferences": ("preference", 0.8),
    "facts": ("fact", 0.8),
    "patterns": ("pattern", 0.75),
    "conventions": ("pattern", 0.75),
    "relevant files": ("fact", 0.6),
    "relevant files / directories": ("fact", 0.6),
    "files and code sections": ("fact", 0.6),
    "目标": ("decision", 0.9),
    "指示": ("pattern", 0.7),
    "说明": ("pattern", 0.7),
    "要求": ("pattern", 0.7),
    "发现": ("discovery", 0.8),
    "已完成": ("decision", 0.7),
    "完成情况": ("decision", 0.7),
    "决定": ("decision", 0.85),
    "决策": ("decision", 0.85),
    "经验教训": ("error", 0.8),
    "教训": ("error", 0.8),
    "错误与修复": ("error", 0.8),
    "偏好": ("preference", 0.8),
    "事实": ("fact", 0.8),
    "相关文件": ("fact", 0.6),
    # Known, but about this session only: they end the previous section and yield nothing.
    "pending tasks": None,
    "current work": None,
    "optional next step": None,
    "next steps": None,
    "all user messages": None,
    "analysis": None,
    "summary": None,
    "待办": None,
    "下一步": None,
}
FILE_SECTIONS = {"relevant files", "relevant files / directories", "files and code sections", "相关文件"}

_SECTION_LINE = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]+|\d{1,2}[.)][ \t]+|\*\*)?(?P<name>[^\n:：*#]{1,40}?)[ \t]*(?:\*\*)?[ \t]*[:：]?[ \t]*(?:\*\*)?[ \t]*$"
)
_HEADING_SHAPE = re.compile(r"^[ \t]*(?:#{1,6}[ \t]|\d{1,2}[.)][ \t]|\*\*)|[:：][ \t]*(?:\*\*)?[ \t]*$")
_BULLET = re.compile(r"^(?P<indent>[ \t]*)(?:[-*+•]|\d{1,3}[.)])[ \t]+(?P<text>.*)$")


def _section_name(line: str) -> str | None:
    """The section a heading-like line opens, or None when the line is not such a heading."""
    if not _HEADING_SHAPE.search(line):
        return None
    match = _SECTION_LINE.match(line)
    if not match:
        return None
    name = " ".join(match.group("name").lower().split())
    return name if name in SECTIONS else None


def has_sections(text: str) -> bool:
    return sum(1 for line in text.splitlines() if _section_name(line)) >= 2


def from_sections(text: str) -> list[Candidate]:
    out: list[Candidate] = []
    current: str | None = None
    lines: list[str] = []

    def flush() -> None:
        if current is None:
            return
        mapped = SECTIONS[current]
        if mapped is None:
            return
        category, confidence = mapped
        items = _items(lines)
        label = f"section {current.title()}" if current.isascii() else f"section {current}"
        if current in FILE_SECTIONS:
            files = [_first_words(i) for i in items][:12]
            if files:
                out.append(
                    Candidate(category, _clip("Relevant files: " + ", ".join(files)), confidence, cue=label)
                )
            return
        for item in items:
            out.append(Candidate(category, _clip(item), confidence, cue=label))

    for line in text.splitlines():
        name = _section_name(line)
        if name is not None:
            flush()
            current, lines = name, []
        elif current is not None:
            if re.match(r"^#{1,6}[ \t]", line):  # an unknown heading ends the section
                flush()
                current, lines = None, []
            else:
                lines.append(line)
    flush()
    return out


def _items(lines: list[str]) -> list[str]:
    """Top-level bullets (their sub-bullets folded in), else blank-line separated paragraphs."""
    bullets = [(m.group("indent").expandtabs(4), m.group("text")) for m in map(_BULLET.match, lines) if m]
    if bullets:
        top = min(len(indent) for indent, _ in bullets)
        items: list[str] = []
        for line in lines:
            match = _BULLET.match(line)
            if match and len(match.group("indent").expandtabs(4)) <= top:
                items.append(match.group("text").strip())
            elif items and line.strip():
                sub = match.group("text").strip() if match else line.strip()
                items[-1] = f"{items[-1]}; {sub}" if match else f"{items[-1]} {sub}"
        return [i for i in (_strip_markup(i) for i in items) if len(i) >= 3]
    paragraphs = re.split(r"\n[ \t]*\n", "\n".join(lines))
    return [p for p in (_strip_markup(" ".join(x.split())) for x in paragraphs) if len(p) >= 3]


def _first_words(item: str) -> str:
    return item.split(" - ")[0].split(": ")[0].strip("` ")[:80]


def _strip_markup(text: str) -> str:
    return re.sub(r"\*\*(.+?)\*\*", r"\1", text).strip()


# ---- cue phrases ---------------------------------------------------------------------------------

BOTH = ("user", "assistant", None)
USER = ("user", None)
# (category, label, pattern, confidence, roles). The first matching row wins, so the specific
# ones (lessons, decisions) come before the broad ones (rules, facts).
_CUES_EN: list[tuple[str, str, str, float, tuple[str | None, ...]]] = [
    (
        "error",
        "lesson",
        r"\bfixed\s+(?:it\s+|this\s+)?by\b|\bthe\s+fix\s+(?:was|is)\b|\b(?:root\s+)?cause\s+(?:was|is)\b"
        r"|\broot\s+cause\b|\bwas\s+caused\s+by\b|\blessons?\b|\bthe\s+(?:problem|issue|bug)\s+was\b"
        r"|\bturn(?:s|ed)\s+out\b|\bgotcha\b|\bworkaround\s+(?:is|was)\b"
        # Spanish: "la causa era", "se arregló con", "la lección", "el problema era", "resulta que"
        r"|\bla\s+causa\s+(?:era|fue|es)\b|\bse\s+arregl[óo]\s+con\b|\blo\s+arregl(?:amos|é|e)\s+con\b"
        r"|\blecci[óo]n\b|\bel\s+(?:problema|fallo|bug|error)\s+(?:era|fue|estaba)\b|\bresulta\s+que\b",
        0.8,
        BOTH,
    ),
    (
        "decision",
        "decision",
        r"\b(?:we|i|they|team)\s+(?:have\s+|'ve\s+|just\s+)?(?:decided|agreed|chose|settled\s+on)\b"
        r"|\bdecided\s+to\b|\bdecision\s*:|\b(?:we'll|we\s+will|let's)\s+go\s+with\b|\bwe(?:'re|\s+are)\s+going\s+with\b"
        r"|\b(?:decidimos|decid[íi]|hemos\s+decidido|acordamos|hemos\s+acordado|elegimos)\b|\bdecisi[óo]n\s*:",
        0.85,
        BOTH,
    ),
    (
        "preference",
        "preference",
        r"\bi\s+(?:really\s+|much\s+|strongly\s+)?(?:prefer|like|love|hate|dislike|want)\b|\bi'?d\s+rather\b"
        r"|\bmy\s+(?:preference|favou?rite)\b|\bprefer(?:s|red)?\b"
        r"|\b(?:prefiero|preferimos|odio)\b|\bme\s+gusta(?:n)?\s+m[áa]s\b|\bno\s+me\s+gusta(?:n)?\b|\bmi\s+preferencia\b",
        0.8,
        USER,
    ),
    (
        "pattern",
        "rule",
        r"^(?:please\s+|and\s+)?(?:always|never|don't|do\s+not|make\s+sure|remember\s+to|avoid)\b"
        r"|\b(?:should|must)\s+(?:always|never|not)\b|\bfrom\s+now\s+on\b|\bgoing\s+forward\b"
        r"|\bin\s+(?:the\s+)?future\b|\b(?:we|i)\s+(?:always|never)\b"
        r"|^(?:por\s+favor\s+|y\s+)?(?:siempre|nunca|jam[áa]s|aseg[úu]rate|evita)\b|\bde\s+ahora\s+en\s+adelante\b"
        r"|\ba\s+partir\s+de\s+ahora\b",
        0.75,
        USER,
    ),
    (
        "fact",
        "fact",
        r"^(?:please\s+)?remember\b|\bnote\s+that\b|\bfyi\b|\bmy\s+name\s+is\b|\bi\s+(?:live|work)\s+(?:in|at|for)\b"
        r"|\bi'?m\s+(?:based|located)\s+in\b|\b(?:the|this|our)\s+project\s+(?:uses|is|runs)\b|\bwe\s+use\b"
        r"|\bdeadline\s+is\b"
        r"|^(?:por\s+favor\s+|y\s+)?(?:recuerda|apunta|anota)\b|\bme\s+llamo\b|\bmi\s+nombre\s+es\b"
        r"|\b(?:vivo|trabajo)\s+en\b|\busamos\b|\bla\s+fecha\s+l[íi]mite\s+es\b",
        0.7,
        USER,
    ),
    (
        "discovery",
        "discovery",
        r"\b(?:i|we)\s+(?:found|discovered|noticed|learned|realized|realised)\b"
        r"|\b(?:descubr[íi]|descubrimos|aprendimos)\b|\b(?:me|nos)\s+(?:di|dimos)\s+cuenta\b",
        0.6,
        BOTH,
    ),
]
_CUES_ZH: list[tuple[str, str, str, float, tuple[str | None, ...]]] = [
    (
        "error",
        "lesson",
        r"原因是|根本原因|根因|修复方法|解决方法|解决办法|教训|踩坑|问题在于|问题出在",
        0.8,
        BOTH,
    ),
    ("decision", "decision", r"决定|决策|定下来|选定|确定(?:用|采用|使用)|就用", 0.85, BOTH),
    ("preference", "preference", r"偏好|更喜欢|我喜欢|我不喜欢|倾向于|习惯用", 0.8, USER),
    (
        "pattern",
        "rule",
        r"总是|始终|永远不要|务必|一定要|以后|今后|每次都|禁止|^(?:请|千万|记得)?(?:不要|别)",
        0.75,
        USER,
    ),
    ("fact", "fact", r"^(?:请)?记住|我叫|我的名字是|我住在|项目(?:使用|采用|用)|我们用|截止日期", 0.7, USER),
    ("discovery", "discovery", r"发现|注意到|原来", 0.6, BOTH),
]
_COMPILED = [(c, label, re.compile(p, re.IGNORECASE), conf, roles) for c, label, p, conf, roles in _CUES_EN]
_COMPILED_ZH = [(c, label, re.compile(p), conf, roles) for c, label, p, conf, roles in _CUES_ZH]
_NOT_DECIDED = re.compile(
    r"\b(?:not|haven't|hasn't|never)\s+(?:yet\s+)?decided\b|\bundecided\b|还没决定|没有决定|未决定"
    r"|\bno\s+(?:lo\s+)?(?:hemos\s+)?decidid[oa]\b|\bsin\s+decidir\b|\bno\s+decidimos\b"
)
_REFERS_BACK = re.compile(
    r"^(?:it|this|that|the\s+(?:cause|fix|problem|issue|bug|reason)|fixed\s+by|so)\b", re.I
)
_CJK = re.compile(r"[\u3400-\u9fff]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`])|(?<=[。！？；])")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")


def sentences(text: str) -> list[str]:
    """Sentences of prose: code blocks, quotes, tables and tool lines are left out."""
    out: list[str] = []
    in_fence = False
    for raw in text.splitlines():
        if _FENCE.match(raw):
            in_fence = not in_fence
            continue
        line = raw.strip()
        if in_fence or not line or line.startswith((">", "|", "[tool", "$ ", "<!--")):
            continue
        bullet = _BULLET.match(line)
        if bullet:
            line = bullet.group("text")
        line = re.sub(r"^#{1,6}[ \t]+", "", line)
        for piece in _SENTENCE_END.split(line):
            piece = _strip_markup(piece.strip())
            if piece:
                out.append(piece)
    return out


def _long_enough(sentence: str) -> bool:
    cjk = len(_CJK.findall(sentence))
    return cjk >= 5 or len(sentence.split()) >= 4


def from_cues(text: str, role: str | None = None) -> list[Candidate]:
    out: list[Candidate] = []
    previous = ""
    for sentence in sentences(text):
        found = _cue(sentence, role)
        if found and _long_enough(sentence) and not sentence.rstrip().endswith(("?", "？")):
            category, label, confidence = found
            if category == "decision" and _NOT_DECIDED.search(sentence):
                previous = sentence
                continue
            body = sentence
            # "The cause was X." says little alone: keep the sentence it refers back to.
            if previous and _REFERS_BACK.match(sentence) and len(previous) < MAX_TEXT // 2:
                body = f"{previous} {sentence}"
                if out and out[-1].text == _clip(previous):
                    out.pop()  # the longer candidate replaces the one it extends
            if role == "assistant":
                confidence -= ASSISTANT_PENALTY
            out.append(Candidate(category, _clip(body), round(confidence, 2), cue=label, role=role))
        previous = sentence
    return out


def _cue(sentence: str, role: str | None) -> tuple[str, str, float] | None:
    tables = [_COMPILED_ZH, _COMPILED] if _CJK.search(sentence) else [_COMPILED]
    for table in tables:
        for category, label, pattern, confidence, roles in table:
            if role not in roles:
                continue
            match = pattern.search(sentence)
            if match:
                return category, f"{label} '{match.group(0).strip()}'", confidence
    return None


def _clip(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= MAX_TEXT:
        return text
    cut = text[:MAX_TEXT].rsplit(" ", 1)[0]
    return (cut if len(cut) > MAX_TEXT // 2 else text[:MAX_TEXT]) + "…"


# ---- entry points --------------------------------------------------------------------------------


def extract(text_or_messages: str | Sequence[Message], source_session: str | None = None) -> list[Candidate]:
    """Candidate memories, in the order they appear, without repeats."""
    if isinstance(text_or_messages, str):
        found = _from_text(text_or_messages, None)
    else:
        found = []
        for message in text_or_messages:
            if message.role in ("user", "assistant"):
                found += _from_text(message.content, message.role)
    source = f"session:{source_session}" if source_session else None
    out: dict[str, Candidate] = {}
    for candidate in found:
        candidate.source = source
        key = _key(candidate.text)
        kept = out.get(key)
        if kept is None or candidate.confidence > kept.confidence:
            out[key] = candidate
    return list(out.values())


def _from_text(text: str, role: str | None) -> list[Candidate]:
    if has_sections(text):
        # A compaction summary (Claude Code puts one in a user message): its sections are the
        # memories; cue phrases inside them would only repeat the same items.
        return from_sections(text)
    return from_cues(text, role)


def _key(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))
