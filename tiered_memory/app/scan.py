"""`tmem scan`: find secrets already stored in the vault's files and, with --history, in git history.

Write paths redact secrets before anything is stored, but notes written by hand, by other tools
or by an older tmem may hold some, and a secret committed once stays in every clone's history.
Detection is `redact.find_secrets` (the same rules that redact). Findings never carry the secret
itself: only its kind, where it is, and a mask with at most four leading characters.
"""

from __future__ import annotations

__all__ = ["mask", "scan", "scan_history", "scan_text", "scan_vault"]

import os
from collections.abc import Iterator
from pathlib import Path

from tiered_memory.app.api.agents import Finding, ScanRequest, ScanResult
from tiered_memory.app.memory import Memory
from tiered_memory.config import CONFIG_NAME
from tiered_memory.errors import NoteParseError
from tiered_memory.model.redact import find_secrets
from tiered_memory.storage.git import Git
from tiered_memory.storage.vault import STATE_DIR, Vault

_COMMIT_MARK = "\x01"


def mask(value: str) -> str:
    """At most four leading characters (a quarter of a short secret), then only the length."""
    shown = value[: min(4, len(value) // 4)].replace("\n", " ")
    return f"{shown}…({len(value)} chars)"


def scan_text(text: str, rel: str, keywords: list[str], commit: str | None = None) -> list[Finding]:
    return [
        Finding(m.kind, rel, m.line, mask(text[m.start : m.end]), commit)
        for m in find_secrets(text, keywords)
        if _reportable(m.kind, rel)
    ]


def _reportable(kind: str, rel: str) -> bool:
    # tmem.yaml lists the sensitive keywords themselves; a key pasted there is still reported.
    return not (kind == "sensitive-keyword" and rel == CONFIG_NAME)


def scan(memory: Memory, request: ScanRequest) -> ScanResult:
    """The operation: secrets in the vault's files (and, asked for, its git history)."""
    return scan_vault(memory.vault, history=request.history)


def scan_vault(vault: Vault, history: bool = False) -> ScanResult:
    keywords = list(vault.config.privacy.sensitive_keywords)
    report = ScanResult(history=[] if history else None)
    limit = int(vault.config.index.max_file_mb * 1024 * 1024) * 4
    for rel in _vault_files(vault):
        try:
            data = vault.read_bytes(rel)[:limit]
        except (OSError, NoteParseError):
            continue
        if b"\x00" in data[:8192]:
            continue  # binary: git bundles, images
        report.files_scanned += 1
        report.files += scan_text(data.decode("utf-8", "replace"), rel, keywords)
    if history:
        report.history, report.commits_scanned = scan_history(vault.git, keywords)
    report.found = len(report.files) + len(report.history or [])
    return report


def _vault_files(vault: Vault) -> Iterator[str]:
    """Every file of the vault but git's, tmem's state and backups (symbolic links left out)."""
    skip = {".git", STATE_DIR}
    backups = Path(vault.config.backup.directory)
    backup_dir = backups if backups.is_absolute() else vault.root / backups
    for dirpath, dirnames, filenames in os.walk(vault.root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in skip and here / d != backup_dir)
        for name in sorted(filenames):
            path = here / name
            if path.is_file() and not path.is_symlink():
                yield path.relative_to(vault.root).as_posix()


def scan_history(git: Git, keywords: list[str]) -> tuple[list[Finding], int]:
    """Secrets in lines added by any commit on any ref, with the commit and the line in that version."""
    command = (
        "log", "--all", "-p", "-U0", "--no-color", "--no-ext-diff", "--no-textconv",
        f"--format={_COMMIT_MARK}%H",
    )  # fmt: skip
    findings: list[Finding] = []
    commits = 0
    commit = ""
    path: str | None = None
    added: list[tuple[int | None, str]] = []
    line_no = 0

    def flush() -> None:
        if path and added:
            text = "\n".join(t for _, t in added)
            for m in find_secrets(text, keywords):
                real = added[m.line - 1][0] if m.line - 1 < len(added) else None
                if real is not None and _reportable(m.kind, path):
                    findings.append(Finding(m.kind, path, real, mask(text[m.start : m.end]), commit))
        added.clear()

    for raw in git.stream(*command, empty_when="does not have any commits", errors="replace"):
        line = raw.rstrip("\n")
        if line.startswith(_COMMIT_MARK):
            flush()
            commit, path = line[1:].strip(), None
            commits += 1
        elif line.startswith("diff --git "):
            flush()
            path = None
        elif line.startswith("+++ "):
            target = line[4:].rstrip("\t")  # git ends names holding spaces with a tab
            path = None if target == "/dev/null" else target.removeprefix("b/")
        elif line.startswith("@@ "):
            # @@ -a,b +c,d @@: added lines count from c. Hunks are kept apart by an empty entry.
            new = line.split(" ")[2].lstrip("+")
            line_no = int(new.split(",")[0] or 0)
            if added:
                added.append((None, ""))
        elif line.startswith("+") and path is not None:
            added.append((line_no, line[1:]))
            line_no += 1
    flush()
    return findings, commits
