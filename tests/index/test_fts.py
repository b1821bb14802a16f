from __future__ import annotations

import json
import os
import random
import string
import subprocess
import sys
import time
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from whoosh import query as wq
from whoosh.codec.whoosh3 import W3Codec
from whoosh.fields import KEYWORD, TEXT

from tiered_memory.index import bm25f, fts
from tiered_memory.index.fts import SCHEMA_VERSION, FtsDoc, FtsIndex, analyze
from tiered_memory.index.query_terms import MAX_LOOKED_UP


def make_doc(path: str, title: str = "", body: str = "", **kw: object) -> FtsDoc:
    fields: dict[str, object] = {
        "path": path,
        "id": Path(path).stem,
        "title": title,
        "body": body,
        "tags": [],
        "entities": [],
        "project": "",
        "tier": "long",
        "category": "decisions",
        "status": "active",
    }
    fields.update(kw)
    return FtsDoc(**fields)  # type: ignore[arg-type]


def paths_of(results: list[tuple[str, float]]) -> list[str]:
    return [p for p, _ in results]


@pytest.fixture(autouse=True, params=["arrays", "plain"])
def scorer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs with both ways of adding up scores: numpy arrays and plain Python."""
    monkeypatch.setattr(bm25f, "numpy_loaded", lambda: request.param == "arrays")
    return str(request.param)


@pytest.fixture
def ix(tmp_path: Path) -> Iterator[FtsIndex]:
    index = FtsIndex.open(tmp_path / "fts")
    yield index
    index.close()


@pytest.fixture
def corpus(ix: FtsIndex) -> FtsIndex:
    ix.upsert(
        [
            make_doc("m/db.md", "Database migration", "We ran the schema migration on Friday.", tags=["db"]),
            make_doc("m/survey.md", "测量", "该项目控制点坐标系为 CGCS2000，高程基准为 1985 国家高程基准。"),
            make_doc(
                "m/group.md",
                "Support group",
                "Caroline went to the LGBTQ support group on 7 May 2023.",
                entities=["Caroline"],
                tier="short",
                session="s1",
                tags=["life"],
            ),
            make_doc(
                "m/script.md", "脚本", "用 Python 写脚本处理数据", tier="mid", tags=["Code"], project="Alpha"
            ),
            make_doc(
                "m/cooking.md", "Pasta", "Boil water, add salt, cook pasta for nine minutes.", tier="archive"
            ),
        ]
    )
    return ix


# -- analyzer -------------------------------------------------------------------------------------


def test_analyze_stems_lowercases_and_drops_stopwords() -> None:
    assert analyze("When did Caroline go to the LGBTQ support group?") == [
        "carolin",
        "go",
        "lgbtq",
        "support",
        "group",
    ]
    assert analyze("migrates") == analyze("migration")
    assert "2023" in analyze("in May 2023") and "3.11" in analyze("Python 3.11")


def test_analyze_cjk_bigrams_and_mixed_script() -> None:
    assert analyze("坐标系") == ["坐标", "标系"]
    assert analyze("用 Python 写脚本") == ["用", "python", "写脚", "脚本"]
    assert analyze("坐标系为CGCS2000") == ["坐标", "标系", "系为", "cgcs2000"]
    assert analyze("ＣＧＣＳ２０００") == ["cgcs2000"]  # fullwidth forms fold to ASCII
    assert analyze("café Zürich") == analyze("cafe zurich")


# -- search ---------------------------------------------------------------------------------------


def test_stemmed_match(corpus: FtsIndex) -> None:
    assert paths_of(corpus.search("migrates"))[0] == "m/db.md"


def test_cjk_word_query(corpus: FtsIndex) -> None:
    assert paths_of(corpus.search("坐标系")) == ["m/survey.md"]
    assert paths_of(corpus.search("脚本")) == ["m/script.md"]


def test_code_like_token_is_case_insensitive(corpus: FtsIndex) -> None:
    assert paths_of(corpus.search("CGCS2000")) == ["m/survey.md"]
    assert paths_of(corpus.search("cgcs2000")) == ["m/survey.md"]


def test_natural_language_question(corpus: FtsIndex) -> None:
    results = corpus.search("When did Caroline go to the LGBTQ support group?")
    assert paths_of(results)[0] == "m/group.md"
    assert all(score > 0 for _, score in results)
    assert [s for _, s in results] == sorted((s for _, s in results), reverse=True)


def test_limit(corpus: FtsIndex) -> None:
    assert len(corpus.search("migration pasta caroline", limit=2)) == 2
    assert corpus.search("pasta", limit=0) == []


def test_upsert_replaces(corpus: FtsIndex) -> None:
    assert corpus.upsert([make_doc("m/db.md", "Gardening", "Tomatoes need sun.")]) == 1
    assert corpus.search("migration") == []
    assert paths_of(corpus.search("tomato")) == ["m/db.md"]
    assert corpus.doc_count() == 5


def test_upsert_same_path_twice_in_one_batch_keeps_last(ix: FtsIndex) -> None:
    assert ix.upsert([make_doc("a.md", body="first apple"), make_doc("a.md", body="second banana")]) == 1
    assert ix.search("apple") == [] and paths_of(ix.search("banana")) == ["a.md"]
    assert ix.doc_count() == 1


def test_delete(corpus: FtsIndex) -> None:
    assert corpus.delete(["m/cooking.md", "m/missing.md"]) == 1
    assert corpus.search("pasta") == []
    assert "m/cooking.md" not in corpus.paths()
    assert corpus.delete([]) == 0


def test_paths_count_and_clear(corpus: FtsIndex) -> None:
    assert corpus.paths() == {"m/db.md", "m/survey.md", "m/group.md", "m/script.md", "m/cooking.md"}
    assert corpus.doc_count() == 5
    corpus.clear()
    assert corpus.doc_count() == 0 and corpus.paths() == set() and corpus.search("pasta") == []
    corpus.upsert([make_doc("x.md", body="pasta again")])
    assert paths_of(corpus.search("pasta")) == ["x.md"]


def test_where_filters(corpus: FtsIndex) -> None:
    q = "migration pasta caroline python"
    assert paths_of(corpus.search(q, where={"tier": ["short"]})) == ["m/group.md"]
    assert set(paths_of(corpus.search(q, where={"tier": ["short", "archive"]}))) == {
        "m/group.md",
        "m/cooking.md",
    }
    assert paths_of(corpus.search(q, where={"tags": ["db"]})) == ["m/db.md"]
    assert paths_of(corpus.search(q, where={"tags": ["code"], "project": ["alpha"]})) == ["m/script.md"]
    assert paths_of(corpus.search(q, where={"session": ["s1"]})) == ["m/group.md"]
    assert paths_of(corpus.search(q, where={"entities": ["Caroline"]})) == ["m/group.md"]
    assert paths_of(corpus.search(q, where={"path": ["m/db.md"]})) == ["m/db.md"]
    # Keys are ANDed.
    assert corpus.search(q, where={"tier": ["short"], "tags": ["db"]}) == []
    assert corpus.search(q, where={"tier": []}) == []
    with pytest.raises(ValueError):
        corpus.search(q, where={"colour": ["red"]})


def test_where_filter_sees_later_writes(corpus: FtsIndex) -> None:
    assert corpus.search("pasta", where={"tier": ["short"]}) == []
    corpus.upsert([make_doc("m/cooking.md", "Pasta", "pasta", tier="short")])
    assert paths_of(corpus.search("pasta", where={"tier": ["short"]})) == ["m/cooking.md"]


@pytest.mark.parametrize(
    "query",
    [
        '"',
        "AND OR NOT",
        "a:b",
        "(((",
        "*",
        "title:",
        "🙂🔥",
        "",
        "   ",
        "the of and what when",
        "\x00\x1f",
        "^2~",
    ],
)
def test_hostile_queries_never_raise(corpus: FtsIndex, query: str) -> None:
    assert corpus.search(query) == []


def test_hostile_query_with_real_terms_still_searches(corpus: FtsIndex) -> None:
    assert paths_of(corpus.search('"pasta" AND (title:salt* OR 🙂'))[0] == "m/cooking.md"


def test_long_query_is_capped(corpus: FtsIndex) -> None:
    assert isinstance(corpus.search("pasta " + " ".join(f"word{i}" for i in range(5000))), list)


def test_a_query_of_200000_words_looks_up_a_bounded_number_of_them(
    corpus: FtsIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each distinct word of a query is looked up in five fields before the search: a pasted
    200,000 different words took over a minute through `tmem search` and MCP `recall`."""
    looked_up: list[str] = []
    real = fts._body_idf
    monkeypatch.setattr(fts, "_body_idf", lambda snap, term: looked_up.append(term) or real(snap, term))
    hits = corpus.search("pasta " + " ".join(f"word{i}" for i in range(200_000)))
    assert paths_of(hits)[0] == "m/cooking.md"
    assert len(set(looked_up)) <= MAX_LOOKED_UP


