"""Extraction: compaction-summary sections, English and Chinese cue phrases, what is left out, and
the optional LLM extractor against a real local HTTP server speaking the chat-completions API."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from tiered_memory.app.extract_llm import ExtractorUnavailable, extract_llm, run
from tiered_memory.config import ExtractConfig
from tiered_memory.errors import ConfigError
from tiered_memory.model.extract import extract, has_sections
from tiered_memory.model.transcripts import Message

OPENCODE_SUMMARY = """\
## Goal
Set up deformation monitoring reports for the metro tunnel project.

## Instructions
- Reports use A4 landscape with deformation curves
- Always apply the meteorological correction before reducing total-station data

## Discoveries
- The project uses the CGCS2000 coordinate system, central meridian 121°
- Control point K7 was disturbed in March;
  its coordinates were re-observed

## Accomplished
- Wrote the daily report template

## Relevant files
- `reports/template.docx`: the report template
- `scripts/adjust.py` - least-squares adjustment

## Next steps
- Send the first report to the client
"""

CLAUDE_SUMMARY = """\
This session is being continued from a previous conversation that ran out of context.
Analysis:
The user wanted to fix CI.

Summary:
1. Primary Request and Intent:
   The user asked to make the CI pipeline green again.
2. Key Technical Concepts:
   - numpy 2.0 ABI changes
3. Files and Code Sections:
   - pyproject.toml
4. Errors and fixes:
   - Import error in the C extension: fixed by pinning numpy<2 in the build requirements.
5. Problem Solving:
   Reproduced the failure locally with a clean virtualenv.
6. All user messages:
   - "please fix ci"
7. Pending Tasks:
   - Open a PR
