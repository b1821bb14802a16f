#!/usr/bin/env python3
"""Benchmark `tmem export` and `tmem import --format tmem` of an adopted vault (not a test: prints
numbers, and whether the round trip kept every note where it was, byte for byte).

    .venv/bin/python scripts/bench_portability.py [--notes 2000] [--note-kb 50] [--out DIR]
    .venv/bin/python scripts/bench_portability.py --vault PATH      # a copy of a vault of yours

Builds (or copies) a vault a person adopted: their own folders of Markdown notes (frontmatter as
people and plugins write it: comments, quoting, CRLF, a BOM, wikilinks between the notes), and
tmem's tiered notes under `memory/`. Runs, with the real `tmem` executable and no daemon:
`tmem init --adopt`, a commit of the person's files, `tmem export` to JSON Lines, the same export
again into that file (updated in place), `tmem export` to stdout (one JSON document), then
`tmem import --format tmem` of the JSON Lines export into a fresh vault (`tmem init`), the same
import again, and (`--json-import`) an import of the JSON document into another fresh vault.
Prints notes/s for each with the peak resident memory of its process (an export is written, and
an import read, one note at a time: their memory should not grow with the vault), the commits
the import made, and how many notes came back at their own path with the same bytes.
`--note-kb` pads each generated note to about that size (`--notes 2000 --note-kb 50`: a 100 MB
vault). `--vault` copies the folder given (its files only, not its
`.git`), so the vault itself is never touched.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TMEM = str(Path(sys.executable).parent / "tmem")
FOLDERS = ("Proyectos/tunel", "Proyectos/costa", "Diario/2026", "Personas", "knowledge/learnings")
WORDS = (
    "datum survey coast ellipsoid plan tide station gauge benchmark grid cliente factura deploy "
    "revisión reunión decisión túnel cota nivel mareógrafo"
).split()


def load_line() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min) {five:.1f} (5 min) on {os.cpu_count()} cores"


def person_note(rng: random.Random, i: int, count: int) -> str:
    """A person's note in one of the shapes editors and plugins write."""
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(60, 400)))
    links = " ".join(f"[[nota {rng.randrange(count)}]]" for _ in range(2))
    text = f"# Nota {i}\n\n{body}\n\nVer {links}.\n"
    shape = i % 5
    if shape == 0:
        return text
    if shape == 1:
        return f"---\ntags: [{rng.choice(WORDS)}, {rng.choice(WORDS)}]  # a comment\ndate: 2026-03-{i % 28 + 1:02d}\n---\n{text}"
    if shape == 2:
        head = f"---\r\ntitle: 'Nota {i}'\r\naliases:\r\n    - n{i}\r\n---\r\n"
        return head + text.replace("\n", "\r\n")
    if shape == 3:
        return f'\ufeff---\ncreated: 2026-01-02T10:00\nstatus: "activo"\n---\n{text}'
    return f"---\nid: p{i}\ncreated: 2026-02-03\nsource: agent\n---\n{text}"


def tmem_note(rng: random.Random, i: int) -> str:
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(30, 120)))
    return (
        f"---\nid: m{i}\ntitle: Memory {i}\ncategory: fact\ncreated: 2026-04-01T10:00:00+00:00\n"
        f"updated: 2026-04-01T10:00:00+00:00\n---\n{body}\n"
    )


def build_vault(root: Path, count: int, note_kb: int = 0) -> None:
    """A vault of `count` notes: four in five in a person's folders, the rest tmem's; each padded
    with words to about `note_kb` KB when given."""
    rng = random.Random(7)
    for i in range(count):
        if i % 5 == 4:
            rel, text = f"memory/long-term/knowledge_base/memory-{i}.md", tmem_note(rng, i)
        else:
            rel, text = f"{FOLDERS[i % len(FOLDERS)]}/nota {i}.md", person_note(rng, i, count)
        if len(text) < note_kb * 1024:
            words = (note_kb * 1024 - len(text)) // 8
            text += "\n" + " ".join(rng.choice(WORDS) for _ in range(words)) + "\n"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))


def copy_vault(source: Path, root: Path) -> None:
    """The files of a vault (not its `.git` or `.tmem`): what a person has on disk."""
    shutil.copytree(source, root, symlinks=True, ignore=shutil.ignore_patterns(".git", ".tmem"))


PEAK: dict[str, float] = {}  # the last command's peak resident memory, in MB


