"""Candidate memories from an OpenAI-compatible chat endpoint (`extract.llm: true`; off by default).

The transcript sent is the one tmem stores: already redacted. The model is asked for JSON
(`{"memories": [{"category", "text", "confidence"}]}`); whatever comes back is validated, and a
failure of any kind raises ExtractorUnavailable, and `run` (the configured extractor) falls back
to the rules.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_URL",
    "ExtractorUnavailable",
    "MAX_CHARS",
    "PROMPT",
    "Transport",
    "extract_llm",
    "parse_answer",
    "render",
    "run",
]

import json
import os
import re
import urllib.error
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tiered_memory.errors import ConfigError, TmemError
from tiered_memory.model import extract as rules
from tiered_memory.model.extract import CATEGORIES, Candidate
from tiered_memory.model.transcripts import Message

if TYPE_CHECKING:
    from tiered_memory.config import ExtractConfig

DEFAULT_URL = "https://api.openai.com/v1"
MAX_CHARS = 24_000  # of transcript sent; the head and the tail are kept when it is longer
# (url, body, headers, timeout) -> response body
Transport = Callable[[str, bytes, dict[str, str], float], bytes]

PROMPT = """You distil long-term memories from a conversation between a user and an AI assistant.
Return only what will still be useful in a later, separate conversation: decisions, facts about
the user or the project, the user's preferences and rules, lessons from errors and their fixes,
and discoveries about the code or the domain. Skip small talk, one-off steps and anything that
only mattered in this conversation. Each memory is one self-contained sentence in the language
of the conversation.

Answer with JSON only, in this shape:
{"memories": [{"category": "decision|fact|preference|pattern|error|discovery",
               "text": "...", "confidence": 0.0-1.0}]}
category: decision = a choice made; fact = a stated fact; preference = what the user likes;
pattern = a rule or convention to follow; error = a lesson from a mistake or a fix;
discovery = something found out about the code or the domain."""


class ExtractorUnavailable(TmemError):
    """The LLM extractor could not be used (no model set, endpoint down, unreadable answer)."""


def _post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> bytes:
    import urllib.request

    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        data: bytes = response.read()
    return data


def render(text_or_messages: str | Sequence[Message]) -> str:
    if isinstance(text_or_messages, str):
        text = text_or_messages
    else:
        text = "\n\n".join(f"{m.role}: {m.content}" for m in text_or_messages if m.role != "tool")
    if len(text) <= MAX_CHARS:
        return text
    head = MAX_CHARS // 3
    return text[:head] + "\n\n[... middle of the conversation left out ...]\n\n" + text[-(MAX_CHARS - head) :]


def extract_llm(
    cfg: ExtractConfig,
    text_or_messages: str | Sequence[Message],
    source_session: str | None = None,
    *,
    transport: Transport | None = None,
    timeout: float = 120.0,
) -> list[Candidate]:
    if not cfg.model:
        raise ConfigError("extract.model must name a chat model when extract.llm is true")
    base = (cfg.base_url or DEFAULT_URL).rstrip("/")
    url = f"{base}/chat/completions"
    payload = {
        "model": cfg.model,
        "temperature": 0,
        "response_format": {"type": "json_object"},
        "messages": [
            {"role": "system", "content": PROMPT},
            {"role": "user", "content": render(text_or_messages)},
        ],
    }
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    key = os.environ.get(cfg.api_key_env) if cfg.api_key_env else None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    where = f"chat endpoint {url}"
    try:
        raw = (transport or _post)(url, json.dumps(payload).encode("utf-8"), headers, timeout)
    except urllib.error.HTTPError as exc:
        hint = f" (is ${cfg.api_key_env} set?)" if exc.code in (401, 403) and not key else ""
        raise ExtractorUnavailable(f"{where} answered HTTP {exc.code}{hint}") from None
    except urllib.error.URLError as exc:
        raise ExtractorUnavailable(f"cannot reach {where}: {exc.reason}") from None
    except (TimeoutError, OSError) as exc:
        raise ExtractorUnavailable(f"{where} failed: {exc.__class__.__name__}") from None
    return parse_answer(raw, where, source_session)


def parse_answer(raw: bytes, where: str, source_session: str | None = None) -> list[Candidate]:
    try:
        reply = json.loads(raw)
        content = reply["choices"][0]["message"]["content"]
        data = json.loads(_unfence(str(content)))
    except (ValueError, KeyError, IndexError, TypeError):
        raise ExtractorUnavailable(f"{where} sent an answer that is not the JSON asked for") from None
    items: Any = data.get("memories") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ExtractorUnavailable(f"{where} sent no list of memories")
    source = f"session:{source_session}" if source_session else None
    out: list[Candidate] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        text = " ".join(str(item.get("text") or "").split())
        category = str(item.get("category") or "fact").strip().lower()
        if not text or category not in CATEGORIES:
            continue
        try:
            confidence = min(1.0, max(0.0, float(item.get("confidence", 0.7))))
        except (TypeError, ValueError):
            confidence = 0.7
        out.append(Candidate(category, text[:400], round(confidence, 2), source, cue="llm"))
    return out


def _unfence(text: str) -> str:
    """Some models wrap JSON in a ```json fence even when asked not to."""
    match = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    return match.group(1) if match else text


def run(
    cfg: ExtractConfig,
    text_or_messages: str | Sequence[Message],
    source_session: str | None = None,
    warn: Callable[[str], None] = lambda message: None,
) -> tuple[list[Candidate], str]:
    """The configured extractor's candidates at or above `min_confidence`, and its name."""
    name = "rules"
    found: list[Candidate] | None = None
    if cfg.llm:
        try:
            found = extract_llm(cfg, text_or_messages, source_session)
            name = "llm"
        except ExtractorUnavailable as exc:
            warn(f"{exc}; using the rule-based extractor instead")
    if found is None:
        found = rules.extract(text_or_messages, source_session)
    return [c for c in found if c.confidence >= cfg.min_confidence], name
