"""A question asked in another European language is searched without its function words."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import FAKE_CONFIG, FIXED_NOW, write

from tiered_memory.app.memory import Memory
from tiered_memory.index.query_language import foreign_function_words
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault, init_vault


def test_the_function_words_of_a_question_in_another_language_are_found() -> None:
    assert foreign_function_words("¿por qué no usamos embeddings para buscar en el vault?") >= {
        "por",
        "para",
        "en",
        "el",
    }
    assert foreign_function_words("come ho disabilitato il login di root via ssh sul server") >= {
        "come",
        "il",
        "di",
    }
    assert foreign_function_words("wie richte ich den Server ein") >= {"wie", "ich", "den"}
    # English, with a foreign name or word in it, and text in no listed language: none.
    assert foreign_function_words("What did Caroline do at Casa de Campo?") == frozenset()
    assert foreign_function_words("I am a die hard fan of the band") == frozenset()
    assert foreign_function_words("坐标系") == frozenset()
    assert foreign_function_words("la") == frozenset()


# A person's Spanish notes: every one holds "de", "la", "el", "en", "para".
NOTES = {
    "memory/long-term/tortilla.md": "---\ntitle: Tortilla\n---\nLa receta de la tortilla de patatas "
    "lleva huevos y cebolla; el truco es dejarla jugosa en el centro.\n",
    "memory/long-term/servidor.md": "---\ntitle: Servidor de casa\n---\nEl servidor de la casa usa "
    "Docker para los servicios y una copia de seguridad en el NAS cada noche.\n",
    "memory/long-term/bici.md": "---\ntitle: Bicicleta\n---\nLa cadena de la bici se engrasa cada mes "
    "y la presión de las ruedas se revisa en la gasolinera.\n",
}


@pytest.fixture
def spanish(tmp_path: Path) -> Iterator[Memory]:
    root = tmp_path / "notas"
    init_vault(root, config_text=FAKE_CONFIG)  # keyword mode needs no model
    for rel, text in NOTES.items():
        write(root, rel, text)
    memory = Memory(Vault(root), now=lambda: FIXED_NOW)
    memory.fresh()
    yield memory
    memory.close()


def _titles(memory: Memory, query: str) -> list[str]:
    result = memory.search(SearchRequest(query=query, mode="keyword"), record_access=False)
    return [h.title for h in result.hits]


def test_a_spanish_question_nothing_answers_is_not_answered_by_its_function_words(spanish: Memory) -> None:
    # No note says anything of the router's password; the question's "la", "de", "del", "casa"
    # and "en" made the home server's note hold most of it.
    assert _titles(spanish, "¿cuál es la contraseña del router de la casa en el trabajo?") == []
    # What the notes do say is found by its own words.
    assert _titles(spanish, "¿cada cuánto se engrasa la cadena de la bici?")[:1] == ["Bicicleta"]
    assert _titles(spanish, "¿qué lleva la receta de la tortilla?")[:1] == ["Tortilla"]


def test_a_question_whose_other_words_no_note_holds_is_not_searched_for_its_function_words(
    spanish: Memory,
) -> None:
    # "contraseña", "wifi" and "vecino" are in no note: the question was searched for its "es",
    # "la" and "del" alone, and the tortilla's note held them.
    assert _titles(spanish, "¿cuál es la contraseña del wifi del vecino?") == []
    # A query of nothing but function words still searches for them.
    assert _titles(spanish, "de la")
