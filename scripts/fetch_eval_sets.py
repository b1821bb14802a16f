#!/usr/bin/env python3
"""Make the three public sets that ../shared/eval/ does not hold, at the commits this project measured.

    .venv/bin/python scripts/fetch_eval_sets.py                      # clone from GitHub (network, once)
    .venv/bin/python scripts/fetch_eval_sets.py --from ~/mirrors     # or read git copies already here

Each source repository (REALTALK, PrefEval, BEAM) is cloned bare into INTO/sources/ (or found
under --from), read at its pinned commit, and converted by convert_eval_sets.py into INTO/<set>.
The default INTO is the folder `make eval` reads beside ../shared/eval/ (tmem-eval-sets in the
system temp folder); the data never enters the repository. A set whose manifest already names the
pinned commit is kept as it is. The network is used only to clone, and only when a source is not
found under --from or INTO/sources/.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import convert_eval_sets as convert  # noqa: E402

DEFAULT_INTO = Path(tempfile.gettempdir()) / "tmem-eval-sets"
CLONE_SECONDS = 900  # PrefEval's history is the largest: a few hundred MB on a slow line


@dataclass(frozen=True)
class Pinned:
    """One public source: the converter that reads it, where it lives, the commit measured."""

    converter: str
    set_name: str  # the folder the converter names its set
    repository: str  # owner/name on GitHub
    commit: str
    url: str = ""

    @property
    def clone_url(self) -> str:
        return self.url or f"https://github.com/{self.repository}.git"

    @property
    def folder(self) -> str:
        return self.repository.replace("/", "+")


PINNED = (
    Pinned("realtalk", "realtalk", "danny911kr/REALTALK", "b903e06a9770bf4e5fe9018c3e132889666d3b4a"),
    Pinned("prefeval", "prefeval", "amazon-science/PrefEval", "50795054b5ff5f418d2b768a331d71e480f93331"),
    Pinned("beam", "beam-100k", "mohammadtavakoli78/BEAM", "b2a3ee8ba12d68f83143dda191097dc3e028ddd3"),
)


class FetchError(Exception):
    """A source could not be found, cloned or read at its commit: one line for the person."""


def _git(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    # No prompt for credentials: a public repository needs none, and a prompt would hang `make`.
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    return subprocess.run(["git", *args], capture_output=True, text=True, timeout=timeout, env=env)


def _holds(git_dir: Path, commit: str) -> bool:
    if not git_dir.exists():
        return False
    found = _git("-C", str(git_dir), "cat-file", "-e", f"{commit}^{{commit}}")
    return found.returncode == 0


def _candidates(pinned: Pinned, mirrors: Sequence[Path]) -> list[Path]:
    name = pinned.repository.split("/")[1]
    places = []
    for root in mirrors:
        for rel in (f"{pinned.folder}/repo", pinned.folder, f"{pinned.folder}.git", name, f"{name}.git"):
            places.append(root / rel)
    return places


def _fetch_commit(git_dir: Path, pinned: Pinned) -> subprocess.CompletedProcess[str]:
    # Only the one commit: the converters read nothing else, and PrefEval's history is large.
    return _git(
        "-C",
        str(git_dir),
        "fetch",
        "--quiet",
        "--depth",
        "1",
        pinned.clone_url,
        pinned.commit,
        timeout=CLONE_SECONDS,
    )


def find_or_clone(pinned: Pinned, sources: Path, mirrors: Sequence[Path]) -> Path:
    """A git directory holding the pinned commit: found under the mirrors or sources, else cloned."""
    for place in [*_candidates(pinned, mirrors), sources / f"{pinned.folder}.git"]:
        if _holds(place, pinned.commit):
            return place
    target = sources / f"{pinned.folder}.git"
    if target.exists():
        # An earlier copy without the commit: fetch it rather than clone again.
        fetched = _fetch_commit(target, pinned)
        if fetched.returncode == 0 and _holds(target, pinned.commit):
            return target
        raise FetchError(f"{target} does not hold commit {pinned.commit[:12]} and fetching it failed")
    sources.mkdir(parents=True, exist_ok=True)
    partial = sources / f"{pinned.folder}.git.partial"
    _git("init", "--quiet", "--bare", str(partial))
    try:
        cloned = _fetch_commit(partial, pinned)
    except subprocess.TimeoutExpired:
        shutil.rmtree(partial, ignore_errors=True)
        raise FetchError(f"cloning {pinned.clone_url} took over {CLONE_SECONDS} s; try again") from None
    if cloned.returncode != 0 or not _holds(partial, pinned.commit):
        shutil.rmtree(partial, ignore_errors=True)
        last = (cloned.stderr.strip().splitlines() or ["no answer"])[-1]
        raise FetchError(
            f"cannot fetch {pinned.clone_url} at {pinned.commit[:12]} ({last}); this needs the network "
            "once, or --from a folder holding a git copy of it"
        )
    partial.rename(target)  # only a complete copy gets the name the next run looks for
    return target


def _current(out: Path, commit: str) -> bool:
    try:
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return manifest.get("source_commit") == commit and (out / "queries.jsonl").is_file()


def fetch(into: Path, mirrors: Sequence[Path], pins: Sequence[Pinned] = PINNED) -> list[Path]:
    """Every pinned set converted under `into`; returns their folders."""
    made = []
    for pinned in pins:
        out = into / pinned.set_name
        if _current(out, pinned.commit):
            print(f"{pinned.set_name}: already at {pinned.commit[:12]} in {out}", file=sys.stderr)
            made.append(out)
            continue
        git_dir = find_or_clone(pinned, into / "sources", mirrors)
        make, _ = convert.CONVERTERS[pinned.converter]
        try:
            source = convert.Source(git_dir, pinned.commit)
            converted = make(source)
        except convert.SourceError as error:
            raise FetchError(f"{pinned.repository}: {error}") from None
        convert.write_set(converted, source, out)
        print(f"{pinned.set_name}: {len(converted.queries)} queries -> {out}", file=sys.stderr)
        made.append(out)
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--into", type=Path, default=DEFAULT_INTO, help=f"where the sets go (default {DEFAULT_INTO})"
    )
    parser.add_argument(
        "--from",
        dest="mirrors",
        type=Path,
        action="append",
        default=[],
        help="a folder holding git copies of the sources (owner+name/, name.git, ...); repeatable",
    )
    args = parser.parse_args(argv)
    try:
        fetch(args.into, args.mirrors)
    except FetchError as error:
        print(f"fetch_eval_sets: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
