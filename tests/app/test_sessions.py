"""Sessions over real vaults: start, append, end (summary, archive, extraction, one commit each),
show/list/recent, transcript ingest (idempotent, growing transcripts), and secrets that never
reach a file or a commit."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import FIXED_NOW, git_log

from tiered_memory.app import sessions
from tiered_memory.app.memory import Memory
from tiered_memory.app.sessions import Message
from tiered_memory.errors import BadInput, NoteNotFound
from tiered_memory.model import session_format as session_notes
from tiered_memory.model.search import SearchRequest

GITHUB_TOKEN = "ghp_" + "R8x2Lq9ZbT4mN7vK1cY6wP3sD5fH0jG2aE8u"
AWS_KEY = "AKIA" + "QX7Z2LMN4PRT5VWY"
DB_URL_PASSWORD = "s3cr3t-Pa55w0rd"


def history(root: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(root), "log", "-p", "--all"], capture_output=True, text=True
    ).stdout


def all_files_text(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (root / "memory").rglob("*.md"))


def assert_no_secret(root: Path, *secrets: str) -> None:
    files, log = all_files_text(root), history(root)
    for secret in secrets:
        assert secret not in files, f"{secret} reached a file"
        assert secret not in log, f"{secret} reached a commit"


# ---- live sessions -----------------------------------------------------------------------------


def test_start_append_end_lifecycle(memory: Memory, vault_path: Path) -> None:
    started = sessions.start(memory, "Fix the flaky CI job", project="falcon")
    assert started.live and started.path == f"memory/short-term/sessions/{started.id}.md"
    assert git_log(vault_path)[0] == 'session: start "Fix the flaky CI job"'
    current = memory.vault.read_note("memory/short-term/current_session.md")
    assert current.meta["session"] == started.id
    assert f"Live session: **Fix the flaky CI job** (`{started.id}`)" in current.body
    assert "tmem rewrites this file" in current.body  # the person's text around the block is kept

    sessions.append(memory, "The build fails on main since numpy 2.0 came out.")
    sessions.append(
        memory, "The root cause was the numpy 2.0 ABI change. Fixed by pinning numpy<2.", role="assistant"
    )
    live = sessions.append(memory, "We decided to pin numpy until the C extension is rebuilt.")
    assert live.message_count == 3
    assert git_log(vault_path)[:3] == [
        'session: append to "Fix the flaky CI job" (user)',
        'session: append to "Fix the flaky CI job" (assistant)',
        'session: append to "Fix the flaky CI job" (user)',
    ]
    pointer = memory.vault.read_note("memory/short-term/current_session.md").body
    assert "3 messages" in pointer and "- assistant: The root cause was" in pointer

    commits = len(git_log(vault_path))
    done = sessions.end(memory, summary="Pinned numpy to get CI green.")
    assert len(git_log(vault_path)) == commits + 1
    assert git_log(vault_path)[0] == 'session: end "Fix the flaky CI job" (3 messages; memories: 2 added)'
    assert done.path == f"memory/archive/sessions/2026/11/22/{started.id}.md"
    assert not (vault_path / started.path).exists()
    stored = memory.vault.read_note(done.path)
    assert stored.meta["status"] == "completed" and stored.meta["session"] == started.id
    assert stored.meta["messages"] == 3 and stored.meta["project"] == "falcon"
    assert done.summary.startswith("Pinned numpy to get CI green.\n\n- When: 2026-11-22 12:00 UTC")
    assert "- Messages: 3 (2 user, 1 assistant)" in done.summary
    assert "- First topic: The build fails on main since numpy 2.0 came out." in done.summary
    assert "- Last topic: We decided to pin numpy until the C extension is rebuilt." in done.summary
    assert "- Keywords: numpy" in done.summary
    assert "  - [decision] We decided to pin numpy until the C extension is rebuilt." in done.summary
    assert sorted(o.note.category for o in done.outcomes) == ["decision", "error"]
    for outcome in done.outcomes:
        assert outcome.note.meta["session"] == started.id
        assert outcome.note.meta["source"] == f"session:{started.id}"
        assert outcome.note.path.startswith("memory/mid-term/projects/falcon/")
        assert (vault_path / outcome.note.path).is_file()
    pointer_note = memory.vault.read_note("memory/short-term/current_session.md")
    assert "session" not in pointer_note.meta
    assert "No live session. Last session: **Fix the flaky CI job**" in pointer_note.body
    status = subprocess.run(
        ["git", "-C", str(vault_path), "status", "--porcelain"], capture_output=True, text=True
    )
    assert status.stdout.strip() == ""  # everything tmem wrote is committed


def test_append_starts_a_session_when_none_is_live(memory: Memory, vault_path: Path) -> None:
    session = sessions.append(memory, "How do I reproject the control points to WGS84?\nMore detail here.")
    assert session.live and session.title == "How do I reproject the control points to WGS84?"
    assert git_log(vault_path)[0].endswith("(user) (new session)")
    assert sessions.current(memory) is not None


def test_append_many_is_one_commit_and_keeps_given_times(memory: Memory, vault_path: Path) -> None:
    sessions.start(memory, "batch")
    commits = len(git_log(vault_path))
    when = datetime(2026, 11, 22, 9, 30, tzinfo=UTC)
    session = sessions.append_many(memory, [Message("user", "one", when), Message("assistant", "two")])
    assert len(git_log(vault_path)) == commits + 1
    assert git_log(vault_path)[0] == 'session: append to "batch" (2 messages)'
    shown = sessions.show(memory, session.id)
    assert [(m.role, m.content, m.timestamp) for m in shown.messages] == [
        ("user", "one", when),
        ("assistant", "two", FIXED_NOW),
    ]


def test_messages_round_trip_whatever_they_contain(memory: Memory) -> None:
    tricky = [
        "### assistant\nnot a new message",
        "```python\nprint('unclosed fence')",
        "## Messages\n## Summary\n\\### user · 2026-01-01T00:00:00Z",
        "**User:** quoted chat\nUser: also quoted",
        "中文消息：不要在周五发布。",
    ]
    session = sessions.start(memory, "tricky")
    for index, text in enumerate(tricky):
        sessions.append(memory, text, role="user" if index % 2 == 0 else "assistant")
    shown = sessions.show(memory, session.id)
    assert [m.content for m in shown.messages] == tricky
    ended = sessions.end(memory, extract=False)
    assert [m.content for m in sessions.show(memory, ended.id).messages] == tricky


def test_append_and_end_errors(memory: Memory) -> None:
    with pytest.raises(NoteNotFound, match="no live session to end"):
        sessions.end(memory)
    session = sessions.start(memory, "x")
    with pytest.raises(BadInput, match="nothing to append"):
        sessions.append(memory, "   \n")
    with pytest.raises(BadInput, match="unknown role 'wizard'"):
        sessions.append(memory, "hi", role="wizard")
    with pytest.raises(NoteNotFound, match="no session with id 'nope'"):
        sessions.append(memory, "hi", session_id="nope")
    sessions.end(memory, session.id, extract=False)
    with pytest.raises(BadInput, match="has ended"):
        sessions.append(memory, "hi", session_id=session.id)
    with pytest.raises(BadInput, match="already ended"):
        sessions.end(memory, session.id)


def test_ending_a_session_that_is_not_current_keeps_the_current_one(memory: Memory) -> None:
    first = sessions.start(memory, "first")
    second = sessions.start(memory, "second")
    sessions.append(memory, "hello", session_id=first.id)  # appending makes it current
    assert (sessions.current(memory) or second).id == first.id
    sessions.end(memory, second.id, extract=False)
    current = sessions.current(memory)
    assert current is not None and current.id == first.id


def test_session_end_without_extraction_writes_no_memories(memory: Memory, vault_path: Path) -> None:
    sessions.start(memory, "quiet")
    sessions.append(memory, "We decided to keep everything as it is.")
    done = sessions.end(memory, extract=False)
    assert done.outcomes == []
    assert git_log(vault_path)[0] == 'session: end "quiet" (1 message; no memories)'
    assert "[decision] We decided to keep everything as it is." in done.summary  # still a highlight


# ---- finding sessions ------------------------------------------------------------------------------


def test_list_recent_show_and_search_within_a_session(vault_path: Path) -> None:
    from tiered_memory.index.embeddings import FakeEmbedder
    from tiered_memory.storage.vault import Vault

    clock = [FIXED_NOW]
    memory = Memory(Vault(vault_path), embedder_factory=lambda: FakeEmbedder(64), now=lambda: clock[0])
    ids = []
    for day, topic in enumerate(
        ["tunnel survey datum", "bridge deflection report", "metro deformation alarms"]
    ):
        clock[0] = FIXED_NOW + timedelta(days=day)
        s = sessions.start(memory, topic)
        sessions.append(memory, f"Let's talk about the {topic}. We decided to document the {topic}.")
        ids.append(s.id)
        if day < 2:
            sessions.end(memory)
    listed = sessions.list(memory, 10)
    assert [s.id for s in listed] == list(reversed(ids))
    assert [s.live for s in listed] == [True, False, False]
    recent = sessions.recent(memory, 2)
    assert [s.id for s in recent] == [ids[2], ids[1]]
    assert "First topic: Let's talk about the bridge deflection report." in recent[1].summary
    shown = sessions.show(memory, ids[0])
    assert shown.messages[0].content.startswith("Let's talk about the tunnel survey datum")
    hits = memory.search(
        SearchRequest(query="document", mode="keyword", session=ids[1]), record_access=False
    ).hits
    assert hits and {h.path for h in hits} >= {f"memory/archive/sessions/2026/11/23/{ids[1]}.md"}
    assert all(memory.vault.read_note(h.path).meta.get("session") == ids[1] for h in hits)
    with pytest.raises(NoteNotFound):
        sessions.show(memory, "ses-00000000-000000")
    with pytest.raises(BadInput):
        sessions.list(memory, 0)
    memory.close()


# ---- ingest ----------------------------------------------------------------------------------------


def claude_transcript(*turns: tuple[str, str, str]) -> str:
    lines = [{"type": "summary", "summary": "Datum for the tunnel survey", "leafUuid": "l"}]
    for role, text, ts in turns:
        content: object = text if role == "user" else [{"type": "text", "text": text}]
        lines.append(
            {
                "type": role,
                "sessionId": "9d1c6a8e-0b7f-4c55-9a55-5f2b7d3c1e00",
                "cwd": "/home/dev/tunnel",
                "message": {"role": role, "content": content},
                "timestamp": ts,
                "isSidechain": False,
            }
        )
    return "\n".join(json.dumps(line) for line in lines) + "\n"


TURNS = [
    ("user", f"The project uses CGCS2000. Push with token {GITHUB_TOKEN} if needed.", "2026-11-20T09:00:00Z"),
    ("assistant", "Noted. I found that the control file lists 42 points.", "2026-11-20T09:00:10Z"),
    (
        "user",
        f"Always export coordinates with 4 decimals. AWS key {AWS_KEY} is for the bucket.",
        "2026-11-20T09:05:00Z",
    ),
]


def test_ingest_stores_an_archived_session_in_one_commit(memory: Memory, vault_path: Path) -> None:
    commits = len(git_log(vault_path))
    session = sessions.ingest(
        memory, claude_transcript(*TURNS), name="/home/dev/.claude/projects/x/9d1c.jsonl"
    )
    assert len(git_log(vault_path)) == commits + 1
    assert (
        git_log(vault_path)[0]
        == 'ingest: session "Datum for the tunnel survey" (3 messages; memories: 2 added)'
    )
    assert session.path.startswith("memory/archive/sessions/2026/11/20/ses-20261120-")
    note = memory.vault.read_note(session.path)
    assert note.meta["origin"] == "9d1c6a8e-0b7f-4c55-9a55-5f2b7d3c1e00"
    assert note.meta["source"] == "transcript:claude-code" and note.meta["transcript"] == "9d1c.jsonl"
    assert note.meta["cwd"] == "/home/dev/tunnel"
    assert note.meta["started"] == datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
    assert note.meta["ended"] == datetime(2026, 11, 20, 9, 5, tzinfo=UTC)
    assert [o.note.title for o in session.outcomes] == [
        "The project uses CGCS2000.",
        "Always export coordinates with 4 decimals.",
    ]
    assert "[REDACTED:github-token]" in note.body and "[REDACTED:aws-access-key]" in note.body
    assert_no_secret(vault_path, GITHUB_TOKEN, AWS_KEY)


def test_ingest_twice_changes_nothing(memory: Memory, vault_path: Path) -> None:
    text = claude_transcript(*TURNS)
    first = sessions.ingest(memory, text)
    commits = git_log(vault_path)
    again = sessions.ingest(memory, text)
    assert again.id == first.id and "already ingested" in again.notice
    assert git_log(vault_path) == commits


def test_the_same_messages_read_another_way_change_nothing(memory: Memory, vault_path: Path) -> None:
    """A transcript is read a record at a time and its tool output cut as it is read, so the text
    an earlier tmem hashed (the whole file) differs from today's: the same messages again still
    change nothing, and make no commit."""
    lines = claude_transcript(*TURNS).splitlines(keepends=True)
    first = sessions.ingest(memory, "".join(lines))
    commits = git_log(vault_path)
    padded = "".join(
        line.replace('"type": "user"', '"type": "user", "toolUseResult": "' + "x" * 5000 + '"', 1)
        for line in lines
    )
    assert padded != "".join(lines)  # another text, the same messages (toolUseResult is never read)
    again = sessions.ingest(memory, padded)
    assert again.id == first.id and "already ingested" in again.notice
    assert git_log(vault_path) == commits


def test_ingest_of_a_grown_transcript_updates_the_session(memory: Memory, vault_path: Path) -> None:
    first = sessions.ingest(memory, claude_transcript(*TURNS[:2]))
    assert [o.note.title for o in first.outcomes] == ["The project uses CGCS2000."]
    grown = sessions.ingest(memory, claude_transcript(*TURNS))
    assert grown.id == first.id and grown.path == first.path
    assert grown.message_count == 3 and grown.notice.endswith(": 1 new message")
    assert [o.note.title for o in grown.outcomes] == ["Always export coordinates with 4 decimals."]
    assert git_log(vault_path)[0].startswith('update: session "Datum for the tunnel survey" (3 messages')
    assert len(list((vault_path / "memory/archive/sessions").rglob("*.md"))) == 1


def test_ingest_of_an_earlier_copy_of_the_transcript_keeps_the_later_messages(
    memory: Memory, vault_path: Path
) -> None:
    """Hooks store the same session more than once (pre-compact, then session-end), and may race:
    a shorter copy arriving after a longer one leaves the stored session as it was."""
    grown = sessions.ingest(memory, claude_transcript(*TURNS))
    commits = git_log(vault_path)
    late = sessions.ingest(memory, claude_transcript(*TURNS[:2]))
    assert late.id == grown.id and "nothing changed" in late.notice
    assert git_log(vault_path) == commits
    note = (vault_path / grown.path).read_text(encoding="utf-8")
    assert len(session_notes.parse_messages(note)) == 3


def test_ingest_markdown_and_openai_formats(memory: Memory) -> None:
    md = sessions.ingest(
        memory, "**User:** We decided to use uv for packaging.\n\n**Assistant:** OK.\n", name="chat.md"
    )
    assert md.source == "transcript:markdown" and md.message_count == 2
    assert md.title == "We decided to use uv for packaging."
    oa = sessions.ingest(
        memory,
        '{"role": "user", "content": "I prefer short answers in the morning please"}\n',
        title="Style",
        project="falcon",
    )
    assert oa.title == "Style" and oa.project == "falcon"
    assert [o.note.category for o in oa.outcomes] == ["preference"]


def test_ingest_without_extraction_and_too_large(memory: Memory, vault_path: Path) -> None:
    session = sessions.ingest(memory, claude_transcript(*TURNS), extract=False)
    assert session.outcomes == []
    (vault_path / "tmem.yaml").write_text("embeddings:\n  provider: fake\nindex:\n  max_file_mb: 0.001\n")
    from tiered_memory.storage.vault import Vault

    small = Memory(Vault(vault_path))
    big = "\n".join(json.dumps({"role": "user", "content": f"message {i} " + "x" * 80}) for i in range(40))
    with pytest.raises(BadInput, match="larger than index.max_file_mb"):
        sessions.ingest(small, big)
    small.close()


def test_a_transcript_of_countless_tiny_messages_is_refused_before_any_is_redacted(
    vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hostile transcript of a hundred thousand one-letter records: their text is 100 KB, the
    session note they make is 1.5 MB (a heading each). It is measured as the note will hold it,
    so it is refused in one line before a message is redacted or mined for memories, not after."""
    from tiered_memory.app import session_store
    from tiered_memory.storage.vault import Vault

    (vault_path / "tmem.yaml").write_text("embeddings:\n  provider: fake\nindex:\n  max_file_mb: 1\n")
    redacted: list[str] = []
    monkeypatch.setattr(session_store.Redactor, "__call__", lambda self, text: redacted.append(text) or text)
    small = Memory(Vault(vault_path))
    tiny = '{"role": "user", "content": "a"}\n' * 100_000
    try:
        with pytest.raises(
            BadInput, match=r"input: the messages is larger than index.max_file_mb \(1.0 MB\)"
        ):
            sessions.ingest(small, tiny)
    finally:
        small.close()
    assert redacted == []


