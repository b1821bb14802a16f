"""Transcript parsing: OpenAI-style JSON Lines, Claude Code session files and Markdown chat logs,
format detection, forcing a format, and one clear line for input that is not a transcript."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tiered_memory.errors import BadInput
from tiered_memory.model import transcripts
from tiered_memory.model.transcripts import (
    RECORD_MB,
    Message,
    detect,
    escape_line,
    markdown_messages,
    parse,
    unescape_line,
)

SESSION = "4f35e220-c435-4cf7-b9b9-f40426042847"


def jsonl(*records: object) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


def claude_line(kind: str, content: object, ts: str, **extra: object) -> dict[str, object]:
    """One record shaped like the ones Claude Code writes to ~/.claude/projects/<dir>/<uuid>.jsonl."""
    record: dict[str, object] = {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/survey",
        "sessionId": SESSION,
        "version": "2.0.14",
        "gitBranch": "main",
        "type": kind,
        "message": {"role": kind, "content": content},
        "uuid": f"u-{ts}",
        "timestamp": ts,
    }
    record.update(extra)
    return record


CLAUDE = jsonl(
    {"type": "summary", "summary": "Pick the coordinate system", "leafUuid": "abc"},
    claude_line("user", "Which datum does the control network use?", "2026-11-20T09:00:00.123Z"),
    claude_line(
        "assistant",
        [
            {"type": "thinking", "thinking": "private scratchpad", "signature": "x"},
            {"type": "text", "text": "Let me look at the survey files."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "Bash",
                "input": {"command": "head data/points.csv"},
            },
        ],
        "2026-11-20T09:00:04Z",
    ),
    claude_line(
        "user",
        [{"tool_use_id": "toolu_1", "type": "tool_result", "content": "id,x,y\nP1,1,2\n" + "z" * 500}],
        "2026-11-20T09:00:05Z",
    ),
    claude_line(
        "assistant", [{"type": "text", "text": "The network uses CGCS2000."}], "2026-11-20T09:00:09Z"
    ),
    claude_line("user", "<command-name>/clear</command-name>", "2026-11-20T09:00:10Z", isMeta=True),
    claude_line(
        "assistant", [{"type": "text", "text": "subagent noise"}], "2026-11-20T09:00:11Z", isSidechain=True
    ),
    {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
)


# ---- Claude Code -------------------------------------------------------------------------------


def test_claude_code_session_file() -> None:
    t = parse(CLAUDE)
    assert t.format == "claude-code"
    assert t.origin == SESSION
    assert t.cwd == "/home/dev/survey"
    assert t.title == "Pick the coordinate system"
    roles = [m.role for m in t.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert t.messages[0].timestamp == datetime(2026, 11, 20, 9, 0, 0, tzinfo=UTC)
    assistant = t.messages[1].content
    assert "Let me look at the survey files." in assistant
    assert '[tool: Bash] {"command": "head data/points.csv"}' in assistant
    assert "private scratchpad" not in assistant  # thinking blocks are not the conversation
    tool = t.messages[2].content
    assert tool.startswith("[tool result] id,x,y P1,1,2")
    assert len(tool) <= transcripts.TOOL_LINE  # tool output is cut to one short line
    assert all("subagent noise" not in m.content and "/clear" not in m.content for m in t.messages)


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_a_line_separator_inside_a_record_is_the_message_s_own(separator: str) -> None:
    # JSON leaves these unescaped, and JavaScript writers emit them raw: a JSON Lines record ends
    # at "\n" alone.
    said = f"First line{separator}second line of the same message"
    text = "\n".join(
        json.dumps(r, ensure_ascii=False)
        for r in (
            claude_line("user", said, "2026-11-20T09:00:00Z"),
            claude_line("assistant", [{"type": "text", "text": "Noted."}], "2026-11-20T09:00:04Z"),
        )
    )
    assert separator in text
    t = parse(text + "\r\n")
    assert t.format == "claude-code"
    assert [m.role for m in t.messages] == ["user", "assistant"]
    assert "second line of the same message" in t.messages[0].content


def test_claude_code_tool_error_and_string_content() -> None:
    text = jsonl(
        claude_line("user", "run it", "2026-11-20T10:00:00Z"),
        claude_line(
            "user",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "t",
                    "is_error": True,
                    "content": [{"type": "text", "text": "boom"}],
                }
            ],
            "2026-11-20T10:00:01Z",
        ),
    )
    t = parse(text)
    assert [(m.role, m.content) for m in t.messages] == [("user", "run it"), ("tool", "[tool error] boom")]


def test_claude_code_half_written_last_line_is_skipped_with_a_warning() -> None:
    text = CLAUDE + '{"type": "user", "message": {"role": "us'
    t = parse(text)
    assert len(t.messages) == 4
    assert t.warnings and "incomplete last line" in t.warnings[0]


# ---- OpenAI-style JSON Lines ---------------------------------------------------------------------


def test_openai_jsonl_with_parts_tool_calls_and_epoch_times() -> None:
    text = jsonl(
        {"role": "system", "content": "You are helpful."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Plot this"}, {"type": "image_url", "image_url": {}}],
            "timestamp": 1790000000,
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "plot", "arguments": '{"x": 1}'}}
            ],
            "created_at": "2026-11-20T10:00:00Z",
        },
        {"role": "tool", "content": "ok", "timestamp": 1790000000123},
        {"role": "assistant", "content": "Done."},
    )
    t = parse(text)
    assert t.format == "openai"
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert t.messages[1].content == "Plot this\n[image]"
    assert t.messages[1].timestamp == datetime.fromtimestamp(1790000000, UTC)
    assert t.messages[2].content == '[tool call: plot] {"x": 1}'
    assert t.messages[3].timestamp == datetime.fromtimestamp(1790000000, UTC)  # milliseconds understood


def test_kimi_cli_session_file_keeps_the_messages_and_skips_its_bookkeeping() -> None:
    """Kimi CLI's session file is JSON Lines of messages with its own records in between (the
    system prompt, checkpoints, token counts; roles starting with `_`), and a user message that
    only marks a checkpoint: none of those is the conversation."""
    records = [
        {"role": "_system_prompt", "content": "You are Kimi CLI."},
        {"role": "_checkpoint", "id": 0},
        {"role": "user", "content": [{"type": "text", "text": "<system>CHECKPOINT 0</system>"}]},
        {"role": "user", "content": [{"type": "text", "text": "Use pnpm workspaces for the build."}]},
        {
            "role": "assistant",
            "content": [{"type": "think", "think": "hmm"}, {"type": "text", "text": "Done."}],
        },
        {"role": "_usage", "token_count": 1234},
    ]
    text = "".join(json.dumps(r) + "\n" for r in records)
    transcript = transcripts.parse(text)
    assert transcript.format == "openai"
    assert [(m.role, m.content) for m in transcript.messages] == [
        ("user", "Use pnpm workspaces for the build."),
        ("assistant", "Done."),
    ]


def test_openai_json_array_and_messages_object() -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert len(parse(json.dumps(messages)).messages) == 2
    pretty = json.dumps({"model": "gpt", "messages": messages}, indent=2)
    t = parse(pretty)
    assert [m.content for m in t.messages] == ["hi", "hello"]


# ---- Markdown ----------------------------------------------------------------------------------


def test_markdown_bold_speakers_with_multiline_turns() -> None:
    text = (
        "# Chat about CI\n\n"
        "**User:** The build fails.\nIt started yesterday.\n\n"
        "**Assistant:** Pin numpy.\nNote: this is a workaround.\n\n"
        "**User**: thanks\n"
    )
    t = parse(text)
    assert t.format == "markdown"
    assert t.title == "Chat about CI"
    assert [(m.role, m.content) for m in t.messages] == [
        ("user", "The build fails.\nIt started yesterday."),
        ("assistant", "Pin numpy.\nNote: this is a workaround."),
        ("user", "thanks"),
    ]


def test_markdown_heading_speakers_with_timestamps_and_code_fences() -> None:
    text = (
        "### User (2026-11-20 10:00)\nWhat does this print?\n\n"
        "### Assistant · 2026-11-20T10:00:30Z\n```\n### User\nUser: not a speaker\n```\nIt prints a heading.\n"
    )
    t = parse(text)
    assert [m.role for m in t.messages] == ["user", "assistant"]
    assert t.messages[0].timestamp == datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
    assert t.messages[1].timestamp == datetime(2026, 11, 20, 10, 0, 30, tzinfo=UTC)
    assert "### User\nUser: not a speaker" in t.messages[1].content


def test_markdown_plain_speaker_lines_in_english_and_chinese() -> None:
    text = (
        "User: 项目用什么坐标系？\nAI: CGCS2000.\nNote: that is the national one.\n用户：好的，记住这个。\n"
    )
    t = parse(text)
    assert [(m.role, m.content) for m in t.messages] == [
        ("user", "项目用什么坐标系？"),
        ("assistant", "CGCS2000.\nNote: that is the national one."),
        ("user", "好的，记住这个。"),
    ]


def test_markdown_escaped_heading_lines_round_trip() -> None:
    content = "### User\nplain\n\\### Assistant"
    escaped = [escape_line(line) for line in content.splitlines()]
    assert escaped == ["\\### User", "plain", "\\\\### Assistant"]
    assert [unescape_line(line) for line in escaped] == content.splitlines()
    lines = ["### user", *escaped, "### assistant", "ok"]
    found = markdown_messages(lines, styles={"heading"}, fences=False)
    assert found == [Message("user", content), Message("assistant", "ok")]


# ---- detection, forcing, bad input -------------------------------------------------------------


def test_detection() -> None:
    assert detect(CLAUDE) == "claude-code"
    assert detect(jsonl({"role": "user", "content": "x"})) == "openai"
    assert detect('[{"role": "user", "content": "x"}]') == "openai"
    assert detect("**User:** hi") == "markdown"


def test_format_can_be_forced_and_aliases_work() -> None:
    text = jsonl({"role": "user", "content": "hi"})
    assert parse(text, "jsonl").format == "openai"
    with pytest.raises(BadInput, match=r"^input: no chat messages found in it as claude-code"):
        parse(text, "claude-code")
    with pytest.raises(BadInput, match="unknown transcript format 'xml'"):
        parse(text, "xml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "log.md is empty"),
        ("   \n", "log.md is empty"),
        ("just some notes\nwithout speakers\n", "no chat messages found in it as markdown"),
        (
            '{"role": "user", "content": "a"}\nnot json\n{"role": "user", "content": "b"}\n',
            "line 2 is not valid JSON",
        ),
        ('{"content": "no role"}\n', "message 1 has no role"),
        ('{"role": "wizard", "content": "x"}\n', "unknown message role 'wizard'"),
        ("[1, 2", "log.md is not valid JSON"),
        ("bin\x00ary", "log.md is binary data"),
        ("[" * 100_000, "log.md is not valid JSON"),  # nested past Python's recursion limit
        ('{"role": "user", "content": "a"}\n' + "[" * 100_000 + "\n{}\n", "line 2 is not valid JSON"),
    ],
)
def test_bad_input_is_one_clear_line(text: str, message: str) -> None:
    with pytest.raises(BadInput) as info:
        parse(text, name="log.md")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


# ---- what the agents' harnesses wrap around a conversation ----------------------------------------

DATA = Path(__file__).parents[1] / "data"


def test_a_claude_code_session_is_the_conversation_only() -> None:
    t = transcripts.parse((DATA / "claude-code-session.jsonl").read_text(), name="session.jsonl")
    assert t.format == "claude-code" and t.cwd == "/home/ana/work/tile-server"
    assert t.origin == "5f0c2a7e-3b1d-4c8e-9a62-0d7f1e4b9c21"
    everything = "\n".join(m.content for m in t.messages)
    for noise in (
        "system-reminder",
        "/clear",
        "command-name",
        "local-command-stdout",
        "Caveat:",
        "cat -n",
        "claudeMd",
    ):
        assert noise not in everything, noise
    assert t.messages[0].role == "user" and t.messages[0].content.startswith("We decided the tile server")
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "assistant"]
    assert (
        t.messages[2].content
        == "[tool result] The file /home/ana/work/tile-server/config.yaml has been updated."
    )
    assert transcripts.project_of(t.cwd) == "tile-server"


def test_a_codex_rollout_is_read() -> None:
    t = transcripts.parse((DATA / "codex-rollout.jsonl").read_text(), name="rollout.jsonl")
    assert t.format == "codex" and t.cwd == "/home/ana/work/billing-api"
    assert t.origin == "0199a213-81c0-7800-8aa1-bbab2a035a53"
    roles = [m.role for m in t.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]  # event_msg copies and reasoning left out
    assert t.messages[0].content.startswith("Invoices must be rounded half-even")
    assert "environment_context" not in "\n".join(m.content for m in t.messages)
    assert t.messages[2].content.startswith("[tool result] invoice.py:12:")


@pytest.mark.parametrize(
    "content",
    [
        "<command-name>/compact</command-name>\n<command-message>compact</command-message>\n<command-args></command-args>",
        "<local-command-stdout>Compacted. ctrl+r to see full summary</local-command-stdout>",
        "<system-reminder>The TodoWrite tool hasn't been used recently.</system-reminder>",
        "[Request interrupted by user for tool use]",
    ],
)
def test_harness_only_messages_are_dropped(content: str) -> None:
    records = [
        {"type": "user", "sessionId": "s", "message": {"role": "user", "content": content}},
        {"type": "user", "sessionId": "s", "message": {"role": "user", "content": "Real question here"}},
    ]
    t = transcripts.parse("\n".join(json.dumps(r) for r in records))
    assert [m.content for m in t.messages] == ["Real question here"]


def test_titles_are_cut_at_word_bounds() -> None:
    from tiered_memory.model.session_format import cut_words, first_sentence

    title = first_sentence(
        "Tile server dev port moved to 8082 to avoid a clash with the metrics agent on 8081 today", 80
    )
    assert (
        title.endswith("…")
        and len(title) <= 80
        and title[:-1] in "Tile server dev port moved to 8082 to avoid a clash with the metrics agent on 8081"
    )
    assert not title[:-1].endswith(("on 8", " 808"))
    assert cut_words("short", 80) == "short"
    assert cut_words("x" * 100, 20) == "x" * 19 + "…"


def _claude_session(tool_output: str) -> list[dict[str, object]]:
    """A Claude Code session whose tool output and tool input are long, with the parts a session
    never keeps: thinking, an image's data, Claude Code's own copy of the tool's result."""
    base = {"sessionId": "s-1", "cwd": "/work/billing", "timestamp": "2026-03-01T10:00:00Z"}
    return [
        {"type": "summary", "summary": "Billing service"},
        {**base, "type": "user", "message": {"role": "user", "content": "Read the config, please."}},
        {
            **base,
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hm " * 5000, "signature": "x" * 4000},
                    {"type": "text", "text": "Reading it."},
                    {"type": "tool_use", "id": "t1", "name": "Write", "input": {"content": "y\n" * 9000}},
                ],
            },
        },
        {
            **base,
            "type": "user",
            "toolUseResult": {"file": {"content": tool_output}},
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": tool_output},
                    {"type": "image", "source": {"type": "base64", "data": "A" * 50_000}},
                ],
            },
        },
        {
            **base,
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "is_error": True,
                        "content": [{"type": "text", "text": "E " * 3000}],
                    }
                ],
            },
        },
        {**base, "type": "assistant", "message": {"role": "assistant", "content": "Done: port 5432."}},
    ]


