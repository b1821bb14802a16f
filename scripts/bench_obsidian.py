"""Costs of the Obsidian support: a frontmatter edit, reading a note's tags/links/fields, and a full
keyword index of a synthetic Obsidian-style vault (links, tags, aliases) with and without git history.

    .venv/bin/python scripts/bench_obsidian.py [--notes 2000] [--common-tag]
    .venv/bin/python scripts/bench_obsidian.py --help-vault GIT_DIR [--folders "en,Release notes"]
    .venv/bin/python scripts/bench_obsidian.py --real-vault DIR [--queries 40] [--no-vectors]

Prints numbers; asserts nothing. `--help-vault` instead takes the Markdown of some folders of a
clone of the Obsidian help repository (obsidianmd/obsidian-help; its git directory: the files are
read with `git show`, so a mirror without LFS objects serves), adopts them as a vault
(`tmem init --adopt`) and times its vector build: every note's first passages, then long notes'
deeper ones, wall and CPU seconds with the machine's load. `--real-vault` lives in a copy of a
vault of one's own (a clone of a public Obsidian vault; `.git` and `.tmem` are not copied) as a
new user would: `tmem init --adopt`, the first keyword index, the vectors, then searches whose
queries are titles of its notes (CLI without a daemon, and in one process with warm indexes), and
checks that no file of the person's changed.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tiered_memory.index.indexer import Indexer
from tiered_memory.model import obsidian
from tiered_memory.model.frontmatter import edit_frontmatter
from tiered_memory.model.note import parse
from tiered_memory.storage.vault import Vault, init_vault

NOTE = (
    "\ufeff---\r\ntitle: Geodesy  # mine\r\ntags: [geodesy,survey]\r\naliases:\r\n    - WGS84\r\n"
    "created: 2026-10-01\r\n---\r\n# Geodesy\r\nWe use #geodesy/datum, see [[Survey#Scope|the survey]].\r\n"
    "status:: active\r\n```\r\n#not [[code]]\r\n```\r\n" + "Plain text of a long note. " * 80 + "\r\n"
)


def per_call(fn: object, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()  # type: ignore[operator]
    return (time.perf_counter() - start) / repeat * 1000


def synthetic_vault(root: Path, count: int, common_tag: bool = False) -> None:
    rng = random.Random(7)
    words = "datum survey coast ellipsoid plan tide station gauge benchmark grid".split()
    for i in range(count):
        links = " ".join(f"[[note-{rng.randrange(count)}]]" for _ in range(3))
        tags = " ".join(f"#{rng.choice(words)}/{rng.choice(words)}" for _ in range(2))
        tags += " #inbox" if common_tag else ""  # every note shares it: related() ranks them all
        body = " ".join(rng.choice(words) for _ in range(150))
        text = f"---\naliases: [alias-{i}]\n---\n# Note {i}\n{body}\n{links} {tags}\n"
        path = root / "memory" / "notes" / f"d{i % 20}" / f"note-{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def time_index(root: Path) -> float:
    indexer = Indexer(Vault(root))
    try:
        start = time.perf_counter()
        indexer.refresh(full=True)
        return time.perf_counter() - start
    finally:
        indexer.close()


def help_vault(git_dir: Path, folders: list[str], root: Path) -> int:
    """The Markdown files of `folders` of the repository at `git_dir`, adopted as a vault at `root`."""
    names = subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", "--name-only", "HEAD", "--", *folders],
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    count = 0
    for name in (n.decode("utf-8") for n in names if n.endswith(b".md")):
        blob = subprocess.run(
            ["git", f"--git-dir={git_dir}", "show", f"HEAD:{name}"], check=True, capture_output=True
        )
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob.stdout)
        count += 1
    tmem = str(Path(sys.executable).parent / "tmem")
    env = dict(os.environ, TMEM_AUTOSTART="0")
    subprocess.run([tmem, "init", "--adopt", str(root)], check=True, capture_output=True, env=env)
    return count


def time_vectors(root: Path) -> None:
    from tiered_memory.app.memory import Memory

    memory = Memory(Vault(root))
    try:
        memory.refresh(vectors=False)
        memory.indexer.embedder()  # the model's load is not the build's
        for name, deep in (("first passages", False), ("deeper passages", True)):
            load = os.getloadavg()[0]
            wall, cpu = time.perf_counter(), time.process_time()
            report = memory.indexer.ensure_vectors(deep=deep)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            notes = report.deepened if deep else report.embedded
            print(
                f"{name}: {notes} notes, {wall:.1f} s wall, {cpu:.1f} CPU-s, load {load:.1f} -> {os.getloadavg()[0]:.1f}"
            )
        vectors = memory.indexer.vectors()
        assert vectors is not None
        print(
            f"vectors: {vectors.count()} notes, {vectors.chunk_count()} chunks, {len(vectors.partial_paths())} partial"
        )
    finally:
        memory.close()


def _run(argv: list[str], root: Path) -> float:
    env = dict(os.environ, TMEM_AUTOSTART="0", TMEM_VAULT=str(root))
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=env, cwd=root)
    return time.perf_counter() - start


def _quantiles(times: list[float]) -> str:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered) * 1000:.0f} / p95 {p95 * 1000:.0f} ms"


def real_vault(source: Path, root: Path, queries: int, vectors: bool) -> None:
    """Adopt a copy of `source` and time what a new user waits for."""
    from tiered_memory.app.memory import Memory
    from tiered_memory.model.search import SearchRequest

    shutil.copytree(source, root, symlinks=True, ignore=shutil.ignore_patterns(".git", ".tmem"))
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    who = ["-c", "user.name=person", "-c", "user.email=person@example.org"]
    subprocess.run(["git", "-C", str(root), *who, "commit", "-qm", "the person's vault"], check=True)
    notes = sum(1 for _ in root.rglob("*.md"))
    print(f"{notes} Markdown files from {source}; load {os.getloadavg()[0]:.1f}")
    tmem = str(Path(sys.executable).parent / "tmem")
    print(f"tmem init --adopt: {_run([tmem, 'init', '--adopt', str(root)], root):.2f} s")
    print(
        f"first keyword index (tmem reindex --keyword-only): {_run([tmem, 'reindex', '--keyword-only'], root):.2f} s"
    )
    if vectors:
        time_vectors(root)
    memory = Memory(Vault(root))
    try:
        rows = memory.indexer.catalog.rows()
    finally:
        memory.close()
    indexed = sorted(path for path in rows if path.endswith(".md"))
    print(f"indexed: {len(indexed)} notes")
    sample = random.Random(7).sample(indexed, min(queries, len(indexed)))
    asked = [(rows[path].title, path) for path in sample]
    cold = [_run([tmem, "search", "--mode", "keyword", title], root) for title, _ in asked]
    print(f"CLI keyword search, no daemon, {len(asked)} note titles: {_quantiles(cold)}")
    memory = Memory(Vault(root))
    try:
        memory.refresh()  # then searches as the daemon answers them: no disk scan, drafts kept
        for mode in ("keyword", "vector", "hybrid") if vectors else ("keyword",):
            memory.searcher.search(SearchRequest(query=asked[0][0], mode=mode))  # warm
            times, first = [], 0
            for title, path in asked:
                start = time.perf_counter()
                hits = memory.searcher.search(SearchRequest(query=title, mode=mode)).hits
                times.append(time.perf_counter() - start)
                first += bool(hits) and hits[0].path == path
            print(
                f"warm {mode} search, indexes open (as the daemon answers): {_quantiles(times)}; the titled note first {first}/{len(asked)}"
            )
    finally:
        memory.close()
    changed = subprocess.run(
        [
            "git",
            "-C",
            str(root),
            "diff",
            "--name-only",
            "HEAD~1",
            "--",
            ".",
            ":!tmem.yaml",
            ":!.gitignore",
            ":!.gitattributes",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    dirty = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    print(f"the person's files changed: {len(changed) + len([d for d in dirty if d.strip()])}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--help-vault", type=Path, default=None, metavar="GIT_DIR")
    parser.add_argument("--folders", default="en,Release notes")
    parser.add_argument("--real-vault", type=Path, default=None, metavar="DIR")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--no-vectors", action="store_true")
    parser.add_argument("--common-tag", action="store_true", help="every synthetic note also tagged #inbox")
    args = parser.parse_args()
    if args.real_vault is not None:
        with tempfile.TemporaryDirectory() as tmp:
            real_vault(args.real_vault.resolve(), Path(tmp) / "vault", args.queries, not args.no_vectors)
        return
    if args.help_vault is not None:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "vault"
            count = help_vault(args.help_vault, args.folders.split(","), root)
            print(f"{count} notes from {args.help_vault} ({args.folders})")
            time_vectors(root)
        return
    print(
        f"edit_frontmatter, one key of a CRLF/BOM note: {per_call(lambda: edit_frontmatter(NOTE, {'status': 'x'}), 2000):.3f} ms"
    )
    note = parse(NOTE, "n.md")
    print(
        f"inline tags + links + fields of one note:      {per_call(lambda: (note.all_tags, note.links, note.inline_fields), 2000):.3f} ms"
    )
    free = obsidian.without_code(note.body)
    print(
        f"  of which blanking code once:                 {per_call(lambda: obsidian.without_code(note.body), 2000):.3f} ms ({len(free)} chars)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        init_vault(root, config_text="embeddings:\n  provider: none\n")
        synthetic_vault(root, args.notes, args.common_tag)
        plain = time_index(root)
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
        subprocess.run(
            ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "notes"],
            check=True,
        )
        (root / ".tmem" / "catalog.sqlite").unlink()
        committed = time_index(root)
        indexer = Indexer(Vault(root))
        try:
            path = "memory/notes/d0/note-0.md"
            start = time.perf_counter()
            for _ in range(50):
                indexer.graph.related(path)
            related_ms = (time.perf_counter() - start) / 50 * 1000
            start = time.perf_counter()
            for _ in range(50):
                indexer.graph.backlinks(path)
            backlinks_ms = (time.perf_counter() - start) / 50 * 1000
        finally:
            indexer.close()
    print(f"full keyword index, {args.notes} notes, uncommitted:    {plain:.2f} s")
    print(
        f"full keyword index, {args.notes} notes, fresh catalog of a committed vault (reads git history): {committed:.2f} s"
    )
    print(f"related(): {related_ms:.2f} ms   backlinks(): {backlinks_ms:.2f} ms")


if __name__ == "__main__":
    main()
