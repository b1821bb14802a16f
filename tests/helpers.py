"""Helpers shared by the tests: git and file shortcuts, and the CLI failure contract."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from click.testing import Result

from tiered_memory.app.filing import NewNote, add_many
from tiered_memory.app.memory import Memory
from tiered_memory.daemon import client
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import Vault

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import torture  # noqa: E402 - scripts/ is no package: its folder goes on the path first

FIXED_NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
FAKE_CONFIG = "embeddings:\n  provider: fake\n"


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def bare_origin(vault: Path, folder: Path) -> Path:
    """A bare repository at `folder`/remote.git, added as the vault's `origin`."""
    remote = folder / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    git(vault, "remote", "add", "origin", str(remote))
    return remote


def write(root: Path, rel: str, text: str, *, bump: float = 0.0) -> Path:
    """Write a file under `root`; `bump` moves its mtime that many seconds forward."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if bump:
        st = path.stat()
        os.utime(path, (st.st_atime, st.st_mtime + bump))
    return path


def ok(result: Result) -> Result:
    assert result.exit_code == 0, f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    return result


def as_json(result: Result) -> Any:
    return json.loads(ok(result).stdout)


def one_error_line(result: Result, code: int) -> str:
    """The failure contract: the exit code, one line on stderr, nothing on stdout, no traceback."""
    assert result.exit_code == code, (
        f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    )
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tmem: "), result.stderr
    assert "Traceback" not in result.output and result.stdout == ""
    return lines[0]


def git_log(root: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(root), "log", "--format=%s"], capture_output=True, text=True, check=True
    )
    return out.stdout.splitlines()


def commit(vault: Vault, paths: list[str], message: str) -> str | None:
    """Commit files a test changed by hand, the way tmem commits (its one git path)."""
    tx = Transaction(vault, message)
    tx.include(paths)
    return tx.commit()


def move_file(vault: Vault, src: str, dst: str) -> str:
    """Move a file by hand (as a person or another tool would); returns `dst`."""
    target = vault.abspath(dst)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(vault.abspath(src), target)
    return dst


def tracked(root: Path) -> set[str]:
    """The paths git tracks in the repository at `root`."""
    return set(git(root, "ls-files").splitlines())


# A real-looking Obsidian vault: nested folders, CRLF and BOM notes, flow lists, comments, aliases,
# inline and nested tags, wikilinks, Dataview fields, a daily note, attachments and `.obsidian/`.
OBSIDIAN_NOTES: dict[str, bytes] = {
    "Home.md": b"# Home\n\nStart at [[Projects/Survey plan|the survey plan]] and [[Geodesy]].\n",
    "Geodesy.md": (
        b"---\naliases: [datum notes, CRS]\ntags: [geodesy, survey]  # kept short\n"
        b"cssclass: wide\n---\n# Geodesy\n\nWe use EPSG:4326 for exchange. #geodesy/datum\n"
    ),
    "Projects/Survey plan.md": (
        b"---\r\ntags:\r\n  - project\r\nstatus: draft\r\n---\r\n# Survey plan\r\n\r\n"
        b"Owner:: Alice\r\nSee [[Geodesy#Datums]] and ![[map.png]].\r\n"
    ),
    "Projects/Archive/Old idea.md": "\ufeff# Old idea\n\nA tide gauge network. #idea\n".encode(),
    "Daily/2026-11-20.md": b"Met Bob about the [[Survey plan]].\nmood:: good\n",
    "Inbox/quick.md": b"\xef\xbb\xbf---\r\nunknown_key: {a: 1}\r\n---\r\nplain text, no heading\r\n",
    "Templates/Daily.md": b"# {{date}}\n",
}
OBSIDIAN_FILES: dict[str, bytes] = {
    "Projects/map.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)),
    "Attachments/Report 2026.pdf": b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<<>>endobj\n",
    ".obsidian/app.json": b'{\n  "alwaysUpdateLinks": true\n}\n',
    ".obsidian/workspace.json": b'{"main": {"id": "abc"}}\n',
    ".trash/deleted.md": b"# Deleted\n",
}


def build_obsidian_vault(root: Path) -> dict[str, bytes]:
    """Write the vault's files; returns every hand-written file (path -> bytes) to compare later."""
    written = {**OBSIDIAN_NOTES, **OBSIDIAN_FILES}
    for rel, data in written.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return written


def changed_files(root: Path, expected: dict[str, bytes]) -> list[str]:
    """The files whose bytes differ from `expected` (or are gone)."""
    out = []
    for rel, data in expected.items():
        path = root / rel
        if not path.is_file() or path.read_bytes() != data:
            out.append(rel)
    return out


def remember(run: Callable[..., Result], text: str, *args: str) -> dict[str, Any]:
    """`tmem add --json [args] -- TEXT` through the CLI; the note it filed."""
    data: dict[str, Any] = as_json(run("add", "--json", *args, "--", text))["note"]
    return data


def approve_outward(root: Path) -> None:
    """This machine's user approves what tmem.yaml gives the settings that reach outside the vault
    (as `tmem config approve --all` does): for tests whose vault is meant to use them."""
    from tiered_memory import config

    waiting = {item.key: item.value for item in config.unapproved_fresh(root)}
    if waiting:
        config.approve(root, waiting)


def all_at_once(vault: Path, argvs: list[list[str]], timeout: float = 240) -> None:
    """One `tmem` process per argv, all released at one instant (scripts/torture.py's `burst`:
    forked from one Python that imported the application, so they race from the same moment and
    the test does not pay one interpreter's start-up per writer); each must exit 0, each with its
    own commit."""
    before = len(git(vault, "log", "--format=%H").split())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as folder:
        problems = torture.burst(
            [["--vault", str(vault), *argv] for argv in argvs], Path(folder), timeout, env
        )
    failures = [f"{argv}: {problem}" for argv, problem in zip(argvs, problems, strict=True) if problem]
    assert failures == []
    assert len(git(vault, "log", "--format=%H").split()) - before == len(argvs)
    assert git(vault, "status", "--porcelain") == ""