def _codex_session(tool_output: str) -> list[dict[str, object]]:
    return [
        {"type": "session_meta", "payload": {"id": "c-1", "cwd": "/work/api"}},
        {
            "type": "response_item",
            "payload": {"type": "message", "role": "user", "content": "List the files."},
        },
        {"type": "response_item", "payload": {"type": "reasoning", "encrypted_content": "z" * 9000}},
        {
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps({"cmd": "ls " * 2000}),
            },
        },
        {"type": "event_msg", "payload": {"type": "exec_command_end", "aggregated_output": tool_output}},
        {
            "type": "response_item",
            "payload": {"type": "function_call_output", "output": json.dumps({"output": tool_output})},
        },
        {
            "type": "response_item",
            "payload": {"type": "message", "role": "assistant", "content": "Three files."},
        },
    ]


@pytest.mark.parametrize("make", [_claude_session, _codex_session])
def test_a_slim_line_parses_into_the_same_messages_as_the_line(make: object) -> None:
    """A transcript read a record at a time is cut as it is read (`slim_line`): what the session
    keeps of it must not change, while the tool output it never keeps is gone."""
    output = (
        "The file /a/b.py has been updated. Here's the result of running `cat -n` on a snippet:\n"
        + "\n".join(f"{n:6}\tline {n} of the file" for n in range(1, 3000))
    )
    for tool_output in (
        output,
        "     1\tshort\n" + "x " * 1500,
        "<system-reminder>note</system-reminder>" + "w " * 2000,
    ):
        records = make(tool_output)  # type: ignore[operator]
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        slim = "".join(transcripts.slim_line(line) for line in text.splitlines(keepends=True))
        assert len(slim) < len(text) / 10
        whole, cut = transcripts.parse(text, None, "t"), transcripts.parse(slim, None, "t")
        assert cut.messages == whole.messages and cut.format == whole.format
        assert (cut.origin, cut.cwd, cut.title) == (whole.origin, whole.cwd, whole.title)


