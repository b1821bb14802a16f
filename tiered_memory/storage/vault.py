"""The vault on disk: find it, create it, read and write notes atomically, commit with git.

This is the only module that writes note files. Every write is atomic (temp file under
.tmem/writing/ on the same file system, fsync, rename) and every change tmem makes ends in a git commit whose message says what
and why. Git is driven through GitPython's command wrapper (the real `git` binary), so hooks,
attributes and the user's own config behave exactly as they do for the user.
"""

from __future__ import annotations

__all__ = [
    "ENCRYPTED",
    "FileInfo",
    "JOURNAL_DIR",
    "SCRATCH_DIR",
    "STATE_DIR",
    "TEMPLATE_DIR",
    "Vault",
    "WRITING_DIR",
    "adopt_folder",
    "keep_state_ignored",
    "atomic_write",
    "atomic_writing",
    "fsync_dir",
    "init_vault",
    "install_merge_driver",
    "merge_driver_command",
    "new_file_mode",
    "sweep_temp_files",
    "temp_prefix",
    "template_dir",
    "template_text",
]

import contextlib
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import TextIO

from tiered_memory.config import Config, load_config, to_dict
from tiered_memory.errors import BadInput, ConfigError, GitError, NoteParseError, VaultError
from tiered_memory.model import authors, envelope, layout
from tiered_memory.model import note as notes
from tiered_memory.model.folders import FolderRules, is_attachment
from tiered_memory.model.layout import CONFIG_NAME, STATE_DIR
from tiered_memory.storage import crypto
from tiered_memory.storage.git import Git, enclosing_repo, init_repo, set_config
from tiered_memory.storage.locate import looks_like_vault, user_settings
from tiered_memory.storage.walk import is_temp_name, is_utf8

_PACKAGE = Path(__file__).resolve().parent.parent
TEMPLATE_DIR = _PACKAGE / "vault_template"
ENCRYPTED = "encrypted note (searchable only in memory, while unlocked)"
# Under .tmem/: where atomic writes put their temp files (see `temp_path`).
WRITING_DIR = "writing"
# Under .tmem/: the journals of units of work (storage.transaction), with hard links of old bytes.
JOURNAL_DIR = "journal"
# Under .tmem/: the folders a commit writes its path list and message in (`Git.commit_paths`).
SCRATCH_DIR = "tmp"
# Never follows a link, never waits on a pipe or a device (their checks come after the open).
_READ_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
)


def template_dir() -> Path:
    """The template ships inside the package (installed) or beside it (a source checkout)."""
    if TEMPLATE_DIR.is_dir():
        return TEMPLATE_DIR
    return _PACKAGE.parent / "vault_template"


