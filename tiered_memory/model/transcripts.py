"""Read whole chat transcripts into messages. Pure: text in, messages out, no I/O.

Four formats, detected from the text (or forced with `fmt`):

- ``openai``: JSON Lines of ``{role, content, timestamp}`` messages (content may be a list of
  parts), or one JSON array / ``{"messages": [...]}`` object of them. Records whose role starts
  with ``_`` are a tool's bookkeeping, not messages (Kimi CLI's session files hold
  ``_system_prompt``, ``_checkpoint`` and ``_usage`` records between the messages).
- ``claude-code``: Claude Code session files, one record per line; ``user`` and ``assistant``
  records carry ``message: {role, content}`` where content is a string or a list of ``text``,
  ``tool_use``, ``tool_result`` and ``thinking`` blocks.
- ``codex``: Codex CLI rollout files (``~/.codex/sessions/…/rollout-*.jsonl``): ``session_meta``
  (id, cwd) and ``response_item`` records holding messages, function calls and their output.
- ``opencode``: an opencode session: what ``opencode export <id>`` prints (one JSON object,
  ``{info: session, messages: [{info: message, parts: [...]}]}``), or JSON Lines of its messages
  as ``{info, parts}`` records (how tmem hands over a session read from opencode's storage),
  after an optional ``{info: session}`` record. Text parts are the messages; a tool part is a
  tool call and its output; reasoning, synthetic text (a file's contents opencode added for an
  ``@`` mention), step and snapshot parts are not the conversation.
- ``markdown``: chat logs such as ``**User:** …``, ``### Assistant`` headings or ``User: …`` lines.

Tool calls and tool output are kept as one short line each: a session note is for people and
for recall, and a full `cat` of a file would drown the conversation (and multiply secrets).
A JSON Lines transcript can be read a record at a time (`slim_line`): each record with those
parts already cut as `parse` cuts them, so a long session's hundreds of megabytes of tool output
never have to be held at once, and the text parses into the same messages.
`parse` itself holds one record (or Markdown line) at a time besides the messages it has made,
and hands each message to `on_message` as it is made: a caller that refuses a session past a
size stops there, so millions of tiny kept records never become millions of objects at once.
What the agent's harness wraps around the conversation is not the conversation either, and is
dropped: `<system-reminder>` blocks, slash-command metadata (`<command-name>/clear</command-name>`,
`<local-command-stdout>`), Codex's `<environment_context>` and `<user_instructions>`, and the
boilerplate of tool results ("Here's the result of running `cat -n`…").
"""

from __future__ import annotations

__all__ = [
    "FORMATS",
    "FORMAT_ALIASES",
    "LEFT_OUT",
    "Message",
    "RECORD_MB",
    "ROLES",
    "Source",
    "SPEAKERS",
    "TOOL_LINE",
    "Transcript",
    "clean_text",
    "clean_tool_output",
    "detect",
    "escape_line",
    "left_out_line",
    "markdown_messages",
    "normalize_format",
    "parse",
    "project_of",
    "slim_line",
    "slim_opencode_info",
    "slim_opencode_part",
    "unescape_line",
]

import array
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tiered_memory.errors import BadInput
from tiered_memory.model.dates import to_datetime

FORMATS = ("openai", "claude-code", "codex", "opencode", "markdown")
FORMAT_ALIASES = {
    "jsonl": "openai",
    "json": "openai",
    "claude": "claude-code",
    "md": "markdown",
    "codex-cli": "codex",
    "open-code": "opencode",
}
ROLES = ("user", "assistant", "system", "tool")
TOOL_LINE = 200  # characters of a tool call or tool output kept in the session
# The most one record of a transcript may hold: a line of JSON Lines, an item of a JSON array, a
# whole-file JSON object (far above a message with a pasted image).
RECORD_MB = 16
# The one key of the record that stands for a line too long to read (`left_out_line`).
LEFT_OUT = "tmem_left_out"
_SLIM_OVER = 10 * TOOL_LINE  # a tool's text at least this long is cut by `slim_line`

# Names people and tools give the speakers in chat logs, mapped to the four roles.
SPEAKERS = {
    "user": "user",
    "human": "user",
    "me": "user",
    "you": "user",
    "用户": "user",
    "我": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "claude": "assistant",
    "chatgpt": "assistant",
    "gpt": "assistant",
    "gemini": "assistant",
    "kimi": "assistant",
    "copilot": "assistant",
    "agent": "assistant",
    "助手": "assistant",
    "system": "system",
    "系统": "system",
    "tool": "tool",
    "function": "tool",
}


@dataclass(slots=True)  # a transcript may hold millions: no attribute dict for each
class Message:
    role: str
    content: str
    timestamp: datetime | None = None


@dataclass
class Transcript:
    messages: list[Message]
    format: str
    origin: str | None = None  # the session id the source tool gave it (Claude Code's sessionId)
    title: str | None = None
    cwd: str | None = None
    warnings: list[str] = field(default_factory=list)


def normalize_format(fmt: str | None) -> str | None:
    if fmt is None or fmt in ("", "auto"):
        return None
    name = FORMAT_ALIASES.get(fmt.lower(), fmt.lower())
    if name not in FORMATS:
        raise BadInput(f"unknown transcript format '{fmt}' (one of: auto, {', '.join(FORMATS)})")
    return name


def detect(text: str) -> str:
    """The format of a transcript's text: JSON shapes first, else Markdown."""
    start = _skip(_LEADING, text)
    if text.startswith("[", start):
        return "openai"
    if text.startswith("{", start):
        if _opencode_export(text, start):
            return "opencode"
        return _detect_records(itertools.islice(_records(text, start), 50))
    return "markdown"