def test_a_line_left_out_is_skipped_with_a_warning() -> None:
    text = (
        json.dumps({"role": "user", "content": "Hello"})
        + "\n"
        + transcripts.left_out_line(40 * 1024 * 1024, 16)
        + json.dumps({"role": "assistant", "content": "Hi"})
        + "\n"
    )
    parsed = transcripts.parse(text, None, "chat.jsonl")
    assert [m.content for m in parsed.messages] == ["Hello", "Hi"]
    assert parsed.warnings == ["chat.jsonl: left out line 2 (40 MB, over the 16 MB a record may hold)"]


def test_lines_that_are_no_record_or_forced_markdown_are_kept_as_they_are() -> None:
    long = json.dumps({"role": "tool", "content": "x " * 5000}) + "\n"  # OpenAI's: every key read
    for line in ("not json " * 500 + "\n", "{" + "x" * 5000 + "\n", long):
        assert transcripts.slim_line(line) == line
    claude = json.dumps(_claude_session("y " * 5000)[3]) + "\n"
    assert transcripts.slim_line(claude, "markdown") == claude
    assert len(transcripts.slim_line(claude, "claude-code")) < len(claude) / 10


# ---- read a record at a time -------------------------------------------------------------------


class _Enough(Exception):
    pass


@pytest.mark.parametrize(
    "text",
    [
        '{"role": "user", "content": "one"}\n' * 3 + "not json\n",
        '{"type": "user", "message": {"role": "user", "content": "one"}}\n' * 3 + "not json\n",
        '{"type": "response_item", "payload": {"type": "message", "role": "user", "content": "one"}}\n' * 3
        + "not json\n",
        "**User:** one\n" * 3 + "**Assistant:** " + "x\n" * 10,
        "[" + ", ".join(['{"role": "user", "content": "one"}'] * 3) + "]",
        '{"messages": [\n' + ",\n".join(['{"role": "user", "content": "one"}'] * 3) + "\n]}",
    ],
    ids=["openai", "claude-code", "codex", "markdown", "json array", "json object"],
)
def test_each_message_is_handed_on_as_it_is_read_and_a_refusal_ends_the_parse(text: str) -> None:
    """What `on_message` raises ends the parse there: records past it are never read (the broken
    line after them is not reached)."""
    seen: list[str] = []

    def on_message(message: Message) -> None:
        seen.append(message.content)
        if len(seen) == 2:
            raise _Enough

    with pytest.raises(_Enough):
        parse(text, name="log", on_message=on_message)
    assert seen == ["one", "one"]


