"""A request for a suggestion is asked in words every request shares ("can you recommend", "what
are some good", "for me"), and so do the answers that list options; the one word a person's stated
preference shares with it is its topic ("hotels"). The keyword side weighs the request's form
words less, so that topic word decides."""

from __future__ import annotations

from helpers import among_others, session_turn, write

from tiered_memory.app.filing import NewNote
from tiered_memory.app.memory import Memory
from tiered_memory.index.confidence import request_form
from tiered_memory.index.fts import analyze
from tiered_memory.index.query_terms import REQUEST_FORM_WEIGHT, weighted_terms
from tiered_memory.index.retrieve import LONG_NOTE_BYTES, Gathering
from tiered_memory.model.search import SearchRequest

PREFERENCE = (
    "memory/mid-term/hotels.md",
    "---\ntitle: Where I sleep\n---\nI have a strong aversion to hotels located in high-rise buildings.\n",
)
# Another request of the person's, on another topic: it shares the form word, rarer in this vault
# than the topic word.
OTHER_REQUEST = (
    "memory/mid-term/board-games.md",
    "---\ntitle: Board games\n---\nWhich board game would you recommend for a rainy evening?\n",
)
# Travel logs that mention hotels once among much else: what makes "hotels" the commoner word.
LOGS = [
    (
        f"memory/mid-term/log-{i}.md",
        f"---\ntitle: Travel log {i}\n---\n"
        + " ".join(f"Day {d}: trains, museums, markets and long walks by the water." for d in range(6))
        + " The hotels were fine.\n",
    )
    for i in range(5)
]
OTHERS = [
    (f"memory/mid-term/other-{i}.md", f"---\ntitle: {topic}\n---\nNotes on {topic.lower()} for the week.\n")
    for i, topic in enumerate(["Garden", "Taxes", "Bicycle repair", "Piano lessons", "Backups", "Dentist"])
]


def test_the_form_of_a_request_is_the_spans_that_make_it_one() -> None:
    assert request_form("Can you recommend some hotels in Tokyo for me?") == ["Can you recommend", "for me"]
    assert request_form("What are some good tabletop games for a game night?") == ["What are some"]
    assert request_form("Where did Caroline stay in Tokyo?") == []  # a question, not a request
    # A pasted conversation is judged as one, not by the request somewhere in it.
    assert request_form("Ann: can you recommend a hotel for me?\nBob: the Grand, surely") == []


def test_a_request_s_form_words_weigh_less_than_its_topic() -> None:
    query = "Can you recommend some hotels in Tokyo for me?"
    weights = dict(weighted_terms(query, analyze, lambda t: 1.0, form=request_form(query)))
    assert weights == {"recommend": REQUEST_FORM_WEIGHT, "hotel": 1.0, "tokyo": 1.0}
    # A request made of its form alone keeps its words at full weight: they are all it says.
    bare = "What would you recommend?"
    assert dict(weighted_terms(bare, analyze, lambda t: 1.0, form=request_form(bare))) == {"recommend": 1.0}
    # No form given (any other query): every term weighs 1, as before.
    assert set(dict(weighted_terms(query, analyze, lambda t: 1.0)).values()) == {1.0}


def test_a_request_finds_the_preference_on_its_topic_before_another_request(memory: Memory) -> None:
    for rel, text in (PREFERENCE, OTHER_REQUEST, *LOGS, *OTHERS):
        write(memory.vault.root, rel, text)
    memory.fresh()
    query = "Could you recommend some hotels in Tokyo?"
    found = memory.searcher.gather(SearchRequest(query=query, mode="keyword"))
    assert [path for path, _ in found.keyword][:2] == [PREFERENCE[0], OTHER_REQUEST[0]]
    hits = memory.search(SearchRequest(query=query, mode="keyword"), record_access=False).hits
    assert hits and hits[0].path == PREFERENCE[0]