# -- ranking --------------------------------------------------------------------------------------


def test_title_match_outranks_body_only(ix: FtsIndex) -> None:
    ix.upsert(
        [
            make_doc("body.md", "Weekly notes", "the kubernetes cluster was upgraded and more text here"),
            make_doc("title.md", "Kubernetes", "the cluster was upgraded and more text here today"),
        ]
    )
    assert paths_of(ix.search("kubernetes")) == ["title.md", "body.md"]


def test_more_query_terms_matched_ranks_higher(ix: FtsIndex) -> None:
    ix.upsert(
        [
            make_doc("one.md", body="the postgres server restarted overnight"),
            make_doc("two.md", body="the postgres replica lagged overnight"),
            make_doc("other.md", body="nothing relevant in here at all"),
        ]
    )
    assert paths_of(ix.search("postgres replica")) == ["two.md", "one.md"]


def test_scores_match_whoosh_bm25f(corpus: FtsIndex) -> None:
    corpus.upsert([make_doc("m/db.md", "Database migration v2", "Migration done; rollback plan ready.")])
    query = "database migration Caroline support 坐标系 python"
    terms = list(dict.fromkeys(analyze(query)))
    reference = wq.Or([wq.Term(f, t, boost=b) for t in terms for f, b in fts._SEARCH_FIELDS])
    with corpus._ix.searcher() as s:
        expected = {hit["path"]: hit.score for hit in s.search(reference, limit=None)}
    got = dict(corpus.search(query))
    assert got.keys() == expected.keys()
    for path, score in got.items():
        assert score == pytest.approx(expected[path], rel=1e-5)