@pytest.mark.parametrize(
    "text",
    [
        "[" + json.dumps({"role": "user", "content": "x" * (RECORD_MB * 1024 * 1024)}) + "]",
        '{\n"role": "user",\n"content": "' + "x" * (RECORD_MB * 1024 * 1024) + '"\n}\n',
    ],
)
def test_a_json_record_past_its_bound_is_refused_before_it_is_decoded(text: str) -> None:
    with pytest.raises(BadInput, match=f"over the {RECORD_MB} MB a record may hold"):
        parse(text, name="log.json")


@pytest.mark.parametrize("closed", [False, True])
def test_arrays_nested_past_the_recursion_limit_are_one_line(closed: bool) -> None:
    nested = "[" * 200_000 + "]" * (200_000 if closed else 199_999)
    with pytest.raises(BadInput, match="log.json is not valid JSON"):
        parse(f'[{{"role": "user", "content": "a", "x": {nested}}}]', name="log.json")


def test_a_markdown_message_is_read_no_further_than_a_record_may_hold() -> None:
    line = "x" * 1023 + "\n"
    text = "**User:** hello\n" + line * (RECORD_MB * 1024 + 1) + "**Assistant:** hi\n"
    seen: list[int] = []
    with pytest.raises(BadInput, match=f"log.md: a message is larger than the {RECORD_MB} MB one may hold"):
        parse(text, name="log.md", on_message=lambda message: seen.append(len(message.content)))
    assert seen and seen[0] > RECORD_MB * 1024 * 1024  # handed on first, for the caller's own words
    assert len(markdown_messages(text.splitlines())) == 2  # a session note's own messages: no bound


