"""`tmem context`: sections, token budget (real tokenizer), sensitive and superseded notes left out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import ok, write

from tiered_memory.app.context import build_context
from tiered_memory.app.context_sources import open_tasks
from tiered_memory.app.filing import NewNote, add, add_many
from tiered_memory.app.memory import Memory
from tiered_memory.errors import BadInput
from tiered_memory.index.tokens import MINILM_NAME, default_counter
from tiered_memory.storage import access

Run = Callable[..., Result]
ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "scripts" / "hooks" / "tmem-hook.py"
TMEM = Path(sys.executable).parent / "tmem"


@pytest.fixture
def project_vault(memory: Memory) -> Memory:
    """A vault with a profile, an active project with tasks, a live session and a few memories."""
    root = memory.vault.root
    write(
        root,
        "memory/long-term/user_profile.md",
        "---\nid: user-profile\ntitle: User profile\ncategory: profile\n---\n# User profile\n\n"
        "<!-- template comment that must not reach the prompt -->\n"
        "- Name: Wei, a surveying engineer in Shanghai\n- Prefers answers in English, code comments in Chinese\n",
    )
    write(
        root,
        "memory/mid-term/projects/survey-app/status.md",
        "---\nstatus: active\n---\n# survey-app\n\nDeformation monitoring app; v0.3 shipped, report generator next.\n",
    )
    tasks = {
        "tasks": [
            {"title": "Write the PDF report export", "status": "in-progress", "priority": "high"},
            {"title": "Migrate the old database", "status": "done"},
            {"title": "Calibrate total station", "done": True},
        ]
    }
    write(root, "memory/mid-term/projects/survey-app/tasks.json", json.dumps(tasks))
    write(
        root,
        "memory/mid-term/active_contexts.json",
        json.dumps({"projects": {"survey-app": {"status": "active", "last_active": "2026-11-21"}}}),
    )
    write(
        root,
        "memory/short-term/current_session.md",
        "---\nid: current-session\ntitle: Current session\ncategory: session\n---\n# Current session\n\n"
        "Topic: fixing the settlement chart axis labels\n",
    )
    write(root, "memory/short-term/context_stack.json", json.dumps([{"title": "settlement chart"}]))
    add(
        memory,
        NewNote(
            "We decided to use CGCS2000 for control points; tablet WGS84 is transformed on import.",
            category="decision",
            project="survey-app",
            source="session:s-42",
        ),
    )
    add(
        memory,
        NewNote("Flaky CI was caused by naive datetimes: always use aware UTC datetimes.", category="error"),
    )
    return memory


def test_sections_in_priority_order(project_vault: Memory) -> None:
    block = build_context(project_vault)
    text = block.text
    assert text.startswith(f'<project-memory tokenizer="{MINILM_NAME}">')
    assert text.endswith("</project-memory>")
    assert text.splitlines()[1] == (
        "Memories from earlier sessions for project survey-app, recalled by tmem; "
        "they may be outdated, so verify before relying on them."
    )
    order = [
        text.index(h) for h in ("## User profile", "## Project survey-app", "## Current session", "## Recent")
    ]
    assert order == sorted(order)
    assert "- Name: Wei, a surveying engineer in Shanghai" in text
    assert "template comment" not in text
    assert "Status: active" in text and "report generator next" in text
    assert "- [ ] Write the PDF report export (in-progress, high)" in text
    assert "Migrate the old database" not in text and "Calibrate" not in text
    assert "Topic: fixing the settlement chart axis labels" in text and "- settlement chart" in text
    decision = next(line for line in text.splitlines() if "CGCS2000" in line)
    assert decision.startswith("- [decision] We decided to use CGCS2000")
    assert "2026-11-22" in decision and "source: session:s-42" in decision and "id: " in decision
    assert block.project == "survey-app"
    assert block.tokens == default_counter().count(text) <= block.budget == 1500
    assert {m.category for m in block.memories} == {"decision", "error"}


def test_query_puts_the_relevant_memory_first(project_vault: Memory) -> None:
    block = build_context(project_vault, query="naive datetimes in CI")
    assert block.memories[0].category == "error"
    assert block.text.index("## Relevant memories") > block.text.index("## Current session")


def test_budget_is_never_exceeded_with_the_real_tokenizer(project_vault: Memory) -> None:
    memory = project_vault
    long_profile = "\n".join(
        f"- Preference number {i}: likes detailed survey reports with charts" for i in range(200)
    )
    write(memory.vault.root, "memory/long-term/user_profile.md", f"# User profile\n\n{long_profile}\n")
    add_many(
        memory,
        [
            NewNote(
                f"Lesson {i}: the settlement monitoring point P{i} drifted because of temperature; "
                + "calibrate the total station before every epoch " * 8,
                category="error",
            )
            for i in range(40)
        ],
        "test: many memories",
    )
    counter = default_counter()
    for budget in (80, 100, 200, 500, 1500, 4000):
        for query in (None, "settlement monitoring drift"):
            block = build_context(memory, budget=budget, query=query)
            assert counter.count(block.text) <= budget, (budget, query)
            assert block.tokens <= budget
            assert block.text.endswith("</project-memory>")
    big = build_context(memory, budget=1500)
    profile = next(s for s in big.sections if s.name == "profile")
    assert profile.truncated and profile.tokens <= 1500 * 0.25
    assert 3 <= len(big.memories) <= 10  # a huge profile does not starve the memories; max_memories caps them
    small = build_context(memory, budget=300)
    assert small.omitted > 0 and len(small.memories) + small.omitted == 10


def test_budgeted_context_keeps_the_best_first(
    project_vault: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under any budget the memories shown are the best-ranked ones, in order: a higher-ranked
    memory is never dropped while a lower-ranked one is kept, and one too long for the room left
    is trimmed at a word or sentence bound instead of skipped."""
    memory = project_vault
    monkeypatch.setattr(access, "record", lambda *args, **kwargs: None)  # recalls would move the ranking
    filler = "The settlement readings were checked against the reference benchmark again. "
    add_many(
        memory,
        [
            NewNote(
                f"Settlement point P{i} drifted by {i} mm. " + filler * (1 + (i * 7) % 9),
                category="discovery",
            )
            for i in range(12)
        ],
        "test: settlement memories",
    )
    counter = default_counter()
    for query in ("settlement point drift", None):
        ranked = [m.id for m in build_context(memory, query=query, budget=100_000).memories]
        assert len(ranked) >= 8
        trimmed = 0
        for budget in range(70, 1600, 19):
            try:
                block = build_context(memory, query=query, budget=budget)
            except BadInput:
                continue  # the frame alone does not fit
            shown = [m.id for m in block.memories]
            assert shown == ranked[: len(shown)], (query, budget)
            assert counter.count(block.text) <= budget
            for mem in block.memories:
                if mem.trimmed:
                    trimmed += 1
                    assert mem.line in block.text and "…" in mem.line
                    cut = mem.line.split("] ", 1)[1].split("…", 1)[0]
                    whole = memory.vault.read_note(mem.path).body
                    assert whole.replace("\n", " ").find(cut) >= 0
                    at = whole.replace("\n", " ").find(cut) + len(cut)
                    assert at >= len(whole) or not whole[at].isalnum(), (cut, whole[at:])
        assert trimmed > 0


