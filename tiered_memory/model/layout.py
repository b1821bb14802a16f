"""Every path and file name of a vault, once. Paths are vault-relative and POSIX-style.

```
tmem.yaml                 the vault's settings          .tmem/   derived indexes (gitignored)
memory/
  short-term/             current_session.md, context_stack.json, temp/, sessions/ (live sessions)
  mid-term/               projects/{id}/{status.md,tasks.json,notes.md}, active_contexts.json, workflows/
  long-term/              user_profile.md, knowledge_base/{domains,lessons,patterns,preferences}/,
                          decisions/YYYY-MM-DD_*.md, relationships/, system/{capabilities,preferences}.md
  archive/                sessions/YYYY/MM/DD/, projects/{id}/
.tmem-reports/            maintenance reports, YYYY-MM-DD.md (tracked, hidden: never a note)
```
"""

from __future__ import annotations

__all__ = [
    "ACCESS_LOG",
    "ACTIVE_CONTEXTS",
    "ARCHIVE_PROJECTS",
    "ARCHIVE_SESSIONS",
    "CAPABILITIES",
    "CONFIG_NAME",
    "CONTACTS",
    "CONTEXT_STACK",
    "CURRENT_SESSION",
    "DAILY",
    "DIR_TIERS",
    "DOMAINS",
    "FIXED_FILES",
    "FIXED_FOLDERS",
    "LIVE_SESSIONS",
    "LONG_TERM_DEFAULT",
    "LONG_TERM_HOMES",
    "MEMORY_DIR",
    "NOTE_SUFFIXES",
    "PREFERENCES",
    "PROFILE",
    "PROJECTS",
    "PROJECT_FILES",
    "RELATIONSHIPS",
    "REPORTS_DIR",
    "SHORT_TEMP",
    "STATE_DIR",
    "STATS_FILE",
    "TIERS",
    "TIER_DIRS",
    "WORKFLOWS",
    "tier_dir",
    "tier_of_path",
]

from pathlib import PurePosixPath

CONFIG_NAME = "tmem.yaml"
STATE_DIR = ".tmem"
ACCESS_LOG = ".tmem-access.jsonl"  # recalls since the last maintenance run (gitignored)
# Recall counts, last access, confidence and decay of hand-written notes: kept beside them, never in
# them (tracked by git and merged key by key on sync, so they travel between machines).
STATS_FILE = ".tmem-stats.json"
# `lifecycle.report_folder`'s default: the daily maintenance reports. Hidden, so neither the indexer
# nor Obsidian shows them as notes; tracked, so they travel with the vault.
REPORTS_DIR = ".tmem-reports"

MEMORY_DIR = "memory"
TIER_DIRS: dict[str, str] = {
    "short": "short-term",
    "mid": "mid-term",
    "long": "long-term",
    "archive": "archive",
}
DIR_TIERS = {v: k for k, v in TIER_DIRS.items()}
TIERS = tuple(TIER_DIRS)  # retrieval priority order: short > mid > long > archive
NOTE_SUFFIXES = (".md", ".markdown", ".json")

_M = MEMORY_DIR

# short-term
CURRENT_SESSION = f"{_M}/short-term/current_session.md"
CONTEXT_STACK = f"{_M}/short-term/context_stack.json"
SHORT_TEMP = f"{_M}/short-term/temp"
LIVE_SESSIONS = f"{_M}/short-term/sessions"

# mid-term
PROJECTS = f"{_M}/mid-term/projects"
PROJECT_FILES = ("status.md", "tasks.json", "notes.md")
ACTIVE_CONTEXTS = f"{_M}/mid-term/active_contexts.json"
WORKFLOWS = f"{_M}/mid-term/workflows"

# long-term
PROFILE = f"{_M}/long-term/user_profile.md"
RELATIONSHIPS = f"{_M}/long-term/relationships"
CONTACTS = f"{RELATIONSHIPS}/contacts.md"
CAPABILITIES = f"{_M}/long-term/system/capabilities.md"
PREFERENCES = f"{_M}/long-term/system/preferences.md"
DOMAINS = f"{_M}/long-term/knowledge_base/domains"
# Where a long-term note of each category is filed, relative to memory/.
LONG_TERM_HOMES = {
    "decision": "long-term/decisions",
    "error": "long-term/knowledge_base/lessons",
    "pattern": "long-term/knowledge_base/patterns",
    "profile": "long-term/relationships",
    "preference": "long-term/knowledge_base/preferences",
}
LONG_TERM_DEFAULT = "long-term/knowledge_base/domains"

# archive
ARCHIVE_SESSIONS = f"{_M}/archive/sessions"
ARCHIVE_PROJECTS = f"{_M}/archive/projects"
# Where earlier versions wrote the daily maintenance report (as notes): such reports are still
# recognised there, to keep them out of search results unless asked for.
DAILY = f"{_M}/archive/daily"

# The tree's fixed files: the lifecycle rules never move them (a person can still archive them).
FIXED_FILES = frozenset(
    {CURRENT_SESSION, CONTEXT_STACK, ACTIVE_CONTEXTS, PROFILE, CONTACTS, CAPABILITIES, PREFERENCES}
)
# Workflow templates stay put; live sessions belong to the session store (`tmem session end`
# archives them with their summary).
FIXED_FOLDERS = (f"{WORKFLOWS}/", f"{LIVE_SESSIONS}/")


def tier_dir(tier: str) -> str:
    """`long` -> `long-term` (an unknown name comes back as it is)."""
    return TIER_DIRS.get(tier, tier)


def tier_of_path(path: str) -> str | None:
    """The tier whose folder holds this vault-relative path (memory/<tier folder>/...), else None."""
    parts = PurePosixPath(path).parts
    if len(parts) >= 3 and parts[0] == MEMORY_DIR:
        return DIR_TIERS.get(parts[1])
    return None