def _detect_records(lines: Iterable[str]) -> str:
    """The JSON format of a transcript whose first lines (records) these are."""
    for line in lines:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict) and (isinstance(record.get("message"), dict) or "sessionId" in record):
            return "claude-code"
        if isinstance(record, dict) and _opencode_record(record):
            return "opencode"
        if isinstance(record, dict) and (
            record.get("type") == "session_meta"
            or (isinstance(record.get("payload"), dict) and record.get("type") in _CODEX_RECORDS)
        ):
            return "codex"
    return "openai"


OnMessage = Callable[[Message], object]
# A transcript: its whole text, or its JSON Lines one line (with its end) at a time, as a reader
# that never holds the file hands them over.
Source = str | Iterable[str]


def parse(
    source: Source, fmt: str | None = None, name: str = "input", on_message: OnMessage | None = None
) -> Transcript:
    """Parse a transcript; `fmt` forces a format. Raises BadInput with one line when it cannot.

    `on_message` is given each message as it is made, before the next record is read; what it
    raises (a session grown past what a note may hold) ends the parse there, and no further line
    of `source` is asked for."""
    if not isinstance(source, str):
        return _parse_lines(iter(source), fmt, name, on_message)
    text = source
    if _NON_SPACE.search(text, _skip(_BOMS, text)) is None:
        raise BadInput(f"{name} is empty: no transcript to read")
    if "\x00" in text:
        raise BadInput(f"{name} is binary data, not a transcript")
    chosen = normalize_format(fmt) or detect(text)
    return _parsed(text, chosen, name, on_message)


def _parse_lines(
    lines: Iterator[str], fmt: str | None, name: str, on_message: OnMessage | None
) -> Transcript:
    """`parse` of JSON Lines handed over a line at a time: only the first lines are looked at
    before parsing starts (to tell the format), so what a line holds is let go as soon as its
    messages are made. A source that turns out not to be JSON Lines (its first line no JSON
    object on its own) is read whole after all."""
    head: list[str] = []
    for line in lines:
        line = line.lstrip("\ufeff") if not head else line
        head.append(line)
        if len(head) >= 50:
            break
    first = next((line for line in head if _NON_SPACE.search(line)), None)
    chosen = normalize_format(fmt)
    if first is None or not first.lstrip().startswith("{") or not _is_json(first) or chosen == "markdown":
        return parse("".join(itertools.chain(head, lines)), fmt, name, on_message)
    return _parsed(
        _unbinary(itertools.chain(head, lines), name), chosen or _detect_records(head), name, on_message
    )


def _unbinary(lines: Iterable[str], name: str) -> Iterator[str]:
    for line in lines:
        if "\x00" in line:
            raise BadInput(f"{name} is binary data, not a transcript")
        yield line


def _parsed(source: Source, chosen: str, name: str, on_message: OnMessage | None) -> Transcript:
    transcript = Transcript([], chosen)
    keep = _keeper(transcript.messages, on_message)
    if chosen == "claude-code":
        _claude_code(source, name, transcript, keep)
    elif chosen == "codex":
        _codex(source, name, transcript, keep)
    elif chosen == "opencode":
        _opencode(source, name, transcript, keep)
    elif chosen == "openai":
        _openai(source, name, transcript, keep)
    else:
        _markdown(source if isinstance(source, str) else "".join(source), name, transcript, keep)
    if not transcript.messages:
        raise BadInput(f"{name}: no chat messages found in it as {chosen} ({_HINTS[chosen]})")
    return transcript


_HINTS = {
    "openai": 'expected JSON Lines of {"role": ..., "content": ...}',
    "claude-code": "expected Claude Code records with type user/assistant and a message",
    "codex": "expected Codex rollout records (session_meta, response_item)",
    "opencode": "expected `opencode export` output or {info, parts} records of its messages",
    "markdown": "expected speaker markers such as **User:**, ### Assistant or User: ...",
}


# ---- reading without holding ------------------------------------------------------------------

_BOMS = re.compile("\ufeff*")
_LEADING = re.compile("[\ufeff \t\r\n]*")
_NON_SPACE = re.compile(r"\S")
_JSON_SPACE = re.compile(r"[ \t\r\n]*")
# Where str.splitlines ends a line.
_LINE_END = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_DECODER = json.JSONDecoder()
_PIECE = 1 << 18


def _skip(pattern: re.Pattern[str], text: str, start: int = 0) -> int:
    """Where `text` goes on after what `pattern` matches at `start`."""
    found = pattern.match(text, start)
    return found.end() if found else start


def _lines(text: str, start: int = 0) -> Iterator[str]:
    """The lines of `text` from `start`, as `str.splitlines` cuts them, split a quarter megabyte
    at a time: a list of millions of lines would cost many times the text. A piece ends just after
    a newline, where `splitlines` would cut too."""
    while start < len(text):
        cut = text.find("\n", start + _PIECE)
        end = len(text) if cut < 0 else cut + 1
        yield from text[start:end].splitlines()
        start = end


def _records(text: str, start: int = 0) -> Iterator[str]:
    """The lines of JSON Lines `text` from `start`: each ends at "\n" alone (a "\r" before it is
    JSON's whitespace), since a string in a record may hold U+2028 or U+0085 unescaped, where
    `str.splitlines` would cut the record. A quarter megabyte at a time, as `_lines`."""
    while start < len(text):
        cut = text.find("\n", start + _PIECE)
        end = len(text) if cut < 0 else cut + 1
        piece = text[start:end]
        yield from piece[:-1].split("\n") if piece.endswith("\n") else piece.split("\n")
        start = end


def _keeper(messages: list[Message], on_message: OnMessage | None) -> Callable[[Message], None]:
    def keep(message: Message) -> None:
        if on_message is not None:
            on_message(message)
        messages.append(message)

    return keep


# ---- JSON formats -----------------------------------------------------------------------------


