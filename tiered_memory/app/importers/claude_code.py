"""Claude Code's memory files: `CLAUDE.md` instructions and the auto-memory folder.

- `CLAUDE.md`, `CLAUDE.local.md`, `.claude/CLAUDE.md` (a project's, or `~/.claude/CLAUDE.md`):
  Markdown instructions. Each `##` section becomes one preference (its heading the title).
- Auto memory, `~/.claude/projects/<project>/memory/`: `MEMORY.md` (an index loaded into every
  session; its own lines that are not links to topic files are imported like a CLAUDE.md) and
  topic files with frontmatter

      ---
      name: testing-policy
      description: Integration tests must hit a real database
      type: feedback            # user | feedback | project | reference
      ---
      Integration tests must hit a real database, not mocks.
      **Why:** mocked tests passed while a migration broke production.

  `user` memories are profile notes, `feedback` preferences, `project` facts, `reference` notes.

PATH is a project folder, a `.claude` or memory folder, or one of those files.
"""

from __future__ import annotations

__all__ = ["INSTRUCTION_FILES", "TYPES", "read"]

import re
from pathlib import Path

from tiered_memory.app.filing import NewNote
from tiered_memory.app.importers.items import Item, read_text
from tiered_memory.errors import BadInput
from tiered_memory.model import note as notes

INSTRUCTION_FILES = ("CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md")
TYPES = {"user": "profile", "feedback": "preference", "project": "fact", "reference": "note"}
_SECTION = re.compile(r"^##[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_INDEX_LINK = re.compile(r"^\s*[-*]\s*\[[^\]]*\]\([^)]+\.md\)")


def _files(path: Path) -> list[tuple[Path, str]]:
    """(file, kind) pairs: kind is "instructions", "index" or "topic"."""
    if path.is_file():
        if path.name == "MEMORY.md":
            return [(path, "index")]
        if path.name in ("CLAUDE.md", "CLAUDE.local.md"):
            return [(path, "instructions")]
        return [(path, "topic")]
    found = [(path / name, "instructions") for name in INSTRUCTION_FILES if (path / name).is_file()]
    for folder in (path, path / "memory", path / ".claude" / "memory"):
        if (folder / "MEMORY.md").is_file():
            found.append((folder / "MEMORY.md", "index"))
            # A link in the folder may lead anywhere on the machine: only its own files are read.
            found += [
                (f, "topic")
                for f in sorted(folder.glob("*.md"))
                if f.name != "MEMORY.md" and not f.is_symlink()
            ]
            break
    if not found:
        raise BadInput(f"{path}: no CLAUDE.md and no auto-memory folder (MEMORY.md) found")
    return found


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, text) of each `##` section; text before the first one under the file's title."""
    matches = list(_SECTION.finditer(text))
    out: list[tuple[str, str]] = []
    lead = text[: matches[0].start()] if matches else text
    lead = "\n".join(line for line in lead.splitlines() if not line.startswith("# ")).strip()
    if lead:
        out.append(("", lead))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[match.end() : end].strip()
        if body:
            out.append((match.group(1).strip(), body))
    return out


def read(path: Path) -> list[Item]:
    items: list[Item] = []
    base = path if path.is_dir() else path.parent
    for file, kind in _files(path):
        try:
            text = read_text(file)
        except (OSError, UnicodeDecodeError):
            continue
        rel = file.relative_to(base).as_posix() if file.is_relative_to(base) else file.name
        if kind == "topic":
            note = notes.parse(text, rel)
            body = note.body.strip()
            if not body:
                continue
            kind_name = str(note.meta.get("type") or "").lower()
            title = str(note.meta.get("description") or note.meta.get("name") or note.title)
            new = NewNote(
                text=body,
                title=title[:80],
                category=TYPES.get(kind_name, "note"),
                tags=["claude-code"] + ([kind_name] if kind_name else []),
                extra={"claude_memory": str(note.meta.get("name") or file.stem)},
            )
            items.append(Item(rel, text, new.title or rel, memory=new))
            continue
        if kind == "index":  # links to topic files are the index, not memories
            text = "\n".join(line for line in text.splitlines() if not _INDEX_LINK.match(line))
        file_title = next((ln[2:].strip() for ln in text.splitlines() if ln.startswith("# ")), file.name)
        for heading, body in _sections(text):
            title = f"{file_title}: {heading}" if heading else file_title
            new = NewNote(
                text=body,
                title=title[:80],
                category="preference",
                tags=["claude-code", "instructions"],
                extra={"claude_file": rel},
            )
            items.append(Item(f"{rel}#{heading}", body, title, memory=new))
    return items
