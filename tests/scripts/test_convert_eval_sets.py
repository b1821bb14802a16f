"""The converters of public benchmarks into the recall harness's JSON Lines shape
(scripts/convert_eval_sets.py), on tiny inputs written in each source's own format."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import convert_eval_sets as convert  # noqa: E402
import eval_recall  # noqa: E402


def _write(root: Path, rel: str, data: Any) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _message(dia_id: str, speaker: str, text: str, when: str = "29.12.2023, 22:42:04") -> dict[str, Any]:
    return {
        "clean_text": text,
        "speaker": speaker,
        "date_time": when,
        "img_file": [],
        "img_url": [],
        "dia_id": dia_id,
    }


def _realtalk(root: Path) -> None:
    photo = {**_message("D1:4", "Bo", "look"), "blip_caption": "a dog on a beach"}
    chat = {
        "name": {"speaker_1": "Ann", "speaker_2": "Bo"},
        "session_1": [
            _message("D1:1", "Ann", "Hey! I started pottery classes."),
            _message("D1:2", "Bo", "Nice, where?"),
            _message("D1:3", "Ann", "At the community centre on Elm street.", "30.12.2023, 00:32:20"),
            photo,
            _message("D1:6", "Bo", ""),  # an empty message (D1:5 was removed by the source's cleaning)
        ],
        "session_1_date_time": "29.12.2023, 22:42:04",
        "session_2": [_message("D2:1", "Ann", "My first bowl cracked in the kiln.", "02.01.2024, 10:00:00")],
        "session_2_date_time": "02.01.2024, 10:00:00",
        "events_session_1": {"agent_a": [], "agent_b": []},
        "qa": [
            {
                "question": "Where does Ann take pottery classes?",
                "answer": "Elm street",
                "evidence": ["D1:1; D1:3."],
                "category": 1,
            },
            {
                "question": "What did Bo show?",
                "answer": "a dog",
                "evidence": ["D 1:4", "D1:5"],
                "category": 3,
            },
            {
                "question": "What happened first?",
                "answer": "classes",
                "evidence": ["D1:1-D1:3", "D2:1"],
                "category": 2,
            },
            {"question": "What did Ann eat?", "answer": "soup", "evidence": ["D9:9"], "category": 1},
        ],
    }
    _write(root, "data/Chat_1_Ann_Bo.json", chat)
    _write(root, "data/locomo/Chat_1_Other.json", {"qa": []})  # another folder: not read


def test_realtalk_messages_become_documents_and_hand_typed_evidence_resolves(tmp_path: Path) -> None:
    source_dir = tmp_path / "REALTALK"
    _realtalk(source_dir)
    out = tmp_path / "out"

    assert convert.main(["realtalk", str(source_dir), "--out", str(out)]) == 0

    docs = _lines(out / "documents.jsonl")
    assert [d["id"] for d in docs] == [
        "Chat_1_Ann_Bo/D1:1",
        "Chat_1_Ann_Bo/D1:2",
        "Chat_1_Ann_Bo/D1:3",
        "Chat_1_Ann_Bo/D1:4",
        "Chat_1_Ann_Bo/D2:1",
    ]  # the empty message without a photo is left out
    third = docs[2]
    assert third["conversation"] == "Chat_1_Ann_Bo" and third["session"] == "session_1"
    assert third["date"] == "2023-12-30T00:32:20" and third["date_raw"] == "30.12.2023, 00:32:20"
    assert third["speaker"] == "Ann" and third["turn_index"] == 2
    assert docs[3]["image_caption"] == "a dog on a beach"
    assert docs[4]["session_index"] == 2

    queries = _lines(out / "queries.jsonl")
    assert [q["evidence"] for q in queries] == [
        ["Chat_1_Ann_Bo/D1:1", "Chat_1_Ann_Bo/D1:3"],
        ["Chat_1_Ann_Bo/D1:4"],
        ["Chat_1_Ann_Bo/D1:1", "Chat_1_Ann_Bo/D1:2", "Chat_1_Ann_Bo/D1:3", "Chat_1_Ann_Bo/D2:1"],
        [],  # its only evidence names no message: kept, unscored
    ]
    assert queries[1]["evidence_missing"] == ["D1:5"]
    assert queries[2]["category_name"] == "temporal"

    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    raw = (source_dir / "data/Chat_1_Ann_Bo.json").read_bytes()
    assert manifest["source_files"] == {"data/Chat_1_Ann_Bo.json": hashlib.sha256(raw).hexdigest()}
    assert manifest["documents"] == 5 and manifest["queries_with_evidence"] == 3
    assert any("1 questions" in p for p in manifest["problems"])
    assert "Licence" in (out / "README.md").read_text(encoding="utf-8")


def test_a_git_source_is_read_at_its_commit_and_the_commit_recorded(tmp_path: Path) -> None:
    work = tmp_path / "work"
    _realtalk(work)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-C", str(work)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "data"], check=True)
    commit = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    bare = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    (work / "data/Chat_1_Ann_Bo.json").unlink()  # only the commit holds the data now

    out = tmp_path / "out"
    assert convert.main(["realtalk", str(bare), "--out", str(out)]) == 0

    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["source_commit"] == commit
    assert manifest["documents"] == 5


def _prefeval(root: Path) -> None:
    topics = {
        "lifestyle_dietary": ["I am vegan.", "I avoid gluten.", "I dislike spicy food."],
        "travel_hotel": ["I avoid party hotels.", "I need step-free rooms."],
    }
    for topic, prefs in topics.items():
        entries = [
            {"preference": p, "question": f"Question {i} on {topic}?", "explanation": "why"}
            for i, p in enumerate(prefs)
        ]
        _write(root, f"benchmark_dataset/explicit_preference/{topic}.json", entries)
        choice = [
            {
                **e,
                "conversation": {
                    "query": f"Options for {e['preference']}",
                    "assistant_options": "1. one 2. two",
                    "user_selection": "The first one.",
                    "assistant_acknowledgment": "Noted.",
                },
            }
            for e in reversed(entries)  # same preferences, another order: matched by text
        ]
        _write(root, f"benchmark_dataset/implicit_preference/choice-based/{topic}.json", choice)
    fillers = [
        {
            "conversation_id": f"{n:032x}",
            "conversation": [
                {"role": "user", "content": f"Write me a poem number {n}"},
                {"role": "assistant", "content": "A long answer. " * 50},
                {"role": "user", "content": "  "},  # an empty turn is skipped
            ],
        }
        for n in range(5)
    ]
    _write(root, "benchmark_dataset/filtered_inter_turns.json", fillers)


def test_prefeval_users_hold_one_preference_per_topic_among_real_chats(tmp_path: Path) -> None:
    source_dir = tmp_path / "PrefEval"
    _prefeval(source_dir)
    out = tmp_path / "out"

    assert convert.main(["prefeval", str(source_dir), "--out", str(out)]) == 0

    docs = {d["id"]: d for d in _lines(out / "documents.jsonl")}
    queries = _lines(out / "queries.jsonl")
    assert sorted({q["conversation"] for q in queries}) == ["user-00", "user-01", "user-02"]
    assert len(queries) == 5  # every preference asked once; user-02 has no travel_hotel one
    by_user: dict[str, list[str]] = {}
    for q in queries:
        by_user.setdefault(q["conversation"], []).append(q["topic"])
        evidence = [docs[i] for i in q["evidence"]]
        assert all(d["conversation"] == q["conversation"] for d in evidence)
        if q["category"] == 1:  # stated outright by the user
            assert [(d["role"], d["text"]) for d in evidence] == [("user", q["answer"])]
        else:  # the options offered and the user's pick, in the choice talk about that preference
            assert [d["role"] for d in evidence] == ["assistant", "user"]
            opening = docs[evidence[0]["id"].rsplit(":", 1)[0] + ":1"]
            assert opening["text"] == f"Options for {q['answer']}"
    assert all(len(topics) == len(set(topics)) for topics in by_user.values())
    assert {q["category"] for q in queries} == {1, 2}
    fillers = [d for d in docs.values() if d["session"].split("_", 2)[2].startswith("chat-")]
    assert fillers and all(d["text"].strip() for d in fillers)
    assert any(d["role"] == "assistant" and len(d["text"]) > 500 for d in fillers)

    again = tmp_path / "again"
    assert convert.main(["prefeval", str(source_dir), "--out", str(again)]) == 0
    for name in ("documents.jsonl", "queries.jsonl", "manifest.json", "README.md"):
        assert (again / name).read_bytes() == (out / name).read_bytes()  # deterministic


def _beam(root: Path) -> None:
    chat = [
        {
            "batch_number": 1,
            "time_anchor": None,
            "turns": [
                [
                    {
                        "role": "user",
                        "id": 0,
                        "time_anchor": "March-15-2024",
                        "index": "1,1",
                        "question_type": "main_question",
                        "content": "Plan my Flask app. ->-> 1,1",
                    },
                    {"role": "assistant", "id": 1, "content": "Here is a plan. " * 100},
                ],
                [
                    {
                        "role": "user",
                        "id": 2,
                        "index": "1,2",
                        "question_type": "main_question",
                        "content": "Always show code with syntax highlighting. ->-> 1,2",
                    },
                    {"role": "assistant", "id": 3, "content": "Sure."},
                ],
            ],
        }
    ]
    probing = {
        "abstention": [
            {
                "question": "What did my manager say?",
                "ideal_response": "Not in the chat.",
                "source_chat_ids": None,
            }
        ],
        "instruction_following": [
            {
                "question": "Show me a login view.",
                "expected_compliance": "Highlighted code.",
                "source_chat_ids": [2],
            }
        ],
        "knowledge_update": [
            {
                "question": "Deadline?",
                "answer": "March 15",
                "source_chat_ids": {"original_info": [0], "updated_info": [[1], 7]},
            }
        ],
    }
    _write(root, "chats/100K/1/chat.json", chat)
    _write(root, "chats/100K/1/probing_questions/probing_questions.json", probing)


def test_beam_messages_and_probing_questions_keep_abstention_without_evidence(tmp_path: Path) -> None:
    source_dir = tmp_path / "BEAM"
    _beam(source_dir)
    out = tmp_path / "out"

    assert convert.main(["beam", str(source_dir), "--out", str(out)]) == 0

    docs = _lines(out / "documents.jsonl")
    assert [d["id"] for d in docs] == [f"beam-100k-01/m{i}" for i in range(4)]
    assert docs[0]["text"] == "Plan my Flask app."  # the generator's position marker is gone
    assert docs[0]["date"] == "2024-03-15T00:00:00" and docs[3]["date"] == "2024-03-15T00:01:00"
    assert [d["session"] for d in docs] == ["session_1", "session_1", "session_2", "session_2"]
    assert docs[1]["speaker"] == "Assistant" and docs[1]["role"] == "assistant"

    queries = {q["category_name"]: q for q in _lines(out / "queries.jsonl")}
    assert queries["abstention"]["evidence"] == [] and queries["abstention"]["category"] == 1
    assert queries["instruction following"]["evidence"] == ["beam-100k-01/m2"]
    assert queries["instruction following"]["answer"] == "Highlighted code."
    assert queries["knowledge update"]["evidence"] == ["beam-100k-01/m0", "beam-100k-01/m1"]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert any("1 source_chat_ids" in p for p in manifest["problems"])  # id 7 is not in the chat


def test_the_harness_files_every_converted_document_as_a_note(tmp_path: Path) -> None:
    for name, make in (("realtalk", _realtalk), ("prefeval", _prefeval), ("beam", _beam)):
        source_dir = tmp_path / name
        make(source_dir)
        out = tmp_path / f"{name}-out"
        assert convert.main([name, str(source_dir), "--out", str(out)]) == 0
        docs = eval_recall.read_jsonl(out / "documents.jsonl")
        queries = eval_recall.read_jsonl(out / "queries.jsonl")
        ids = {d["id"] for d in docs}
        assert all(set(q["evidence"]) <= ids for q in queries)
        for doc in docs:
            note = eval_recall.turn_note(doc)
            assert doc["text"] in note.text and note.session


def test_a_source_without_the_expected_files_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty" / "data").mkdir(parents=True)

    assert convert.main(["realtalk", str(tmp_path / "empty"), "--out", str(tmp_path / "out")]) == 2

    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no data/Chat_" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()