"""


def by_text(found: list[Any]) -> dict[str, Any]:
    return {c.text: c for c in found}


# ---- compaction summaries ----------------------------------------------------------------------


def test_opencode_compaction_summary_sections_map_to_categories() -> None:
    found = extract(OPENCODE_SUMMARY, source_session="ses-1")
    got = [(c.category, c.text, c.confidence) for c in found]
    assert got == [
        ("decision", "Set up deformation monitoring reports for the metro tunnel project.", 0.9),
        ("pattern", "Reports use A4 landscape with deformation curves", 0.7),
        ("pattern", "Always apply the meteorological correction before reducing total-station data", 0.7),
        ("discovery", "The project uses the CGCS2000 coordinate system, central meridian 121°", 0.8),
        ("discovery", "Control point K7 was disturbed in March; its coordinates were re-observed", 0.8),
        ("decision", "Wrote the daily report template", 0.7),
        ("fact", "Relevant files: reports/template.docx, scripts/adjust.py", 0.6),
    ]
    assert {c.source for c in found} == {"session:ses-1"}
    assert found[0].cue == "section Goal"
    assert not any("Send the first report" in c.text for c in found)  # next steps are not memories


def test_claude_code_compaction_summary_inside_a_user_message() -> None:
    assert has_sections(CLAUDE_SUMMARY)
    found = extract([Message("user", CLAUDE_SUMMARY), Message("assistant", "Continuing.")])
    got = by_text(found)
    assert got["The user asked to make the CI pipeline green again."].category == "decision"
    assert got["numpy 2.0 ABI changes"].category == "discovery"
    lesson = got["Import error in the C extension: fixed by pinning numpy<2 in the build requirements."]
    assert (lesson.category, lesson.confidence) == ("error", 0.8)
    assert "Relevant files: pyproject.toml" in got
    assert not any("please fix ci" in t or "Open a PR" in t for t in got)


def test_chinese_compaction_headings() -> None:
    text = "## 目标\n完成监测日报模板\n\n## 发现\n- 项目使用 CGCS2000 坐标系\n\n## 下一步\n- 发给甲方\n"
    got = [(c.category, c.text) for c in extract(text)]
    assert got == [("decision", "完成监测日报模板"), ("discovery", "项目使用 CGCS2000 坐标系")]


# ---- cue phrases --------------------------------------------------------------------------------


def test_english_cues_from_a_user() -> None:
    text = (
        "We decided to use least squares for the network adjustment. "
        "I prefer reports as PDF rather than Word. "
        "Never push directly to the main branch. "
        "The root cause was a stale cache in the CI runner. "
        "Remember that the client wants a daily upload by 9am. "
        "We found that the total station clock drifts by two seconds a day."
    )
    got = [(c.category, c.text) for c in extract([Message("user", text)])]
    assert got == [
        ("decision", "We decided to use least squares for the network adjustment."),
        ("preference", "I prefer reports as PDF rather than Word."),
        ("pattern", "Never push directly to the main branch."),
        ("error", "The root cause was a stale cache in the CI runner."),
        ("fact", "Remember that the client wants a daily upload by 9am."),
        ("discovery", "We found that the total station clock drifts by two seconds a day."),
    ]


def test_chinese_cues() -> None:
    text = (
        "我们决定采用最小二乘法进行平差计算。以后报告都用A4横版。不要在周五发布版本。"
        "原因是全站仪数据没有做气象改正。我更喜欢用中文写注释。记住甲方要求每日上传监测日报。"
    )
    got = [(c.category, c.text) for c in extract([Message("user", text)])]
    assert got == [
        ("decision", "我们决定采用最小二乘法进行平差计算。"),
        ("pattern", "以后报告都用A4横版。"),
        ("pattern", "不要在周五发布版本。"),
        ("error", "原因是全站仪数据没有做气象改正。"),
        ("preference", "我更喜欢用中文写注释。"),
        ("fact", "记住甲方要求每日上传监测日报。"),
    ]


def test_spanish_cues() -> None:
    """A Spanish vault's agents ingest Spanish sessions: their decisions and preferences count."""
    text = (
        "Hola. Para TuFacturaIA decidimos que los crons nuevos van con withCronTracking. "
        "Y recuerda: prefiero que me avises por Telegram, no por Slack. "
        "Nunca publiques en main sin pasar la suite. La causa era que el compose no declaraba la variable. "
        "Todavía no hemos decidido el proveedor."
    )
    got = [(c.category, c.text) for c in extract([Message("user", text)])]
    assert got == [
        ("decision", "Para TuFacturaIA decidimos que los crons nuevos van con withCronTracking."),
        ("preference", "Y recuerda: prefiero que me avises por Telegram, no por Slack."),
        ("pattern", "Nunca publiques en main sin pasar la suite."),
        ("error", "La causa era que el compose no declaraba la variable."),
    ]


def test_assistant_politeness_is_not_a_rule_or_preference() -> None:
    text = (
        "If you prefer, I can always rewrite it in Rust. Don't worry about the warnings for now. "
        "The root cause was a race between the two writers. Fixed by taking the lock first."
    )
    found = extract([Message("assistant", text)])
    assert [(c.category, c.text) for c in found] == [
        ("error", "The root cause was a race between the two writers. Fixed by taking the lock first.")
    ]
    assert found[0].confidence == pytest.approx(0.65)  # assistants count less than users


def test_questions_undecided_code_and_tool_lines_are_left_out() -> None:
    text = (
        "Should we always use tabs?\n"
        "We haven't decided on the database yet.\n"
        "```\n# never run this in production\nrm -rf build\n```\n"
        "[tool result] we decided nothing here\n"
        "> We decided to quote someone else.\n"
    )
    assert extract([Message("user", text)]) == []


def test_repeats_are_reported_once_with_the_best_confidence() -> None:
    found = extract([Message("assistant", "We decided to use uv."), Message("user", "We decided to use uv.")])
    assert len(found) == 1 and found[0].confidence == 0.85


def test_tool_and_system_messages_are_not_mined() -> None:
    found = extract([Message("system", "Always answer in English."), Message("tool", "We decided to fail.")])
    assert found == []


