"""The git merge driver's work (`tmem merge-driver %O %A %B %P`): the bytes of the three versions
git gives, merged. Notes and JSON files merge as `merge3` says; encrypted notes as `sealed_merge`
says (as plaintext with the key, never their ciphertext by lines). Lines both sides changed are kept
between markers that name each version as the caller's `sides` says (bare without it). Pure: the
caller (`backend.merge_driver`) reads git's temp files and writes the result into %A."""

from __future__ import annotations

__all__ = ["run_driver"]

from collections.abc import Callable

from tiered_memory.model import sealed_merge
from tiered_memory.model.merge3 import MergeResult, Sides, labelled, merge_file


def run_driver(
    base_bytes: bytes,
    ours_bytes: bytes,
    theirs_bytes: bytes,
    path: str,
    key: Callable[[], bytes | None] | None = None,
    sides: Callable[[], Sides] | None = None,
) -> MergeResult:
    """`tmem merge-driver %O %A %B %P`: the three versions git gives, merged (what %A becomes).

    Empty base bytes are git's stand-in for "added on both sides" (no common ancestor). Raises
    UnicodeDecodeError when a version cannot be read as text; the caller then exits non-zero and
    git leaves the file conflicted for a person (or `tmem sync`) to settle. An encrypted note
    merges as plaintext with the key `key()` gives; without one it raises sealed_merge.NoKey and
    %A is left as it was (ciphertext is never merged by lines). `sides()` names the two versions
    in the markers; it is asked only when there are markers to write.
    """
    if sealed_merge.any_sealed(base_bytes, ours_bytes, theirs_bytes):
        secret = key() if key is not None else None
        if secret is None:
            raise sealed_merge.NoKey(f"{path}: an encrypted note, and no key in this process")
        result = labelled(
            lambda names: sealed_merge.merge_sealed(
                base_bytes or None, ours_bytes, theirs_bytes, path, secret, names
            ),
            sides,
        )
    else:
        ours = ours_bytes.decode("utf-8")
        theirs = theirs_bytes.decode("utf-8")
        base = base_bytes.decode("utf-8") if base_bytes else None
        result = labelled(lambda names: merge_file(base, ours, theirs, path, names), sides)
    return result
