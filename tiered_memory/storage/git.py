"""The one way tmem runs git: the real `git` binary, one process per call.

Every call gets an environment that never prompts (a daemon has no terminal), never opens an
editor, reads file names literally (a note called `a*.md` is not a glob) and tells tmem's own
post-merge hook that tmem is already taking care of the indexes. Lists of paths travel
NUL-separated (through a file for `add`/`commit`, so a maintenance run of 30,000 paths never hits
the kernel's argv limit), so names with newlines, tabs, quotes, leading dashes or bytes that are
not UTF-8 work everywhere. A command whose output is a whole history (`log -p`) is read a line at a
time as git writes it (`stream`). Nothing else in tmem starts git: `tests/test_architecture.py`
checks it.

GitPython is used for exactly two things it does better than a hand-written command line: creating
a repository and writing `.git/config` values with arbitrary characters (the merge driver's
command line names a path that may hold spaces, quotes, `%` or `$`).
"""

from __future__ import annotations

__all__ = [
    "BUSY_MARKERS",
    "Git",
    "Identity",
    "enclosing_repo",
    "LIST_CHUNK",
    "STALE_LOCK_AGE",
    "init_repo",
    "is_stale_index_lock",
    "last_line",
    "outside_nested",
    "safe_url",
    "set_config",
    "name_status_entries",
    "status_entries",
    "Completed",
]

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from tiered_memory.errors import GitError, GitTimedOut

if TYPE_CHECKING:  # loaded by the first git command: a search in a fresh process runs none
    import subprocess

# What `Git.run` returns; a string, so that naming it loads no subprocess module.
Completed: TypeAlias = "subprocess.CompletedProcess[str]"

# No password prompt from a daemon, no editor for merge messages, file names never read as globs,
# and tmem's own post-merge hook stays quiet while tmem itself merges (it reindexes by itself).
_GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_MERGE_AUTOEDIT": "no",
    "GIT_LITERAL_PATHSPECS": "1",
    "TMEM_SYNC": "1",
}
LIST_CHUNK = 500  # paths per listing call when they go on the command line
_MOST_RENAMES = 50  # renames `first_versions` follows back from one file
_OBJECT_NAME = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
BUSY_MARKERS = ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply")
# A git process that holds .git/index.lock has it open; with no /proc to look (not Linux), a
# lock file this old is taken as left behind by a crash.
STALE_LOCK_AGE = 600.0

Identity = Callable[[], tuple[str, str]]


def _fallback_identity() -> tuple[str, str]:
    return ("tmem", "tmem@localhost")