def test_run_applies_min_confidence() -> None:
    msgs = [Message("assistant", "I found that the tests are slow on CI runners today.")]
    assert run(ExtractConfig(), msgs)[0] == []  # 0.45 < 0.5
    found, name = run(ExtractConfig(min_confidence=0.4), msgs)
    assert name == "rules" and [c.category for c in found] == ["discovery"]


# ---- the LLM extractor against a real local server ------------------------------------------------


@dataclass
class ChatServer:
    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    status: int = 200
    reply: str = ""


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """An OpenAI-compatible /v1/chat/completions endpoint on 127.0.0.1, stopped after the test."""
    state = ChatServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers["Content-Length"]))
            state.requests.append(json.loads(body))
            state.headers.append(dict(self.headers))
            if self.path != "/v1/chat/completions":
                self.send_response(404)
                self.end_headers()
                return
            answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": state.reply}}]}
            data = json.dumps(answer).encode()
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_llm_extractor_sends_the_transcript_and_reads_json(
    chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMEM_TEST_LLM_KEY", "local-test-key")
    chat_server.reply = (
        "```json\n"
        + json.dumps(
            {
                "memories": [
                    {
                        "category": "decision",
                        "text": "Use least squares for the adjustment.",
                        "confidence": 0.9,
                    },
                    {"category": "preference", "text": "The user wants PDF reports.", "confidence": 1.7},
                    {"category": "gossip", "text": "ignored: unknown category"},
                    {"category": "fact", "text": ""},
                ]
            }
        )
        + "\n```"
    )
    cfg = ExtractConfig(
        llm=True, base_url=chat_server.url, model="qwen2.5:7b", api_key_env="TMEM_TEST_LLM_KEY"
    )
    msgs = [
        Message("user", "Let's use least squares."),
        Message("assistant", "OK."),
        Message("tool", "noise"),
    ]
    found = extract_llm(cfg, msgs, "ses-9")
    assert [(c.category, c.text, c.confidence, c.source, c.cue) for c in found] == [
        ("decision", "Use least squares for the adjustment.", 0.9, "session:ses-9", "llm"),
        ("preference", "The user wants PDF reports.", 1.0, "session:ses-9", "llm"),
    ]
    sent = chat_server.requests[0]
    assert sent["model"] == "qwen2.5:7b"
    assert sent["response_format"] == {"type": "json_object"}
    assert sent["messages"][1]["content"] == "user: Let's use least squares.\n\nassistant: OK."
    assert chat_server.headers[0]["Authorization"] == "Bearer local-test-key"


def test_llm_failure_falls_back_to_the_rules(chat_server: ChatServer) -> None:
    chat_server.status = 500
    cfg = ExtractConfig(llm=True, base_url=chat_server.url, model="m", api_key_env=None)
    warnings: list[str] = []
    found, name = run(cfg, [Message("user", "We decided to ship on Mondays.")], None, warnings.append)
    assert name == "rules" and [c.text for c in found] == ["We decided to ship on Mondays."]
    assert "answered HTTP 500" in warnings[0] and "rule-based" in warnings[0]


def test_llm_answer_that_is_not_json_is_one_clear_error(chat_server: ChatServer) -> None:
    chat_server.reply = "Sure! Here are some memories: ..."
    cfg = ExtractConfig(llm=True, base_url=chat_server.url, model="m")
    with pytest.raises(ExtractorUnavailable, match="not the JSON asked for"):
        extract_llm(cfg, "We decided X.")


def test_llm_without_a_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="extract.model"):
        run(ExtractConfig(llm=True), "We decided X.")


def test_unreachable_endpoint_is_reported() -> None:
    cfg = ExtractConfig(llm=True, base_url="http://127.0.0.1:9/v1", model="m")
    with pytest.raises(ExtractorUnavailable, match="cannot reach chat endpoint"):
        extract_llm(cfg, "We decided X.", timeout=2)