def template_text(rel: str) -> str | None:
    """The text `init` gives `rel` in a new vault (the template's own file); None when the
    template has no such file or it is not text."""
    parts = PurePosixPath(rel).parts
    if not parts or any(part in ("", ".", "..") for part in parts) or rel.startswith("/"):
        return None
    path = template_dir().joinpath(*parts)
    try:
        if path.is_symlink() or not path.is_file():
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


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
        self._config_stamp: tuple[int, int, int] | None = None  # tmem.yaml as read, if read from it
        self._config_given = config is not None
        # The id a note without an `id:` key goes by where its default id is another's too (the
        # index settles those, model.note_ids); none until an index is opened on this vault.
        self.settled_id: Callable[[str], str | None] = lambda rel: None
        # Told by a unit of work just before it changes a file: its path and the digest of the
        # bytes it will hold (`transaction.ABSENT`: none). A daemon's watcher drops the events of
        # these writes by it (daemon.watcher.OwnWrites); nothing else listens.
        self.will_write: Callable[[str, str], None] = lambda rel, digest: None

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config_stamp = self._stamp()
            self._config = load_config(self.root)
        return self._config

    def reload_config(self) -> None:
        """Read tmem.yaml again (a long-lived process, the daemon, whose person edited it or whose
        sync pulled a new one): the settings and the folder rules made of them. A file that does
        not load (ConfigError, a person halfway through an edit) leaves the settings in use."""
        stamp = self._stamp()
        fresh = load_config(self.root)
        self._config = fresh
        self._config_stamp = stamp
        self.__dict__.pop("folders", None)

    def _stamp(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.root / CONFIG_NAME)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def settings_stamp(self) -> tuple[int, int, int] | None:
        """tmem.yaml's stamp on disk now (time, size, inode; None without one): a stat, no read."""
        return self._stamp()

    @property
    def read_stamp(self) -> tuple[int, int, int] | None:
        """tmem.yaml's stamp when the settings in use were read from it."""
        return self._config_stamp

    def config_changed(self) -> bool:
        """Whether tmem.yaml changed since its settings were read (a person's edit, a pull); if so,
        they are read again now (`reload_config`). A process that lives on (the daemon) asks
        before each operation; a command reads the file once anyway. Settings a caller gave are
        kept, and so are those in use when the changed file does not load: it is tried again at
        its next change."""
        if self._config_given or self._config is None or self._stamp() == self._config_stamp:
            return False
        try:
            self.reload_config()
        except ConfigError:
            self._config_stamp = self._stamp()
            return False
        return True

    @property
    def state_dir(self) -> Path:
        path = self.root / STATE_DIR
        path.mkdir(exist_ok=True)
        return path

    @property
    def writing_dir(self) -> Path:
        """Where atomic writes keep their temp files until the rename: inside .tmem/, so a write
        killed half-way leaves nothing a person, the scanner or `git status` sees. Its own
        .gitignore keeps it out of git even in a vault whose .gitignore lacks .tmem/."""
        path = self.state_dir / WRITING_DIR
        if not path.is_dir():
            path.mkdir(exist_ok=True)
            (path / ".gitignore").write_text("*\n", encoding="utf-8")
        return path

    # ---- paths --------------------------------------------------------------------------
    def abspath(self, rel: str) -> Path:
        return self.root / rel

    def relpath(self, path: Path) -> str:
        return path.resolve().relative_to(self.root).as_posix()

    @cached_property
    def folders(self) -> FolderRules:
        """Which files are notes and their tiers (`folders:` in tmem.yaml)."""
        return FolderRules.of(**to_dict(self.config.folders))

    def is_note(self, rel: str) -> bool:
        return self.folders.is_note(rel)

    def safe_rel(self, given: str) -> str:
        """A user-given path as a vault-relative path, refusing anything that escapes the vault."""
        if "\x00" in given:
            raise BadInput("a note path cannot contain a NUL byte")
        candidate = Path(given)
        if not candidate.is_absolute():
            direct = (self.root / candidate).resolve()
            inside = direct == self.root or self.root in direct.parents
            if inside and not direct.exists() and not given.startswith(layout.MEMORY_DIR + "/"):
                direct = (self.root / layout.MEMORY_DIR / candidate).resolve()
            candidate = direct
        else:
            candidate = candidate.resolve()
        try:
            rel = candidate.relative_to(self.root).as_posix()
        except ValueError:
            raise BadInput(f"'{given}' is outside the vault") from None
        if not rel.startswith(layout.MEMORY_DIR + "/") and not self.is_note(rel):
            raise BadInput(f"'{given}' is not a note of this vault (see `folders:` in {CONFIG_NAME})")
        return rel

    def iter_files(self) -> Iterator[FileInfo]:
        """Every note file of the vault (the `folders:` rules: Markdown anywhere, JSON in the tier
        folders), skipping hidden folders (.git, .tmem, .obsidian, .trash), excluded folders and
        editors' temp files.

        os.scandir with string paths: this runs before every search, so at 100,000 notes the
        per-file cost has to stay at one stat call.
        """
        base = str(self.root)
        rules = self.folders
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
                    if entry.is_symlink():
                        continue  # never read through a link: it may point outside the vault
                    if entry.is_dir(follow_symlinks=False):
                        if not rules.excludes_folder(_rel(entry.path, skip)):
                            subfolders.append(entry.path)
                        continue
                    if not entry.is_file(follow_symlinks=False):
                        continue  # a pipe, socket or device: opening it could block for ever
                    if is_temp_name(name) or not name.endswith(layout.NOTE_SUFFIXES) or not is_utf8(name):
                        continue  # (a name not UTF-8 cannot be indexed: index.indexer names it)
                    rel = _rel(entry.path, skip)
                    if not rules.is_note(rel):
                        continue
                    stat = entry.stat()
                except OSError:
                    continue
                yield FileInfo(rel, stat.st_mtime, stat.st_size)
            stack.extend(reversed(subfolders))

    def attachments(self) -> list[str]:
        """Every attachment of the vault (images, PDFs...: model.folders), hidden folders skipped."""
        found: list[str] = []
        rules = self.folders
        skip = len(str(self.root)) + 1
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = sorted(
                d for d in dirs if not rules.excludes_folder(_rel(os.path.join(folder, d), skip))
            )
            for name in sorted(files):
                rel = _rel(os.path.join(folder, name), skip)
                if is_attachment(rel) and not os.path.islink(os.path.join(folder, name)):
                    found.append(rel)
        return found

    # ---- reading ------------------------------------------------------------------------
    def is_link(self, rel: str) -> bool:
        """Whether the path, or a folder on the way to it inside the vault, is a symbolic link."""
        parts = PurePosixPath(rel).parts
        if rel.startswith("/") or ".." in parts:
            path = self.abspath(rel)
            return os.path.realpath(path) != os.path.join(str(self.root), *parts)
        # One lstat per component below the (resolved) root: what realpath would find, without
        # re-resolving the root's own folders in pure Python for every file a build reads.
        current = str(self.root)
        for part in parts:
            current = os.path.join(current, part)
            try:
                if stat.S_ISLNK(os.lstat(current).st_mode):
                    return True
            except OSError:
                return False  # nothing further down exists, so nothing further down is a link
        return False

    def exists(self, rel: str) -> bool:
        """Whether anything (a file, a folder, a link) is at `rel`."""
        return os.path.lexists(self.abspath(rel))

    def read_bytes(self, rel: str, *, other_names: bool = True) -> bytes:
        """A file's bytes. A symbolic link is never followed: it could expose a file outside the
        vault to search results, an agent's prompt or a commit. Anything but a regular file (a
        pipe, a socket, a device) is refused without ever waiting on it: the open does not block
        and the opened file is checked, so one swapped in after a listing is refused too. With
        `other_names=False`, a file that has hard links besides this name and tmem's own journal
        (`extra_links`) is refused as well: its bytes may be a file from outside the vault."""
        if self.is_link(rel):
            raise NoteParseError(f"{rel}: a symbolic link; tmem does not read through links")
        fd = os.open(self.abspath(rel), _READ_FLAGS)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise NoteParseError(f"{rel}: not a regular file (a pipe, socket or device)")
            if not other_names and info.st_nlink > 1 and (extra := self.extra_links(info)):
                raise NoteParseError(
                    f"{rel}: a hard link ({extra} other name(s), maybe outside the vault); "
                    "tmem does not index it (copy it instead of linking it)"
                )
            handle = os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise
        with handle:
            return handle.read()

    def extra_links(self, info: os.stat_result) -> int:
        """How many names the file of `info` has besides one in the vault and the hard links a
        unit of work keeps of old bytes under `.tmem/journal/` while it runs (or until the next
        one undoes it, after a kill)."""
        own = 0
        try:
            folders = [e.path for e in os.scandir(self.root / STATE_DIR / JOURNAL_DIR) if e.is_dir()]
        except OSError:
            folders = []
        for folder in folders:
            with contextlib.suppress(OSError), os.scandir(folder) as entries:
                for entry in entries:
                    kept = entry.stat(follow_symlinks=False)
                    if (kept.st_ino, kept.st_dev) == (info.st_ino, info.st_dev):
                        own += 1
        return max(info.st_nlink - 1 - own, 0)

    def read_text(self, rel: str, *, decrypt: bool = True, other_names: bool = True) -> str:
        """A note file's text. Binary, undecodable or unreadable files raise NoteParseError. An
        encrypted note is decrypted (Locked without a key, Tampered when it fails authentication);
        with `decrypt=False` it raises NoteParseError instead (the indexer never sees plaintext).
        `other_names`: see `read_bytes`."""
        return self.text_of(rel, lambda: self.read_bytes(rel, other_names=other_names), decrypt=decrypt)

    def text_of(self, rel: str, read: Callable[[], bytes], *, decrypt: bool = True) -> str:
        """The text of `rel` as `read` gives its bytes (this vault's reader, or a unit of work's
        that records what it read): a missing or unreadable file is a NoteParseError."""
        try:
            data = read()
        except FileNotFoundError:
            raise NoteParseError(f"{rel}: no such file") from None
        except OSError as exc:
            raise NoteParseError(
                f"{rel}: cannot read it ({exc.strerror or exc.__class__.__name__})"
            ) from None
        return self.decode(rel, data, decrypt=decrypt)

    def decode(self, rel: str, data: bytes, *, decrypt: bool = True) -> str:
        """The text of `rel`'s bytes `data`, as `read_text` gives it (decrypted, checked)."""
        if envelope.is_envelope(data):
            if not decrypt:
                raise NoteParseError(f"{rel}: {ENCRYPTED}")
            data = crypto.decrypt(self.root, rel, data)
        if b"\x00" in data[:8192]:
            raise NoteParseError(f"{rel}: binary file, not a note")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise NoteParseError(f"{rel}: not UTF-8 text") from None

    def read_body(self, rel: str) -> str:
        """A note's body without its frontmatter (`notes.body_of`): no YAML is parsed."""
        return notes.body_of(self.read_text(rel), rel)

    def read_note(self, rel: str) -> notes.Note:
        text = self.read_text(rel)
        try:
            mtime = self.abspath(rel).stat().st_mtime
        except OSError:
            mtime = None
        return self.parse(text, rel, mtime)

    def parse(self, text: str, rel: str, mtime: float | None = None) -> notes.Note:
        """The note `text` is at `rel`, going by the id the vault knows it by (`settled_id`)."""
        note = notes.parse(text, rel, mtime=mtime)
        if note.meta.get("id") in (None, ""):
            note.given_id = self.settled_id(rel) or ""
        return note

    def links(self) -> list[str]:
        """Every symbolic link in the vault (files or folders): tmem never reads or commits them."""
        found: list[str] = []
        base = self.root
        for folder, dirs, files in os.walk(base):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in [*dirs, *files]:
                path = os.path.join(folder, name)
                if os.path.islink(path):
                    found.append(os.path.relpath(path, self.root).replace(os.sep, "/"))
        return sorted(found)

    def nested_repos(self) -> list[str]:
        """Folders of the vault that are git repositories of their own (they hold a `.git`, like
        after `git init memory/long-term/x`): git would keep each as an empty link to another
        repository, so tmem commits nothing in them and their files never sync. The outermost
        one only; links are not followed."""
        found: list[str] = []
        for folder, dirs, _files in os.walk(self.root):
            if folder != str(self.root) and os.path.lexists(os.path.join(folder, ".git")):
                found.append(os.path.relpath(folder, self.root).replace(os.sep, "/"))
                dirs[:] = []
                continue
            dirs[:] = [d for d in dirs if not d.startswith(".")]
        return sorted(found)

    # ---- naming ---------------------------------------------------------------------------
    def unique_path(self, rel: str) -> str:
        """`rel`, or `rel` with a -2, -3... suffix when a file of that name exists: moves never overwrite."""
        candidate = PurePosixPath(rel)
        counter = 2
        while self.abspath(candidate.as_posix()).exists():
            candidate = candidate.with_name(f"{PurePosixPath(rel).stem}-{counter}{PurePosixPath(rel).suffix}")
            counter += 1
        return candidate.as_posix()

    # ---- git ----------------------------------------------------------------------------
    @cached_property
    def git(self) -> Git:
        """The vault's git runner; commits made without a user identity use the config's fallback."""
        if not (self.root / ".git").exists():
            raise GitError(f"{self.root} is not a git repository (run `git init` there)")
        return Git(self.root, self._fallback_identity)

    def _fallback_identity(self) -> tuple[str, str]:
        """Whom this clone's commits name when git's config names no one (git's `user.name` and
        `user.email`, of this clone or this user, come first: `Git.identity_args`). Then, the
        first that is a clean one-line name: this machine's user settings (`tmem config set
        author`), tmem.yaml's `sync.author`, its older `git.author_name`/`author_email` (both only
        as approved on this machine, `config.OUTWARD`: tmem.yaml travels with every pull), else
        `tmem@<host>`, which still tells machines apart."""
        import socket  # commits only: a search never loads it

        host = authors.host_label(socket.gethostname())
        cfg = self.config
        candidates = [user_settings().get("author"), cfg.sync.author]
        if (cfg.git.author_name, cfg.git.author_email) != ("tmem", "tmem@localhost"):
            candidates.append(f"{cfg.git.author_name} <{cfg.git.author_email}>")
        for text in candidates:
            if not text:
                continue
            try:
                found = authors.parse(text, host)
            except ValueError:
                continue  # not a name git may record: the next one is
            return (found.name, found.email)
        fallback = authors.default(host)
        return (fallback.name, fallback.email)


