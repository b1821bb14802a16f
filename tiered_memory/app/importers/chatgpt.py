"""ChatGPT's data export: `conversations.json`, a list of conversations whose messages form a tree

    {"id": "...", "conversation_id": "...", "title": "...", "create_time": 1709100000.0,
     "update_time": ..., "current_node": "<node id>",
     "mapping": {"<node id>": {"id": ..., "parent": "<node id>" | null, "children": [...],
                  "message": {"author": {"role": "user" | "assistant" | "system" | "tool"},
                              "create_time": ..., "content": {"content_type": "text",
                              "parts": ["..."]}, "metadata": {...}} | null}}}

The conversation as the person last saw it is the path from `current_node` up to the root
(edited and regenerated branches are left out). Each becomes an archived session.
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

ROLES = {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool"}


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or {}
    parts = content.get("parts") or ([content["text"]] if isinstance(content.get("text"), str) else [])
    return "\n\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip())


def _thread(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    mapping = conversation.get("mapping") or {}
    node_id = conversation.get("current_node")
    if node_id not in mapping:  # no pointer: follow the first child from the root
        roots = [n for n in mapping.values() if not n.get("parent")]
        node_id = roots[0]["id"] if roots else None
        while node_id and (mapping.get(node_id) or {}).get("children"):
            node_id = mapping[node_id]["children"][-1]
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    while node_id and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        if node.get("message"):
            chain.append(node["message"])
        node_id = node.get("parent")
    return list(reversed(chain))


def read(path: Path) -> list[Item]:
    data = conversations_file(path)
    if not isinstance(data, list):
        raise BadInput(f"{path}: a ChatGPT export's conversations.json is a list of conversations")
    items: list[Item] = []
    for conversation in data:
        if not isinstance(conversation, dict) or "mapping" not in conversation:
            raise BadInput(f"{path}: not a ChatGPT conversations export (no mapping)")
        messages = []
        for message in _thread(conversation):
            role = ROLES.get(str((message.get("author") or {}).get("role") or ""))
            hidden = (message.get("metadata") or {}).get("is_visually_hidden_from_conversation")
            text = _text(message)
            if role and text and not hidden:
                messages.append(Message(role, text, dates.to_datetime(message.get("create_time"))))
        cid = str(conversation.get("conversation_id") or conversation.get("id") or "")
        session = SessionItem(
            title=text_of(conversation.get("title")),
            messages=messages,
            started=dates.to_datetime(conversation.get("create_time")),
            ended=dates.to_datetime(conversation.get("update_time")),
            meta={"origin": cid, "transcript": "chatgpt"},
        )
        content = json.dumps([[m.role, m.content] for m in messages], ensure_ascii=False)
        items.append(Item(cid or content[:64], content, session.title, session=session))
    return items