class Git:
    """git in one repository. `identity` gives the (name, email) used when the user has none."""

    def __init__(self, root: Path, identity: Identity = _fallback_identity) -> None:
        self.root = root
        self._identity = identity
        self._told: set[str] = set()  # nested repositories already named (`tell_nested`)

    # ---- running -------------------------------------------------------------------------------
    def run(
        self,
        *args: str,
        check: bool = True,
        commit: bool = False,
        timeout: float | None = None,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run git; `commit` adds tmem's fallback identity for commands that create commits; `env`
        adds variables for git and the processes it starts (a merge driver)."""
        import subprocess

        ident = self.identity_args() if commit else []
        try:
            proc = subprocess.run(
                ["git", "-c", "core.quotepath=off", *ident, *args],
                cwd=self.root,
                capture_output=True,
                text=True,
                encoding="utf-8",
                errors="surrogateescape",
                env={**os.environ, **_GIT_ENV, **(env or {})},
                timeout=timeout,
                input=input,
            )
        except FileNotFoundError:
            raise GitError("git is not installed (or not on PATH)") from None
        except subprocess.TimeoutExpired:
            raise GitTimedOut(f"git {args[0]} did not finish within {timeout:.0f} s") from None
        if check and proc.returncode != 0:
            raise GitError(f"git {args[0]} failed: {last_line(proc)}")
        return proc

    def out(self, *args: str) -> str:
        return self.run(*args).stdout

    def stream(
        self, *args: str, empty_when: str | None = None, errors: str = "surrogateescape"
    ) -> Iterator[str]:
        """git's output a line at a time as it comes (a whole history's diff never sits in memory).
        Raises GitError when git fails, after the lines it wrote; a failure whose message holds
        `empty_when` (an unborn branch, say) ends the lines quietly instead. Stopping early stops
        git. `errors` is how bytes that are not UTF-8 are decoded ("replace" for text to show)."""
        import subprocess

        try:
            process = subprocess.Popen(
                ["git", "-c", "core.quotepath=off", *args],
                cwd=self.root,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors=errors,
                env={**os.environ, **_GIT_ENV},
            )
        except OSError as exc:
            raise GitError(f"cannot run git: {exc.strerror or exc}") from None
        assert process.stdout is not None and process.stderr is not None
        try:
            yield from process.stdout
            stderr = process.stderr.read()
            if process.wait() != 0 and not (empty_when and empty_when in stderr):
                last = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {process.returncode}"
                raise GitError(f"git {args[0]} failed: {last.removeprefix('fatal: ')}")
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
            process.stdout.close()
            process.stderr.close()

    def blob(self, spec: str) -> bytes:
        """A file's bytes at a revision (`REV:path`) or an index stage (`:2:path`)."""
        import subprocess

        proc = subprocess.run(
            ["git", "cat-file", "blob", spec], cwd=self.root, capture_output=True, check=False
        )
        if proc.returncode != 0:
            raise GitError(f"git cat-file failed: no {spec}")
        return proc.stdout

    def mode(self, rev: str, path: str) -> str | None:
        """The mode git records for `path` at `rev` (`100644`, `100755`...); None when it has none."""
        listed = self.run("ls-tree", "-z", rev, "--", path, check=False).stdout
        mode, _, rest = listed.partition(" ")
        return mode if rest.partition("\t")[2].rstrip("\0") == path else None

    def listed(self, *command: str, paths: Iterable[str]) -> set[str]:
        """What a listing command (`ls-files`, `status --porcelain`...) names among `paths`, read raw."""
        names = list(paths)
        out: set[str] = set()
        for start in range(0, len(names), LIST_CHUNK):
            chunk = names[start : start + LIST_CHUNK]
            listed = self.out(*command, "-z", "--", *chunk)
            out.update(name for name in listed.split("\0") if name)
        return out

    def first_versions(self, paths: Iterable[str]) -> dict[str, bytes]:
        """The bytes each of `paths` had when HEAD's history first added it, a rename followed
        back to the file it was made from (a note renamed in an editor is the note it was, with
        its first version). A path git never committed is left out."""
        where = {path: path for path in paths}  # each path asked -> the path whose first add is looked at
        settled: dict[str, str] = {}  # each path asked -> the blob of its first version
        for _ in range(_MOST_RENAMES + 1):
            pending = [path for path in where if path not in settled]
            if not pending:
                break
            adds = self._first_adds({where[path] for path in pending})
            sources = self._renamed_from(adds)
            for path in pending:
                here = where[path]
                if here not in adds:
                    del where[path]  # never committed
                elif here in sources:
                    where[path] = sources[here]
                else:
                    settled[path] = adds[here][1]
        found = self.blobs(set(settled.values()))
        return {path: found[blob] for path, blob in settled.items() if blob in found}

    def _first_adds(self, paths: Iterable[str]) -> dict[str, tuple[str, str]]:
        """(commit, blob) of the oldest commit of HEAD's history that added each path (renames
        not detected: a file renamed is a file added there)."""
        names = sorted(paths)
        adds: dict[str, tuple[str, str]] = {}
        for start in range(0, len(names), LIST_CHUNK):
            chunk = names[start : start + LIST_CHUNK]  # literal pathspecs: _GIT_ENV
            listed = self.run(
                "log",
                "--diff-filter=A",
                "--no-renames",
                "--no-abbrev",
                "--format=%x00%H",
                "--raw",
                "-z",
                "--",
                *chunk,
                check=False,
            ).stdout.split("\0")
            fields = iter(listed)
            commit = ""
            for raw in fields:  # a commit's id, then `:<modes> <blobs> A` and its path; newest first
                if _OBJECT_NAME.fullmatch(raw):
                    commit = raw
                elif raw.lstrip("\n").startswith(":"):
                    adds[next(fields, "")] = (commit, raw.split()[3])  # the last one seen: the first add
        return adds

    def _renamed_from(self, adds: dict[str, tuple[str, str]]) -> dict[str, str]:
        """Of the paths in `adds`, those whose adding commit renamed another file to them, with
        that file's path (git's rename detection, in one `git diff-tree` for all the commits)."""
        wanted = {(commit, path) for path, (commit, _blob) in adds.items() if commit}
        commits = sorted({commit for commit, _path in wanted})
        if not commits:
            return {}
        listed = self.run(
            "diff-tree",
            "--stdin",
            "-r",
            "-M",
            "--no-abbrev",
            "-z",
            "--diff-filter=R",
            input="".join(f"{commit}\n" for commit in commits),
            check=False,
        ).stdout.split("\0")
        sources: dict[str, str] = {}
        fields = iter(listed)
        commit = ""
        for raw in fields:  # a commit's id, then `:<modes> <blobs> R<score>`, the old path, the new
            raw = raw.lstrip("\n")
            if _OBJECT_NAME.fullmatch(raw):
                commit = raw
            elif raw.startswith(":"):
                old, new = next(fields, ""), next(fields, "")
                if (commit, new) in wanted:
                    sources[new] = old
        return sources

    def blobs(self, ids: Iterable[str]) -> dict[str, bytes]:
        """The bytes of each blob named in `ids` (full object names), read by one `git cat-file`."""
        import subprocess

        wanted = sorted(ids)
        if not wanted:
            return {}
        proc = subprocess.run(
            ["git", "cat-file", "--batch"],
            cwd=self.root,
            input="".join(f"{blob}\n" for blob in wanted).encode(),
            capture_output=True,
            check=False,
            env={**os.environ, **_GIT_ENV},
        )
        out, at, found = proc.stdout, 0, {}
        for blob in wanted:  # `<id> blob <size>` and the bytes, or `<id> missing`, in the order asked
            end = out.find(b"\n", at)
            if end < 0:
                break
            header = out[at:end].split()
            at = end + 1
            if len(header) == 3:
                size = int(header[2])
                if header[1] == b"blob":
                    found[blob] = out[at : at + size]
                at += size + 1
        return found

    def tracked(self, paths: Iterable[str]) -> set[str]:
        return self.listed("ls-files", paths=paths)

    def ignored(self, paths: Iterable[str]) -> set[str]:
        """The untracked paths among `paths` that .gitignore (or .git/info/exclude) keeps out of
        git: `git add` refuses to name them."""
        return self.listed("ls-files", "--others", "--ignored", "--exclude-standard", paths=paths)

    def dirty(self, paths: Iterable[str]) -> set[str]:
        """Paths among `paths` whose working copy differs from HEAD, or that git does not track."""
        found: set[str] = set()
        for entry in self.listed(
            "status", "--porcelain", "--untracked-files=all", "--no-renames", paths=paths
        ):
            if len(entry) > 3 and entry[2] == " ":
                found.add(entry[3:])
        return found

    def uncommitted(self, folder: str) -> list[str]:
        """Every path under `folder` whose working copy differs from HEAD (added, changed, deleted,
        renamed: both names), as git names them raw."""
        out = self.out("status", "--porcelain=v1", "-z", "--untracked-files=all", "--", folder)
        found: list[str] = []
        for _status, path, old in status_entries(out):
            found += [path] if old is None else [path, old]
        return found

    # ---- config and identity --------------------------------------------------------------------
    def config(self) -> dict[str, str]:
        """`git config --list`, read afresh each time (a person may change it between two calls;
        keys as git prints them: section.sub.key)."""
        values: dict[str, str] = {}
        for entry in self.run("config", "-z", "--list", check=False).stdout.split("\0"):
            key, _, value = entry.partition("\n")
            if key:
                values[key] = value
        return values

    def identity_args(self) -> list[str]:
        cfg = self.config()
        args: list[str] = []
        if "user.name" not in cfg or "user.email" not in cfg:
            name, email = self._identity()
            if "user.name" not in cfg:
                args += ["-c", f"user.name={name}"]
            if "user.email" not in cfg:
                args += ["-c", f"user.email={email}"]
        return args

    # ---- refs ----------------------------------------------------------------------------------
    def rev(self, ref: str) -> str | None:
        proc = self.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        return proc.stdout.strip() or None

    def head(self) -> str:
        sha = self.rev("HEAD")
        if sha is None:
            raise GitError("the vault's git repository has no commits yet")
        return sha

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.run("merge-base", "--is-ancestor", older, newer, check=False).returncode == 0

    def layout(self) -> tuple[str, str, str]:
        """(absolute git dir, post-merge hook path, current branch or '' when detached), one call."""
        out = self.out(
            "rev-parse",
            "--absolute-git-dir",
            "--git-path",
            "hooks/post-merge",
            "--symbolic-full-name",
            "HEAD",
        )
        git_dir, hook, head = (out.splitlines() + ["", "", ""])[:3]
        branch = head.removeprefix("refs/heads/") if head.startswith("refs/heads/") else ""
        return (git_dir, os.path.join(self.root, hook), branch)

    def git_dir(self) -> Path:
        marker = self.root / ".git"
        if marker.is_dir():
            return marker
        return Path(self.layout()[0])

    def busy(self) -> str | None:
        """Why git must not be touched now: the user's own git command, merge or rebase is running.
        A `.git/index.lock` nobody holds is not a reason (the next commit clears it)."""
        try:
            folder = self.git_dir()
        except GitError:
            return None
        for name in BUSY_MARKERS:
            if (folder / name).exists():
                return f".git/{name} exists"
        lock = folder / "index.lock"
        if os.path.lexists(lock) and not _is_stale(lock):
            return ".git/index.lock exists"
        return None

    # ---- committing ----------------------------------------------------------------------------
    def commit_paths(
        self, paths: Iterable[str], message: str, scratch: Path, warn: Callable[[str], None]
    ) -> str | None:
        """Stage exactly `paths` (added, changed or deleted) and commit them; the sha, or None if
        nothing of them changed. A stale `.git/index.lock` left by a crashed git is removed first."""
        unique = sorted(set(paths))
        # Git would keep a folder that is a repository of its own as an empty link to it (a
        # gitlink) and refuse the files inside: none of it would reach another machine.
        unique, nested = outside_nested(self.root, unique)
        for folder in nested:
            self.tell_nested(folder, warn)
        if not unique:
            return None
        # A path gone from disk that git never tracked (a note moved before its first commit)
        # has nothing to stage; naming it would make `git add` fail.
        missing = [p for p in unique if not os.path.lexists(self.root / p)]
        if missing:
            known = self.tracked(missing)
            unique = [p for p in unique if p not in missing or p in known]
            if not unique:
                return None
        # What .gitignore keeps out (a person's choice, or a pulled .gitignore that names notes)
        # stays on disk uncommitted, said once, rather than failing every change with `git add`.
        ignored = self.ignored(unique)
        if ignored:
            shown = ", ".join(sorted(ignored)[:3]) + (
                f" and {len(ignored) - 3} more" if len(ignored) > 3 else ""
            )
            warn(f"not committed, as .gitignore leaves them out of git: {shown}")
            unique = [p for p in unique if p not in ignored]
            if not unique:
                return None
        self.clear_stale_index_lock(warn)
        scratch.mkdir(parents=True, exist_ok=True)
        import tempfile

        # Named after this process, as an atomic write's temp file is: what a kill leaves here
        # is swept by the next unit of work (`vault.sweep_temp_files`).
        with tempfile.TemporaryDirectory(dir=scratch, prefix=f"{os.getpid()}-", suffix=".tmp") as folder:
            spec = Path(folder) / "paths"
            spec.write_bytes(b"".join(os.fsencode(p) + b"\0" for p in unique))
            note = Path(folder) / "message"
            # A file name that is not UTF-8 (surrogate escapes) is named with its bytes as `\xe9`.
            note.write_text(
                message.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"),
                encoding="utf-8",
            )
            pathspec = [f"--pathspec-from-file={spec}", "--pathspec-file-nul"]
            # --force: the ignored paths are out already, and a tracked file in a folder that
            # .gitignore names (`memory/**`) is refused by `git add` without it.
            self.run("add", "--all", "--force", *pathspec)
            staged = set(self.out("diff", "--cached", "--name-only", "--no-renames", "-z").split("\0"))
            if not staged.intersection(unique):
                return None
            self.run("commit", "--quiet", "--no-verify", "-F", str(note), *pathspec, commit=True)
        return self.head()

    def tell_nested(self, folder: str, warn: Callable[[str], None]) -> None:
        """Say once (per runner) that `folder` is a repository of its own, so nothing in it syncs."""
        if folder in self._told:
            return
        self._told.add(folder)
        if self.is_submodule(folder):
            warn(
                f"{folder} is a git submodule: tmem commits nothing inside it; your other machines "
                "have it as a pointer to its own repository, and its files come from there, not from tmem sync"
            )
            return
        warn(
            f"{folder} is a git repository of its own (it has a .git): tmem does not commit it, "
            "so its files never reach your other machines; move them out, or remove its .git"
        )

    def is_submodule(self, folder: str) -> bool:
        """Whether git tracks `folder` as a submodule (a gitlink, mode 160000, in its index): the
        pointer travels with the vault's commits, the files live in the submodule's repository."""
        listed = self.run("ls-files", "--stage", "-z", "--", folder, check=False).stdout
        return any(
            entry.startswith("160000 ") and entry.partition("\t")[2] == folder for entry in listed.split("\0")
        )

    def unstage(self, paths: Iterable[str]) -> None:
        """Put the index entries of `paths` back to HEAD (after an interrupted commit)."""
        names = sorted(set(paths))
        for start in range(0, len(names), LIST_CHUNK):
            self.run("reset", "--quiet", "--", *names[start : start + LIST_CHUNK], check=False)

    def clear_stale_index_lock(self, warn: Callable[[str], None], wait: float = 10.0) -> None:
        """A `.git/index.lock` that no live process holds was left by a git that crashed; every
        later commit would fail on it, so it goes (with a line saying so). One a live git holds is
        waited for, then reported with its pid."""
        try:
            lock = self.git_dir() / "index.lock"
        except GitError:
            return
        deadline = time.monotonic() + wait
        while os.path.lexists(lock):
            if _is_stale(lock):
                with contextlib.suppress(FileNotFoundError):
                    lock.unlink()
                warn(f"removed a stale {lock} left by a git command that did not finish")
                return
            if time.monotonic() >= deadline:
                holders = _holders(lock)
                who = f" (pid {', '.join(map(str, holders))})" if holders else ""
                raise GitError(
                    f"git is busy: {lock} is held by another git command{who}; try again when it ends"
                )
            time.sleep(0.1)