def test_secrets_in_every_write_path_never_reach_a_file_or_a_commit(memory: Memory, vault_path: Path) -> None:
    url = f"postgres://app:{DB_URL_PASSWORD}@db.internal:5432/survey"
    sessions.start(memory, f"Session with {GITHUB_TOKEN}")
    sessions.append(memory, f"Connect with {url}. We decided to rotate {AWS_KEY} monthly.")
    sessions.append_many(memory, [Message("assistant", f"The root cause was {GITHUB_TOKEN} in the log.")])
    sessions.end(memory, summary=f"Rotated {AWS_KEY}.")
    sessions.ingest(memory, claude_transcript(*TURNS))
    assert_no_secret(vault_path, GITHUB_TOKEN, AWS_KEY, DB_URL_PASSWORD)


def test_summary_is_deterministic() -> None:
    msgs = [
        Message(
            "user",
            "Set up the tunnel monitoring. The tunnel has 12 prisms.",
            datetime(2026, 1, 1, 8, tzinfo=UTC),
        ),
        Message("assistant", "Tunnel prisms noted.", datetime(2026, 1, 1, 8, 1, tzinfo=UTC)),
        Message("tool", "[tool result] ok"),
        Message(
            "user", "Now the alarm thresholds for the tunnel prisms.", datetime(2026, 1, 1, 9, tzinfo=UTC)
        ),
    ]
    one = session_notes.build_summary(msgs, msgs[0].timestamp, msgs[-1].timestamp, [("fact", "12 prisms")])
    assert one == session_notes.build_summary(
        msgs, msgs[0].timestamp, msgs[-1].timestamp, [("fact", "12 prisms")]
    )
    assert one.splitlines() == [
        "- When: 2026-01-01 08:00 UTC -> 2026-01-01 09:00 UTC",
        "- Messages: 4 (2 user, 1 assistant, 1 tool)",
        "- First topic: Set up the tunnel monitoring.",
        "- Last topic: Now the alarm thresholds for the tunnel prisms.",
        "- Keywords: tunnel, prisms",
        "- Highlights:",
        "  - [fact] 12 prisms",
    ]


