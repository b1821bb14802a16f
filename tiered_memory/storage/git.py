"""The real `git` binary for tmem's sync, history and backups: one process per call, no GitPython.

Every call gets an environment that never prompts (a daemon has no terminal), never opens an editor,
reads file names literally (a note called `a*.md` is not a glob) and tells tmem's own post-merge hook
that tmem is already taking care of the indexes.
"""

from __future__ import annotations

import os
import re
import subprocess

from tiered_memory.errors import GitError
from tiered_memory.storage.vault import Vault

# No password prompt from a daemon, no editor for merge messages, file names never read as globs,
# and tmem's own post-merge hook stays quiet during a sync (the sync reindexes by itself).
_GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_MERGE_AUTOEDIT": "no",
    "GIT_LITERAL_PATHSPECS": "1",
    "TMEM_SYNC": "1",
}


class Git:
    """The real `git` binary in one vault: one process per call, no GitPython import on this path."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self._config: dict[str, str] | None = None
        self._layout: tuple[str, str, str] | None = None

    def run(
        self,
        *args: str,
        check: bool = True,
        commit: bool = False,
        timeout: float | None = None,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run git; `commit` adds tmem's fallback identity for commands that create commits."""
        ident = self.identity() if commit else []
        try:
            proc = subprocess.run(
                ["git", "-c", "core.quotepath=off", *ident, *args],
                cwd=self.vault.root,
                capture_output=True,
                text=True,
                encoding="utf-8",
                errors="surrogateescape",
                env={**os.environ, **_GIT_ENV},
                timeout=timeout,
                input=input,
            )
        except FileNotFoundError:
            raise GitError("git is not installed (or not on PATH)") from None
        if check and proc.returncode != 0:
            raise GitError(f"git {args[0]} failed: {last_line(proc)}")
        return proc

    def out(self, *args: str) -> str:
        return self.run(*args).stdout

    def blob(self, spec: str) -> bytes:
        """A file's bytes at a revision (`REV:path`) or an index stage (`:2:path`)."""
        proc = subprocess.run(
            ["git", "cat-file", "blob", spec], cwd=self.vault.root, capture_output=True, check=False
        )
        if proc.returncode != 0:
            raise GitError(f"git cat-file failed: no {spec}")
        return proc.stdout

    def config(self) -> dict[str, str]:
        """`git config --list` once per Git object (keys as git prints them: section.sub.key)."""
        if self._config is None:
            values: dict[str, str] = {}
            for entry in self.run("config", "-z", "--list", check=False).stdout.split("\0"):
                key, _, value = entry.partition("\n")
                if key:
                    values[key] = value
            self._config = values
        return self._config

    def identity(self) -> list[str]:
        cfg, git_cfg = self.config(), self.vault.config.git
        args: list[str] = []
        if "user.name" not in cfg:
            args += ["-c", f"user.name={git_cfg.author_name}"]
        if "user.email" not in cfg:
            args += ["-c", f"user.email={git_cfg.author_email}"]
        return args

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
        if self._layout is None:
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
            self._layout = (git_dir, os.path.join(self.vault.root, hook), branch)
        return self._layout


def last_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln.strip() for ln in (proc.stderr or proc.stdout or "").splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.lower().startswith("hint:")]
    return (lines[-1] if lines else f"exit {proc.returncode}").removeprefix("fatal: ").removeprefix("error: ")


def safe_url(url: str) -> str:
    """Text with any URL's user:password@ (a token in an https remote) taken out."""
    return re.sub(r"\b([a-z][a-z0-9+.-]*://)[^/@\s']*@", r"\1", url, flags=re.IGNORECASE)