def _rel(path: str, skip: int) -> str:
    rel = path[skip:]
    return rel.replace(os.sep, "/") if os.sep != "/" else rel


def init_vault(path: Path, config_text: str | None = None) -> Vault:
    """Create a vault from the template, `git init` it and make the first commit."""
    path = path.expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise VaultError(f"{path} exists and is not a folder")
    if path.is_dir() and looks_like_vault(path):
        raise VaultError(f"{path} is already a tmem vault")
    if path.is_dir() and any(p.name != ".git" for p in path.iterdir()):
        raise VaultError(
            f"{path} is not empty and is not a vault; to keep your notes where they are and index "
            f"them, run `tmem init --adopt {path}`; or choose an empty or new folder"
        )
    template = template_dir()
    if not template.is_dir():
        raise VaultError(f"vault template missing at {template} (reinstall tiered-memory)")
    path.mkdir(parents=True, exist_ok=True)
    import shutil  # creating a vault only: a search never loads it

    shutil.copytree(template, path, dirs_exist_ok=True)
    if config_text is not None:
        atomic_write(path / CONFIG_NAME, config_text)
    _apply_umask(path)
    vault = Vault(path)
    if not (path / ".git").exists():
        init_repo(path)
    install_merge_driver(path)
    vault.git.run("add", "--all", ".")
    vault.git.run("commit", "--quiet", "--no-verify", "-m", "init: new tmem vault from template", commit=True)
    return vault


