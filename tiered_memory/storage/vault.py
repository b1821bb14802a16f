"""The vault on disk: find it, create it, read and write notes atomically, commit with git.

This is the only module that writes note files. Every write is atomic (temp file in the same
folder, fsync, rename) and every change tmem makes ends in a git commit whose message says what
and why. Git is driven through GitPython's command wrapper (the real `git` binary), so hooks,
attributes and the user's own config behave exactly as they do for the user.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from tiered_memory.errors import BadInput, GitError, NoteParseError, VaultError, VaultNotFound
from tiered_memory.model import note as notes

if TYPE_CHECKING:
    import git

    from tiered_memory.config import Config

# = config.CONFIG_NAME. The config module (pydantic, ~100 ms) is imported only when a config is
# read, so finding the vault stays cheap for `tmem search` answered by the daemon.
CONFIG_NAME = "tmem.yaml"

_PACKAGE = Path(__file__).resolve().parent.parent
TEMPLATE_DIR = _PACKAGE / "vault_template"
STATE_DIR = ".tmem"
ACCESS_LOG = ".tmem-access.jsonl"
ENV_VAULT = "TMEM_VAULT"
# Editors' temp and swap files: never notes, never committed by tmem.
_TEMP_MARKERS = (".swp", ".swo", ".swx", "~", ".tmp", "___jb_tmp___", "___jb_old___", ".crswap")


def template_dir() -> Path:
    """The template ships inside the package (installed) or beside it (a source checkout)."""
    if TEMPLATE_DIR.is_dir():
        return TEMPLATE_DIR
    return _PACKAGE.parent / "vault_template"


def is_temp_name(name: str) -> bool:
    return name.startswith((".#", "#", ".~")) or name.endswith(_TEMP_MARKERS) or ".tmp." in name


def looks_like_vault(path: Path) -> bool:
    return (path / CONFIG_NAME).is_file() or (path / notes.MEMORY_DIR / "long-term").is_dir()


def find_vault(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path:
    """`--vault`, then $TMEM_VAULT, then walk up from the current directory as git does."""
    for given, origin in ((explicit, "--vault"), (os.environ.get(ENV_VAULT), ENV_VAULT)):
        if given:
            path = Path(given).expanduser().resolve()
            if not looks_like_vault(path):
                raise VaultNotFound(
                    f"{origin} points at {path}, which is not a tmem vault (run `tmem init {path}`)"
                )
            return path
    start = (cwd or Path.cwd()).resolve()
    for candidate in (start, *start.parents):
        if looks_like_vault(candidate):
            return candidate
    raise VaultNotFound("no tmem vault here or in any parent folder (run `tmem init PATH`, or pass --vault)")


@dataclass(frozen=True)
class FileInfo:
    path: str  # vault-relative, POSIX
    mtime: float
    size: int


class Vault:
    """A vault rooted at `root`: notes under memory/, config in tmem.yaml, derived state in .tmem/."""

    def __init__(self, root: Path, config: Config | None = None) -> None:
        self.root = root.resolve()
        self._config = config

    @property
    def config(self) -> Config:
        if self._config is None:
            from tiered_memory.config import load_config

            self._config = load_config(self.root)
        return self._config

    @property
    def state_dir(self) -> Path:
        path = self.root / STATE_DIR
        path.mkdir(exist_ok=True)
        return path

    # ---- paths --------------------------------------------------------------------------
    def abspath(self, rel: str) -> Path:
        return self.root / rel

    def relpath(self, path: Path) -> str:
        return path.resolve().relative_to(self.root).as_posix()

    def safe_rel(self, given: str) -> str:
        """A user-given path as a vault-relative path, refusing anything that escapes the vault."""
        if "\x00" in given:
            raise BadInput("a note path cannot contain a NUL byte")
        candidate = Path(given)
        if not candidate.is_absolute():
            direct = (self.root / candidate).resolve()
            if not direct.exists() and not given.startswith(notes.MEMORY_DIR + "/"):
                direct = (self.root / notes.MEMORY_DIR / candidate).resolve()
            candidate = direct
        else:
            candidate = candidate.resolve()
        try:
            rel = candidate.relative_to(self.root).as_posix()
        except ValueError:
            raise BadInput(f"'{given}' is outside the vault") from None
        if not rel.startswith(notes.MEMORY_DIR + "/"):
            raise BadInput(f"'{given}' is not under {notes.MEMORY_DIR}/")
        return rel

    def iter_files(self) -> Iterator[FileInfo]:
        """Every note file under memory/, skipping hidden folders and editors' temp files.

        os.scandir with string paths: this runs before every search, so at 100,000 notes the
        per-file cost has to stay at one stat call.
        """
        base = os.path.join(str(self.root), notes.MEMORY_DIR)
        if not os.path.isdir(base):
            return
        skip = len(str(self.root)) + 1
        stack = [base]
        while stack:
            folder = stack.pop()
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            subfolders = []
            for entry in entries:
                name = entry.name
                if name.startswith("."):
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        subfolders.append(entry.path)
                        continue
                    if is_temp_name(name) or not name.endswith(notes.NOTE_SUFFIXES):
                        continue
                    stat = entry.stat()
                except OSError:
                    continue
                rel = entry.path[skip:]
                if os.sep != "/":
                    rel = rel.replace(os.sep, "/")
                yield FileInfo(rel, stat.st_mtime, stat.st_size)
            stack.extend(reversed(subfolders))

    # ---- reading ------------------------------------------------------------------------
    def read_text(self, rel: str) -> str:
        """A note file's text. Binary, undecodable or unreadable files raise NoteParseError."""
        path = self.abspath(rel)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise NoteParseError(f"{rel}: no such file") from None
        except OSError as exc:
            raise NoteParseError(
                f"{rel}: cannot read it ({exc.strerror or exc.__class__.__name__})"
            ) from None
        if b"\x00" in data[:8192]:
            raise NoteParseError(f"{rel}: binary file, not a note")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise NoteParseError(f"{rel}: not UTF-8 text") from None

    def read_note(self, rel: str) -> notes.Note:
        text = self.read_text(rel)
        try:
            mtime = self.abspath(rel).stat().st_mtime
        except OSError:
            mtime = None
        return notes.parse(text, rel, mtime=mtime)

    # ---- writing (atomic) -----------------------------------------------------------------
    def write_note(self, note: notes.Note, *, create: bool = False) -> None:
        """Render and write a note atomically. `create` refuses to replace an existing file."""
        if note.parse_warning:
            raise NoteParseError(f"{note.path}: {note.parse_warning}; fix it by hand before tmem changes it")
        target = self.abspath(note.path)
        if create and target.exists():
            raise VaultError(f"{note.path} already exists")
        atomic_write(target, notes.render(note))

    def unique_path(self, rel: str) -> str:
        """`rel`, or `rel` with a -2, -3... suffix when a file of that name exists: moves never overwrite."""
        candidate = PurePosixPath(rel)
        counter = 2
        while self.abspath(candidate.as_posix()).exists():
            candidate = candidate.with_name(f"{PurePosixPath(rel).stem}-{counter}{PurePosixPath(rel).suffix}")
            counter += 1
        return candidate.as_posix()

    def move(self, src: str, dst: str) -> str:
        """Move a note file; returns the final path (suffixed on a name clash)."""
        final = self.unique_path(dst)
        self.abspath(final).parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.abspath(src), self.abspath(final))
        _fsync_dir(self.abspath(final).parent)
        return final

    def remove(self, rel: str) -> None:
        self.abspath(rel).unlink()

    # ---- git ----------------------------------------------------------------------------
    @cached_property
    def repo(self) -> git.Repo:
        import git  # GitPython costs ~100 ms to import; only paths that commit pay it

        try:
            return git.Repo(self.root)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise GitError(f"{self.root} is not a git repository (run `git init` there)") from None

    def _git_identity(self) -> list[str]:
        """`-c user.name=... -c user.email=...` when the user has no identity configured."""
        reader = self.repo.config_reader()
        args: list[str] = []
        if not reader.has_option("user", "name"):
            args += ["-c", f"user.name={self.config.git.author_name}"]
        if not reader.has_option("user", "email"):
            args += ["-c", f"user.email={self.config.git.author_email}"]
        return args

    def git(self, *args: str) -> str:
        import git

        try:
            return str(self.repo.git.execute(["git", *self._git_identity(), *args]))
        except git.GitCommandError as exc:
            detail = (exc.stderr or exc.stdout or "").strip().splitlines()
            last = detail[-1].strip() if detail else f"exit {exc.status}"
            raise GitError(f"git {args[0]} failed: {last.removeprefix('stderr: ')}") from None

    def commit(self, paths: list[str], message: str) -> str | None:
        """Stage exactly `paths` (added, changed or deleted) and commit them. Returns the sha, or None."""
        if not self.config.git.commit or not paths:
            return None
        unique = sorted(set(paths))
        # A path gone from disk that git never tracked (a note moved before its first commit)
        # has nothing to stage; naming it would make `git add` fail.
        missing = [p for p in unique if not self.abspath(p).exists()]
        if missing:
            tracked: set[str] = set()
            for start in range(0, len(missing), 500):
                tracked.update(self.git("ls-files", "--", *missing[start : start + 500]).splitlines())
            unique = [p for p in unique if p not in missing or p in tracked]
            if not unique:
                return None
        # Paths go through a file, not argv: a maintenance run may touch tens of thousands of
        # notes, past the kernel's limit on one command line. The message goes through a file too.
        with tempfile.TemporaryDirectory(dir=self.state_dir) as scratch:
            spec = Path(scratch) / "paths"
            spec.write_text("".join(p + "\n" for p in unique), encoding="utf-8")
            note = Path(scratch) / "message"
            note.write_text(message, encoding="utf-8")
            self.git("--literal-pathspecs", "add", "--all", f"--pathspec-from-file={spec}")
            # -z: names come raw, not C-quoted (CJK file names would never compare equal).
            staged = set(self.git("diff", "--cached", "--name-only", "--no-renames", "-z").split("\0"))
            if not staged.intersection(unique):
                return None
            self.git(
                "--literal-pathspecs",
                "commit",
                "--quiet",
                "--no-verify",
                "-F",
                str(note),
                f"--pathspec-from-file={spec}",
            )
        return self.git("rev-parse", "HEAD").strip()


