"""Where the recall harness asks its unanswerable probes (scripts/eval_probes.py): of a
conversation that shares no person with the question's own and is least like it, or, where no
conversation of the set may be asked, another set's question in the same script."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import eval_probes  # noqa: E402


def doc(conversation: str, speaker: str, text: str) -> dict[str, Any]:
    return {"conversation": conversation, "speaker": speaker, "text": text}


def question(conversation: str, text: str, **more: Any) -> dict[str, Any]:
    return {"id": f"{conversation}/q", "conversation": conversation, "question": text, **more}


CHATS = [
    # Two chats about building a web app, one about gardening; "User" speaks in all three.
    doc("a", "User", "I set up webpack and eslint for the react frontend"),
    doc("a", "Assistant", "Configure eslint rules and webpack loaders for react"),
    doc("b", "User", "My react frontend needs eslint and a webpack build"),
    doc("b", "Assistant", "Add webpack and eslint to the react project"),
    doc("c", "User", "My tomatoes and roses need compost and mulch"),
    doc("c", "Assistant", "Spread mulch around roses and feed tomatoes compost"),
]


def test_a_question_is_asked_of_the_conversation_least_like_its_own() -> None:
    asked = eval_probes.probes([question("a", "Which eslint rules did I enforce?")], CHATS, [])

    # "b" comes next in order and answers it; the gardening chat cannot.
    assert [q["conversation"] for q in asked] == ["c"]


def test_a_conversation_that_shares_a_person_is_never_asked() -> None:
    docs = [
        doc("a", "Kevin", "Elise and I went hiking"),
        doc("a", "Elise", "Hiking with Kevin was fun"),
        doc("b", "Kevin", "Paola and I cooked pasta"),
        doc("b", "Paola", "Pasta night with Kevin"),
        doc("c", "Emi", "Nicolas and I went hiking"),
        doc("c", "Nicolas", "Hiking with Emi was fun"),
    ]

    # "c" shares words with "a" (hiking), "b" shares Kevin: a person outweighs the words.
    assert eval_probes.hosts_by_distance(docs)["a"] == ["c"]


def test_a_set_filed_under_topics_is_probed_with_other_sets_questions_in_its_script() -> None:
    queries = [question("a", "Recommend restaurants in Rome", topic="travel_restaurant")]
    foreign = [question("x", "我们什么时候搬家的？"), question("y", "When did Caroline move?")]

    asked = eval_probes.probes(queries, CHATS, foreign)

    # Any other person's preferences may bear on a request for a suggestion, whatever its topic.
    assert [(q["id"], q["conversation"], q["question_date"]) for q in asked] == [("y/q", "a", None)]


def test_a_set_of_one_conversation_takes_another_script_when_none_is_in_its_own() -> None:
    docs = [doc("zh", "小明", "我们去年搬家了")]
    queries = [question("zh", "小明什么时候搬家？")]

    asked = eval_probes.probes(queries, docs, [question("y", "When did Caroline move?")])

    assert [(q["id"], q["conversation"]) for q in asked] == [("y/q", "zh")]
