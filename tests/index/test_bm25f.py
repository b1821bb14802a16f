"""The two ways of adding up BM25F scores (numpy arrays, plain Python) agree bit for bit."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from tiered_memory.index import bm25f
from tiered_memory.index.fts import FtsDoc, FtsIndex

WORDS = "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega river stone".split()


def doc(path: str, rng: random.Random, **kw: object) -> FtsDoc:
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 60)))
    fields: dict[str, object] = {
        "path": path,
        "id": Path(path).stem,
        "title": rng.choice(WORDS),
        "body": body,
        "tags": rng.sample(WORDS, 2),
        "entities": [],
        "project": "",
        "tier": rng.choice(["short", "mid", "long"]),
        "category": "decisions",
        "status": "active",
    }
    fields.update(kw)
    return FtsDoc(**fields)  # type: ignore[arg-type]


def both(ix: FtsIndex, monkeypatch: pytest.MonkeyPatch, *args: object, **kw: object) -> tuple[object, object]:
    out = []
    for arrays in (True, False):
        monkeypatch.setattr(bm25f, "numpy_loaded", lambda arrays=arrays: arrays)
        out.append(ix.search(*args, **kw))  # type: ignore[arg-type]
    return out[0], out[1]


def test_arrays_and_plain_python_give_identical_scores_and_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(7)
    monkeypatch.setattr("tiered_memory.index.fts._BLOCK_LIMIT", 16)  # postings over many blocks
    with FtsIndex.open(tmp_path / "fts") as ix:
        for batch in range(4):  # several segments
            ix.upsert([doc(f"n{batch}-{i}.md", rng) for i in range(120)])
        ix.upsert([doc(f"n0-{i}.md", rng) for i in range(0, 120, 3)])  # replaced: deleted docs
        ix.delete([f"n2-{i}.md" for i in range(0, 120, 4)])
        # Identical notes score the same: the limit cuts through ties, which go by docnum.
        ix.upsert([doc(f"twin{i}.md", random.Random(1)) for i in range(30)])
        tie = ix.search("alpha", limit=1000)
        assert len({s for _, s in tie}) < len(tie)
        queries = ["alpha", "river stone", "omega sigma kappa theta", "nothing-matches", "beta beta gamma"]
        for query in queries:
            for limit in (1, 5, 17, 1000):
                arrays, plain = both(ix, monkeypatch, query, limit=limit)
                assert arrays == plain, (query, limit)
            arrays, plain = both(ix, monkeypatch, query, limit=50, where={"tier": ["short", "mid"]})
            assert arrays == plain
            assert arrays or query == "nothing-matches"
        arrays, plain = both(ix, monkeypatch, "alpha", limit=7)
        assert [p for p, _ in arrays][:1] and all(s > 0 for _, s in plain)


def test_a_process_s_first_keyword_search_imports_no_numpy_and_its_second_does(tmp_path: Path) -> None:
    with FtsIndex.open(tmp_path / "fts") as ix:
        ix.upsert([doc(f"n{i}.md", random.Random(i)) for i in range(50)])
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tiered_memory.index.fts import FtsIndex\n"
        f"ix = FtsIndex.open(Path({str(tmp_path / 'fts')!r}))\n"
        "hits = ix.search('alpha river', limit=5, where={'tier': ['long', 'short']})\n"
        "print(len(hits), 'numpy' in sys.modules)\n"
        "again = ix.search('alpha river', limit=5, where={'tier': ['long', 'short']})\n"
        "print(again == hits, 'numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    count, first_loaded, same, second_loaded = out.split()
    assert int(count) > 0 and first_loaded == "False"
    assert same == "True" and second_loaded == "True"
