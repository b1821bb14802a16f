"""Keyword mode: a request for oneself brings back the person's own short statement that shares
one word with it ("recommend restaurants in Rome for me" → "I avoid restaurants serving gluten"),
which the coverage cut alone drops; questions about someone else keep the cut."""

from __future__ import annotations

from helpers import write

from tiered_memory.app.memory import Memory
from tiered_memory.index.query_terms import first_person
from tiered_memory.index.retrieve import Gathering
from tiered_memory.model.search import SearchRequest

PREFERENCE = (
    "memory/mid-term/gluten.md",
    "---\ntitle: Gluten\n---\n"
    "I strictly avoid restaurants that serve foods containing gluten due to a severe intolerance.\n",
)
NOTICE = (
    "memory/mid-term/sunday.md",
    "---\ntitle: Sunday hours\n---\nMost restaurants close early on Sundays in this town.\n",
)
# A long answer that mentions restaurants once: its snippet is cut, so it is no short statement.
ANSWER = (
    "memory/mid-term/paris-trip.md",
    "---\ntitle: Paris itinerary\n---\n"
    + " ".join(f"Day {i}: I walk the museums, the parks and the old bridges of the city." for i in range(12))
    + " Evenings end at small restaurants near the river.\n",
)
# Other notes of the vault, none about restaurants (what makes the word rare enough to count).
OTHERS = [
    (f"memory/mid-term/other-{i}.md", f"---\ntitle: {topic}\n---\nNotes on {topic.lower()} for the week.\n")
    for i, topic in enumerate(["Garden", "Taxes", "Bicycle repair", "Piano lessons", "Backups", "Dentist"])
]
REQUEST = "What local restaurants in Rome would you recommend for me?"


def _titles(memory: Memory, query: str, mode: str = "keyword") -> list[str]:
    request = SearchRequest(query=query, mode=mode)  # type: ignore[arg-type]
    return [h.title for h in memory.search(request, record_access=False).hits]


def _fill(memory: Memory) -> None:
    for rel, text in (PREFERENCE, NOTICE, ANSWER, *OTHERS):
        write(memory.vault.root, rel, text)
    memory.fresh()


def test_a_request_for_oneself_finds_the_stated_preference_by_one_shared_word(memory: Memory) -> None:
    _fill(memory)
    found = memory.searcher.gather(SearchRequest(query=REQUEST, mode="keyword"))
    assert 0.1 <= found.coverage[PREFERENCE[0]][0] < 0.4  # below the cut: one word of the request
    # The person's own short statement comes back; a short statement not about the person and a
    # long note holding the word once do not.
    assert _titles(memory, REQUEST) == ["Gluten"]


def test_a_question_about_someone_else_keeps_the_coverage_cut(memory: Memory) -> None:
    _fill(memory)
    assert _titles(memory, "Which local restaurants in Rome would Ann recommend to Bob?") == []


def test_first_person_is_a_word_of_its_own() -> None:
    assert first_person("Can you suggest hotels for me?")
    assert first_person("I'm visiting Rome") and first_person("MY trip")
    assert not first_person("What did Caroline tell Melanie in Miami?")
    assert first_person("a gift for me/my wife") and first_person("I’ll go")
    assert not first_person("imagine my_var")  # an identifier is no pronoun
    assert not first_person("minecraft and mine-sweeping")


def test_a_request_for_a_suggestion_finds_the_stated_preference_without_saying_me(memory: Memory) -> None:
    _fill(memory)
    # "would you recommend" makes it a request; it names no I, me or my.
    request = "What local restaurants in Rome would you recommend?"
    assert not first_person(request)
    found = memory.searcher.gather(SearchRequest(query=request, mode="keyword"))
    assert found.coverage[PREFERENCE[0]][0] < 0.4  # below the cut: one word of the request
    assert _titles(memory, request) == ["Gluten"]


def test_switched_off_only_a_request_in_the_first_person_takes_its_own_statements(memory: Memory) -> None:
    # The ablation's switch, carried by the candidates to ranking: a request that names no I, me
    # or my keeps the coverage cut; one that does still takes the allowance.
    _fill(memory)
    how = Gathering(request_statements=False)
    for query, titles in (("What local restaurants in Rome would you recommend?", []), (REQUEST, ["Gluten"])):
        request = SearchRequest(query=query, mode="keyword")
        found = memory.searcher.gather(request, how=how)
        assert [h.title for h in memory.searcher.rank(found, request).hits] == titles
