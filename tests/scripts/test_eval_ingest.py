"""The recall harness (scripts/eval_recall.py) ingests dialog turns through tmem's real filing."""

from __future__ import annotations

import sys
from pathlib import Path

from tiered_memory.app.memory import Memory
from tiered_memory.model.layout import tier_of_path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import eval_recall  # noqa: E402


def test_turns_are_filed_as_archived_session_notes(memory: Memory) -> None:
    docs = [
        {
            "id": "conv-1/D1:1",
            "conversation": "conv-1",
            "session": "session_1",
            "turn_index": i,
            "date": "2023-05-08T13:56:00",
            "speaker": "Caroline",
            "text": text,
        }
        for i, text in enumerate(["I went to a support group yesterday.", "It was powerful."])
    ]
    docs[1]["id"] = "conv-1/D1:2"

    path_to_doc = eval_recall.ingest(memory, docs, vectors=False)

    assert sorted(path_to_doc.values()) == ["conv-1/D1:1", "conv-1/D1:2"]
    for path in path_to_doc:
        assert path.startswith("memory/archive/sessions/2023/05/08/conv-1-session-1/")
        assert tier_of_path(path) == "archive"
