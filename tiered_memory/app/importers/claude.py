"""Claude.ai's data export: `conversations.json` (in the export's .zip), a list of conversations

    {"uuid": "...", "name": "Trip planning", "created_at": "2025-03-02T09:14:03.125Z",
     "updated_at": "...", "account": {"uuid": "..."},
     "chat_messages": [{"uuid": "...", "sender": "human" | "assistant", "text": "...",
                        "content": [{"type": "text", "text": "..."}, ...],
                        "created_at": "...", "attachments": [...], "files": [...]}]}

Each conversation becomes an archived session (its memories extracted, as `tmem ingest` does).
"""

from __future__ import annotations

__all__ = ["ROLES", "read"]

import json
from pathlib import Path
from typing import Any

from tiered_memory.app.importers.items import Item, SessionItem, conversations_file, text_of
from tiered_memory.errors import BadInput
from tiered_memory.model import dates
from tiered_memory.model.transcripts import Message

ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


def _text(message: dict[str, Any]) -> str:
    parts = [
        text_of(p.get("text"))
        for p in message.get("content") or []
        if isinstance(p, dict) and p.get("type") == "text"
    ]
    text = "\n\n".join(p for p in parts if p) or text_of(message.get("text"))
    names = [
        text_of(f.get("file_name"))
        for f in (message.get("attachments") or []) + (message.get("files") or [])
        if isinstance(f, dict)
    ]
    names = [n for n in names if n]
    if names:
        text += ("\n\n" if text else "") + f"[attached: {', '.join(names)}]"
    return text


def read(path: Path) -> list[Item]:
    data = conversations_file(path)
    if not isinstance(data, list):
        raise BadInput(f"{path}: a Claude export's conversations.json is a list of conversations")
    items: list[Item] = []
    for conversation in data:
        if not isinstance(conversation, dict) or "chat_messages" not in conversation:
            raise BadInput(f"{path}: not a Claude conversations export (no chat_messages)")
        messages = []
        for message in conversation.get("chat_messages") or []:
            role = ROLES.get(str(message.get("sender") or "").lower())
            text = _text(message)
            if role and text:
                messages.append(Message(role, text, dates.to_datetime(message.get("created_at"))))
        uuid = str(conversation.get("uuid") or "")
        session = SessionItem(
            title=text_of(conversation.get("name")),
            messages=messages,
            started=dates.to_datetime(conversation.get("created_at")),
            ended=dates.to_datetime(conversation.get("updated_at")),
            meta={"origin": uuid, "transcript": "claude.ai"},
        )
        content = json.dumps([[m.role, m.content] for m in messages], ensure_ascii=False)
        items.append(Item(uuid or content[:64], content, session.title, session=session))
    return items