def _json_records(source: Source, name: str, warnings: list[str], inner: str | None = None) -> Iterator[Any]:
    """The records of a JSON array, JSON object or JSON Lines text, one at a time. `inner`: when
    the text is one JSON object holding an array under that key, that array's items instead.
    JSON Lines handed over a line at a time are decoded as they come."""
    if not isinstance(source, str):
        yield from _line_records(source, name, warnings)
        return
    text = source
    begin = _skip(_BOMS, text)
    first = _NON_SPACE.search(text, begin)
    start = first.start() if first else len(text)
    if text.startswith("[", start):
        # Read through once first, nothing built: a broken array is refused as not JSON (as when it
        # was decoded whole) before any of its items is judged, and an item past RECORD_MB at all.
        try:
            starts, end = _items(text, start, name)
            if _NON_SPACE.search(text, end) is not None:
                raise ValueError(f"extra data after the array at char {end}")
        except (ValueError, RecursionError) as exc:
            raise BadInput(f"{name} is not valid JSON: {exc}") from None
        yield from _decoded_items(text, starts, name)
        return
    # A whole-file JSON object (pretty-printed {"messages": [...]}) is not JSON Lines: its first
    # line is no JSON on its own.
    line_end = _LINE_END.search(text, begin)
    if (
        text.startswith("{", start)
        and line_end is not None
        and line_end.end() < len(text)
        and not _is_json(next(_records(text, begin)))
    ):
        whole = _whole_object(text, start, name, inner)
        if whole is not None:
            yield from whole
            return
    yield from _line_records(_records(text, begin), name, warnings)