# What adopting a folder adds to a .gitattributes it already has: a person's notes anywhere merge
# with tmem's driver too.
_ADOPT_ATTRIBUTES = "*.md merge=tmem\n"
_ADOPT_MESSAGE = "init: adopt this folder as a tmem vault"


def adopt_folder(path: Path) -> tuple[Vault, list[str]]:
    """Make an existing folder (an Obsidian vault, a folder of notes) a vault in place.

    Nothing a person wrote is moved or rewritten: tmem.yaml is added, missing lines are appended
    to .gitignore and .gitattributes, and git is initialised when the folder has none. In a new
    repository every file (but those over `git.attachment_max_mb`) goes into the first commit; in
    an existing one only tmem's own files (the daemon commits changed notes as it always does).
    Returns the vault and the files left out for their size.
    """
    path = path.expanduser().resolve()
    if not path.is_dir():
        raise VaultError(f"{path} is not a folder")
    _refuse_tracked_by_enclosing(path)
    template = template_dir()
    created: list[str] = []
    if not (path / CONFIG_NAME).exists():
        import shutil

        shutil.copyfile(template / CONFIG_NAME, path / CONFIG_NAME)
        os.chmod(path / CONFIG_NAME, new_file_mode())
        created.append(CONFIG_NAME)
    for name, extra in ((".gitignore", ""), (".gitattributes", _ADOPT_ATTRIBUTES)):
        wanted = (template / name).read_text(encoding="utf-8") + extra
        if _append_missing_lines(path / name, wanted):
            created.append(name)
    new_repo = not (path / ".git").exists()
    if new_repo:
        init_repo(path)
    install_merge_driver(path)
    vault = Vault(path)
    too_big: list[str] = []
    if new_repo:
        limit = vault.config.git.attachment_max_mb * 1024 * 1024
        listed = vault.git.out("ls-files", "--others", "--exclude-standard", "-z").split("\0")
        for rel in (p for p in listed if p):
            full = path / rel
            if full.is_symlink():
                continue
            if full.stat().st_size > limit:
                too_big.append(rel)
            else:
                created.append(rel)
    # A file the repository's own .gitignore keeps out (a Quartz site ignores `.gitignore`
    # itself) stays on disk and out of the commit: `git add` would refuse it.
    if not new_repo:
        ignored = vault.git.ignored(created)
        created = [rel for rel in created if rel not in ignored]
    if created:
        for start in range(0, len(created), 500):
            vault.git.run("add", "--", *created[start : start + 500])
        vault.git.run("commit", "--quiet", "--no-verify", "-m", _ADOPT_MESSAGE, commit=True)
    return vault, sorted(too_big)


