"""What `tmem hook EVENT` says: the answer on stdout in the shape the agent reads, and its
problems, one line each on stderr (a hook never fails the agent)."""

from __future__ import annotations

__all__ = [
    "answer_text",
    "crashed_line",
    "hook_line",
    "no_transcript_line",
    "payload_too_long_line",
    "slow_daemon_line",
    "storing_line",
    "unread_transcript_line",
]

import json
import re


def answer_text(agent: str, text: str) -> str:
    """Context for the agent (Cursor reads `additional_context` from a JSON answer, the others the
    text itself); "" when there is none, and the hook then prints nothing at all."""
    if not text.strip():
        return ""
    if agent == "cursor":
        return json.dumps({"additional_context": text.rstrip("\n")}, ensure_ascii=False)
    return text.rstrip("\n")


def hook_line(event: str | None, message: str) -> str:
    """A line on stderr about what a hook did or could not do (`event` None: before it knew)."""
    return f"tmem hook: {event}: {message}" if event else f"tmem hook: {message}"


def crashed_line(event: str, error: Exception) -> str:
    return hook_line(event, f"{type(error).__name__}: {error}")


def no_transcript_line(event: str) -> str:
    return hook_line(event, "the agent sent no transcript_path; nothing stored")


_UNREAD = {
    "missing": "does not exist",
    "link": "is a symbolic link, not followed",
    "irregular": "is not a regular file",
}


# What a terminal or a log viewer would act on, newlines among them: the name is the payload's.
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def unread_transcript_line(event: str, file: str, why: str) -> str:
    """The transcript a payload names is not read: `why` is "missing", "link" or "irregular"."""
    name = _CONTROLS.sub(lambda m: ascii(m.group())[1:-1], file)
    return hook_line(event, f"transcript {name} {_UNREAD[why]}; nothing stored")


def payload_too_long_line(most: int) -> str:
    return hook_line(None, f"the hook's input is longer than {most:,} characters; ignored")


def storing_line(event: str) -> str:
    """Said when storing the transcript takes a while: the agent's log shows what it waits for."""
    return hook_line(event, "storing the session's transcript…")


def slow_daemon_line(spent: float, error: Exception) -> str:
    """A prompt's search the daemon took and did not answer within the hook's budget."""
    return hook_line("user-prompt-submit", f"no answer from the daemon in {spent:.2f}s ({error})")
