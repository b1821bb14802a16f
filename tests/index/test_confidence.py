"""A search that finds nothing good returns nothing: its query-level confidence (best cosine, its
lead over the next ones and best keyword coverage in hybrid mode; the coverage alone in keyword
mode, the cosine and its lead in vector mode; a request allowed more) is below
`search.min_confidence`, even where a note passes the per-note evidence cut."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import FAKE_CONFIG, FIXED_NOW, MARIA, NO_ANSWER, write

from tiered_memory.app.memory import Memory
from tiered_memory.config import SearchConfig
from tiered_memory.index.confidence import (
    HYBRID_SCALE,
    KEYWORD_SCALE,
    KNOWN_FULL_NOTES,
    KNOWN_WEIGHT,
    VECTOR_LEAD_WEIGHT,
    VECTOR_SCALE,
    clear_nearest,
    confidence,
    is_request,
    keyword_confidence,
    lead,
    notes_known,
    states_the_person,
    vector_confidence,
)
from tiered_memory.model.search import SearchRequest, SearchResult
from tiered_memory.storage.vault import Vault, init_vault

ANSWERED = "Where did Maria adopt her dog?"


def test_a_request_is_told_from_a_question_about_a_fact() -> None:
    for text in (
        "Can you suggest some comfortable workout clothes for me?",
        "What are some good conditioners you'd suggest for dry hair?",
        "recommend a restaurant in Rome",
        "How can I reduce stress effectively?",
        "I'm planning my editing schedule for the week. How would you split it?",
    ):
        assert is_request(text), text
    for text in (
        "Where did Maria adopt her dog?",
        "What book recommendation did Tim give to John for the trip?",
        "When is the non-provisional patent filing scheduled?",
        "which coordinate system do we use",
    ):
        assert not is_request(text), text


def test_a_request_asking_what_to_do_where_to_go_or_what_is_best_is_a_request() -> None:
    for text in (
        "I’m planning to visit Istanbul soon. Where should I eat?",
        "Are there any indie games that I should try?",
        "What are my best transportation options for traveling from Miami to Cancun?",
        "What’s the best way to travel from Madrid to Barcelona?",
        '"What would be some highly recommended hotels in Macau for my business trip?"',
        "My chronic migraines have been debilitating lately. What can I do to find some relief?",
        "Can you create a playlist of songs for my next road trip?",
        "What should I wear to a semi-formal dinner event as a woman?",
    ):
        assert is_request(text), text
    for text in (  # questions about what was said or done, by or to someone
        "What book recommendations has Joanna given to Nate?",
        "What recommendations has Nate received from Joanna?",
        "What other exercises can help John with his basketball performance?",
        "Could you provide details about the onboarding modules I need to complete?",
        "What time should I plan to visit Foot Locker next Saturday?",
        "Where did I stay in London last spring?",
    ):
        assert not is_request(text), text


def test_confidence_weighs_the_best_cosine_the_best_coverage_and_what_the_vault_holds() -> None:
    cosines = [("a.md", 0.5), ("b.md", 0.45), ("d.md", 0.35)]
    coverage = {"a.md": (0.2, 1), "c.md": (0.6, 2)}
    base = 0.7 * 0.5 + 0.3 * 0.6 + 0.2 * 0.1  # the lead is 0.1
    assert confidence(cosines, coverage, "when did we move", 0.7, 0.1, 0.4, 0.2, known=0.5) == pytest.approx(
        HYBRID_SCALE * (base + KNOWN_WEIGHT * 0.5)
    )
    # A question whose words the vault holds none of is less sure than one it holds them all of.
    assert confidence(cosines, coverage, "when did we move", 0.7, 0.1, 0.4, known=0.0) < confidence(
        cosines, coverage, "when did we move", 0.7, 0.1, 0.4, known=1.0
    )
    assert confidence(
        cosines, coverage, "can you suggest a move for me", 0.7, 0.1, 0.4, 0.2, known=0.5
    ) == pytest.approx(HYBRID_SCALE * (base + KNOWN_WEIGHT * 0.5) + 0.1)
    assert confidence([], {}, "anything", 0.7, 0.1, 0.4, known=0.0) == 0.0


def test_the_lead_is_the_best_cosine_over_the_mean_of_the_next_nine() -> None:
    assert lead([0.3, 0.5, 0.2]) == pytest.approx(0.25)
    assert lead([0.6, *[0.2] * 9, *[0.0] * 10]) == pytest.approx(0.4)  # the tenth and on do not count
    assert lead([0.5]) == 0.0 and lead([]) == 0.0


def test_each_mode_is_scaled_so_that_one_cut_serves_them_all() -> None:
    # Each mode's own cut (0.62 for hybrid's weighed sum, 0.28 coverage, 0.64 for the cosine and
    # what the vault holds) lands on 0.38, the one `search.min_confidence`.
    assert HYBRID_SCALE * 0.62 == pytest.approx(0.38)
    assert keyword_confidence({"a.md": (0.28, 2), "b.md": (0.1, 1)}, "when did we move", 1.0) == (
        pytest.approx(0.38)
    )
    assert KEYWORD_SCALE * 0.27 < 0.38 < KEYWORD_SCALE * 0.29
    assert keyword_confidence({"a.md": (0.1, 1)}, "can you suggest a move for me", 1.0) > 1.0
    assert keyword_confidence({}, "anything", 1.0) == 0.0
    level = [("a.md", 0.34), ("b.md", 0.34)]  # no clear nearest note
    assert vector_confidence(level, "when did we move", 1.0, 0.4, known=1.0) == pytest.approx(
        VECTOR_SCALE * (0.34 + KNOWN_WEIGHT + VECTOR_LEAD_WEIGHT * 0.0)
    )
    assert VECTOR_SCALE * (0.34 + KNOWN_WEIGHT) == pytest.approx(0.38)
    assert vector_confidence(level, "when did we move", 1.0, 0.4, known=0.5) < 0.38
    assert vector_confidence([("dentist", 0.42), ("pizza", 0.09)], "when is my cleaning", 1.0, 0.4) == 1.0
    assert vector_confidence(level, "can you suggest a move for me", 1.0, 0.4) > 1.0


def test_a_clear_nearest_note_is_an_answer() -> None:
    # Above the model's floor and well ahead of the next note: the teeth-cleaning paraphrase.
    assert clear_nearest([("dentist", 0.42), ("pizza", 0.09)], 0.4)
    assert (
        confidence([("dentist", 0.42), ("pizza", 0.09)], {}, "when is my teeth cleaning", 0.8, 1.0, 0.4)
        == 1.0
    )
    assert not clear_nearest([("dentist", 0.42), ("pizza", 0.35)], 0.4)  # not ahead of the rest
    assert not clear_nearest([("trip", 0.30), ("job", 0.09)], 0.4)  # below the floor
    assert clear_nearest([("only", 0.45)], 0.4)


@pytest.fixture
def maria(tmp_path: Path) -> Iterator[Memory]:
    from tiered_memory.index.embeddings import SentenceTransformerEmbedder

    root = tmp_path / "maria"
    init_vault(root)  # the default config: the packaged model the cut was measured on
    for rel, text in MARIA.items():
        write(root, rel, text)
    memory = Memory(Vault(root), embedder_factory=SentenceTransformerEmbedder, now=lambda: FIXED_NOW)
    yield memory
    memory.close()


def _titles(memory: Memory, query: str, cfg: SearchConfig | None = None, **request: float) -> list[str]:
    found = memory.searcher.gather(SearchRequest(query=query))
    return [h.title for h in memory.searcher.rank(found, SearchRequest(query=query, **request), cfg=cfg).hits]


@pytest.mark.model
def test_a_question_nothing_answers_returns_nothing_though_a_note_passes_the_evidence_cut(
    maria: Memory,
) -> None:
    maria.fresh(vectors=True)
    without_the_cut = dataclasses.replace(maria.searcher.cfg, min_confidence=0.0)
    assert _titles(maria, NO_ANSWER, without_the_cut) == ["Trip to Lisbon"]
    assert _titles(maria, NO_ANSWER) == []
    result = maria.search(SearchRequest(query=NO_ANSWER), record_access=False)
    assert result.hits == [] and result.notice and "min score of 0" in result.notice
    # Asking for every hit however unsure (min score 0) lists it anyway.
    assert _titles(maria, NO_ANSWER, min_score=0.0) == ["Trip to Lisbon"]
    # The question the vault answers still finds its note first.
    assert _titles(maria, ANSWERED)[0] == "Maria adopted a dog"
    assert maria.search(SearchRequest(query=ANSWERED), record_access=False).notice is None


REQUEST = "Can you recommend board games to play with my sister on rainy evenings in June?"


@pytest.mark.model
def test_a_request_for_a_suggestion_is_not_cut_near_what_the_person_said_of_themselves(
    maria: Memory,
) -> None:
    # A preference or a past outing may answer it without sharing its words: the vault's best
    # evidence is as weak as a question nothing answers, yet it is kept where the person said
    # something about themselves near it. (Vector mode has no hit for it at all: no note is near
    # enough in meaning to pass the per-note evidence cut.)
    write(
        maria.vault.root, "memory/mid-term/rain.md", "I can't stand staying indoors all day when it rains.\n"
    )
    maria.fresh(vectors=True)
    no_allowance = dataclasses.replace(maria.searcher.cfg, confidence_request_allowance=0.0)
    found = maria.searcher.gather(SearchRequest(query=REQUEST))
    for mode in ("hybrid", "keyword"):
        ranked = maria.searcher.rank(found, SearchRequest(query=REQUEST), mode=mode)  # type: ignore[arg-type]
        assert "Trip to Lisbon" in [h.title for h in ranked.hits], mode
        cut = maria.searcher.rank(found, SearchRequest(query=REQUEST), cfg=no_allowance, mode=mode)  # type: ignore[arg-type]
        assert cut.hits == [], mode


@pytest.mark.model
def test_a_request_is_judged_as_a_question_where_what_the_person_said_is_about_something_else(
    maria: Memory,
) -> None:
    # The person's own word is among the nearest notes of a small vault, but about homework, not
    # about evenings or games (cosine below 0.2): it answers the request no better than the trip.
    write(maria.vault.root, "memory/mid-term/homework.md", "I'm struggling with my probability homework.\n")
    maria.fresh(vectors=True)
    found = maria.searcher.gather(SearchRequest(query=REQUEST))
    for mode in ("hybrid", "vector"):
        assert maria.searcher.rank(found, SearchRequest(query=REQUEST), mode=mode).hits == [], mode  # type: ignore[arg-type]


@pytest.mark.model
def test_a_request_is_judged_as_a_question_in_a_vault_of_what_others_did(maria: Memory) -> None:
    # Maria's notes say what she did, in the third person; nobody in the vault says what they like
    # or avoid. Her Lisbon trip shares two words with the request and answers it no better than a
    # question about someone else: hybrid and vector mode return nothing. Keyword mode, which has
    # no cosines to find a statement near, keeps the allowance.
    maria.fresh(vectors=True)
    found = maria.searcher.gather(SearchRequest(query=REQUEST))
    for mode in ("hybrid", "vector"):
        assert maria.searcher.rank(found, SearchRequest(query=REQUEST), mode=mode).hits == [], mode  # type: ignore[arg-type]
    assert [
        h.title for h in maria.searcher.rank(found, SearchRequest(query=REQUEST), mode="keyword").hits
    ] == ["Trip to Lisbon"]
    # A min score of 0 still lists the nearest notes.
    assert maria.searcher.rank(found, SearchRequest(query=REQUEST, min_score=0.0)).hits
    # A note filed as the person's preference is their own word however it is phrased; the same
    # words filed as a plain note are not.
    for category, answered in (("note", False), ("preference", True)):
        write(
            maria.vault.root,
            "memory/long-term/quiet.md",
            f"---\ntitle: Prefers quiet evenings\ncategory: {category}\n---\n"
            "The user prefers quiet evenings at home to going out.\n",
        )
        maria.fresh(vectors=True)
        found = maria.searcher.gather(SearchRequest(query=REQUEST))
        assert bool(maria.searcher.rank(found, SearchRequest(query=REQUEST)).hits) is answered, category


def test_the_persons_own_word_is_a_preference_or_profile_or_a_short_first_person_statement() -> None:
    assert states_the_person("I avoid gluten.", "session")
    assert states_the_person("The user prefers small pull requests.", "preference")
    assert states_the_person("Maria, 34, nurse at the children's hospital.", "profile")
    assert not states_the_person("Lisa had a great time at the amusement park.", "session")
    assert not states_the_person("I went to Lisbon and then to Porto, where we …", "note")  # cut: long


@pytest.mark.model
def test_every_mode_is_judged_but_not_a_pasted_conversation(maria: Memory) -> None:
    maria.fresh(vectors=True)
    found = maria.searcher.gather(SearchRequest(query=NO_ANSWER))
    cfg = maria.searcher.cfg
    assert maria.searcher.confidence(found, cfg, "keyword") == pytest.approx(
        keyword_confidence(found.coverage, NO_ANSWER, cfg.confidence_request_allowance, ["John"])
    )
    assert found.unheard == ("John",)
    assert maria.searcher.confidence(found, cfg, "vector") == pytest.approx(
        # Notes, not a conversation's turns: what the vault holds of the query is not weighed.
        vector_confidence(found.vector, NO_ANSWER, cfg.confidence_request_allowance, 0.4, known=1.0)
    )
    # "John", "cook" and "party": words no note of Maria's holds.
    assert 0.0 < found.known < 0.75
    assert maria.searcher.confidence(found, cfg, "hybrid") is not None
    pasted = "Ann: my sister is in town in June\nBob: nice, what will you cook for the party?\n"
    for mode in ("hybrid", "keyword", "vector"):
        assert (
            maria.searcher.confidence(maria.searcher.gather(SearchRequest(query=pasted)), cfg, mode) is None
        )


# Shares "sister" and "June" with the Lisbon note: two of its eight terms, so the note passes the
# per-note evidence cut (two terms and a fifth of the query's weight), yet covers only a quarter of it.
KEYWORD_NO_ANSWER = "What did John's sister cook for the birthday party at the lake house in June?"


@pytest.fixture
def maria_words(tmp_path: Path) -> Iterator[Memory]:
    root = tmp_path / "maria"
    init_vault(root, config_text=FAKE_CONFIG)  # keyword mode needs no model
    for rel, text in MARIA.items():
        write(root, rel, text)
    memory = Memory(Vault(root), now=lambda: FIXED_NOW)
    yield memory
    memory.close()


def test_a_keyword_search_nothing_answers_returns_nothing(maria_words: Memory) -> None:
    maria_words.fresh()

    def titles(query: str, **request: float) -> list[str]:
        result = maria_words.search(
            SearchRequest(query=query, mode="keyword", **request), record_access=False
        )
        return [h.title for h in result.hits]

    assert titles(KEYWORD_NO_ANSWER, min_score=0.0) == ["Trip to Lisbon"]  # it passes the evidence cut
    assert titles(KEYWORD_NO_ANSWER) == []
    result = maria_words.search(SearchRequest(query=KEYWORD_NO_ANSWER, mode="keyword"), record_access=False)
    assert result.notice and "search.min_confidence" in result.notice
    assert titles(ANSWERED)[0] == "Maria adopted a dog"
    # A request for a suggestion keeps its hits: a preference answers it without its words.
    assert titles("Could you suggest a weekend trip to Lisbon with my sister for me?") == ["Trip to Lisbon"]
    # min_confidence 0 switches the cut off.
    off = dataclasses.replace(maria_words.searcher.cfg, min_confidence=0.0)
    found = maria_words.searcher.gather(SearchRequest(query=KEYWORD_NO_ANSWER, mode="keyword"))
    ranked = maria_words.searcher.rank(found, SearchRequest(query=KEYWORD_NO_ANSWER, mode="keyword"), cfg=off)
    assert [h.title for h in ranked.hits] == ["Trip to Lisbon"]


# Every other word is the garden note's: only the name says it is about someone else.
ABOUT_SOMEONE_ELSE = "When did Kevin plant tomatoes, basil and peppers in the raised beds?"


def test_a_keyword_search_for_someone_no_note_mentions_returns_nothing(maria_words: Memory) -> None:
    maria_words.fresh()

    def search(query: str) -> SearchResult:
        return maria_words.search(SearchRequest(query=query, mode="keyword"), record_access=False)

    found = maria_words.searcher.gather(SearchRequest(query=ABOUT_SOMEONE_ELSE, mode="keyword"))
    assert found.unheard == ("Kevin",)
    assert max(share for share, _ in found.coverage.values()) * KEYWORD_SCALE > 0.38  # the words pass
    result = search(ABOUT_SOMEONE_ELSE)
    assert result.hits == []
    assert result.notice and result.notice.startswith("no note mentions Kevin")
    # Where no note passes the evidence cut, the notice still says why.
    assert search("Did Kevin phone?").notice == "no note mentions Kevin (nor a near spelling)"
    # Her name misspelt, or none at all: the garden note.
    assert [h.title for h in search(ABOUT_SOMEONE_ELSE.replace("Kevin", "Marai")).hits][:1] == [
        "Maria's vegetable garden"
    ]
    assert [
        h.title for h in search("When were tomatoes, basil and peppers planted in the raised beds?").hits
    ][:1] == ["Maria's vegetable garden"]
    # A request for a suggestion keeps its hits: a preference answers it without naming anyone.
    assert search("Could you suggest which peppers Kevin should plant in raised beds for me?").hits
    assert keyword_confidence({"a.md": (0.9, 5)}, ABOUT_SOMEONE_ELSE, 0.3, ["Kevin"]) == 0.0
    assert keyword_confidence({"a.md": (0.9, 5)}, ABOUT_SOMEONE_ELSE, 0.3) == pytest.approx(
        0.9 * KEYWORD_SCALE
    )


@pytest.fixture
def maria_chat(tmp_path: Path) -> Iterator[Memory]:
    """Maria's notes as the turns of a conversation, as an ingested chat files them."""
    from tiered_memory.index.embeddings import SentenceTransformerEmbedder

    root = tmp_path / "maria-chat"
    init_vault(root)
    for seq, (rel, text) in enumerate(MARIA.items()):
        write(root, rel, text.replace("---\ntitle:", f"---\nsession: chat-1\nseq: {seq}\ntitle:", 1))
    memory = Memory(Vault(root), embedder_factory=SentenceTransformerEmbedder, now=lambda: FIXED_NOW)
    yield memory
    memory.close()