def run(*cmd: str, env: dict[str, str], stdout: Path | None = None) -> tuple[float, str]:
    """Run a command; its time and output (`stdout`: written to that file instead, not read)."""
    start = time.perf_counter()
    with (
        stdout.open("w+b") if stdout is not None else tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _pid, status, usage = os.wait4(proc.pid, 0)  # this child's own peak, not all children's
        proc.returncode = os.waitstatus_to_exitcode(status)
        took = time.perf_counter() - start
        PEAK["mb"] = usage.ru_maxrss / 1024  # KB on Linux
        out.seek(0)
        err.seek(0)
        text = "" if stdout is not None else out.read().decode("utf-8")
        stderr = err.read().decode("utf-8")
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{text}\n{stderr}")
    return took, text


def commits(root: Path) -> int:
    out = subprocess.run(
        ["git", "-C", str(root), "rev-list", "--count", "HEAD"], capture_output=True, text=True
    )
    return int(out.stdout.strip() or 0)


def kept(export: Path, source: Path, target: Path) -> tuple[int, int, int]:
    """(notes exported, at their own path in the target, with the source's bytes there)."""
    total = same_path = same_bytes = 0
    for line in export.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("kind") != "note":
            continue
        total += 1
        there, was = target / entry["path"], source / entry["path"]
        if there.is_file():
            same_path += 1
            same_bytes += was.is_file() and there.read_bytes() == was.read_bytes()
    return total, same_path, same_bytes


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notes", type=int, default=2000, help="notes of the generated vault")
    parser.add_argument("--note-kb", type=int, default=0, help="pad each generated note to about this size")
    parser.add_argument("--vault", type=Path, default=None, help="copy this folder instead of generating one")
    parser.add_argument(
        "--out", type=Path, default=None, help="keep the vaults here (default: a temp dir, removed)"
    )
    parser.add_argument(
        "--json-import", action="store_true", help="also import the JSON document into another fresh vault"
    )
    args = parser.parse_args()

    base = args.out or Path(tempfile.mkdtemp(prefix="tmem-bench-portability-"))
    source, target, export = base / "adopted", base / "fresh", base / "export.jsonl"
    document, other = base / "export.json", base / "fresh-json"
    for path in (source, target, export, document, other):
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    env = {**os.environ, "TMEM_AUTOSTART": "0", "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x"}
    env |= {"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@x"}
    try:
        if args.vault is not None:
            copy_vault(args.vault.expanduser(), source)
        else:
            build_vault(source, args.notes, args.note_kb)
        run(TMEM, "init", "--adopt", str(source), env=env)
        # A new repository's first commit holds every file already; an existing one's does not.
        subprocess.run(["git", "-C", str(source), "add", "-A"], check=True, env=env)
        subprocess.run(
            ["git", "-C", str(source), "commit", "-qm", "person: my notes"], env=env, capture_output=True
        )
        run(TMEM, "--vault", str(source), "reindex", "--keyword-only", env=env)
        print(f"machine: {load_line()}", flush=True)

        took, _ = run(TMEM, "--vault", str(source), "export", "-o", str(export), env=env)
        notes = sum(1 for line in export.open(encoding="utf-8") if '"kind": "note"' in line)
        size = sum(p.stat().st_size for p in source.rglob("*.md") if ".git" not in p.parts) / 1048576
        print(
            f"export: {notes} notes ({size:.0f} MB of notes, {export.stat().st_size / 1048576:.0f} MB "
            f"exported) in {took:.1f}s = {notes / took:.0f} notes/s, peak RSS {PEAK['mb']:.0f} MB",
            flush=True,
        )
        took, _ = run(TMEM, "--vault", str(source), "export", "-o", str(export), env=env)
        print(
            f"export into it again (updated in place): {took:.1f}s = {notes / took:.0f} notes/s, "
            f"peak RSS {PEAK['mb']:.0f} MB",
            flush=True,
        )
        took, _ = run(TMEM, "--vault", str(source), "export", env=env, stdout=document)
        print(
            f"export to stdout (JSON, {document.stat().st_size / 1048576:.0f} MB): {took:.1f}s = "
            f"{notes / took:.0f} notes/s, peak RSS {PEAK['mb']:.0f} MB",
            flush=True,
        )

        run(TMEM, "init", str(target), env=env)
        before = commits(target)
        took, out = run(
            TMEM, "--vault", str(target), "import", "--format", "tmem", str(export), "--json", env=env
        )
        done = json.loads(out)
        print(
            f"import into a fresh vault: {notes} notes in {took:.1f}s = {notes / took:.0f} notes/s "
            f"({done['added']} added, {done['skipped']} skipped, {commits(target) - before} commit(s)), "
            f"peak RSS {PEAK['mb']:.0f} MB",
            flush=True,
        )
        total, same_path, same_bytes = kept(export, source, target)
        print(f"round trip: {same_path}/{total} notes at their own path, {same_bytes}/{total} byte for byte")
        took, out = run(
            TMEM, "--vault", str(target), "import", "--format", "tmem", str(export), "--json", env=env
        )
        again = json.loads(out)
        print(
            f"the same import again: {took:.1f}s, {again['added']} added, commit {again['commit']}, "
            f"{commits(target) - before} commit(s) in all"
        )
        if args.json_import:
            run(TMEM, "init", str(other), env=env)
            took, out = run(TMEM, "--vault", str(other), "import", str(document), "--json", env=env)
            done = json.loads(out)
            print(
                f"import of the JSON document into a fresh vault: {took:.1f}s = {notes / took:.0f} "
                f"notes/s ({done['added']} added), peak RSS {PEAK['mb']:.0f} MB",
                flush=True,
            )
        print(f"machine: {load_line()}")
    finally:
        if args.out is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
