"""What ranking does with long queries, untouched template notes, Chinese queries, and the passage it shows."""

from __future__ import annotations

from tiered_memory.app.api import Empty
from tiered_memory.app.filing import NewNote, add
from tiered_memory.app.memory import Memory
from tiered_memory.app.status import status
from tiered_memory.index.fts import analyze
from tiered_memory.index.passages import best_passage, passages
from tiered_memory.index.query_terms import cjk_share, dialogue_turns, weighted_terms
from tiered_memory.index.retrieve import json_keys, names_a_key
from tiered_memory.model.search import SearchRequest
from tiered_memory.present.notes import status_text
from tiered_memory.storage.vault import template_dir

DIALOGUE = """Bart: I am going to perform a magic trick at the party!
Assistant: That's fantastic! The audience will love it.
Bart: I'm nervous about the violin recital too."""


def test_a_transcript_shaped_query_is_split_into_turns() -> None:
    assert dialogue_turns(DIALOGUE) == DIALOGUE.splitlines()
    assert dialogue_turns("when did we migrate the database") is None
    assert dialogue_turns("Note: one line only") is None


def test_the_last_turn_weighs_fully_and_earlier_turns_less() -> None:
    weights = dict(weighted_terms(DIALOGUE, analyze, lambda term: 1.0))
    assert weights[analyze("violin")[0]] == 1.0
    assert weights[analyze("magic")[0]] == 0.5
    assert weights[analyze("nervous")[0]] == 1.0


def test_long_queries_keep_their_most_informative_terms_wherever_they_are() -> None:
    words = [f"common{i}" for i in range(200)] + ["zanzibar"]
    idf = {analyze(w)[0]: 1.0 for w in words}
    idf[analyze("zanzibar")[0]] = 9.0
    kept = [t for t, _ in weighted_terms(" ".join(words), analyze, lambda t: idf.get(t, 0.0), limit=10)]
    assert len(kept) == 10
    assert analyze("zanzibar")[0] in kept  # the last word, and the rarest


def test_terms_no_note_holds_take_no_place() -> None:
    kept = weighted_terms("alpha beta gamma", analyze, lambda t: 0.0 if t == "beta" else 1.0)
    assert [t for t, _ in kept] == ["alpha", "gamma"]


def test_cjk_share() -> None:
    assert cjk_share("坐标系") == 1.0
    assert cjk_share("which coordinate system") == 0.0
    assert cjk_share("控制点 CGCS2000") == 0.75  # a character counts as much as a word
    assert cjk_share("use 坐标 points") == 0.5


def test_the_best_passage_is_the_one_holding_the_query_terms() -> None:
    text = "# Trip notes\n\n" + "We walked a lot. " * 30 + "\n\nThe ferry to Zanzibar leaves at nine."
    terms = [(analyze("zanzibar")[0], 5.0), (analyze("ferry")[0], 3.0)]
    passage, score = best_passage(text, terms, analyze, title="Trip notes")
    assert passage == "The ferry to Zanzibar leaves at nine."
    assert score == 8.0
    assert best_passage(text, [("nothing", 1.0)], analyze) == ("", 0.0)


def test_passages_keep_sentences_whole_and_bounded() -> None:
    text = "First sentence here. Second one follows! 第三句话。" + " Another." * 60
    parts = passages(text, max_chars=60)
    assert parts[0].startswith("First sentence here. Second one follows!")
    assert all(len(p) <= 60 for p in parts)


def test_template_notes_are_in_no_index_until_a_person_writes_in_them(memory: Memory) -> None:
    add(memory, NewNote(text="Ada prefers tea over coffee in the afternoon.", title="Tea", tier="archive"))
    request = SearchRequest(query="user profile contacts preferences tea", mode="hybrid")
    hits = memory.search(request, record_access=False).hits
    assert [h.title for h in hits] == ["Tea"]  # the untouched templates match nothing at all
    assert {r.title for r in memory.list_notes()} == {"Tea"}
    assert memory.indexer.catalog.count() == 1
    profile = memory.vault.root / "memory/long-term/user_profile.md"
    profile.write_text(profile.read_text(encoding="utf-8") + "\n- Likes green tea and user profile tidy\n")
    memory.refresh()
    hits = memory.search(request, record_access=False).hits
    assert hits[0].path == "memory/long-term/user_profile.md"
    assert memory.resolve("user-profile") == "memory/long-term/user_profile.md"
    # Put back as the template had it, it leaves the indexes again.
    profile.write_text((template_dir() / "memory/long-term/user_profile.md").read_text(encoding="utf-8"))
    memory.refresh()
    assert [h.title for h in memory.search(request, record_access=False).hits] == ["Tea"]