def _line_records(lines: Iterable[str], name: str, warnings: list[str]) -> Iterator[Any]:
    """The records of JSON Lines, decoded a line at a time."""
    count = 0
    numbered = enumerate(lines, 1)
    for number, line in numbered:
        if _NON_SPACE.search(line) is None:
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if count and all(_NON_SPACE.search(rest) is None for _n, rest in numbered):
                # A tool still writing its transcript leaves a half line at the end: skip it.
                warnings.append(f"{name}: ignored an incomplete last line ({number})")
                continue
            raise BadInput(f"{name}: line {number} is not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise BadInput(f"{name}: line {number} is not valid JSON (nested too deeply)") from None
        if isinstance(record, dict) and isinstance(record.get(LEFT_OUT), dict) and len(record) == 1:
            size, most = record[LEFT_OUT].get("bytes"), record[LEFT_OUT].get("limit_mb")
            warnings.append(
                f"{name}: left out line {number} ({_mb(size)} MB, over the {most} MB a record may hold)"
            )
            continue
        count += 1
        yield record


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


def _whole_object(text: str, start: int, name: str, inner: str | None) -> Iterator[Any] | None:
    """The records of a text that is one JSON object (None if it is not): its `inner` array's
    items, or else the object itself. Walked before anything is built, so the object is decoded
    whole only when it is no larger than a record may be, and an array of millions of messages
    under `inner` one item at a time."""
    try:
        end, found = _object_keys(text, start, name, inner)
    except (ValueError, RecursionError):
        return None
    if _NON_SPACE.search(text, end) is not None:
        return None
    if found is not None:
        return _decoded_items(text, found, name)
    _too_large(name, start, end)
    return _decoded_items(text, [start], name)


def _decoded_items(text: str, starts: Iterable[int], name: str) -> Iterator[Any]:
    """The JSON values at `starts`, already checked, decoded one at a time."""
    for start in starts:
        try:
            yield _DECODER.raw_decode(text, start)[0]
        except RecursionError:  # walked without recursion, but nested too deeply to decode
            raise BadInput(f"{name} is not valid JSON (nested too deeply)") from None


def _too_large(name: str, start: int, end: int) -> None:
    if end - start > RECORD_MB * 1024 * 1024:
        raise BadInput(
            f"{name}: a JSON record of {_mb(end - start)} MB, over the {RECORD_MB} MB a record may hold"
        )


def _items(text: str, start: int, name: str) -> tuple[array.array[int], int]:
    """(where each item starts, where the array ends) of the JSON array at `start`: checked as
    JSON (ValueError), each item no larger than RECORD_MB (BadInput), nothing built. Eight bytes an
    item: millions of them as Python objects would cost many times the text."""
    starts = array.array("q")
    at = _skip(_JSON_SPACE, text, start + 1)
    if text.startswith("]", at):
        return starts, at + 1
    window = 256
    while True:
        small = _small_value_end(text, at, window)
        end = _value_end(text, at) if small is None else small
        window = min(2 * (end - at) + 256, 1 << 20)  # the items of an array are mostly alike
        _too_large(name, at, end)
        starts.append(at)
        at = _skip(_JSON_SPACE, text, end)
        if text.startswith(",", at):
            at = _skip(_JSON_SPACE, text, at + 1)
            continue
        if not text.startswith("]", at):
            raise ValueError(f"expected ',' or ']' at char {at}")
        return starts, at + 1


def _object_keys(text: str, start: int, name: str, inner: str | None) -> tuple[int, array.array[int] | None]:
    """(end, where the items of its array under `inner` start, if that is an array) of the JSON
    object at `start`, checked, not built."""
    found: array.array[int] | None = None
    at = _skip(_JSON_SPACE, text, start + 1)
    if text.startswith("}", at):
        return at + 1, found
    while True:
        key, at = _key(text, at)
        if key == inner and text.startswith("[", at):
            found, end = _items(text, at, name)
        else:
            found = None if key == inner else found  # the last of a key is the one JSON keeps
            end = _value_end(text, at)
        at = _skip(_JSON_SPACE, text, end)
        if text.startswith(",", at):
            at += 1
            continue
        if not text.startswith("}", at):
            raise ValueError(f"expected ',' or '}}' at char {at}")
        return at + 1, found


def _key(text: str, at: int) -> tuple[str, int]:
    """(key, where its value starts) of the `"key":` at `at` (spaces around it skipped)."""
    at = _skip(_JSON_SPACE, text, at)
    if not text.startswith('"', at):
        raise ValueError(f"expected a key at char {at}")
    key, at = _DECODER.raw_decode(text, at)
    at = _skip(_JSON_SPACE, text, at)
    if not text.startswith(":", at):
        raise ValueError(f"expected ':' at char {at}")
    return key, _skip(_JSON_SPACE, text, at + 1)


def _small_value_end(text: str, at: int, window: int) -> int | None:
    """Where the JSON value at `at` ends, if it ends within `window` characters: decoded from a
    copy of those alone (at C speed, and at most a window's worth built), else None. A value
    must end before the window does: a number cut by it would read as a shorter one."""
    piece = text[at : at + window]
    try:
        end = _DECODER.raw_decode(piece)[1]
    except (ValueError, RecursionError):
        return None
    return at + end if end < len(piece) else None


def _value_end(text: str, at: int) -> int:
    """Where the JSON value at `at` ends: checked as JSON (ValueError if it is not) but never built,
    its arrays and objects walked with a list of what closes them rather than decoded whole, so
    nesting of any depth or millions of items cost no more than the text."""
    closers: list[str] = []
    while True:
        at = _skip(_JSON_SPACE, text, at)
        opener = text[at : at + 1]
        if opener in ("[", "{"):
            closer = "]" if opener == "[" else "}"
            at = _skip(_JSON_SPACE, text, at + 1)
            if not text.startswith(closer, at):
                closers.append(closer)
                if opener == "{":
                    at = _key(text, at)[1]
                continue
            at += 1
        else:
            at = _DECODER.raw_decode(text, at)[1]  # a string, number, true, false or null
        while closers:
            at = _skip(_JSON_SPACE, text, at)
            if text.startswith(",", at):
                at += 1
                if closers[-1] == "}":
                    at = _key(text, at)[1]
                break
            if not text.startswith(closers[-1], at):
                raise ValueError(f"expected ',' or '{closers[-1]}' at char {at}")
            closers.pop()
            at += 1
        else:
            return at


def _mb(size: Any) -> str:
    return f"{size / 1048576:.0f}" if isinstance(size, int) and not isinstance(size, bool) else "?"


def _openai(source: Source, name: str, transcript: Transcript, keep: Callable[[Message], None]) -> None:
    records = _json_records(source, name, transcript.warnings, inner="messages")
    first = list(itertools.islice(records, 2))
    if len(first) == 1 and isinstance(first[0], dict) and isinstance(first[0].get("messages"), list):
        records = iter(first[0]["messages"])
    else:
        records = itertools.chain(first, records)
    del first
    for index, record in enumerate(records, 1):
        if not isinstance(record, dict) or "role" not in record:
            raise BadInput(f'{name}: message {index} has no role (expected {{"role": ..., "content": ...}})')
        if str(record.get("role") or "").startswith("_"):
            continue  # a tool's own bookkeeping between the messages (Kimi's _checkpoint, _usage...)
        role = _role(str(record.get("role") or ""))
        parts = [clean_text(_content_text(record.get("content")))]
        for call in record.get("tool_calls") or []:
            if isinstance(call, dict):
                inner = call.get("function")
                fn: dict[str, Any] = inner if isinstance(inner, dict) else call
                parts.append(_short(f"[tool call: {fn.get('name', '?')}] {fn.get('arguments', '')}"))
        content = "\n".join(p for p in parts if p.strip()).strip()
        if content:
            when = _timestamp(record.get("timestamp") or record.get("created_at") or record.get("time"))
            keep(Message(role, content, when))


def _claude_code(source: Source, name: str, transcript: Transcript, keep: Callable[[Message], None]) -> None:
    for record in _json_records(source, name, transcript.warnings):
        if not isinstance(record, dict):
            continue
        kind = record.get("type")
        if kind == "summary" and isinstance(record.get("summary"), str):
            transcript.title = transcript.title or record["summary"].strip() or None
            continue
        transcript.origin = transcript.origin or _str_or_none(record.get("sessionId"))
        transcript.cwd = transcript.cwd or _str_or_none(record.get("cwd"))
        message = record.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict):
            continue
        if record.get("isSidechain") or record.get("isMeta"):
            continue  # subagent chatter and tool-injected caveats are not the conversation
        role = _role(str(message.get("role") or kind))
        content, only_tools = _claude_content(message.get("content"))
        if not content:
            continue
        if role == "user" and only_tools:
            role = "tool"
        keep(Message(role, content, _timestamp(record.get("timestamp"))))


def _claude_content(content: Any) -> tuple[str, bool]:
    """(text, True when the message held only tool results)."""
    if isinstance(content, str):
        return clean_text(content), False
    if not isinstance(content, list):
        return "", False
    parts: list[str] = []
    tool_results = 0
    other = 0
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = clean_text(str(block.get("text") or ""))
            if text:
                parts.append(text)
                other += 1
        elif kind == "tool_use":
            given = block.get("input")
            # A string: the call's arguments as `slim_line` already wrote them out (and cut them).
            arguments = given if isinstance(given, str) else json.dumps(given or {}, ensure_ascii=False)
            parts.append(_short(f"[tool: {block.get('name', '?')}] {arguments}"))
            other += 1
        elif kind == "tool_result":
            result = clean_tool_output(_content_text(block.get("content")))
            label = "[tool error]" if block.get("is_error") else "[tool result]"
            parts.append(_short(f"{label} {result}"))
            tool_results += 1
        elif kind == "image":
            parts.append("[image]")
            other += 1
        # thinking blocks are the model's scratchpad, not the conversation
    text = "\n".join(p.strip() for p in parts if p.strip())
    return text, tool_results > 0 and other == 0