def status_entries(out: str) -> list[tuple[str, str, str | None]]:
    """`git status --porcelain=v1 -z` as (status letters XY, path, the name a rename or copy had,
    else None): NUL-separated, so no name is quoted, and a rename's old name is the next field."""
    fields = out.split("\0")
    found: list[tuple[str, str, str | None]] = []
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if len(entry) < 4:
            continue
        status, old = entry[:2], None
        if ("R" in status or "C" in status) and i < len(fields):
            old = fields[i]
            i += 1
        found.append((status, entry[3:], old))
    return found


def name_status_entries(fields: list[str]) -> list[tuple[str, str, str | None]]:
    """`--name-status -z` fields (of `git diff`, or of one commit of `git log`) as (status, path,
    the name a rename or copy came from, else None): a rename's two names are two fields."""
    found: list[tuple[str, str, str | None]] = []
    i = 0
    while i < len(fields):
        status = fields[i]
        i += 1
        if not status:
            continue
        if status[0] in "RC" and i + 1 < len(fields):
            found.append((status, fields[i + 1], fields[i]))
            i += 2
        elif i < len(fields):
            found.append((status, fields[i], None))
            i += 1
    return found


def outside_nested(root: Path, paths: Iterable[str]) -> tuple[list[str], list[str]]:
    """(the paths not in a nested repository, the nested repositories the others are in): a
    folder below `root` that holds a `.git` of its own, the path itself when it is one (git
    lists a repository it does not track as `folder/`)."""
    kept: list[str] = []
    nested: dict[str, None] = {}
    checked: dict[str, bool] = {}
    for rel in paths:
        parts = rel.rstrip("/").split("/")
        found = None
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth])
            if folder not in checked:  # (a file's `name/.git` does not exist: ENOTDIR)
                checked[folder] = os.path.lexists(root / folder / ".git")
            if checked[folder]:
                found = folder
                break
        if found is None:
            kept.append(rel)
        else:
            nested[found] = None
    return kept, list(nested)