def test_switched_off_a_request_s_form_words_weigh_as_its_others(memory: Memory) -> None:
    # The ablation's switch (scripts/eval_recall.py --ablate): the other request, on the form word
    # rarer here than the topic word, ranks first again, and the preference covers less.
    for rel, text in (PREFERENCE, OTHER_REQUEST, *LOGS, *OTHERS):
        write(memory.vault.root, rel, text)
    memory.fresh()
    request = SearchRequest(query="Could you recommend some hotels in Tokyo?", mode="keyword")
    weighed = memory.searcher.gather(request)
    found = memory.searcher.gather(request, how=Gathering(request_form=False))
    assert [path for path, _ in found.keyword][0] == OTHER_REQUEST[0]
    assert found.coverage[PREFERENCE[0]][0] < weighed.coverage[PREFERENCE[0]][0]
    # Passages are scored with the same terms: off, the form word counts in full there too.
    fts = memory.indexer.fts
    texts = ["Which game would you recommend?", "hotels near the station"]
    assert (
        fts.passage_scores(request.query, texts, weigh_form=False)[0]
        > fts.passage_scores(request.query, texts)[0]
    )


# ---- a long answer in a conversation is judged whole ----------------------------------------------

# An assistant's long answer with one paragraph on hotels in Tokyo among many on other things.
ESSAY = "Assistant: " + "\n\n".join(
    [f"Section {i}: trains, temples, markets, gardens and ramen shops worth the detour." for i in range(30)]
    + ["For Tokyo, hotels near Shinjuku station are the easiest base: hotels there suit any budget."]
)
STATED = "User: I have a strong aversion to hotels located in high-rise buildings."
HOTEL_REQUEST = "Can you recommend some hotels in Tokyo?"


def _conversation(memory: Memory, essay_in_session: bool) -> dict[str, str]:
    notes = [session_turn("chat-2", 0, "User", STATED)]
    if essay_in_session:
        notes += [
            session_turn("chat-1", 0, "User", "User: Plan my week away, please."),
            session_turn("chat-1", 1, "Assistant", ESSAY),
        ]
    else:  # the same text as a note the person keeps
        notes += [NewNote(text=ESSAY.removeprefix("Assistant: "), title="Japan notes", tier="mid-term")]
    written = among_others(memory, notes, "ingest: a chat")
    return {"stated": written[0], "essay": written[-1]}


def test_a_request_judges_a_long_conversation_turn_whole(memory: Memory) -> None:
    paths = _conversation(memory, essay_in_session=True)
    assert memory.indexer.catalog.get(paths["essay"]).size > LONG_NOTE_BYTES  # type: ignore[union-attr]
    found = memory.searcher.gather(SearchRequest(query=HOTEL_REQUEST, mode="keyword"))
    assert [p for p, _ in found.keyword][:2] == [paths["stated"], paths["essay"]]
    # A question is not a request: the long turn still ranks by its best passage.
    found = memory.searcher.gather(SearchRequest(query="hotels in Tokyo", mode="keyword"))
    assert [p for p, _ in found.keyword][0] == paths["essay"]


def test_a_request_still_finds_the_passage_of_a_long_note_a_person_keeps(memory: Memory) -> None:
    paths = _conversation(memory, essay_in_session=False)
    found = memory.searcher.gather(SearchRequest(query=HOTEL_REQUEST, mode="keyword"))
    assert [p for p, _ in found.keyword][0] == paths["essay"]


def test_switched_off_a_request_judges_a_long_turn_by_its_best_passage(memory: Memory) -> None:
    # The ablation's switch: the long answer ranks by its paragraph on hotels again, as for a question.
    paths = _conversation(memory, essay_in_session=True)
    request = SearchRequest(query=HOTEL_REQUEST, mode="keyword")
    found = memory.searcher.gather(request, how=Gathering(whole_turns=False))
    assert [p for p, _ in found.keyword][0] == paths["essay"]


def test_switched_off_a_long_note_s_passages_weigh_a_request_s_form_words_in_full(memory: Memory) -> None:
    # A long note a person keeps ranks by its best passage, which holds the form word: switched
    # off, that word counts in full there as in the whole note, and the passage scores higher.
    essay = ESSAY.removeprefix("Assistant: ").replace("For Tokyo, hotels", "For Tokyo, I recommend hotels")
    notes = [NewNote(text=essay, title="Japan notes", tier="mid-term"), NewNote(text=STATED, tier="mid-term")]
    path = among_others(memory, notes, "ingest: notes")[0]
    request = SearchRequest(query=HOTEL_REQUEST, mode="keyword")
    on = dict(memory.searcher.gather(request).keyword)[path]
    off = dict(memory.searcher.gather(request, how=Gathering(request_form=False)).keyword)[path]
    whole = dict(memory.searcher.gather(request, how=Gathering(request_form=False, passages=False)).keyword)[
        path
    ]
    assert off > on and off > whole