# Blocks the harness adds around or inside messages, dropped with what they hold: from each of
# these opening tags to its closing tag, and the space after it (`_drop_wrappers`).
_WRAPPER_OPEN = re.compile(
    r"<(system-reminder|command-name|command-message|local-command-stdout|local-command-stderr|"
    r"bash-stdout|bash-stderr|environment_context|user_instructions|user-prompt-submit-hook|"
    r"session-start-hook)>"
)
_SPACES = re.compile(r"\s*")
# Tags whose text is the person's own words (a slash command's arguments, a `!` shell command).
_KEEP_INSIDE = re.compile(r"</?(?:command-args|bash-input)>")
# Notes the harness adds as if the person had said them.
_HARNESS_LINES = re.compile(
    r"^(?:Caveat: The messages below were generated by the user while running local commands\..*"
    r"|<system>CHECKPOINT \d+</system>"  # Kimi CLI marks each turn's start as the user's words
    r"|\[Request interrupted by user(?: for tool use)?\]"
    r"|This session is being continued from a previous conversation that ran out of context\..*)$",
    re.MULTILINE,
)


def clean_text(text: str) -> str:
    """A message without what the agent's harness wrapped around it (empty if that was all)."""
    text = _drop_wrappers(text)
    text = _KEEP_INSIDE.sub("", text)
    text = _HARNESS_LINES.sub("", text)
    return text.strip()


def _drop_wrappers(text: str) -> str:
    """`text` without the harness's wrapped blocks, each from its opening tag to the first closing
    tag after it. A tag that is never closed is looked for to the end once, not once for each of
    its openings: a pattern doing this took a time the square of a message of unclosed tags (a
    tool's output of a million `<bash-stdout>`, seconds for 64 KB, hours for 16 MB)."""
    pieces: list[str] = []
    kept = at = 0
    unclosed: set[str] = set()
    while (found := _WRAPPER_OPEN.search(text, at)) is not None:
        tag = found.group(1)
        close = -1 if tag in unclosed else text.find(f"</{tag}>", found.end())
        if close < 0:
            unclosed.add(tag)
            at = found.end()
            continue
        pieces.append(text[kept : found.start()])
        kept = at = _SPACES.match(text, close + len(tag) + 3).end()  # type: ignore[union-attr]
    pieces.append(text[kept:])
    return "".join(pieces)


# What tools say around their output, dropped (the output itself is kept, shortened).
_TOOL_BOILERPLATE = [
    (
        re.compile(
            r"(The file \S+ has been updated)\. Here's the result of running `cat -n` on a snippet of the edited file:.*",
            re.DOTALL,
        ),
        r"\1.",
    ),
    (re.compile(r"Todos have been modified successfully\..*", re.DOTALL), "todos updated"),
    (re.compile(r"^\s*\d+\t", re.MULTILINE), ""),  # `cat -n` line numbers of a Read
]


def clean_tool_output(text: str) -> str:
    text = clean_text(text)
    for pattern, replacement in _TOOL_BOILERPLATE:
        text = pattern.sub(replacement, text)
    return text.strip()


def project_of(cwd: str | None) -> str | None:
    """The folder name of a transcript's working folder (its last path part), if it has one."""
    if not cwd:
        return None
    name = re.split(r"[\\/]", cwd.rstrip("/\\"))[-1]
    return name or None


# ---- reading a record at a time ----------------------------------------------------------------


def left_out_line(size: int, limit_mb: int) -> str:
    """The line that stands for a record too long to read (`size` bytes): `parse` skips it and
    says so, so one giant record does not cost the whole transcript."""
    return json.dumps({LEFT_OUT: {"bytes": size, "limit_mb": limit_mb}}) + "\n"


def slim_line(line: str, fmt: str | None = None) -> str:
    """One line of a JSON Lines transcript without what `parse` would drop or cut of it anyway:
    Claude Code's copy of each tool's whole output (`toolUseResult`), images' data, thinking, a
    long tool call or tool result cut as its message line will be (`TOOL_LINE`), Codex's UI
    events and reasoning. `parse` reads the same messages from the slim line as from the line.
    A line that is no JSON object, or a transcript forced to be read as Markdown, is kept as it is;
    no key the OpenAI format reads is touched."""
    if normalize_format(fmt) == "markdown":
        return line
    body = line.rstrip("\r\n")
    if not body.lstrip().startswith("{") or len(body) < _SLIM_OVER:
        return line
    try:
        record = json.loads(body)
    except (ValueError, RecursionError):
        return line
    if not isinstance(record, dict) or not _slimmed(record):
        return line
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + line[len(body) :]


def _slimmed(record: dict[str, Any]) -> bool:
    """Cut `record` in place; whether anything was."""
    changed = record.pop("toolUseResult", None) is not None
    if isinstance(record.get("parts"), list) and isinstance(record.get("info"), dict):  # opencode's
        record["parts"] = [slim_opencode_part(p) if isinstance(p, dict) else p for p in record["parts"]]
        return True
    message = record.get("message")
    if isinstance(message, dict) and isinstance(message.get("content"), list):
        for block in message["content"]:
            if isinstance(block, dict):
                changed = _slim_block(block) or changed
    kind = record.get("type")
    payload = record.get("payload")
    item: dict[str, Any] = payload if isinstance(payload, dict) else record
    if kind == "event_msg" and isinstance(payload, dict) and len(payload) > 1:
        record["payload"] = {"type": payload.get("type")}  # the UI's copy, never read as a message
        return True
    if kind not in ("response_item", None, "message", "function_call", "function_call_output"):
        return changed
    item_type = item.get("type")
    if item_type == "reasoning" and len(item) > 1:
        item.clear()
        item["type"] = "reasoning"
        return True
    if item_type in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        if isinstance(output, str) and len(output) >= _SLIM_OVER:
            item["output"] = {"output": _short(clean_tool_output(_codex_output(output)))}
            return True
    elif item_type in ("function_call", "custom_tool_call", "local_shell_call"):
        arguments = item.get("arguments") or item.get("input") or item.get("action") or ""
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        if len(text) >= _SLIM_OVER:
            for key in ("input", "action"):
                item.pop(key, None)
            item["arguments"] = _short(text)
            return True
    return changed