@pytest.mark.parametrize(
    "text",
    [
        (DATA / "claude-code-session.jsonl").read_text(encoding="utf-8"),
        (DATA / "codex-rollout.jsonl").read_text(encoding="utf-8"),
        CLAUDE,
        "\ufeff" + jsonl({"role": "_system_prompt", "content": "x"}, {"role": "user", "content": "Hi"}),
        jsonl({"role": "user", "content": "Hi"}) + '{"role": "assistant", "content": "Hel',  # half written
        '{\n  "messages": [{"role": "user", "content": "Pretty"}]\n}\n',  # no JSON Lines: read whole
    ],
)
def test_a_transcript_handed_over_a_line_at_a_time_parses_as_its_text(text: str) -> None:
    whole = parse(text, name="t.jsonl")
    lines = parse(iter(text.splitlines(keepends=True)), name="t.jsonl")
    assert [(m.role, m.content, m.timestamp) for m in lines.messages] == [
        (m.role, m.content, m.timestamp) for m in whole.messages
    ]
    assert (lines.format, lines.origin, lines.cwd, lines.title, lines.warnings) == (
        whole.format,
        whole.origin,
        whole.cwd,
        whole.title,
        whole.warnings,
    )


def test_a_refusal_leaves_the_rest_of_the_lines_unread() -> None:
    """A session refused at its first message past a size asks for no further line: the reader
    of a 127 MB file stops there."""
    read = 0

    def lines() -> Iterator[str]:
        nonlocal read
        for n in range(100_000):
            read += 1
            yield json.dumps({"role": "user", "content": f"message {n}"}) + "\n"

    def refuse(message: Message) -> None:
        if message.content == "message 99":
            raise BadInput("too large")

    with pytest.raises(BadInput, match="too large"):
        parse(lines(), on_message=refuse)
    assert read == 100