def test_too_small_a_budget_is_one_clear_error(project_vault: Memory) -> None:
    with pytest.raises(BadInput, match="too small"):
        build_context(project_vault, budget=20)


def test_sensitive_notes_are_left_out_unless_asked(project_vault: Memory) -> None:
    memory = project_vault
    add(
        memory,
        NewNote("My therapist appointment is every Tuesday at the quokka clinic.", extra={"sensitive": True}),
    )
    write(
        memory.vault.root,
        "memory/mid-term/projects/survey-app/status.md",
        "---\nstatus: active\nsensitive: true\n---\nClient negotiations with the quokka consortium.\n",
    )
    for query in (None, "quokka"):
        assert "quokka" not in build_context(memory, query=query).text
    assert "quokka clinic" in build_context(memory, query="quokka", include_sensitive=True).text
    assert "quokka consortium" in build_context(memory, include_sensitive=True).text


def test_superseded_notes_are_never_included(project_vault: Memory) -> None:
    memory = project_vault
    add(
        memory,
        NewNote("The project uses the Xian80 datum for heights.", extra={"superseded_by": "newer-note"}),
    )
    add(memory, NewNote("The project used the Beijing54 datum for heights.", extra={"status": "superseded"}))
    for query in (None, "datum for heights Xian80 Beijing54"):
        for sensitive in (False, True):
            text = build_context(memory, query=query, include_sensitive=sensitive).text
            assert "Xian80" not in text and "Beijing54" not in text