def _slim_block(block: dict[str, Any]) -> bool:
    kind = block.get("type")
    if kind == "thinking" and len(block) > 1:
        block.clear()
        block["type"] = "thinking"
        return True
    if kind == "image" and len(block) > 1:
        block.clear()
        block["type"] = "image"
        return True
    if kind == "tool_result":
        text = _content_text(block.get("content"))
        if len(text) >= _SLIM_OVER:
            block["content"] = _short(clean_tool_output(text))
            return True
    elif kind == "tool_use" and not isinstance(block.get("input"), str):
        arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
        if len(arguments) >= _SLIM_OVER:
            block["input"] = _short(arguments)
            return True
    return False


# ---- opencode ---------------------------------------------------------------------------------------

# Parts that are not the conversation: the model's reasoning, its steps and the files they changed.
_OPENCODE_SKIPPED = (
    "reasoning",
    "step-start",
    "step-finish",
    "snapshot",
    "patch",
    "retry",
    "compaction",
    "agent",
)
# The title opencode gives a session until the model names it.
_OPENCODE_UNTITLED = re.compile(r"^(?:New|Child) session - \d{4}-\d\d-\d\dT")


def _opencode_record(record: dict[str, Any]) -> bool:
    """Whether a JSON record is opencode's: a message with its parts, or a whole export."""
    info = record.get("info")
    return isinstance(info, dict) and (
        isinstance(record.get("parts"), list) or isinstance(record.get("messages"), list)
    )


def _opencode_export(text: str, start: int) -> bool:
    """Whether `text` (a JSON object at `start`) is what `opencode export` prints: its first key is
    `info`, a session (an id, a directory or a project)."""
    info = _first_value(text, start, "info")
    return isinstance(info, dict) and (
        "projectID" in info or "directory" in info or str(info.get("id", "")).startswith("ses")
    )


def _first_value(text: str, start: int, key: str) -> Any:
    """The value of the JSON object at `start` under its first key, if that key is `key` and the
    value is no larger than a record may be (None otherwise); the rest of the text is not read."""
    try:
        found, at = _key(text, start + 1)
        if found != key:
            return None
        end = _value_end(text, at)
        if end - at > RECORD_MB * 1024 * 1024:
            return None
        return _DECODER.raw_decode(text, at)[0]
    except (ValueError, RecursionError):
        return None


def _opencode(source: Source, name: str, transcript: Transcript, keep: Callable[[Message], None]) -> None:
    if isinstance(source, str):
        start = _skip(_LEADING, source)
        if source.startswith("{", start) and _opencode_export(source, start):
            _opencode_session(_first_value(source, start, "info"), transcript)
    for record in _json_records(source, name, transcript.warnings, inner="messages"):
        if not isinstance(record, dict):
            continue
        if isinstance(record.get("messages"), list):  # a whole export as one record (`jq -c`)
            _opencode_session(record.get("info"), transcript)
            for item in record["messages"]:
                if isinstance(item, dict):
                    _opencode_message(item, transcript, keep)
        elif isinstance(record.get("parts"), list):
            _opencode_message(record, transcript, keep)
        else:
            _opencode_session(record.get("info"), transcript)


def _opencode_session(info: Any, transcript: Transcript) -> None:
    if not isinstance(info, dict) or "role" in info:
        return
    transcript.origin = transcript.origin or _str_or_none(info.get("id"))
    transcript.cwd = transcript.cwd or _str_or_none(info.get("directory"))
    title = _str_or_none(info.get("title"))
    if title and not _OPENCODE_UNTITLED.match(title):
        transcript.title = transcript.title or title


def _opencode_message(item: dict[str, Any], transcript: Transcript, keep: Callable[[Message], None]) -> None:
    """One opencode message: its text and tool calls as the speaker's message, each tool's output
    as a tool message after the calls before it (as a Claude Code session reads)."""
    info = item.get("info")
    if not isinstance(info, dict) or info.get("summary") is True:
        return  # an assistant's summary of the session for compaction repeats the conversation
    role = str(info.get("role") or "")
    if role not in ("user", "assistant"):
        return
    transcript.origin = transcript.origin or _str_or_none(info.get("sessionID"))
    where = info.get("path")
    if isinstance(where, dict):
        transcript.cwd = transcript.cwd or _str_or_none(where.get("cwd"))
    times = info.get("time")
    when = _timestamp(times.get("created")) if isinstance(times, dict) else None
    said: list[str] = []

    def flush() -> None:
        text = "\n".join(said).strip()
        said.clear()
        if text:
            keep(Message(role, text, when))

    for part in item.get("parts") or []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            if part.get("synthetic") or part.get("ignored"):
                continue  # what opencode added (a mentioned file's contents), not what was said
            text = clean_text(str(part.get("text") or ""))
            if text:
                said.append(text)
        elif kind == "tool":
            call, result = _opencode_tool(part)
            said.append(call)
            if result:
                flush()
                keep(Message("tool", result, when))
        elif kind == "file":
            said.append(f"[file: {_short(str(part.get('filename') or part.get('mime') or 'file'), 80)}]")
        elif kind == "subtask":
            said.append(_short(f"[subtask: {part.get('agent', '?')}] {part.get('description', '')}"))
        # reasoning and the step, snapshot and patch parts (_OPENCODE_SKIPPED) are not the conversation
    flush()