# tmem's per-machine state, as the template's .gitignore names it: never to be committed.
_STATE_RULES = (".tmem/", ".tmem-access.jsonl", ".tmem-backups/")


def keep_state_ignored(vault: Vault) -> bool:
    """Make git ignore tmem's per-machine state in this clone even where the vault's .gitignore
    does not say so: a repository that ignores `.gitignore` itself (a Quartz site's does) never
    carries tmem's lines to another clone, where a person's `git add -A` would commit the
    indexes. The missing lines go to `.git/info/exclude`, which is this clone's alone.
    Returns whether any had to be added."""
    probes = {rule: rule + "x" if rule.endswith("/") else rule for rule in _STATE_RULES}
    proc = vault.git.run("check-ignore", "--no-index", *probes.values(), check=False)
    ignored = set(proc.stdout.splitlines())
    missing = [rule for rule, probe in probes.items() if probe not in ignored]
    if not missing:
        return False
    exclude = Path(vault.git.out("rev-parse", "--git-path", "info/exclude").strip())
    exclude = exclude if exclude.is_absolute() else vault.root / exclude
    exclude.parent.mkdir(parents=True, exist_ok=True)
    lines = "# tmem's per-machine state (the vault's .gitignore does not reach every clone)\n"
    return _append_missing_lines(exclude, lines + "\n".join(missing) + "\n")