QUESTION_ABOUT_OXFORD = "What did Maria's sister study at Oxford?"


@pytest.mark.model
def test_a_question_naming_what_a_conversation_never_mentions_returns_nothing(maria_chat: Memory) -> None:
    # The Lisbon turn is near in meaning (Maria's sister, a trip) and holds "Maria" and "sister";
    # but no turn mentions Oxford or studying: what the question is about was never said.
    question = QUESTION_ABOUT_OXFORD
    maria_chat.fresh(vectors=True)
    found = maria_chat.searcher.gather(SearchRequest(query=question))
    assert found.known < 0.5
    assert _titles(maria_chat, question) == []
    assert "Trip to Lisbon" in _titles(maria_chat, question, min_score=0.0)
    # What the chat does hold of her sister is found.
    assert _titles(maria_chat, "Where did Maria and her sister spend a week in June?")[:1] == [
        "Trip to Lisbon"
    ]


def test_what_notes_hold_of_a_question_weighs_in_proportion_to_how_many_they_are() -> None:
    assert notes_known(0.4, 0) == 1.0
    assert notes_known(0.4, KNOWN_FULL_NOTES // 2) == pytest.approx(0.7)
    assert notes_known(0.4, KNOWN_FULL_NOTES) == notes_known(0.4, 10 * KNOWN_FULL_NOTES) == pytest.approx(0.4)


@pytest.mark.model
def test_in_a_persons_own_notes_hybrid_weighs_words_more_and_vector_mode_ignores_what_none_holds(
    maria: Memory,
) -> None:
    # The same question as of the chat above, of the same notes filed as a person's notes: hybrid
    # weighs their words more than near turns (notes_confidence_cosine_weight), and what they hold
    # of it in proportion to how many they are (a few notes hold few words); vector mode, with
    # meaning alone, does not weigh what the notes hold.
    maria.fresh(vectors=True)
    found = maria.searcher.gather(SearchRequest(query=QUESTION_ABOUT_OXFORD))
    assert found.known < 0.5
    cfg = maria.searcher.cfg
    assert cfg.notes_confidence_cosine_weight != cfg.confidence_cosine_weight
    allowance = cfg.confidence_request_allowance
    assert maria.searcher.confidence(found, cfg, "hybrid") == pytest.approx(
        confidence(
            found.vector,
            found.coverage,
            QUESTION_ABOUT_OXFORD,
            cfg.notes_confidence_cosine_weight,
            allowance,
            0.4,
            known=notes_known(found.known, len(MARIA)),
        )
    )
    assert maria.searcher.confidence(found, cfg, "vector") == pytest.approx(
        vector_confidence(found.vector, QUESTION_ABOUT_OXFORD, allowance, 0.4, known=1.0)
    )


HOME_SERVER = {
    "memory/long-term/home-server.md": "---\ntitle: Home server\n---\nThe home server is an old ThinkPad "
    "running Debian. Services run in Docker containers behind nginx as a reverse proxy; backups go "
    "to the NAS every night with restic.\n",
    "memory/long-term/ssh-hardening.md": "---\ntitle: SSH hardening\n---\nDisabled password login and "
    "root login in sshd_config; only ed25519 keys are accepted. fail2ban bans an address after five "
    "failures.\n",
    "memory/long-term/disk-health.md": "---\ntitle: Disk health\n---\nsmartd checks the disks weekly "
    "and mails me when a reallocated sector count grows.\n",
    "memory/long-term/photo-export.md": "---\ntitle: Photo export\n---\nExported the photos from Google "
    "Photos with Takeout; exiftool put the dates back from the JSON sidecars.\n",
    "memory/long-term/dns.md": "---\ntitle: Local DNS\n---\nPi-hole answers DNS for the house and "
    "blocks ads; the router hands it out by DHCP.\n",
}


# What else the home server runs: enough notes for what they hold of a question to weigh in full.
HOME_SERVER_TOPICS = (
    "git rebase", "python virtualenvs", "printer drivers", "laptop battery", "keyboard layouts",
    "vim macros", "docker volumes", "cron jobs", "raspberry pi camera", "router firmware",
    "media server", "static site", "home automation", "mail filters", "shell aliases",
    "monitor calibration", "wifi mesh", "server rack", "ups battery", "log rotation",
)  # fmt: skip


@pytest.mark.model
def test_in_a_persons_own_notes_a_question_near_them_about_what_they_never_mention_returns_nothing(
    tmp_path: Path,
) -> None:
    # A hundred notes about the home server, none of which mentions a VPN, reaching it from
    # outside or a firewall: near in meaning, and weighed as before (meaning nine parts in ten,
    # what the notes hold not at all) each question listed a note.
    from tiered_memory.index.embeddings import SentenceTransformerEmbedder

    root = tmp_path / "home"
    init_vault(root)
    for rel, text in HOME_SERVER.items():
        write(root, rel, text)
    for i in range(KNOWN_FULL_NOTES - len(HOME_SERVER)):
        topic, part = HOME_SERVER_TOPICS[i % len(HOME_SERVER_TOPICS)], i // len(HOME_SERVER_TOPICS) + 1
        write(
            root,
            f"memory/long-term/server/{i:03d}.md",
            f"---\ntitle: Home server: {topic} {part}\n---\nThe home server runs {topic} now, part {part} of setting it up.\n",
        )
    memory = Memory(Vault(root), embedder_factory=SentenceTransformerEmbedder, now=lambda: FIXED_NOW)
    try:
        memory.fresh(vectors=True)
        for question in (
            "which VPN do I use to reach the home server from outside",
            "how did I set up the home server firewall",
        ):
            assert _titles(memory, question) == [], question
            assert _titles(memory, question, min_score=0.0), question
        # What the notes do say is still found.
        assert _titles(memory, "how is the home server backed up")[:1] == ["Home server"]
        assert _titles(memory, "what blocks ads at home")[:1] == ["Local DNS"]
        assert _titles(memory, "which docker containers run on the home server")[:1] == ["Home server"]
    finally:
        memory.close()