def _opencode_tool(part: dict[str, Any]) -> tuple[str, str]:
    """(the call's line, the output's line or "") of an opencode tool part."""
    state = part.get("state")
    state = state if isinstance(state, dict) else {}
    given = state.get("input")
    arguments = given if isinstance(given, str) else json.dumps(given or {}, ensure_ascii=False)
    call = _short(f"[tool: {part.get('tool', '?')}] {arguments}")
    status = state.get("status")
    if status == "completed":
        return call, _short(f"[tool result] {clean_tool_output(str(state.get('output') or ''))}")
    if status == "error":
        return call, _short(f"[tool error] {clean_tool_output(str(state.get('error') or ''))}")
    return call, ""


def slim_opencode_info(info: dict[str, Any]) -> dict[str, Any]:
    """An opencode message's or session's `info` with only what `parse` reads of it."""
    kept: dict[str, Any] = {
        k: info[k] for k in ("id", "sessionID", "role", "time", "path", "title", "directory") if k in info
    }
    if isinstance(info.get("summary"), bool):
        kept["summary"] = info["summary"]
    return kept


def slim_opencode_part(part: dict[str, Any]) -> dict[str, Any]:
    """An opencode part without what `parse` would drop or cut of it anyway: reasoning's text, a
    file's inline data, a tool's long input and output cut as their lines will be. The parts of a
    session read from opencode's storage are slimmed so, one at a time, as they are read."""
    kind = part.get("type")
    if kind in _OPENCODE_SKIPPED:
        return {"type": kind}
    if kind == "file":
        return {k: v for k, v in part.items() if k in ("type", "filename", "mime")}
    if kind == "text" and (part.get("synthetic") or part.get("ignored")):
        return {"type": kind, "synthetic": True}
    if kind == "tool" and isinstance(part.get("state"), dict):
        state = dict(part["state"])
        for key in ("input", "output", "error"):
            value = state.get(key)
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            if key in state and len(text) >= _SLIM_OVER:
                state[key] = _short(clean_tool_output(text) if key != "input" else text)
        state.pop("metadata", None)
        state.pop("attachments", None)
        return {"type": kind, "tool": part.get("tool"), "state": state}
    return part


# ---- Codex CLI ------------------------------------------------------------------------------------

_CODEX_RECORDS = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")


def _codex(source: Source, name: str, transcript: Transcript, keep: Callable[[Message], None]) -> None:
    for record in _json_records(source, name, transcript.warnings):
        if not isinstance(record, dict):
            continue
        kind = record.get("type")
        # Newer rollouts wrap each item as {timestamp, type, payload}; older ones hold items as they are.
        payload = record.get("payload")
        item: dict[str, Any] = payload if isinstance(payload, dict) else record
        when = _timestamp(record.get("timestamp") or item.get("timestamp"))
        if kind == "session_meta" or (kind is None and "instructions" in item and "id" in item):
            transcript.origin = transcript.origin or _str_or_none(item.get("id"))
            transcript.cwd = transcript.cwd or _str_or_none(item.get("cwd"))
            continue
        if kind == "turn_context":
            transcript.cwd = transcript.cwd or _str_or_none(item.get("cwd"))
            continue
        if kind not in ("response_item", None, "message", "function_call", "function_call_output"):
            continue  # event_msg repeats the messages for the UI; reasoning is the model's scratchpad
        item_type = item.get("type")
        if item_type == "message":
            role = _role(str(item.get("role") or "user"))
            content = clean_text(_content_text(item.get("content")))
            if content:
                keep(Message(role, content, when))
        elif item_type in ("function_call", "custom_tool_call", "local_shell_call"):
            arguments = item.get("arguments") or item.get("input") or item.get("action") or ""
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            keep(Message("assistant", _short(f"[tool: {item.get('name', 'shell')}] {arguments}"), when))
        elif item_type in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            if isinstance(output, str):
                output = _codex_output(output)
            elif isinstance(output, dict):
                output = output.get("content") or output.get("output") or ""
            result = clean_tool_output(str(output or ""))
            keep(Message("tool", _short(f"[tool result] {result}"), when))


def _codex_output(output: str) -> str:
    """A tool's output as Codex wrote it: the text, or JSON holding it under `output`."""
    try:
        decoded = json.loads(output)
    except (ValueError, RecursionError):
        return output
    return (
        decoded["output"] if isinstance(decoded, dict) and isinstance(decoded.get("output"), str) else output
    )


