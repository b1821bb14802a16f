"""Score-distribution-aware fusion (`search.fusion: peaked`): per query, each side counts as much as
its best candidate stands out from the next ones."""

from __future__ import annotations

import pytest

from tiered_memory.config import SearchConfig
from tiered_memory.index.retrieve import fuse_linear, peak

# The keyword side barely prefers "a" over a crowd; the vector side is sure of "b".
KEYWORD = [("a", 10.0), ("b", 6.0), ("c", 5.9), ("d", 5.8)]
VECTOR = [("b", 0.80), ("a", 0.50), ("c", 0.44), ("d", 0.43)]


def best(fused: dict[str, dict[str, float]]) -> str:
    return max(fused, key=lambda p: fused[p]["fused"])


def test_peak_is_how_far_the_best_stands_above_the_next() -> None:
    assert peak([1.0, 0.5, 0.5]) == pytest.approx(0.5)
    assert peak([1.0, 1.0, 1.0]) == pytest.approx(0.0)
    assert peak([1.0]) == 1.0
    assert peak([1.0] + [0.5] * 9 + [0.0] * 5) == pytest.approx(0.5)  # only the next nine count


def test_the_sure_side_decides_where_fixed_weights_follow_the_keyword_side() -> None:
    fixed = fuse_linear(KEYWORD, VECTOR, 0.7, 0.3)
    peaked = fuse_linear(KEYWORD, VECTOR, 0.7, 0.3, peaked=True)

    assert best(fixed) == "a"
    assert best(peaked) == "b"


def test_one_sided_fusion_is_unchanged() -> None:
    alone = fuse_linear(KEYWORD, [], 0.7, 0.3, peaked=True)
    assert alone == fuse_linear(KEYWORD, [], 0.7, 0.3)


def test_peaked_fusion_is_a_setting() -> None:
    assert SearchConfig(fusion="peaked").fusion == "peaked"


def test_peaked_fusion_is_the_default() -> None:
    assert SearchConfig().fusion == "peaked"


def test_candidates_tied_on_both_sides_keep_the_fixed_weights() -> None:
    # Two copies of one note: each side is perfectly flat, which must not zero every score.
    fused = fuse_linear([("a", 3.0), ("b", 3.0)], [("a", 0.8), ("b", 0.8)], 0.7, 0.3, peaked=True)
    assert fused["a"]["fused"] == pytest.approx(fused["b"]["fused"]) == pytest.approx(1.0)