def init_vault(path: Path, config_text: str | None = None) -> Vault:
    """Create a vault from the template, `git init` it and make the first commit."""
    path = path.expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise VaultError(f"{path} exists and is not a folder")
    if path.is_dir() and looks_like_vault(path):
        raise VaultError(f"{path} is already a tmem vault")
    if path.is_dir() and any(p.name != ".git" for p in path.iterdir()):
        raise VaultError(f"{path} is not empty and is not a vault; choose an empty or new folder")
    template = template_dir()
    if not template.is_dir():
        raise VaultError(f"vault template missing at {template} (reinstall tiered-memory)")
    path.mkdir(parents=True, exist_ok=True)
    shutil.copytree(template, path, dirs_exist_ok=True)
    if config_text is not None:
        atomic_write(path / CONFIG_NAME, config_text)
    vault = Vault(path)
    if not (path / ".git").exists():
        import git

        git.Repo.init(path, initial_branch="main")
    install_merge_driver(path)
    vault.git("add", "--all", ".")
    vault.git("commit", "--quiet", "--no-verify", "-m", "init: new tmem vault from template")
    return vault


def install_merge_driver(root: Path) -> None:
    """Register tmem's note-aware merge driver in .git/config (.gitattributes names it `tmem`).

    Plain `git pull` then merges notes field by field too. `.git/config` is per machine, so the
    command names this machine's tmem by absolute path (see `merge_driver_command`).
    """
    import git

    with git.Repo(root).config_writer() as config:
        config.set_value('merge "tmem"', "name", "tiered-memory note-aware merge")
        config.set_value('merge "tmem"', "driver", merge_driver_command())


def merge_driver_command() -> str:
    """`tmem merge-driver %O %A %B %P` with the tmem installed beside the running Python (a venv's
    or pipx's console script), so git finds it whatever PATH the merging shell has; without such a
    script, this Python runs the package as a module."""
    import shlex
    import sys

    script = Path(sys.executable).parent / "tmem"
    if script.is_file() and os.access(script, os.X_OK):
        program = shlex.quote(str(script))
    else:
        program = f"{shlex.quote(sys.executable)} -m tiered_memory"
    return f"{program} merge-driver %O %A %B %P"


def atomic_write(target: Path, text: str) -> None:
    """Temp file in the same folder, fsync, rename: a crash leaves the old file or the new one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if target.exists():
            os.chmod(tmp, target.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
