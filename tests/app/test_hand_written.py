"""A person's notes stay byte for byte what they wrote: searching, a month of daily maintenance, the
daemon's indexing and commits, a sync between two machines and resolving another note never change
a byte of them. Only a command that names a note may change it (see test_adopt_obsidian.py too)."""

from __future__ import annotations

import json
import subprocess
import tempfile
from datetime import timedelta
from pathlib import Path
from unittest.mock import ANY

from click.testing import CliRunner
from helpers import FAKE_CONFIG, FIXED_NOW, commit, git, ok
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiered_memory.app.api.notes import RememberRequest
from tiered_memory.app.conflicts import resolve_conflict
from tiered_memory.app.maintain import run_maintenance
from tiered_memory.app.memory import Memory
from tiered_memory.app.notes import remember
from tiered_memory.cli.main import cli
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.model import note as notes
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault, init_vault
from tiered_memory.sync.gitsync import sync

WORDS = st.sampled_from(["geodesy", "datum", "survey", "tide", "Kafka", "plan", "café", "数据"])
FOLDERS = st.sampled_from(["", "Projects/", "Daily/", "memory/long-term/", "memory/mid-term/", "A/B/"])


@st.composite
def hand_written(draw: st.DrawFn) -> bytes:
    """A note as people and editors write them: any mix of frontmatter styles, line ends, BOM."""
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    lines: list[str] = []
    if draw(st.booleans()):
        entries = draw(
            st.lists(
                st.sampled_from(
                    [
                        "tags: [{w}, {w}]",
                        "tags:\n  - {w}\n  - {w}/nested",
                        "aliases: [{w} notes]",
                        "aliases: '{w}'",
                        "cssclass: wide  # a comment",
                        "# a comment line",
                        "unknown: {{a: 1, b: [x, y]}}",
                        "created: 2026-10-01",
                        "rating: 4",
                        'quoted: "yes"',
                        "status: draft",
                        "confidence: 0.7",
                    ]
                ),
                max_size=5,
                unique=True,
            )
        )
        lines += ["---", *(e.format(w=draw(WORDS)) for e in entries), "---"]
    if draw(st.booleans()):
        lines.append(f"# {draw(WORDS).title()} {draw(WORDS)}")
    for _ in range(draw(st.integers(1, 4))):
        parts = draw(st.lists(WORDS, min_size=1, max_size=6))
        extra = draw(st.sampled_from(["", " #idea", " [[Other note]]", " key:: value", " #a/b"]))
        lines.append(" ".join(parts) + extra)
    text = eol.join("\n".join(lines).split("\n"))
    if draw(st.booleans()):
        text += eol
    bom = "\ufeff" if draw(st.booleans()) else ""
    return (bom + text).encode("utf-8")


NOTES = st.lists(st.tuples(FOLDERS, hand_written()), min_size=1, max_size=4)


def memory_of(root: Path, day: int = 0) -> Memory:
    now = FIXED_NOW + timedelta(days=day)
    return Memory(Vault(root), embedder_factory=lambda: FakeEmbedder(32), now=lambda: now)


def _recalled_and_maintained(root: Path) -> None:
    """Recalls, then the daily maintenance (decay, merges, archive), at day 0, 90 and 200."""
    for day in (0, 90, 200):
        memory = memory_of(root, day)
        try:
            memory.search(SearchRequest(query="tide gauge harbour", mode="keyword"))
            run_maintenance(memory)
        finally:
            memory.close()