def test_project_option_and_bad_project_ids(project_vault: Memory) -> None:
    memory = project_vault
    write(memory.vault.root, "memory/mid-term/projects/other/status.md", "# other\n\nPipeline inspection.\n")
    block = build_context(memory, project="other")
    assert block.project == "other" and "Pipeline inspection." in block.text
    assert "Write the PDF report export" not in block.text
    with pytest.raises(BadInput, match="invalid project id"):
        build_context(memory, project="../../etc")
    assert build_context(memory, project="nothing-here").notices == [
        "project 'nothing-here' has no status.md or tasks.json"
    ]


def test_json_format_has_the_parts_and_no_wrapper(project_vault: Memory) -> None:
    data = build_context(project_vault, fmt="json").to_dict()
    assert not data["text"].startswith("<project-memory")
    assert "they may be outdated" in data["text"].splitlines()[0]
    assert [s["name"] for s in data["sections"]] == ["profile", "project", "session"]
    assert data["tokenizer"] == MINILM_NAME and data["tokens"] <= data["budget"]
    assert {"id", "title", "category", "date", "source", "path"} <= set(data["memories"][0])
    json.dumps(data)  # JSON-friendly all the way (the daemon sends it over its socket)
    with pytest.raises(BadInput, match="unknown context format"):
        build_context(project_vault, fmt="xml")


def test_short_term_keys_show_until_they_expire(memory: Memory) -> None:
    stack = {
        "focus": {
            "value": "axis labels",
            "set_at": "2026-11-22T10:00:00Z",
            "expires_at": "2026-11-22T14:00:00Z",
        },
        "stale": {
            "value": "old topic",
            "set_at": "2026-11-20T10:00:00Z",
            "expires_at": "2026-11-21T10:00:00Z",
        },
        "pinned": "by hand, never expires",
    }
    write(memory.vault.root, "memory/short-term/context_stack.json", json.dumps(stack))
    text = build_context(memory).text
    assert "Short-term context:\n- focus: axis labels\n- pinned: by hand, never expires" in text
    assert "old topic" not in text


def test_a_live_session_shows_once_in_its_own_section(memory: Memory) -> None:
    from tiered_memory.app import sessions

    sessions.start(memory, "Fix chart axis")
    sessions.append(memory, "The axis labels overlap on small screens")
    block = build_context(memory)
    section = next(s for s in block.sections if s.name == "session")
    assert "Fix chart axis" in section.text and "The axis labels overlap on small screens" in section.text
    assert all(m.category != "session" for m in block.memories)
    assert block.text.count("The axis labels overlap") == 1


def test_open_tasks_reads_the_usual_shapes() -> None:
    assert open_tasks(["Write docs"]) == ["- [ ] Write docs"]
    assert open_tasks({"t1": {"title": "A", "status": "todo"}, "t2": {"title": "B", "status": "closed"}}) == [
        "- [ ] A"
    ]
    assert open_tasks({"items": [{"name": "C", "due": "2026-12-01"}]}) == ["- [ ] C (due 2026-12-01)"]
    assert open_tasks("nonsense") == [] and open_tasks(None) == []


def test_context_records_access_for_injected_memories(project_vault: Memory) -> None:
    from tiered_memory.storage import access

    block = build_context(project_vault)
    counts = access.counts(project_vault.vault.root)
    assert all(counts.get(m.id) == 1 for m in block.memories)


# ---- CLI and hook --------------------------------------------------------------------------------


def test_cli_prints_the_block_and_json(run: Run, vault_path: Path) -> None:
    ok(run("add", "--category", "decision", "--", "Use CGCS2000 for control points"))
    result = ok(run("context", "--query", "control points"))
    assert result.stdout.startswith("<project-memory") and "CGCS2000" in result.stdout
    data = json.loads(ok(run("context", "--format", "json", "--budget", "300")).stdout)
    assert data["budget"] == 300 and data["tokens"] <= 300


