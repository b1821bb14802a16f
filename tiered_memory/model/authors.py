"""Who made a change: the author names commits carry, the agent trailer, and matching `--by`.

Every clone commits under a name that tells it apart (its machine, or the agent that worked
through it), so `tmem log` can say who changed a note and `tmem search --by` can find what one of
them wrote. A name comes from places a person controls (git's config, the user's settings) or
from tmem.yaml, which another clone may have written: each is checked here before git sees it,
so none can forge a second line (an `Agent:` trailer) or a second identity.
"""

from __future__ import annotations

__all__ = [
    "MAX_NAME",
    "AGENT_TRAILER",
    "DEFAULT_NAME",
    "LOG_FORMAT",
    "Author",
    "problem",
    "parse",
    "default",
    "host_label",
    "agent_trailer",
    "matches",
    "printable",
    "shown",
]

import re
import unicodedata
from dataclasses import dataclass

MAX_NAME = 100  # characters of a name or an email: a label, not a paragraph
AGENT_TRAILER = "Agent"  # `Agent: claude-code`, the last line of a commit an agent's call made
DEFAULT_NAME = "tmem"  # the name before the host, `tmem@laptop`, when nothing else names the clone

# What `git log --format` prints of who made a commit: name, email, the agents (comma-separated),
# NUL between them.
LOG_FORMAT = "%an%x00%ae%x00%(trailers:key=Agent,valueonly,separator=%x2C)"

_EMAIL = re.compile(r"[^\s<>@]+@[^\s<>@]+")
_WRITTEN = re.compile(r"^(?P<name>[^<>]*?)\s*<(?P<email>[^<>]*)>$")
_HOST_CHARS = re.compile(r"[^A-Za-z0-9-]+")


@dataclass(frozen=True)
class Author:
    """A commit's author: the name and email git records."""

    name: str
    email: str


def problem(text: str) -> str | None:
    """Why `text` cannot be a name or an email in a commit (None when it can): one line, not
    empty, at most MAX_NAME characters, no control or format characters (a newline would let a
    pulled setting write a trailer of its own), no angle brackets (they delimit the email)."""
    if not text.strip():
        return "it is empty"
    if len(text) > MAX_NAME:
        return f"it is longer than {MAX_NAME} characters"
    for char in text:
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            return f"it holds a control character (U+{ord(char):04X})"
        if char in "<>":
            return "it holds '<' or '>'"
    return None


def parse(text: str, host: str) -> Author:
    """`Name <email>`, or a name alone (its email is `<name>@<host>` when the name holds no `@`,
    the name itself when it is an address). Raises ValueError with the reason when it is not one."""
    text = text.strip()
    written = _WRITTEN.match(text)
    name, email = (written["name"].strip(), written["email"].strip()) if written else (text, "")
    why = problem(name)
    if why is not None:
        raise ValueError(f"not an author name ({why}): {shown(text)}")
    if not email:
        email = name if _EMAIL.fullmatch(name) else f"{_slug(name)}@{host}"
    if problem(email) is not None or not _EMAIL.fullmatch(email):
        raise ValueError(f"not an email address: {shown(email)}")
    return Author(name, email)


def default(host: str) -> Author:
    """The author of a clone nothing names: `tmem@<host>`, so two machines are still told apart."""
    label = f"{DEFAULT_NAME}@{host}"
    return Author(label, label)


def host_label(hostname: str) -> str:
    """The machine's name as an email's domain: its first label, letters, digits and dashes."""
    first = hostname.strip().split(".")[0]
    label = _HOST_CHARS.sub("-", first).strip("-")[:63]
    return label.lower() or "localhost"


def agent_trailer(agent: str | None) -> str:
    """The line a commit message ends with when an agent made the change ("" for a person)."""
    if not agent or problem(agent) is not None:
        return ""
    return f"\n\n{AGENT_TRAILER}: {agent.strip()}"


def matches(wanted: str, name: str, email: str, agent: str = "") -> bool:
    """`--by`: the name, the email or the agent starts with `wanted`, letter case aside."""
    key = wanted.strip().casefold()
    return bool(key) and any(v.casefold().startswith(key) for v in (name, email, agent) if v)


def printable(text: str) -> str:
    """A name from a pulled commit as it may reach a terminal: control characters (an escape
    sequence a name could hide) shown as `?`."""
    return "".join("?" if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c for c in text)


def shown(text: str) -> str:
    """A value quoted for one line of an error, control characters escaped."""
    cut = text if len(text) <= 60 else text[:60] + "…"
    return repr(cut)


def _slug(name: str) -> str:
    out = re.sub(r"[^\w.-]+", "-", name.casefold()).strip("-.")
    return out or DEFAULT_NAME
