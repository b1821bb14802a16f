"""When each file content (git blob) first entered the history: the clock `model.dates` trusts.

One streamed `git log --raw` reads every commit's new blob ids with its author time; a range
(`since..HEAD`) reads only the commits added since the last call, so after the first full read
a refresh costs one `git rev-parse` plus the new commits. Merges are read against each parent
(`-m`), so content first made by a merge resolution is found too.
"""

from __future__ import annotations

__all__ = ["first_seen", "head"]

from collections.abc import Iterator
from pathlib import Path

from tiered_memory.errors import GitError
from tiered_memory.storage.git import Git

_NO_BLOB = "0" * 40


def head(root: Path) -> str | None:
    """The commit HEAD points at; None outside a repository or before the first commit.

    Read from `.git/` directly when it is a plain repository (the daemon asks on every edit, and a
    `git rev-parse` costs a few milliseconds); git itself answers for worktrees and subfolders."""
    found = _head_from_files(root / ".git")
    if found is not None:
        return found
    try:
        proc = Git(root).run("rev-parse", "--verify", "-q", "HEAD^{commit}", check=False, timeout=30)
    except (OSError, GitError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


def _head_from_files(gitdir: Path) -> str | None:
    try:
        text = (gitdir / "HEAD").read_text(encoding="utf-8").strip()
        if not text.startswith("ref: "):
            return text if _is_sha(text) else None
        ref = text[5:].strip()
        ref_file = gitdir / ref
        if ref_file.is_file():
            sha = ref_file.read_text(encoding="utf-8").strip()
            return sha if _is_sha(sha) else None
        for line in (gitdir / "packed-refs").read_text(encoding="utf-8").splitlines():
            sha, _, name = line.partition(" ")
            if name.strip() == ref and _is_sha(sha):
                return sha
    except (OSError, UnicodeDecodeError):
        return None
    return None


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def first_seen(root: Path, until: str, since: str | None = None) -> dict[str, float] | None:
    """blob id -> earliest author time (epoch seconds) among the commits `since..until` (all of
    `until`'s history without `since`). None when git cannot read that range (e.g. `since` is gone)."""
    revs = f"{since}..{until}" if since else until
    lines = Git(root).stream(
        "log", "--no-renames", "--raw", "--no-abbrev", "-m", "--format=%x00%at", revs, "--"
    )
    times: dict[str, float] = {}
    try:
        for blob, when in _parse(lines):
            if when < times.get(blob, float("inf")):
                times[blob] = when
    except (OSError, GitError):
        return None
    return times


def _parse(lines: Iterator[str]) -> Iterator[tuple[str, float]]:
    when = 0.0
    for line in lines:
        if line.startswith("\x00"):
            try:
                when = float(line[1:].strip())
            except ValueError:
                when = 0.0
        elif line.startswith(":"):
            # :<old mode> <new mode> <old blob> <new blob> <status>\t<path>
            fields = line.split("\t", 1)[0].split()
            if len(fields) >= 4 and fields[3] != _NO_BLOB and not fields[1].startswith("160"):
                yield fields[3], when