def test_ingest_without_timestamps_gets_the_same_id_on_another_day(vault_path: Path) -> None:
    from tiered_memory.storage.vault import Vault

    text = "User: We decided to label prisms by chainage.\nAssistant: Noted.\n"
    day = [FIXED_NOW]
    memory = Memory(Vault(vault_path), now=lambda: day[0])
    first = sessions.ingest(memory, text, extract=False)
    day[0] = FIXED_NOW + timedelta(days=3)
    again = sessions.ingest(memory, text, extract=False)
    assert again.id == first.id and "already ingested" in again.notice
    assert first.id.startswith("ses-") and "2026" not in first.id
    memory.close()


def test_a_broken_current_session_file_is_never_overwritten(memory: Memory, vault_path: Path) -> None:
    pointer = vault_path / "memory/short-term/current_session.md"
    pointer.write_text("---\nid: [unclosed\n---\nmy own notes\n", encoding="utf-8")
    warnings: list[str] = []
    memory.warn = warnings.append
    session = sessions.start(memory, "still works")
    sessions.append(memory, "hello", session_id=session.id)
    assert pointer.read_text(encoding="utf-8") == "---\nid: [unclosed\n---\nmy own notes\n"
    assert any("unreadable frontmatter" in w for w in warnings)
    assert sessions.end(memory, session.id, extract=False).status == "completed"