def _is_stale(lock: Path) -> bool:
    holders = _holders(lock)
    if holders is not None:
        return not holders
    try:
        return time.time() - lock.lstat().st_mtime > STALE_LOCK_AGE
    except OSError:
        return False


def is_stale_index_lock(root: Path) -> bool:
    """Whether `.git/index.lock` exists and no live process holds it (a crash left it)."""
    lock = root / ".git" / "index.lock"
    return os.path.lexists(lock) and _is_stale(lock)


def _holders(path: Path) -> list[int] | None:
    """Pids of processes that have `path` open, from /proc; None where /proc cannot tell."""
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return None
    target = os.path.realpath(path)
    found: list[int] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fds = os.listdir(entry / "fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(entry / "fd" / fd) == target:
                    found.append(int(entry.name))
                    break
            except OSError:
                continue
    return found


def enclosing_repo(path: Path) -> Path | None:
    """The top of a git repository around `path` (which has no `.git` of its own) that tracks
    files under it, else None: a home folder kept in git that ignores this folder is no reason
    to refuse it."""
    import subprocess

    env = {**os.environ, **_GIT_ENV}
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=path, capture_output=True, text=True, env=env
        )
    except FileNotFoundError:
        return None
    if top.returncode != 0 or not top.stdout.strip():
        return None
    outer = Path(top.stdout.strip()).resolve()
    if outer == path:
        return None
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", "."], cwd=path, capture_output=True, text=True, env=env
    )
    return outer if listed.returncode == 0 and listed.stdout else None


def init_repo(path: Path) -> None:
    import git  # GitPython is slow to import; only `tmem init` pays it

    git.Repo.init(path, initial_branch="main")


def set_config(root: Path, section: str, key: str, value: str) -> None:
    """Write one `.git/config` value, quoted correctly whatever characters it holds."""
    import git  # see init_repo

    with git.Repo(root).config_writer() as config:
        config.set_value(section, key, value)


def last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln.strip() for ln in (proc.stderr or proc.stdout or "").splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.lower().startswith("hint:")]
    return (lines[-1] if lines else f"exit {proc.returncode}").removeprefix("fatal: ").removeprefix("error: ")


def safe_url(url: str) -> str:
    """Text with any URL's user:password@ (a token in an https remote) taken out."""
    return re.sub(r"\b([a-z][a-z0-9+.-]*://)[^/@\s']*@", r"\1", url, flags=re.IGNORECASE)