def test_links_read_as_their_shown_text_in_the_block_and_in_search(run: Run, vault_path: Path) -> None:
    """A wikilink in an agent's prompt is the words a reader sees (`[[a|b]]` and a table's
    `[[a\\|b]]` as `b`, `[[a]]` as `a`), as a search's passage shows it; the file keeps its links."""
    text = (
        "---\ntitle: Survey grid\n---\nThe survey grid uses [[Control Points|control points]] "
        "set by [[Anna Berg]].\n\n| item | link |\n|---|---|\n| grid | [[Grid File\\|the grid file]] |\n"
    )
    note = write(vault_path, "memory/long-term/survey.md", text)
    block = ok(run("context", "--query", "survey grid control points")).stdout
    assert "uses control points set by Anna Berg." in block and "the grid file" in block
    assert "[[" not in block and "Grid File" not in block
    shown = ok(run("search", "survey grid control points")).stdout
    assert "uses control points set by Anna Berg." in shown and "[[" not in shown
    assert note.read_text(encoding="utf-8") == text


def test_cli_errors_are_one_line(run: Run) -> None:
    for args in (["context", "--budget", "10"], ["context", "--project", "a/b"]):
        result = run(*args)
        assert result.exit_code == 2
        assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("tmem: ")
        assert result.stdout == ""
    notice = ok(run("context", "--entity", "Nobody"))
    assert "warning: no profile for 'Nobody'" in notice.stderr


def test_session_start_hook_prints_the_context(vault_path: Path) -> None:
    env = {**os.environ, "TMEM_BIN": str(TMEM), "TMEM_VAULT": str(vault_path), "TMEM_BUDGET": "400"}
    payload = json.dumps({"session_id": "abc", "hook_event_name": "SessionStart", "source": "startup"})
    done = subprocess.run(
        [sys.executable, str(HOOK), "session-start"],
        input=payload,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("<project-memory") and done.stdout.rstrip().endswith("</project-memory>")


def test_hooks_fail_open(vault_path: Path, tmp_path: Path) -> None:
    env = {**os.environ, "TMEM_BIN": str(TMEM), "TMEM_VAULT": str(tmp_path / "not-a-vault")}
    for args, payload in ((["session-start"], "{}"), (["ingest"], '{"transcript_path": "/no/such.jsonl"}')):
        done = subprocess.run(
            [sys.executable, str(HOOK), *args],
            input=payload,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0 and done.stdout == ""
        assert done.stderr.startswith("tmem hook: ")


def test_worked_example_remember_ingest_context(run: Run, vault_path: Path, tmp_path: Path) -> None:
    """The README's agent session, end to end: remember, the SessionEnd hook ingests, next context."""
    ok(
        run(
            "add",
            "--category",
            "decision",
            "--project",
            "survey-app",
            "--",
            "Use CGCS2000 for control points",
        )
    )
    transcript = tmp_path / "session.jsonl"
    lines = [
        {
            "role": "user",
            "content": "The settlement report export keeps failing on page two.",
            "timestamp": "2026-11-22T09:00:00Z",
        },
        {
            "role": "assistant",
            "content": "The cause was a font without CJK glyphs. We decided to always embed Noto Sans CJK in PDF reports.",
            "timestamp": "2026-11-22T09:05:00Z",
        },
    ]
    transcript.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    env = {**os.environ, "TMEM_BIN": str(TMEM), "TMEM_VAULT": str(vault_path), "TMEM_PROJECT": "survey-app"}
    payload = json.dumps({"hook_event_name": "SessionEnd", "transcript_path": str(transcript)})
    done = subprocess.run(
        [sys.executable, str(HOOK), "ingest"],
        input=payload,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0 and done.stderr.startswith("tmem hook: ")
    assert list((vault_path / "memory/archive/sessions").rglob("*.md")), done.stderr
    block = ok(
        run("context", "--query", "PDF report fonts and coordinate system", "--project", "survey-app")
    ).stdout
    assert "CGCS2000" in block
    assert "Noto Sans CJK" in block
    assert "assistant:" not in block  # an archived session shows its summary, not its message log
    assert block.rstrip().endswith("</project-memory>")