def changed(root: Path, files: dict[str, bytes]) -> list[str]:
    return [rel for rel, data in files.items() if (root / rel).read_bytes() != data]


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(NOTES)
def test_hand_written_notes_survive_search_maintain_daemon_sync_and_resolve(
    drawn: list[tuple[str, bytes]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        remote, laptop, desktop = base / "remote.git", base / "laptop", base / "desktop"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
        init_vault(laptop, config_text=FAKE_CONFIG)
        files = {f"{folder}note-{i}.md": data for i, (folder, data) in enumerate(drawn)}
        for rel, data in files.items():
            (laptop / rel).parent.mkdir(parents=True, exist_ok=True)
            (laptop / rel).write_bytes(data)
        conflicted = "Inbox/merged.md"
        (laptop / "Inbox").mkdir()
        (laptop / conflicted).write_bytes(b"---\r\nconflict: true\r\n---\r\nkept both\r\n")
        commit(Vault(laptop), [*files, conflicted], "a person's notes")
        git(laptop, "remote", "add", "origin", str(remote))
        sync(memory_of(laptop))
        subprocess.run(["git", "clone", "-q", str(remote), str(desktop)], check=True)
        ok(CliRunner().invoke(cli, ["init", "--adopt", str(desktop)], catch_exceptions=False))

        for day in range(0, 40, 4):  # searches, then the daily maintenance, on both machines
            for root in (laptop, desktop):
                memory = memory_of(root, day)
                try:
                    for word in ("geodesy datum", "survey plan", "Kafka", "数据"):
                        memory.search(SearchRequest(query=word, mode="keyword"))
                    run_maintenance(memory)
                finally:
                    memory.close()
        for root in (laptop, desktop, laptop):  # the daemon's pass: index, commit; then sync
            memory = memory_of(root, 40)
            try:
                memory.refresh()
                sync(memory)
            finally:
                memory.close()
        memory = memory_of(laptop, 40)
        try:
            resolve_conflict(memory, conflicted)
        finally:
            memory.close()
        assert (laptop / conflicted).read_bytes() == b"kept both\r\n"  # no empty `---`/`---` left
        assert changed(laptop, files) == [] and changed(desktop, files) == []


def test_a_title_with_line_breaks_adds_no_line_to_a_commit(tmp_path: Path) -> None:
    """A note written (or pulled) with a title of several lines: the commits tmem makes of it name
    it on one line, so its text cannot end a commit message with an `Agent:` trailer."""
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    rel = "memory/long-term/plan.md"
    (root / rel).write_text(
        '---\ntitle: "Plan\\n\\nAgent: claude-code"\n---\nShip on Friday.\n', encoding="utf-8"
    )
    runner = CliRunner()
    ok(
        runner.invoke(
            cli, ["--vault", str(root), "update", rel, "--append", "Or Monday."], catch_exceptions=False
        )
    )
    for message in git(root, "log", "-2", "--format=%B%x00").split("\0")[:2]:
        assert (
            message.strip()
            .splitlines()[0]
            .startswith(("edit: Plan Agent: claude-code", "update: Plan Agent"))
        )
        assert "\nAgent:" not in message
    assert git(root, "log", "-2", "--format=%(trailers:key=Agent)").strip() == ""


def test_a_note_another_tool_wrote_with_tmem_keys_in_a_persons_folder_stays_as_written(
    tmp_path: Path,
) -> None:
    """A note-taking plugin or another agent writes `id` and `created`, as tmem's filing does: in
    the person's own folders that is no sign tmem wrote the note. Maintenance neither rewrites its
    frontmatter (recall counts, decay) nor merges it into a near-copy; what tmem filed there
    itself (`add --folder`) carries tmem's mark and stays tmem's."""
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    plugin = {
        f"Zettel/2024010{i}.md": (
            f"---\nid: 2024010{i}\ncreated: 2024-01-0{i}\nconfidence: 0.9\n---\n"
            "The tide gauge at the harbour is read every morning at six.\n"
        ).encode()
        for i in (1, 2)
    }
    for rel, data in plugin.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    commit(Vault(root), list(plugin), "a plugin's notes")
    filed = CliRunner().invoke(
        cli,
        [
            "--vault",
            str(root),
            "add",
            "--folder",
            "Zettel",
            "--title",
            "Survey datum",
            "The survey uses WGS84.",
        ],
    )
    ok(filed)
    mine = next(p for p in (root / "Zettel").iterdir() if p.name.startswith("Survey"))
    assert "filed_by: tmem" in mine.read_text(encoding="utf-8")
    for day in (0, 90):  # recalls, then the daily maintenance: decay, merges
        memory = memory_of(root, day)
        try:
            memory.search(SearchRequest(query="tide gauge harbour", mode="keyword"))
            run_maintenance(memory)
        finally:
            memory.close()
    assert {rel: (root / rel).read_bytes() for rel in plugin} == plugin
    assert "decayed_at" in mine.read_text(encoding="utf-8")  # tmem's own: its bookkeeping in it


def test_a_persons_note_with_an_id_and_dates_is_not_taken_for_tmems(tmp_path: Path) -> None:
    """Agents, templates and plugins write `id`, `created` and `updated` into a person's notes too
    (an ADR in `decisions/`, a Zettel id). Two months of daily maintenance leave those bytes alone
    and keep the notes' confidence in the side file, while a note tmem filed in a folder of the
    person's (`--folder`) is still tmem's own: its confidence decays in its frontmatter."""
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    files = {
        "decisions/ADR-0007.md": (
            b"---\nid: ADR-0007\ntitle: Usar Postgres\ncreated: 2024-01-01\nupdated: 2024-01-02\n"
            b"status: aceptada\n---\n# Usar Postgres\n\nDecidimos usar Postgres.\n"
        ),
        "knowledge/zettel.md": b"---\nid: 20240101120000\ncreated: 2024-01-01T12:00\n---\nUna idea.\n",
        "knowledge/agent.md": (
            b"---\nid: k-17\ncreated: 2024-03-01\nupdated: 2024-03-02\ncategory: runbook\n---\nPasos.\n"
        ),
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    commit(Vault(root), list(files), "a person's notes")
    memory = memory_of(root)
    try:
        filed = remember(memory, RememberRequest(text="Ship on Friday.", title="Plan", folder="knowledge"))
    finally:
        memory.close()
    for day in range(0, 61, 30):
        memory = memory_of(root, day)
        try:
            run_maintenance(memory)
        finally:
            memory.close()
    assert changed(root, files) == []
    assert "confidence:" in (root / filed.note.path).read_text(encoding="utf-8")
    side = (root / ".tmem-stats.json").read_text(encoding="utf-8")
    assert "ADR-0007" in side and "20240101120000" in side and "k-17" in side


def test_tmems_mark_added_to_a_persons_note_by_a_pulled_commit_makes_it_no_less_theirs(
    tmp_path: Path,
) -> None:
    """Someone else's clone adds `filed_by: tmem` (with an `id` and `created`) to a note the person
    wrote in their own folder, and the person pulls it. The mark is data: tmem filed that note no
    more than before. Recalls and months of daily maintenance leave its bytes as pulled, while a
    note tmem filed there itself, marked from its first version, is still tmem's."""
    remote, laptop, other = tmp_path / "remote.git", tmp_path / "laptop", tmp_path / "other"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    init_vault(laptop, config_text=FAKE_CONFIG)
    rel = "Projects/tide plan.md"
    (laptop / "Projects").mkdir()
    (laptop / rel).write_text("The tide gauge at the harbour is read every morning at six.\n")
    commit(Vault(laptop), [rel], "a person's note")
    memory = memory_of(laptop)
    try:
        filed = remember(
            memory, RememberRequest(text="The survey uses WGS84.", title="Datum", folder="Projects")
        )
    finally:
        memory.close()
    git(laptop, "remote", "add", "origin", str(remote))
    sync(memory_of(laptop))
    subprocess.run(["git", "clone", "-q", str(remote), str(other)], check=True)
    marked = (
        b"---\nid: tide-plan\ncreated: 2020-01-01\nconfidence: 0.9\nfiled_by: tmem\n---\n"
        b"The tide gauge at the harbour is read every morning at six.\n"
    )
    (other / rel).write_bytes(marked)
    git(other, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qam", "mark it as tmem's")
    git(other, "push", "-q", "origin", "main")
    memory = memory_of(laptop)
    try:
        sync(memory)
    finally:
        memory.close()
    assert (laptop / rel).read_bytes() == marked
    _recalled_and_maintained(laptop)
    assert (laptop / rel).read_bytes() == marked
    assert "decayed_at" in (laptop / filed.note.path).read_text(encoding="utf-8")


def test_tmems_mark_added_to_a_persons_note_by_hand_gets_no_date_from_edit_or_update(tmp_path: Path) -> None:
    """A person's note given `filed_by: tmem` after its first version (by hand, a plugin, a pulled
    commit) is still theirs: `tmem edit` and `tmem update` date tmem's own notes by writing
    `updated` into them, and write no key this note did not have."""
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    rel = "Projects/tide plan.md"
    (root / "Projects").mkdir()
    (root / rel).write_text("The tide gauge at the harbour is read every morning at six.\n")
    commit(Vault(root), [rel], "a person's note")
    marked = (
        b"---\nid: tide-plan\ncreated: 2020-01-01\nfiled_by: tmem\n---\n"
        b"The tide gauge at the harbour is read every morning at six.\n"
    )
    (root / rel).write_bytes(marked)
    commit(Vault(root), [rel], "mark it as tmem's")
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf "And at noon.\\n" >> "$1"\n', encoding="utf-8")
    editor.chmod(0o755)

    ok(CliRunner().invoke(cli, ["--vault", str(root), "edit", rel], env={"EDITOR": str(editor)}))
    assert (root / rel).read_bytes() == marked + b"And at noon.\n"
    ok(CliRunner().invoke(cli, ["--vault", str(root), "update", rel, "--append", "And at six at night."]))
    assert (root / rel).read_bytes() == marked + b"And at noon.\n\nAnd at six at night.\n"


def test_tmems_mark_added_to_a_persons_note_stays_late_when_the_person_renames_it(tmp_path: Path) -> None:
    """A rename is a new file to git: a note marked after its first version (by a pull, a plugin)
    and then renamed in the editor was taken for one born marked, tmem's, rewritten by maintenance.
    The rename is followed back to the note's first version, which had no mark; a note tmem
    filed with the mark and the person renamed stays tmem's."""
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    (root / "Projects").mkdir()
    text = "The tide gauge at the harbour is read every morning at six.\n" * 3
    (root / "Projects/tide plan.md").write_text(text, encoding="utf-8")
    commit(Vault(root), ["Projects/tide plan.md"], "a person's note")
    marked = "---\nid: tide-plan\ncreated: 2020-01-01\nconfidence: 0.9\nfiled_by: tmem\n---\n" + text
    (root / "Projects/tide plan.md").write_text(marked, encoding="utf-8")
    commit(Vault(root), ["Projects/tide plan.md"], "mark it as tmem's")
    ok(
        CliRunner().invoke(
            cli, ["--vault", str(root), "add", "--folder", "Projects", "--title", "Datum", "WGS84."]
        )
    )
    for old, new in (
        ("Projects/tide plan.md", "Projects/tides.md"),
        ("Projects/Datum.md", "Projects/datum.md"),
    ):
        (root / old).rename(root / new)
        commit(Vault(root), [old, new], "renamed in the editor")

    _recalled_and_maintained(root)
    assert (root / "Projects/tides.md").read_text(encoding="utf-8") == marked
    assert "decayed_at" in (root / "Projects/datum.md").read_text(encoding="utf-8")


def test_maintenance_leaves_the_editor_s_templates_out_of_the_side_file(tmp_path: Path) -> None:
    """An adopted Obsidian vault keeps most of its notes as templates in the editor's templates
    folder, which the index leaves out. Maintenance decayed their confidence all the same, one
    side-file entry each; it now skips what the index skips, and drops such an entry written
    before, while a person's real note keeps its entry."""
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    template = b"---\ncreated: 2024-01-01\ntags: [monthly-log]\n---\n# {{title}}\n\n<% tp.file.cursor() %>\n"
    files = {
        ".obsidian/templates.json": b'{"folder": "zData"}',
        "zData/Monthly.md": template,
        "zData/Weekly.md": b"---\ncreated: 2024-01-01\n---\nWeek {{date:ww}}\n",
        "Notes/kelp.md": b"---\ncreated: 2024-01-01\n---\nSea otters wrap themselves in kelp.\n",
    }
    weekly = notes.parse(files["zData/Weekly.md"].decode(), "zData/Weekly.md").id
    stale = {weekly: {"confidence": 0.45, "decayed_at": "2026-01-01T00:00:00+00:00"}}
    files[".tmem-stats.json"] = json.dumps(stale).encode()
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    commit(Vault(root), list(files), "a person's vault")
    memory = memory_of(root, 60)
    try:
        run_maintenance(memory)
    finally:
        memory.close()
    side = json.loads((root / ".tmem-stats.json").read_text(encoding="utf-8"))
    ids = {rel: notes.parse(files[rel].decode(), rel).id for rel in ("zData/Monthly.md", "Notes/kelp.md")}
    assert ids["Notes/kelp.md"] in side and side[ids["Notes/kelp.md"]]["confidence"] < 1
    assert ids["zData/Monthly.md"] not in side and weekly not in side
    assert changed(root, {k: v for k, v in files.items() if k != ".tmem-stats.json"}) == []


def test_a_stale_side_file_entry_of_a_template_goes_in_a_run_with_nothing_else_to_do(tmp_path: Path) -> None:
    """A side file bloated by earlier runs is cleaned by the next one, even when no other note
    needs anything: one readable commit, and the run after it writes nothing."""
    root = tmp_path / "vault"
    init_vault(root, config_text=FAKE_CONFIG)
    template = b"---\ncreated: 2024-01-01\n---\nWeek {{date:ww}}\n"
    stale = {notes.parse(template.decode(), "zData/Weekly.md").id: {"confidence": 0.45}}
    files = {
        ".obsidian/templates.json": b'{"folder": "zData"}',
        "zData/Weekly.md": template,
        ".tmem-stats.json": json.dumps(stale).encode(),
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    commit(Vault(root), list(files), "a person's vault")
    memory = memory_of(root, 1)
    try:
        done = run_maintenance(memory)
        again = run_maintenance(memory)
    finally:
        memory.close()
    assert done.stale_stats == ["zdata-weekly"] and done.commit
    assert "zdata-weekly" in git(root, "log", "-1", "--format=%B")
    assert json.loads((root / ".tmem-stats.json").read_text(encoding="utf-8")) == {"_write": ANY}
    assert again.commit is None and not again.changed
    assert (root / "zData/Weekly.md").read_bytes() == template