# ---- a small vault about one person (confidence tests) ----

# A few notes about one person; the vault says nothing about anyone else.
MARIA = {
    "memory/mid-term/garden.md": "---\ntitle: Maria's vegetable garden\n---\n"
    "Maria planted tomatoes, basil and peppers in the raised beds behind her house this spring.\n",
    "memory/mid-term/dog.md": "---\ntitle: Maria adopted a dog\n---\n"
    "Maria adopted Max, a three-year-old beagle, from the animal shelter on Elm Street.\n",
    "memory/mid-term/job.md": "---\ntitle: Maria's new job\n---\n"
    "Maria started as a nurse at the children's hospital in March; she works night shifts.\n",
    "memory/mid-term/trip.md": "---\ntitle: Trip to Lisbon\n---\n"
    "Maria and her sister spent a week in Lisbon in June and loved the pastel de nata.\n",
}
# Shares "sister" and "June" with the Lisbon note (two terms: the evidence cut keeps it), yet
# nothing in the vault is about John, cooking or a party.
NO_ANSWER = "What did John's sister cook for the party in June?"


# ---- an embedder that drafts (index/indexer.py: a backlog in int8, refined to float32) ----


class DraftingFake:
    """The fake embedder with the packaged model's draft side, as ONNX Runtime has it with
    `precision: auto` on a CPU with VNNI: `embed_draft` gives vectors near `embed`'s (rounded, as
    int8 rounds them), and `runs` records which precision embedded which texts. With `drafts=False`
    it is a CPU without VNNI (or `precision: float32`): no draft precision."""

    def __init__(self, dim: int = 64, drafts: bool = True) -> None:
        from tiered_memory.index.embeddings import FakeEmbedder

        self._exact = FakeEmbedder(dim)
        self.dim = dim
        self.model_id = self._exact.model_id
        self.draft_precision: str | None = "int8" if drafts else None
        self.runs: list[tuple[str, list[str]]] = []

    def embed(self, texts: list[str]) -> Any:
        self.runs.append(("float32", list(texts)))
        return self._exact.embed(texts)

    def embed_draft(self, texts: list[str]) -> Any:
        import numpy as np

        from tiered_memory.index.embeddings import normalize_rows

        self.runs.append(("int8", list(texts)))
        return normalize_rows(np.round(self._exact.embed(texts) * 8) / 8)

    def texts(self, precision: str) -> list[str]:
        """Every text embedded in this precision, in order."""
        return [text for ran, texts in self.runs if ran == precision for text in texts]


def kill_in_phase(script: Path, root: Path, phase: str, beyond: int) -> int:
    """Run `script` (a build printing "phase done total" lines) on the vault at `root` and kill it
    with SIGKILL once `phase` has passed `beyond` notes; how far it had come. A build that ends
    before that fails the test: it was never killed where the test means."""
    child = subprocess.Popen(
        [sys.executable, str(script), str(root)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[1],
    )
    assert child.stdout is not None
    killed_at = None
    for line in child.stdout:
        name, _, done = line.rpartition(" ")[0].rpartition(" ")
        if name == phase and int(done) > beyond:
            child.kill()
            killed_at = int(done)
            break
    child.wait()
    assert killed_at is not None, f"the build ended before {phase!r} passed {beyond} notes"
    return killed_at


def among_others(memory: Memory, notes: list[NewNote], message: str) -> list[str]:
    """`notes` written in one commit beside six unrelated ones, so that a word's rarity means
    something to the keyword side; the paths of `notes`, in order."""
    others = [NewNote(text=f"Unrelated note number {i} about gardening", tier="archive") for i in range(6)]
    return [n.path for n in add_many(memory, notes + others, message)][: len(notes)]


def session_turn(session: str, seq: int, who: str, text: str) -> NewNote:
    """A dialog turn filed as conversation memory files one: archived, in its session, in order."""
    return NewNote(
        text=text,
        title=f"{who}, turn {seq}",
        tier="archive",
        category="session",
        session=session,
        extra={"seq": seq, "speaker": who},
    )


PING_READY = b'{"ok": true, "ready": true, "pid": 1}\n'


@contextlib.contextmanager
def fake_daemon(vault: Path, answer: Callable[[str], bytes | None]) -> Iterator[list[str]]:
    """A socket where the vault's daemon listens, answering each request's op with `answer(op)`:
    a reply line, or None to take the request and never answer it (a daemon hung mid-work).
    Yields the ops it was sent, in order."""
    path = client.socket_path(vault)
    path.parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    server.settimeout(0.1)
    seen: list[str] = []
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            op = json.loads(conn.makefile("rb").readline())["op"]
            seen.append(op)
            reply = answer(op)
            if reply is None:
                held.append(conn)
            else:
                conn.sendall(reply)
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()
        path.unlink(missing_ok=True)


def silent_but_ready(op: str) -> bytes | None:
    """A daemon that says it is ready and answers nothing else."""
    return PING_READY if op == "ping" else None


def run_together(script: str, args: list[list[str]], env: dict[str, str], go: Path) -> None:
    """Run `script` (python -c) once per argument list, in real processes that each wait for `go`
    to exist and so start their work together; each must exit 0."""
    import time

    workers = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(go), *each], env=env, stderr=subprocess.PIPE, text=True
        )
        for each in args
    ]
    time.sleep(1.0)  # every worker imported and waiting: they start together
    go.touch()
    for worker in workers:
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
