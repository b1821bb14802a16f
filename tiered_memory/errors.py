"""One error hierarchy. The core raises these; the CLI edge turns them into one line and an exit code."""

from __future__ import annotations

__all__ = [
    "BadInput",
    "ConfigError",
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_NOT_FOUND",
    "EmbedderUnavailable",
    "GitError",
    "IndexUnusable",
    "LockTimeout",
    "Locked",
    "NoteNotFound",
    "NoteParseError",
    "RemoteUnavailable",
    "SyncConflict",
    "Tampered",
    "TmemError",
    "VaultError",
    "VaultNotFound",
    "GitTimedOut",
]

# Exit codes shared by every entry point (CLI, hooks): 1 = the thing asked for does not exist,
# 2 = bad usage or bad input (or a state of the vault the person must settle first), 3 = tmem
# failed where the input was fine, and the same command may well work later: a daemon that stopped
# answering, a lock another process held too long, an index or a remote that failed.
EXIT_NOT_FOUND = 1
EXIT_BAD_INPUT = 2
EXIT_FAILED = 3


class TmemError(Exception):
    """Base of every error tmem reports to a person."""

    exit_code = EXIT_BAD_INPUT


class VaultError(TmemError):
    """No vault, or a vault that cannot be used as asked."""


class VaultNotFound(VaultError):
    exit_code = EXIT_BAD_INPUT


class NoteNotFound(TmemError):
    exit_code = EXIT_NOT_FOUND


class NoteParseError(TmemError):
    """A note whose frontmatter or bytes cannot be read as a note."""


class BadInput(TmemError):
    """Input a person gave that cannot be used (empty query, escaping path, huge file...)."""


class ConfigError(TmemError):
    """The vault config is invalid; the message names the key and the allowed values."""


class IndexUnusable(TmemError):
    """A side index is missing, corrupt or from another version; callers rebuild it."""

    exit_code = EXIT_FAILED


class EmbedderUnavailable(TmemError):
    """No embedder could load (missing package, offline download, unreachable API)."""


class GitError(TmemError):
    """A git operation failed in a way the user has to act on."""


class GitTimedOut(GitError):
    """A git command did not finish within the time it was given (a remote that never answers)."""

    exit_code = EXIT_FAILED


class SyncConflict(GitError):
    """Sync could not integrate the remote without a person's help."""


class RemoteUnavailable(GitError):
    """No remote configured, or the remote cannot be reached."""


class LockTimeout(TmemError):
    """Another process held a vault lock for longer than a caller was willing to wait."""

    exit_code = EXIT_FAILED


class Tampered(TmemError):
    """A stored file failed its integrity check (an encrypted note whose tag does not verify)."""


class Locked(TmemError):
    """An encrypted note was needed but no key is at hand (`tmem unlock` gives one)."""
