"""A picture pasted into a note as a data URI (`![Pasted image](data:image/png;base64,...)`, as
paste and publishing plugins write it). Reduced from a public Russian digital garden where 43
notes held 15 MB of base64 among 1.4 MB of words: indexed whole, the payload's fragments were
words of the full-text index (89 MB of it) and the vector build embedded it passage by passage."""

from __future__ import annotations

import base64
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import FAKE_CONFIG, FIXED_NOW, DraftingFake, as_json, write

from tiered_memory.app.memory import Memory
from tiered_memory.index.fts import analyze
from tiered_memory.index.indexer import EMBED_FORM, EMBEDDED_FORM, embed_text
from tiered_memory.model import obsidian
from tiered_memory.model.note import parse
from tiered_memory.storage.vault import Vault, init_vault

Run = Callable[..., Result]
PAYLOAD = base64.b64encode(random.Random(7).randbytes(150_000)).decode()
PASTED = (
    "A model for making decisions in a company.\n\n"
    f"![Pasted image 20220704220614.png](data:image/png;base64,{PAYLOAD})\n"
    "To see where you stand, use the Kepner-Tregoe site.\n"
)
OTHER = "Notes on consulting firms. " * 40 + "Kepner-Tregoe is one of them.\n"


def test_without_inline_data_keeps_the_words_and_the_link() -> None:
    shown = obsidian.without_inline_data(PASTED)
    assert PAYLOAD[:40] not in shown and len(shown) < 200
    assert "![Pasted image 20220704220614.png](data:image/png;base64,)" in shown
    assert "Kepner-Tregoe site" in shown
    plain = "base64, as a word in a sentence; data:text/plain without a payload\n"
    assert obsidian.without_inline_data(plain) == plain


def test_a_pasted_image_is_neither_searched_nor_embedded(run: Run, vault_path: Path) -> None:
    write(vault_path, "Cynefin.md", PASTED)
    write(vault_path, "Consultants.md", OTHER)
    results = as_json(run("search", "--json", "--mode", "keyword", "kepner tregoe"))["results"]
    assert [r["path"] for r in results] == ["Cynefin.md", "Consultants.md"]
    assert "Kepner-Tregoe site" in results[0]["passage"]
    fragment = next(word for word in analyze(PAYLOAD) if len(word) > 12 and word.isalnum())
    assert as_json(run("search", "--json", "--mode", "keyword", fragment))["results"] == []
    text = embed_text(parse(PASTED, "Cynefin.md"))
    assert PAYLOAD[:40] not in text and "Kepner-Tregoe site" in text


def test_vectors_of_the_form_before_are_replaced_for_pasted_images_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    write(root, "Cynefin.md", PASTED)
    write(root, "Hub.md", "# Hub\n<div class='card'>Otters and beavers</div>\n")
    before = DraftingFake(drafts=False)
    with monkeypatch.context() as older:  # form "2" embedded the payload
        older.setattr(obsidian, "without_inline_data", lambda text: text)
        memory = Memory(Vault(root), embedder_factory=lambda: before, now=lambda: FIXED_NOW)
        try:
            memory.refresh(vectors=False)
            memory.indexer.ensure_vectors(deep=True)
            memory.indexer.catalog.set_meta(EMBEDDED_FORM, "2")
        finally:
            memory.close()
    assert PAYLOAD[:40] in "\n".join(before.texts("float32"))
    after = DraftingFake(drafts=False)
    memory = Memory(Vault(root), embedder_factory=lambda: after, now=lambda: FIXED_NOW)
    try:
        memory.refresh(vectors=True)  # no note changed
        assert memory.indexer.catalog.get_meta(EMBEDDED_FORM) == EMBED_FORM == "3"
    finally:
        memory.close()
    embedded = "\n".join(after.texts("float32"))
    assert "Kepner-Tregoe site" in embedded and PAYLOAD[:40] not in embedded
    assert "Otters" not in embedded  # form "2" already embedded it as form "3" does