def test_status_counts_untouched_templates_apart(memory: Memory) -> None:
    memory.refresh()
    result = status(memory, Empty())
    assert result.notes == 0 and result.index.skipped == []
    assert result.index.templates == 7
    assert "templates:  7 not indexed until you write in them" in status_text(result)


def test_a_hit_carries_the_passage_that_matched(memory: Memory) -> None:
    filler = " ".join(f"Sentence {i} is about the weather being mild." for i in range(40))
    add(memory, NewNote(text=f"{filler}\n\nThe backup key is kept in the red safe.", title="Long log"))
    hit = memory.search(
        SearchRequest(query="where is the backup key", mode="keyword"), record_access=False
    ).hits[0]
    assert hit.title == "Long log"
    assert hit.passage == "The backup key is kept in the red safe."


def test_chinese_queries_are_not_pulled_below_keyword_by_an_english_model(memory: Memory) -> None:
    for i, text in enumerate(
        ["该项目控制点坐标系为 CGCS2000。", "午饭去复兴路的面馆。", "数据库迁移到 PostgreSQL。"]
    ):
        add(memory, NewNote(text=text, title=f"n{i}"))
    for query in ("坐标系", "面馆在哪里"):
        keyword = memory.search(SearchRequest(query=query, mode="keyword"), record_access=False).hits
        hybrid = memory.search(SearchRequest(query=query, mode="hybrid"), record_access=False).hits
        assert [h.path for h in hybrid][: len(keyword)] == [h.path for h in keyword]


def test_a_long_note_whose_end_answers_is_not_outranked_by_a_one_line_mention(memory: Memory) -> None:
    filler = "\n\n".join(
        f"Day {i}: the survey team measured points along the river bank." for i in range(120)
    )
    answer = "The backup key for the server room is kept in the red safe behind the door."
    add(memory, NewNote(text=f"{filler}\n\n{answer}", title="Field diary"))
    add(memory, NewNote(text="Someone asked about a backup key.", title="Mention"))
    hits = memory.search(
        SearchRequest(query="where is the backup key for the server room kept", mode="keyword"),
        record_access=False,
    ).hits
    assert [h.title for h in hits][:2] == ["Field diary", "Mention"]
    assert hits[0].passage == answer


def test_json_state_ranks_below_notes_unless_the_query_names_its_keys(memory: Memory) -> None:
    add(memory, NewNote(text="We deploy to the staging server on Fridays.", title="Release day"))
    state = memory.vault.root / "memory/short-term/context_stack.json"
    state.write_text('{"deploy_target": "staging server", "focus": "release notes"}\n', encoding="utf-8")
    memory.refresh()

    def paths(query: str) -> list[str]:
        hits = memory.search(SearchRequest(query=query, mode="keyword"), record_access=False).hits
        return [h.path for h in hits]

    assert paths("staging server")[-1] == "memory/short-term/context_stack.json"
    assert paths("what is the deploy target")[0] == "memory/short-term/context_stack.json"


def test_a_key_is_named_by_all_of_its_words() -> None:
    assert json_keys('{"deploy_target": 1, "activeContexts": {}}') == ["deploy_target", "activeContexts"]
    assert json_keys('[{"uid": "a", "title": "x"}, {"uid": "b", "done": true}]') == ["uid", "title", "done"]
    assert json_keys("not json") == []
    terms = set(analyze("which active contexts are open"))
    assert names_a_key(terms, ["activeContexts"]) and names_a_key(terms, ["active_contexts"])
    assert not names_a_key(set(analyze("which contexts")), ["active_contexts"])
    assert not names_a_key(terms, [])
