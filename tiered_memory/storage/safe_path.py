"""Folders of the vault opened without following a symbolic link.

Every create, write, move and removal tmem makes in the vault finds its folder here: from the
vault's root one name at a time, each opened in its parent's descriptor with O_NOFOLLOW (as the
stat walk lists them), missing folders made the same way (mkdir in the parent's descriptor). A
folder that is a link (`memory/archive -> /tmp/out`, or one a pulled commit brought) is refused
with one line naming it, before a byte is written; one swapped for a link after the check is
refused by the open itself. The work is then done by name in the folder's descriptor (openat,
renameat, linkat, unlinkat), never by a path the kernel would resolve again.
"""

from __future__ import annotations

__all__ = [
    "check",
    "folder_of",
    "is_link_at",
    "link_refused",
    "lstat_at",
    "open_folder",
    "parts_of",
    "read_regular",
]

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from tiered_memory.errors import VaultError

_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_READ = os.O_RDONLY | _NO_FOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def parts_of(rel: str) -> list[str]:
    """The names of a vault-relative path; anything that could leave the vault is refused."""
    parts = PurePosixPath(rel).parts
    if not parts or rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\x00" in rel:
        raise VaultError(f"'{rel}' is not a path inside the vault")
    return list(parts)


def read_regular(path: Path, most: int) -> bytes | None:
    """The bytes of the regular file at `path`, at most `most` + 1 of them (a caller tells a file
    over `most` by the length); None for a link, a pipe, a device or a folder, which are never
    followed or waited on: a file a pull brought (`tmem.yaml -> /dev/zero`) costs no more than
    that. FileNotFoundError when there is nothing at `path`."""
    try:
        fd = os.open(path, _READ)
    except FileNotFoundError:
        raise
    except OSError:
        return None  # ELOOP: a link, refused by O_NOFOLLOW; anything else unreadable
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return handle.read(most + 1)


def link_refused(link: str) -> VaultError:
    return VaultError(f"{link} is a symbolic link; tmem does not write through links (nothing was written)")


@contextlib.contextmanager
def folder_of(root: Path, rel: str, *, create: bool = True) -> Iterator[tuple[int, str]]:
    """(descriptor of the folder that holds `rel`, the last name of `rel`), the folder opened
    from `root` without following a link. `create`: missing folders are made; otherwise a
    missing one raises FileNotFoundError. A link on the way raises VaultError naming it."""
    fd = open_folder(root, parts_of(rel)[:-1], create=create)
    try:
        yield fd, parts_of(rel)[-1]
    finally:
        os.close(fd)


def open_folder(root: Path, names: list[str], *, create: bool) -> int:
    """The descriptor of `root`/`names`..., opened one name at a time (see `folder_of`)."""
    fd = os.open(root, _FOLDER)
    try:
        for depth, name in enumerate(names, 1):
            sub = _open_below(fd, name, "/".join(names[:depth]), create)
            os.close(fd)
            fd = sub
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_below(fd: int, name: str, shown: str, create: bool) -> int:
    for _attempt in range(2):
        try:
            return os.open(name, _FOLDER | _NO_FOLLOW, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):  # another writer made it meanwhile
                os.mkdir(name, dir_fd=fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and is_link_at(fd, name):
                raise link_refused(shown) from None
            if exc.errno == errno.ENOTDIR:
                raise VaultError(f"{shown} is a file, not a folder") from None
            raise
    return os.open(name, _FOLDER | _NO_FOLLOW, dir_fd=fd)


def is_link_at(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=fd).st_mode)
    except OSError:
        return False


def lstat_at(fd: int, name: str) -> os.stat_result | None:
    """The entry `name` in folder `fd` itself (a link is not followed); None when there is none."""
    try:
        return os.lstat(name, dir_fd=fd)
    except FileNotFoundError:
        return None


def check(root: Path, rel: str) -> None:
    """Refuse (VaultError naming it) a path with a symbolic link among its folders. Nothing is
    made: below a folder that does not exist yet there is no link."""
    try:
        os.close(open_folder(root, parts_of(rel)[:-1], create=False))
    except (FileNotFoundError, NotADirectoryError):
        pass