def _content_text(content: Any) -> str:
    """OpenAI / Anthropic content: a string, or a list of parts of which the text ones count."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return str(content.get("text") or content.get("content") or "")
    if isinstance(content, list):
        out: list[str] = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict):
                kind = part.get("type")
                if kind in ("text", "input_text", "output_text") or (kind is None and "text" in part):
                    out.append(str(part.get("text") or ""))
                elif kind in ("image_url", "image", "input_image"):
                    out.append("[image]")
        return "\n".join(p for p in out if p)
    return str(content)


def _role(value: str) -> str:
    key = value.strip().lower()
    if key in ROLES:
        return key
    if key in SPEAKERS:
        return SPEAKERS[key]
    if key == "developer":
        return "system"
    raise BadInput(f"unknown message role '{value}' (one of: {', '.join(ROLES)})")


def _timestamp(value: Any) -> datetime | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 1e11:
        value = value / 1000.0  # epoch milliseconds
    when = to_datetime(value)
    return when.astimezone(UTC).replace(microsecond=0) if when else None


def _short(text: str, limit: int = TOOL_LINE) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _str_or_none(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


# ---- Markdown chat logs -----------------------------------------------------------------------

_NAMES = "|".join(sorted((re.escape(k) for k in SPEAKERS), key=len, reverse=True))
_STAMP = r"(?:[ \t]*+(?:·|—|-|\(|\[|@)?[ \t]*+(?P<ts>\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?)[)\]]?)?"
# `### Assistant`, `## User (2026-01-02 10:00)`, `### user · 2026-01-02T10:00:00Z`
_HEADING = re.compile(rf"^#{{1,6}}[ \t]++\**(?P<who>{_NAMES})\**[ \t]*+:?{_STAMP}[ \t]*+$", re.IGNORECASE)
# `**User:** text`, `**User**: text`, `__AI:__ text`
_BOLD = re.compile(
    rf"^(?:\*\*|__)(?P<who>{_NAMES})(?:[ \t]*+:(?:\*\*|__)|(?:\*\*|__)[ \t]*+:|{_STAMP}[ \t]*+:?(?:\*\*|__):?)[ \t]*+(?P<rest>.*)$",
    re.IGNORECASE,
)
# `User: text`, `用户：text`, `> User: text`
_PLAIN = re.compile(rf"^>?[ \t]*+(?P<who>{_NAMES}){_STAMP}[ \t]*+[:：][ \t]*+(?P<rest>.*)$", re.IGNORECASE)
_FENCE = re.compile(r"^[ \t]*(```|~~~)")


def _markdown(text: str, name: str, transcript: Transcript, keep: Callable[[Message], None]) -> None:
    start = _skip(_BOMS, text)

    def lines() -> Iterator[str]:
        return _lines(text, start)

    styles = _marker_styles(lines())
    for line in lines():
        title = _title_line(line)
        if title and not _HEADING.match(line):
            transcript.title = title
            break
        if line.strip() and _speaker(line, styles):
            break
    _markdown_messages(lines(), styles, True, keep, name)


def _title_line(line: str) -> str | None:
    """The title a `# Title` line gives (read without a pattern that could take a time the square
    of a long line of spaces)."""
    if not line.startswith("#") or line[1:2] not in (" ", "\t"):
        return None
    return line[1:].strip(" \t") or None


def markdown_messages(
    lines: str | Iterable[str],
    styles: set[str] | None = None,
    fences: bool = True,
    on_message: OnMessage | None = None,
) -> list[Message]:
    """Messages of a Markdown chat log, its lines or its whole text (split a piece at a time);
    `styles` limits the speaker markers honoured. `on_message` is given each message as it is made.

    With `fences`, markers inside code fences are content. tmem's own session notes turn that off:
    they escape heading-like content lines instead, so an unclosed fence cannot swallow messages.
    """
    if isinstance(lines, str):
        text = lines
        styles = styles or _marker_styles(_lines(text))
        lines = _lines(text)
    elif not styles:
        lines = list(lines)
        styles = _marker_styles(lines)
    messages: list[Message] = []
    _markdown_messages(lines, styles, fences, _keeper(messages, on_message))
    return messages


def _markdown_messages(
    lines: Iterable[str],
    styles: set[str],
    fences: bool,
    keep: Callable[[Message], None],
    name: str | None = None,
) -> None:
    """With `name` (a transcript's), a message is read no further than RECORD_MB: it is handed to
    `keep` as far as it goes (whose caller may refuse it in its own words), then refused."""
    current: tuple[str, datetime | None, _Body] | None = None
    in_fence = False
    most = RECORD_MB * 1024 * 1024
    for line in lines:
        if fences and _FENCE.match(line):
            in_fence = not in_fence
        found = None if in_fence else _speaker(line, styles)
        if found is None:
            if current is not None:
                current[2].add(unescape_line(line))
                if name and current[2].size > most:
                    _close(current, keep)
                    raise BadInput(f"{name}: a message is larger than the {RECORD_MB} MB one may hold")
            continue
        if current is not None:
            _close(current, keep)
        role, when, rest = found
        current = (role, when, _Body(rest))
    if current is not None:
        _close(current, keep)


def _marker_styles(lines: Iterable[str]) -> set[str]:
    """Which marker styles the log uses. Plain `Name: text` lines count only when no heading or bold
    markers exist, so a `Note: ...` line inside an answer never starts a new message."""
    styles: set[str] = set()
    in_fence = False
    for line in lines:
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if _HEADING.match(line):
            styles.add("heading")
        elif _BOLD.match(line):
            styles.add("bold")
    return styles or {"plain"}


def _speaker(line: str, styles: set[str]) -> tuple[str, datetime | None, str] | None:
    for style, pattern in (("heading", _HEADING), ("bold", _BOLD), ("plain", _PLAIN)):
        if style not in styles:
            continue
        match = pattern.match(line)
        if match:
            rest = match.groupdict().get("rest") or ""
            return SPEAKERS[match.group("who").lower()], _timestamp(match.group("ts")), rest.strip()
    return None


class _Body:
    """A message's text as its lines come, joined a thousand at a time: a message of millions of
    short lines costs about its size, not a string object for each line."""

    def __init__(self, first: str) -> None:
        self.pieces: list[str] = []
        self.lines = [first]
        self.size = len(first)

    def add(self, line: str) -> None:
        self.lines.append(line)
        self.size += len(line) + 1
        if len(self.lines) >= 1000:
            self.pieces.append("\n".join(self.lines))
            self.lines = []

    def text(self) -> str:
        return "\n".join([*self.pieces, *self.lines])


def _close(current: tuple[str, datetime | None, _Body], keep: Callable[[Message], None]) -> None:
    role, when, body = current
    content = body.text().strip()
    if content:
        keep(Message(role, content, when))


def escape_line(line: str) -> str:
    """A content line that would read as a speaker heading gets a backslash (Markdown shows it as is)."""
    return "\\" + line if _HEADING.match(line.lstrip("\\")) else line


def unescape_line(line: str) -> str:
    return line[1:] if line.startswith("\\") and _HEADING.match(line.lstrip("\\")) else line