def _refuse_tracked_by_enclosing(path: Path) -> None:
    """Refuse a folder whose files a git repository around it already tracks (a Quartz site's
    `content/`): a repository of its own there would split their history in two, and tmem's
    commits would never reach the remote the person pushes."""
    if os.path.lexists(path / ".git"):
        return
    outer = enclosing_repo(path)
    if outer is not None:
        inner = path.relative_to(outer).as_posix()
        raise VaultError(
            f"{path} is part of the git repository at {outer}, which tracks its files; adopt {outer} "
            f"instead and list its folders other than {inner}/ under `folders: exclude:` in its tmem.yaml"
        )


def _append_missing_lines(target: Path, wanted: str) -> bool:
    """Append the lines of `wanted` a file lacks (the file's own bytes stay as they are)."""
    try:
        current = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = ""
    have = {line.strip() for line in current.splitlines()}
    missing = [line for line in wanted.splitlines() if line.strip() and line.strip() not in have]
    rules = [line for line in missing if not line.lstrip().startswith("#")]
    if not rules:
        return False
    eol = "\r\n" if "\r\n" in current else "\n"
    lead = "" if not current or current.endswith("\n") else eol
    with open(target, "a", encoding="utf-8", newline="") as handle:
        handle.write(lead + eol.join(missing) + eol)
    return True