def test_scores_match_whoosh_across_blocks_segments_and_deletions(
    ix: FtsIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Postings spanning several whoosh blocks (shrunk to 16 postings here), several segments, deletions.
    monkeypatch.setattr(fts, "_BLOCK_LIMIT", 16)
    ix.upsert([make_doc(f"a{i}.md", f"alpha {i}", "alpha beta " * (1 + i % 7)) for i in range(400)])
    ix.upsert([make_doc(f"b{i}.md", "beta", "alpha gamma " * (1 + i % 3)) for i in range(150)])
    ix.upsert([make_doc(f"a{i}.md", "replaced", "gamma only") for i in range(0, 400, 5)])
    ix.delete([f"b{i}.md" for i in range(0, 150, 4)])
    decoded: list[tuple[int, int]] = []  # (first block's length, total postings)
    real = bm25f._block_postings

    def spy(m: Any) -> bm25f.Postings:
        first = m._blocklength
        found = real(m)
        decoded.append((first, len(found.ids)))
        return found

    monkeypatch.setattr(bm25f, "_block_postings", spy)
    query = "alpha beta gamma"
    terms = analyze(query)
    reference = wq.Or([wq.Term(f, t, boost=b) for t in terms for f, b in fts._SEARCH_FIELDS])
    with ix._ix.searcher() as s:
        expected = {hit["path"]: hit.score for hit in s.search(reference, limit=None)}
    got = dict(ix.search(query, limit=10_000))
    assert any(first <= 16 < total for first, total in decoded)  # multi-block lists were decoded
    assert got.keys() == expected.keys() and len(got) == ix.doc_count()
    for path, score in got.items():
        assert score == pytest.approx(expected[path], rel=1e-5)


def test_slow_public_postings_path_gives_same_results(
    corpus: FtsIndex, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    query = "database migration Caroline support 坐标系 python pasta"
    fast = corpus.search(query)

    def broken(*args: object) -> None:
        raise AttributeError("internals changed")

    monkeypatch.setattr(bm25f, "_block_postings", broken)
    monkeypatch.setattr(bm25f, "_length_column", broken)  # the bulk length read too
    slow_ix = FtsIndex.open(corpus.directory)
    try:
        slow = slow_ix.search(query)
    finally:
        slow_ix.close()
    assert slow == fast  # the same lengths and postings, so the same floats


class _Blocks:
    """A stand-in for whoosh3's block matcher: blocks of (first id then gaps, weights)."""

    _byteids = False

    def __init__(self, blocks: list[tuple[tuple[int, ...], Any]]) -> None:
        self._blocks, self._at = blocks, 0
        self._nextoffset = 1

    def _read_data(self) -> None:
        self._data = self._blocks[self._at]
        self._blocklength = len(self._data[0])
        self._lastblock = self._at == len(self._blocks) - 1

    def _goto(self, offset: int) -> None:
        self._at += offset


def test_block_postings_decode_gaps_and_refuse_ids_that_do_not_ascend() -> None:
    good = bm25f._block_postings(_Blocks([((0, 2, 1), (1.0, 2.0, 1.0)), ((7, 1), None)]))
    assert list(good.ids) == [0, 2, 3, 7, 8] and list(good.tfs) == [1.0, 2.0, 1.0, 1.0, 1.0]
    for bad in (
        [((3, 0), None)],  # a gap of 0: the same id twice
        [((3, 2), None), ((5,), None)],  # a block starting at or below the last one's end
        [((), None)],  # an empty block
    ):
        with pytest.raises(ValueError):
            bm25f._block_postings(_Blocks(bad))


def test_both_scorers_give_the_same_floats_when_each_field_has_its_own_norms() -> None:
    avgfls = [1.0 + 7.5 * i for i in range(40)]

    def contributions() -> Iterator[bm25f.Contribution]:
        # Each field's norms made and dropped in turn, as a search makes them: a freed tuple's
        # id may come back for a later field's.
        for avgfl in avgfls:
            postings = bm25f.Postings(array("q", [0, 3]), array("d", [1.0, 2.0]))
            yield bm25f.Contribution(0, postings, bytes([4, 0, 0, 90]), 2.0, bm25f.norms(avgfl))

    plain = bm25f._top_plain(contributions(), 10, frozenset(), None)
    assert bm25f._top_arrays(4, contributions(), 10, frozenset(), None) == plain
    expected = sum(
        2.0
        * (1.0 * (bm25f.K1 + 1))
        / (1.0 + bm25f.K1 * ((1 - bm25f.B) + bm25f.B * bm25f.LENGTH_TABLE[4] / a))
        for a in avgfls
    )
    assert dict(plain)[0] == pytest.approx(expected)


def test_many_segments_and_deletions(ix: FtsIndex) -> None:
    for i in range(12):  # enough small commits to trigger the segment merge policy
        ix.upsert([make_doc(f"n{i}.md", f"note {i}", f"common words plus token{i}")])
    ix.delete(["n3.md"])
    ix.upsert([make_doc("n5.md", "note five", "replaced text")])
    assert len(list(ix.directory.glob("*.seg"))) < 10  # the tier of one-note segments was merged
    assert ix.doc_count() == 11
    assert paths_of(ix.search("token7")) == ["n7.md"]
    assert ix.search("token3") == [] and ix.search("token5") == []
    assert len(ix.search("common")) == 10
    ix.compact()
    assert len(list(ix.directory.glob("*.seg"))) == 1
    assert ix.doc_count() == 11 and len(ix.search("common")) == 10


def test_a_segment_left_with_deleted_documents_only_is_dropped(ix: FtsIndex) -> None:
    ix.upsert([make_doc(f"n{i}.md", f"note {i}", f"body {i}") for i in range(40)])
    for round in range(5):  # each edit's one-note segment is emptied by the next edit of that note
        ix.upsert([make_doc("n1.md", "note 1", f"edited body, round {round}")])
    segments = list(ix._ix._segments())
    assert all(seg.deleted_count() < seg.doc_count_all() for seg in segments)
    assert len(segments) == 2 and ix.doc_count() == 40
    assert paths_of(ix.search("round")) == ["n1.md"]


def test_edits_fragment_the_index_until_compaction(ix: FtsIndex) -> None:
    ix.upsert([make_doc(f"n{i}.md", f"note {i}", f"body {i}") for i in range(40)])
    assert ix.fragmentation() == (1, 0.0) and not ix.needs_compaction()
    for i in range(12):  # each edit leaves the old copy behind as a deleted document
        ix.upsert([make_doc(f"n{i}.md", f"note {i}", f"edited body {i}")])
    segments, deleted = ix.fragmentation()
    assert segments > 1 and deleted == pytest.approx(12 / 52)
    assert ix.needs_compaction(max_deleted=0.2) and not ix.needs_compaction(max_deleted=0.5)
    assert ix.needs_compaction(max_deleted=0.5, max_segments=segments - 1)
    ix.compact()
    assert ix.fragmentation() == (1, 0.0) and not ix.needs_compaction(max_deleted=0.0)
    assert paths_of(ix.search("edited 3"))[0] == "n3.md" and ix.doc_count() == 40


def test_searches_during_compaction_see_a_whole_generation(ix: FtsIndex) -> None:
    import threading

    ix.upsert([make_doc(f"n{i}.md", f"note {i}", f"shared words {i}") for i in range(300)])
    for i in range(0, 300, 3):
        ix.upsert([make_doc(f"n{i}.md", f"note {i}", f"shared words edited {i}")])
    counts: list[int] = []
    done = threading.Event()

    def search_until_done() -> None:
        while not done.is_set():
            counts.append(len(ix.search("shared", limit=1000)))

    reader = threading.Thread(target=search_until_done)
    reader.start()
    try:
        ix.compact()
    finally:
        done.set()
        reader.join()
    assert counts and set(counts) == {300}  # never a half-merged view, never an error
    assert ix.fragmentation() == (1, 0.0)


# -- persistence and recovery ---------------------------------------------------------------------


def test_fresh_open_flags(tmp_path: Path) -> None:
    ix = FtsIndex.open(tmp_path / "new" / "fts")
    assert ix.rebuilt is False and ix.created is True
    ix.upsert([make_doc("a.md", body="persisted words")])
    ix.close()
    again = FtsIndex.open(tmp_path / "new" / "fts")
    assert again.rebuilt is False and again.created is False
    assert paths_of(again.search("persisted")) == ["a.md"]
    again.close()


def test_second_instance_sees_writes_of_first(tmp_path: Path) -> None:
    writer, reader = FtsIndex.open(tmp_path), FtsIndex.open(tmp_path)
    assert reader.search("shared") == []
    writer.upsert([make_doc("a.md", body="shared words")])
    assert paths_of(reader.search("shared")) == ["a.md"]
    writer.close()
    reader.close()


def _reopen_after(directory: Path, damage: str) -> FtsIndex:
    segs = sorted(directory.glob("*.seg"))
    if damage == "garbage":
        for seg in segs:
            seg.write_bytes(b"\x00garbage" * (seg.stat().st_size // 8 + 1))
    elif damage == "remove-segment":
        segs[0].unlink()
    elif damage == "truncate-segment":
        segs[0].write_bytes(segs[0].read_bytes()[:40])
    elif damage == "garbage-toc":
        for toc in directory.glob("_*.toc"):
            toc.write_bytes(b"not a toc")
    elif damage == "remove-toc":
        for toc in directory.glob("_*.toc"):
            toc.unlink()
    return FtsIndex.open(directory)


@pytest.mark.parametrize(
    "damage", ["garbage", "remove-segment", "truncate-segment", "garbage-toc", "remove-toc"]
)
def test_corrupt_index_is_rebuilt(tmp_path: Path, damage: str) -> None:
    directory = tmp_path / "fts"
    ix = FtsIndex.open(directory)
    ix.upsert([make_doc("a.md", body="alpha words")])
    ix.upsert([make_doc("b.md", body="beta words")])
    ix.close()
    reopened = _reopen_after(directory, damage)
    assert reopened.rebuilt is True
    assert reopened.doc_count() == 0 and reopened.search("alpha") == []
    reopened.upsert([make_doc("c.md", body="gamma words")])
    assert paths_of(reopened.search("gamma")) == ["c.md"]
    reopened.close()


def test_schema_version_change_rebuilds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ix = FtsIndex.open(tmp_path)
    ix.upsert([make_doc("a.md", body="alpha")])
    ix.close()
    monkeypatch.setattr(fts, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    reopened = FtsIndex.open(tmp_path)
    assert reopened.rebuilt is True and reopened.doc_count() == 0
    reopened.close()
    meta = next(p for p in tmp_path.iterdir() if p.suffix == ".json")
    assert json.loads(meta.read_text())["schema_version"] == SCHEMA_VERSION + 1


def test_wipe_leaves_foreign_files_alone(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("keep me")
    ix = FtsIndex.open(tmp_path)
    ix.upsert([make_doc("a.md", body="alpha")])
    ix.close()
    for toc in tmp_path.glob("_*.toc"):
        toc.write_bytes(b"junk")
    assert FtsIndex.open(tmp_path).rebuilt is True
    assert (tmp_path / "notes.md").read_text() == "keep me"


def test_search_on_damaged_postings_returns_empty(corpus: FtsIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*args: object) -> None:
        raise OSError("disk went away")

    monkeypatch.setattr(bm25f, "decode_postings", explode)
    assert corpus.search("pasta") == []


def test_score_apart_equals_the_score_the_document_would_have_inside(tmp_path: Path) -> None:
    """A note kept out of the index (encrypted, held in memory) scores as if it had been indexed."""
    kept = make_doc(
        "a.md", "Thunderstorms", "She fears thunderstorms and keeps the shutters closed", tags=["fear"]
    )
    others = [make_doc(f"n{i}.md", f"Note {i}", f"the garden needs water, day {i}") for i in range(5)]
    others.append(make_doc("s.md", "Storm", "a thunderstorms warning for the garden"))
    with FtsIndex.open(tmp_path / "all") as whole, FtsIndex.open(tmp_path / "apart") as apart:
        whole.upsert([kept, *others], new=True)
        apart.upsert(others, new=True)
        for query in ("thunderstorms shutters", "fear", "garden thunderstorms"):
            inside = dict(whole.search(query))["a.md"] if "a.md" in dict(whole.search(query)) else 0.0
            [outside] = apart.score_apart(query, [fts.doc_terms(kept)])
            assert outside == pytest.approx(inside, rel=0.02), query
        assert apart.score_apart("nothing matches", [fts.doc_terms(kept)]) == [0.0]
        assert apart.score_apart("shutters", []) == []
    with FtsIndex.open(tmp_path / "empty") as empty:  # every note encrypted: nothing on disk
        assert empty.score_apart("shutters", [fts.doc_terms(kept)])[0] > 0


def test_unheard_names_are_those_no_note_holds_nor_spells_near(tmp_path: Path) -> None:
    docs = [
        make_doc("a.md", "Kevin's trip", "Kevin and Muhhamed drove to the coast"),
        make_doc("b.md", "Groceries", "bread, milk and tomatoes"),
    ]
    sealed = make_doc("s.md", "Secret", "Paola's surprise party")
    with FtsIndex.open(tmp_path / "ix") as index:
        assert index.unheard(["Paola"]) == []  # an empty index answers nothing anyway
        index.upsert(docs, new=True)
        assert index.unheard(["Oxford", "Kevin", "Paola"]) == ["Oxford", "Paola"]
        assert index.unheard(["Muhammad", "Kevni"]) == []  # near spellings of names it holds
        # A note kept out of the index (sealed, held in memory) holds a name as well.
        assert index.unheard(["Paola", "Paolo"], apart=[fts.doc_terms(sealed)]) == []
        assert index.unheard([]) == []


ANALYZER_SAMPLES = [
    "When did Caroline go to the LGBTQ support group? She went on 7 May 2023.",
    "Python 3.11 and v1.2.3 replaced config.yaml; e.g. the café's naïve résumé",
    "坐标系转换 CGCS2000 控制点，今天下午完成。東京の天気は晴れ。서울 날씨",
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ and İstanbul ß ﬁle Ⅻ",
    "देवनागरी लिपि, ёлка Ёж, שָׁלוֹם, مَرْحَبًا",
    "a I s x 5 _under_score_ running runs ran easily fairly the of and",
    "v1.2.3. 3..11 1.2.a x.5 .5 5. a-b_c__d e.g. R2-D2 OPS-1234 UTF8 \x00\x1f\x7f ~!@#$%^&*()[]{}|\\",
    "",
    "   \n\t ",
]


@pytest.mark.parametrize("text", ANALYZER_SAMPLES)
def test_fast_analysis_gives_exactly_the_whoosh_analyzer_terms(text: str) -> None:
    # Indexing and queries take the fast path; whoosh's filter chain is the definition it must keep.
    expected = [t.text for t in fts._ANALYZER(text)]
    fts._word_terms.clear()  # cold cache, then warm: the same either way
    assert analyze(text) == expected
    assert analyze(text) == expected
    counts: dict[str, int] = {}
    for term in expected:
        counts[term] = counts.get(term, 0) + 1
    assert fts.term_counts(text) == counts


@pytest.mark.parametrize("text", ANALYZER_SAMPLES)
def test_fast_fields_index_the_postings_whoosh_would(text: str) -> None:
    plain_text = TEXT(analyzer=fts._ANALYZER, phrase=False)
    assert sorted(fts._text().index(text)) == sorted(plain_text.index(text))
    labels = "\x1f".join(["Geodesy", "geodesy/Datum", "", text])
    plain_label = KEYWORD(analyzer=fts._label().analyzer)
    assert sorted(fts._label().index(labels)) == sorted(plain_label.index(labels))


def test_ascii_text_takes_the_short_path_to_the_same_terms() -> None:
    # Plain ASCII text is matched with a smaller regex: it must cut exactly where the full one does.
    rng = random.Random(5)
    alphabet = string.printable + "....___---000111"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        assert analyze(text) == [t.text for t in fts._ANALYZER(text)], text


def test_the_word_cache_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fts, "_WORD_CACHE_LIMIT", 10)
    fts._word_terms.clear()
    words = [f"word{i}x" for i in range(25)]
    assert analyze(" ".join(words)) == [t.text for t in fts._ANALYZER(" ".join(words))]
    assert len(fts._word_terms) <= 10


def test_segments_keep_whoosh_s_own_codec_class(tmp_path: Path) -> None:
    # whoosh pickles each segment's codec into the index's table of contents: a class of ours
    # there would make the index unreadable to another tmem version sharing the vault.
    index = FtsIndex.open(tmp_path / "fts")
    index.upsert([make_doc("a.md", "Alpha", "alpha beta")])
    index.close()
    reopened = FtsIndex.open(tmp_path / "fts")
    segments = reopened._ix._segments()
    assert segments
    assert all(type(seg.codec()) is W3Codec for seg in segments)
    assert not reopened.rebuilt
    reopened.close()


def test_known_is_the_share_of_the_query_some_note_holds(corpus: FtsIndex, ix: FtsIndex) -> None:
    # Every term held by some note, though no one note holds them all.
    assert corpus.known("Caroline pasta migration") == pytest.approx(1.0)
    # A name no note mentions weighs as the rarest term there is: half of two such terms.
    half = corpus.known("Caroline Melanie")
    assert half == pytest.approx(0.5)
    assert corpus.known("Melanie Jon") == 0.0
    assert corpus.known("the of and") == 1.0  # no searchable term: nothing to judge
    assert ix.known("anything") == 0.0  # an empty index holds nothing
    # A note kept out of the index (a sealed one, held in memory) holds its terms too.
    sealed = fts.doc_terms(make_doc("m/sealed.md", "Diary", "Melanie wrote about her week."))
    assert corpus.known("Caroline Melanie", apart=[sealed]) == pytest.approx(1.0)
    assert ix.known("Melanie", apart=[sealed]) == pytest.approx(1.0)


def test_known_is_one_quiet_answer_when_the_index_cannot_be_read(
    corpus: FtsIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object) -> None:
        raise OSError("index gone")

    monkeypatch.setattr(corpus, "_current", broken)
    assert corpus.known("Caroline") == 1.0
    assert corpus.doc_count() == 0  # what a search's confidence counts the notes by


def test_coverage_apart_is_the_share_of_the_query_a_note_kept_out_holds(tmp_path: Path) -> None:
    """An encrypted note held in memory is judged by its share of the query like an indexed hit,
    a term only it holds counting as the rarest term there is."""
    kept = make_doc("a.md", "Blood type", "Meilin's blood type is AB negative")
    others = [make_doc(f"n{i}.md", f"Note {i}", f"the garden needs water, day {i}") for i in range(5)]
    with FtsIndex.open(tmp_path / "apart") as apart:
        apart.upsert(others, new=True)
        [(whole, held)] = apart.coverage_apart("blood type", [fts.doc_terms(kept)])
        [(half, one)] = apart.coverage_apart("blood pressure", [fts.doc_terms(kept)])
        [(none, zero)] = apart.coverage_apart("garden water", [fts.doc_terms(kept)])
        assert (whole, held) == (1.0, 2) and one == 1 and 0.3 < half < 0.7 and (none, zero) == (0.0, 0)
        assert apart.coverage_apart("blood", []) == []


OPEN_AND_SEARCH = """
import sys, time
from pathlib import Path
from tiered_memory.index.fts import FtsIndex
start = float(sys.argv[2])
time.sleep(max(0.0, start - time.time()))
index = FtsIndex.open(Path(sys.argv[1]))
time.sleep(0.3)  # what a first command does next: search the index it opened
index.search("anything")
"""


@pytest.mark.slow
def test_processes_opening_a_first_index_at_once_never_wipe_each_others(tmp_path: Path) -> None:
    """Parallel first commands on a new vault: one took another's half-created index for a
    damaged one, wiped it, and the other's next search failed ("Index 'tmem' does not exist")."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for attempt in range(4):
        folder = tmp_path / f"fts{attempt}"
        start = time.time() + 2.0
        runs = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_AND_SEARCH, str(folder), str(start)],
                env=env,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(6)
        ]
        for run in runs:
            _, err = run.communicate(timeout=60)
            assert run.returncode == 0, err.strip().splitlines()[-1]