def install_merge_driver(root: Path) -> None:
    """Register tmem's note-aware merge driver in .git/config (.gitattributes names it `tmem`).

    Plain `git pull` then merges notes field by field too. `.git/config` is per machine, so the
    command names this machine's tmem by absolute path (see `merge_driver_command`).
    """
    set_config(root, 'merge "tmem"', "name", "tiered-memory note-aware merge")
    set_config(root, 'merge "tmem"', "driver", merge_driver_command())


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


def temp_prefix(target: Path, scratch: Path | None) -> tuple[Path, str]:
    """Folder and name prefix for the temp file of an atomic write to `target`.

    In `scratch` (a vault's `writing_dir`) when it is on the same file system as the target (a
    rename cannot cross file systems), named after this process so recovery can tell a dead
    writer's leftovers from a live one's; otherwise beside the target as `.<name>.<random>.tmp`,
    which the scanner skips and recovery sweeps for the paths an interrupted journal names.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    if scratch is not None:
        try:
            if os.stat(scratch).st_dev == os.stat(target.parent).st_dev:
                return scratch, f"{os.getpid()}-"
        except OSError:
            pass
    return target.parent, f".{target.name}."


def sweep_temp_files(scratch: Path) -> list[str]:
    """Remove the temp files (and a commit's temp folders) in `scratch` whose writer process is
    gone (killed mid-write)."""
    removed: list[str] = []
    try:
        entries = list(os.scandir(scratch))
    except OSError:
        return removed
    for entry in entries:
        pid_text, dash, _rest = entry.name.partition("-")
        if not dash or not pid_text.isdigit() or not entry.name.endswith(".tmp"):
            continue
        if int(pid_text) == os.getpid() or _alive(int(pid_text)):
            continue
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
            removed.append(entry.name)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def atomic_write(target: Path, text: str, scratch: Path | None = None) -> None:
    """Temp file, fsync, rename: a crash leaves the old file or the new one. `scratch`: a vault's
    `writing_dir`, where the temp file goes so a crash leaves no stray file in the vault."""
    with atomic_writing(target, scratch) as handle:
        handle.write(text)


@contextlib.contextmanager
def atomic_writing(target: Path, scratch: Path | None = None) -> Iterator[TextIO]:
    """`atomic_write` for a text written a piece at a time (an export of a whole vault): what is
    written goes to the temp file, which replaces `target` when the block ends without an error."""
    folder, prefix = temp_prefix(target, scratch)
    import tempfile  # writes only: a search never loads it

    fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if target.exists():
            os.chmod(tmp, target.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, new_file_mode())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def new_file_mode(*, executable: bool = False) -> int:
    """rw for whoever the user's umask lets read and write a new file (0644 under umask 022,
    0600 under 077); `executable` adds x where the umask lets it, as git checks out a 100755
    file (0755 under umask 022)."""
    return (0o777 if executable else 0o666) & ~_umask()


def _umask() -> int:
    # Reading the umask means setting it; /proc tells without that (and without the race
    # between two threads doing the set-and-restore dance).
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


def _apply_umask(root: Path) -> None:
    """Files copied from the installed template carry its modes; a new vault follows the umask."""
    file_mode = new_file_mode()
    dir_mode = 0o777 & ~_umask()
    for folder, dirs, files in os.walk(root):
        if ".git" in dirs and Path(folder) == root:
            dirs.remove(".git")
        for name in dirs:
            os.chmod(os.path.join(folder, name), dir_mode)
        for name in files:
            os.chmod(os.path.join(folder, name), file_mode)
    os.chmod(root, dir_mode)


def fsync_dir(folder: Path) -> None:
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
