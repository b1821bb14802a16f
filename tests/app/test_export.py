"""`tmem export` and `tmem import --format tmem` as a user runs them over a real vault: what the
file holds, filters, privacy, in-place updates of an earlier export, and a byte-exact round trip."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import FAKE_CONFIG, approve_outward, as_json, commit, git, git_log, ok, one_error_line, write

from tiered_memory.app.memory import Memory
from tiered_memory.cli.main import cli
from tiered_memory.storage.vault import Vault, init_vault

Run = Callable[..., Result]
GITHUB_TOKEN = "ghp_" + "x9Qm2Lr7Tz4Kp1Vb8Nc3Hd6Fj0Sw5Ya2Ue7R"


def _fill(run: Run) -> None:
    ok(run("add", "The tunnel project uses CGCS2000 for control points", "--project", "tunnel"))
    ok(run("add", "Coffee tastes best at 96 degrees", "--category", "preference"))
    ok(run("session", "start", "Reproject points", "--project", "tunnel"))
    ok(run("session", "append", "How do I reproject the WGS84 points?"))
    ok(run("session", "append", "--role", "assistant", "Fit a 7-parameter Helmert transformation."))


def _export(run: Run, out: Path, *args: str) -> dict:
    ok(run("export", "-o", str(out), *args))
    return json.loads(out.read_text(encoding="utf-8"))


def test_export_nests_messages_under_sessions_and_filters(run: Run, tmp_path: Path) -> None:
    _fill(run)
    doc = _export(run, tmp_path / "all.json")
    assert doc["format"] == "tmem-export" and doc["version"] == 1
    bodies = {n["title"]: n for n in doc["notes"]}
    tunnel = next(n for n in doc["notes"] if "CGCS2000" in n["body"])
    assert tunnel["tier"] == "mid" and tunnel["frontmatter"]["project"] == "tunnel"
    assert tunnel["frontmatter"]["created"].startswith("20")  # dates as ISO text
    assert "Current session" in bodies
    [session] = doc["sessions"]
    assert session["title"] == "Reproject points" and session["project"] == "tunnel"
    assert [m["role"] for m in session["messages"]] == ["user", "assistant"]
    assert session["messages"][1]["content"] == "Fit a 7-parameter Helmert transformation."

    only = _export(run, tmp_path / "tunnel.json", "--project", "tunnel")
    assert len(only["notes"]) == 1 and len(only["sessions"]) == 1
    sessions = _export(run, tmp_path / "s.json", "--category", "session", "--tier", "short")
    assert len(sessions["sessions"]) == 1 and all(n["category"] == "session" for n in sessions["notes"])
    assert not _export(run, tmp_path / "none.json", "--tier", "archive")["notes"]

    lines = ok(run("export", "--format", "jsonl")).stdout.splitlines()
    kinds = [json.loads(line)["kind"] for line in lines]
    assert kinds[0] == "header" and kinds.count("session") == 1 and "note" in kinds


def test_reexport_updates_each_session_in_place(run: Run, tmp_path: Path) -> None:
    _fill(run)
    out = tmp_path / "chats.jsonl"
    ok(run("export", "-o", str(out), "--category", "session"))
    before = [json.loads(line) for line in out.read_text().splitlines()]
    ok(run("session", "append", "Residuals are under 2 cm now."))
    again = as_json(run("export", "-o", str(out), "--category", "session", "--since", "last", "--json"))
    assert again["replaced"] >= 1 and again["appended"] == 0
    after = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(e["kind"], e.get("id")) for e in after[1:]] == [(e["kind"], e.get("id")) for e in before[1:]]
    [session] = [e for e in after if e["kind"] == "session"]
    assert len(session["messages"]) == 3 and session["messages"][-1]["content"].startswith("Residuals")


def test_since_exports_only_what_changed(run: Run, tmp_path: Path) -> None:
    _fill(run)
    doc = _export(run, tmp_path / "x.json", "--since", "2999-01-01")
    assert doc["notes"] == [] and doc["sessions"] == []
    new = tmp_path / "new.json"
    line = one_error_line(run("export", "-o", str(new), "--since", "last"), 2)
    assert f"earlier export at {new}: export there once without --since" in line


def test_sensitive_left_out_and_redaction_applies(run: Run, vault_path: Path, tmp_path: Path) -> None:
    vault = Vault(vault_path)
    write(vault_path, "memory/long-term/secret.md", "---\nid: secret\nsensitive: true\n---\nMy PIN is 4711\n")
    write(vault_path, "memory/long-term/token.md", f"---\nid: token\n---\nDeploy with {GITHUB_TOKEN}\n")
    commit(vault, ["memory/long-term/secret.md", "memory/long-term/token.md"], "hand-written notes")
    result = as_json(run("export", "-o", str(tmp_path / "e.json"), "--json"))
    assert result["left_out"] == 1
    text = (tmp_path / "e.json").read_text()
    assert "4711" not in text and GITHUB_TOKEN not in text and "Deploy with" in text
    ok(run("export", "-o", str(tmp_path / "all.json"), "--include-sensitive"))
    text = (tmp_path / "all.json").read_text()
    assert "4711" in text and GITHUB_TOKEN not in text


def test_history_lists_each_notes_commits(run: Run, tmp_path: Path) -> None:
    ok(run("add", "Grid files are vendored into the repository", "--title", "Grid files"))
    doc = _export(run, tmp_path / "h.json", "--history", "--tier", "long")
    [note] = [n for n in doc["notes"] if n["title"] == "Grid files"]
    assert note["history"] and note["history"][0]["message"].startswith("remember: Grid files")


def cli_runner(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_round_trip_into_a_new_vault_is_byte_exact_and_idempotent(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    _fill(run)
    ok(run("session", "end", "--summary", "Chose Helmert."))
    out = tmp_path / "everything.json"
    ok(run("export", "-o", str(out)))
    other = tmp_path / "other"
    init_vault(other, config_text=FAKE_CONFIG)
    first = as_json(cli_runner("--vault", str(other), "import", "--format", "tmem", str(out), "--json"))
    assert first["added"] >= 3 and first["commit"]
    # The new vault's own current_session.md, untouched since `init`, gives way to the export's.
    replaced = {i["path"] for i in first["items"] if i["action"] == "updated"}
    assert "memory/short-term/current_session.md" in replaced
    assert not [i for i in first["items"] if i["why"].startswith("exists with other content")]
    for path in sorted(p for p in (vault_path / "memory").rglob("*") if p.is_file()):
        rel = path.relative_to(vault_path)
        assert (other / rel).read_bytes() == path.read_bytes(), rel
    head = git_log(other)
    second = as_json(cli_runner("--vault", str(other), "import", "--format", "tmem", str(out), "--json"))
    assert second["added"] == second["merged"] == second["updated"] == 0 and second["commit"] is None
    assert git_log(other) == head


@pytest.mark.parametrize("name", ["everything.json", "everything.jsonl"])
def test_an_export_imports_into_a_fresh_vault_as_it_is_without_naming_its_format(
    run: Run, vault_path: Path, tmp_path: Path, name: str
) -> None:
    """`tmem export x && tmem import x` in another vault: every note with its id, tier, body and
    frontmatter; a second import adds nothing and makes no commit."""
    _fill(run)
    ok(run("session", "end", "--summary", "Chose Helmert."))
    write(vault_path, "Notes/Hand.md", "---\nid: hand-1\ntags: [a, b]\ndue: 2024-05-01\n---\nBy hand.\n")
    write(vault_path, "memory/long-term/Plain.md", "No frontmatter at all.\n")
    commit(Vault(vault_path), ["Notes/Hand.md", "memory/long-term/Plain.md"], "person: notes")
    out = tmp_path / name
    ok(run("export", "-o", str(out)))
    other = tmp_path / "other"
    init_vault(other, config_text=FAKE_CONFIG)
    first = as_json(cli_runner("--vault", str(other), "import", str(out), "--json"))
    assert first["format"] == "tmem" and first["added"] >= 4 and first["commit"]
    source, copy = Vault(vault_path), Vault(other)
    paths = [p.relative_to(vault_path).as_posix() for p in (vault_path / "memory").rglob("*.md")]
    for rel in [*paths, "Notes/Hand.md"]:
        a, b = source.read_note(rel), copy.read_note(rel)
        assert (b.id, b.tier, b.body, b.meta) == (a.id, a.tier, a.body, a.meta), rel
    assert copy.read_note("Notes/Hand.md").id == "hand-1"
    head = git_log(other)
    second = as_json(cli_runner("--vault", str(other), "import", str(out), "--json"))
    assert second["added"] == second["merged"] == second["updated"] == 0 and second["commit"] is None
    assert git_log(other) == head


def test_a_note_holding_a_line_separator_comes_back_from_a_jsonl_export(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    # JSON keeps U+2028 and U+0085 unescaped: a JSON Lines export ends its lines at "\n" alone.
    text = "---\ntitle: Pasted\n---\nCopied from a web page:\u2028a line the browser broke\x85there.\n"
    write(vault_path, "Notes/Pasted.md", text)
    commit(Vault(vault_path), ["Notes/Pasted.md"], "person: a pasted note")
    out = tmp_path / "export.jsonl"
    ok(run("export", "--format", "jsonl", "-o", str(out)))
    other = tmp_path / "other"
    init_vault(other, config_text=FAKE_CONFIG)
    ok(cli_runner("--vault", str(other), "import", "--format", "tmem", str(out)))
    assert (other / "Notes/Pasted.md").read_bytes() == text.encode("utf-8")


def test_importing_the_vault_s_own_export_finds_every_note_already_there(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    """An export carries values as JSON (a date becomes text), so an identical note must be
    told by what an export of it holds, not by its rendering: only a note changed since is
    reported as other content, an unchanged session is not written again, and no note changes."""
    _fill(run)
    ok(run("session", "end", "--summary", "Chose Helmert."))
    write(vault_path, "Notes/Hand.md", "---\ntags: [a, b]\ndue: 2024-05-01\nrating: 4.0\n---\nSome text.\n")
    write(vault_path, "Notes/Dated.md", "---\nid: x1\nupdated: 2024-01-02\n---\nbody\n")
    write(vault_path, "Notes/Edited.md", "---\nreviewed: 2024-03-04\n---\nFirst version.\n")
    commit(Vault(vault_path), ["Notes/Hand.md", "Notes/Dated.md", "Notes/Edited.md"], "person: notes")
    out = tmp_path / "own.json"
    ok(run("export", "-o", str(out)))
    write(vault_path, "Notes/Edited.md", "---\nreviewed: 2024-03-04\n---\nSecond version.\n")
    commit(Vault(vault_path), ["Notes/Edited.md"], "person: an edit")
    before = {p: p.read_bytes() for p in (vault_path / "Notes").iterdir()}
    done = as_json(run("import", "--format", "tmem", str(out), "--json"))
    why = {i["path"]: i["why"] for i in done["items"]}
    assert why["Notes/Edited.md"] == "exists with other content (left as it is)"
    others = [
        p for p, w in why.items() if w.startswith("exists with other content") and p != "Notes/Edited.md"
    ]
    assert others == []
    assert why["Notes/Hand.md"] == why["Notes/Dated.md"] == "exists, unchanged"
    sessions = [i for i in done["items"] if i["source"].startswith("tmem:session:")]
    assert (
        len(sessions) == 1
        and sessions[0]["action"] == "skipped"
        and sessions[0]["why"] == "exists, unchanged"
    )
    assert done["added"] == done["merged"] == done["updated"] == 0
    assert {p: p.read_bytes() for p in (vault_path / "Notes").iterdir()} == before


# ---- the automatic export when a session ends ------------------------------------------------------


def _auto(vault_path: Path, target: str) -> None:
    write(vault_path, "tmem.yaml", FAKE_CONFIG + f"export:\n  on_session_end: {target}\n")
    commit(Vault(vault_path), ["tmem.yaml"], "config: export sessions as they end")
    approve_outward(vault_path)  # a file outside the vault: this machine's user said so


def test_sessions_are_exported_as_they_end_and_accumulate(run: Run, vault_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "chats.jsonl"
    ok(run("session", "start", "First"))
    ok(run("session", "end"))
    assert not out.exists()  # off by default
    _auto(vault_path, str(out))
    ok(run("session", "start", "Reproject points"))
    ok(run("session", "append", "How do I reproject the WGS84 points?"))
    ended = as_json(run("session", "end", "--json"))
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["kind"] == "header"
    [entry] = lines[1:]
    assert entry["id"] == ended["id"] and entry["status"] == "completed"
    assert [m["content"] for m in entry["messages"]] == ["How do I reproject the WGS84 points?"]

    # A transcript the agent's session-end hook stores: added, then updated in place as it grows.
    source = (Path(__file__).parents[1] / "data" / "claude-code-session.jsonl").read_text(encoding="utf-8")
    transcript = tmp_path / "t.jsonl"
    first, grown = "".join(source.splitlines(keepends=True)[:6]), source
    for text in (first, grown):
        transcript.write_text(text, encoding="utf-8")
        ok(run("hook", "session-end", input=json.dumps({"transcript_path": str(transcript)})))
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [e["kind"] for e in lines] == ["header", "session", "session"]
    stored = as_json(run("session", "show", lines[2]["id"], "--json"))
    assert len(lines[2]["messages"]) == stored["messages"] > 1
    assert lines[1] == entry  # the earlier session is kept as it was


def test_automatic_export_redacts_and_never_fails_the_session(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "chats.json"
    _auto(vault_path, str(out))
    ok(run("session", "start", "Keys"))
    ok(run("session", "append", f"my token is {GITHUB_TOKEN}"))
    ok(run("session", "end"))
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["format"] == "tmem-export" and len(doc["sessions"]) == 1
    assert GITHUB_TOKEN not in out.read_text(encoding="utf-8")  # redacted
    _auto(vault_path, str(tmp_path))  # a folder: the export cannot be written
    ok(run("session", "start", "Still ends"))
    done = run("session", "end", "--json")
    assert done.exit_code == 0 and "automatic export" in done.output
    assert as_json(run("session", "show", as_json(done)["id"], "--json"))["status"] == "completed"


def test_exporting_into_a_file_that_is_not_an_export_is_one_line_and_leaves_it(
    run: Run, tmp_path: Path
) -> None:
    for text in ("[" * 100_000, '{"format": "tmem-export", "notes": [1, 2]}'):
        target = tmp_path / "earlier.json"
        target.write_text(text, encoding="utf-8")
        assert "not a tmem export" in one_error_line(run("export", "-o", str(target)), 2)
        assert target.read_text(encoding="utf-8") == text


# ---- the editor's templates ------------------------------------------------------------------------

TEMPLATE = (
    "---\ndate: {{date}}\ntags: [monthly-log]\n---\n# {{title}}\n\n<% tp.file.cursor() %> kelp survey\n"
)


def _with_templates(root: Path) -> None:
    write(root, ".obsidian/templates.json", json.dumps({"folder": "zData"}))
    write(root, "zData/Monthly.md", TEMPLATE)
    write(root, "zData/Deep/Plain.md", "No frontmatter, a {{time}} placeholder about kelp.\r\n")
    write(root, "Notes/Otters.md", "---\ntags: [otters]\n---\nOtters wrap themselves in kelp.\n")


def test_a_whole_vault_export_carries_the_editor_s_templates_byte_for_byte(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    """An adopted Obsidian vault keeps its templates in a folder the index leaves out (`zData/`
    here); an export imported elsewhere lost them. They travel to their own path, byte for byte,
    and stay out of the index on both sides; a filtered export may leave them out."""
    _with_templates(vault_path)
    commit(Vault(vault_path), [".obsidian/templates.json", "zData", "Notes/Otters.md"], "person: vault")
    out = tmp_path / "everything.json"
    doc = _export(run, out)
    paths = {n["path"] for n in doc["notes"]}
    assert {"zData/Monthly.md", "zData/Deep/Plain.md", "Notes/Otters.md"} <= paths
    assert (
        as_json(run("search", "kelp", "--mode", "keyword", "--json"))["results"][0]["path"]
        == "Notes/Otters.md"
    )
    assert len(as_json(run("search", "kelp", "--mode", "keyword", "--json"))["results"]) == 1
    filtered = _export(run, tmp_path / "long.json", "--tier", "long")
    assert not {n["path"] for n in filtered["notes"]} & {"zData/Monthly.md", "zData/Deep/Plain.md"}

    other = tmp_path / "other"
    init_vault(other, config_text=FAKE_CONFIG)
    write(other, ".obsidian/templates.json", json.dumps({"folder": "zData"}))
    ok(cli_runner("--vault", str(other), "import", "--format", "tmem", str(out)))
    for rel in ("zData/Monthly.md", "zData/Deep/Plain.md", "Notes/Otters.md"):
        assert (other / rel).read_bytes() == (vault_path / rel).read_bytes(), rel
    found = as_json(cli_runner("--vault", str(other), "search", "kelp", "--mode", "keyword", "--json"))
    assert [r["path"] for r in found["results"]] == ["Notes/Otters.md"]


@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_the_templates_folder_setting_travels_with_the_templates(
    run: Run, vault_path: Path, tmp_path: Path, fmt: str
) -> None:
    """A vault without the setting that makes a folder templates indexed the imported templates as
    notes (placeholders and their tags came first in searches): the export names the folder, and
    the import makes `.obsidian/templates.json` with that setting alone where the vault has none."""
    _with_templates(vault_path)
    write(vault_path, ".obsidian/templates.json", json.dumps({"folder": "zData", "dateFormat": "YYYY"}))
    write(vault_path, ".obsidian/app.json", json.dumps({"vimMode": True}))
    commit(Vault(vault_path), [".obsidian", "zData", "Notes/Otters.md"], "person: vault")
    out = tmp_path / f"everything.{fmt}"
    ok(run("export", "--format", fmt, "-o", str(out)))

    bare = tmp_path / "bare"  # no editor settings at all
    init_vault(bare, config_text=FAKE_CONFIG)
    ok(cli_runner("--vault", str(bare), "import", "--format", "tmem", str(out)))
    assert json.loads((bare / ".obsidian/templates.json").read_text(encoding="utf-8")) == {"folder": "zData"}
    assert not (bare / ".obsidian/app.json").exists()  # nothing else of the other vault's editor
    assert git(bare, "status", "--porcelain") == ""  # committed with the import
    found = as_json(cli_runner("--vault", str(bare), "search", "kelp", "--mode", "keyword", "--json"))
    assert [r["path"] for r in found["results"]] == ["Notes/Otters.md"]

    elsewhere = tmp_path / "elsewhere"  # its editor keeps templates in another folder: kept, and told
    init_vault(elsewhere, config_text=FAKE_CONFIG)
    write(elsewhere, ".obsidian/templates.json", json.dumps({"folder": "Templates"}))
    done = as_json(cli_runner("--vault", str(elsewhere), "import", "--format", "tmem", str(out), "--json"))
    assert any("templates folder zData/" in w for w in done["warnings"])
    assert json.loads((elsewhere / ".obsidian/templates.json").read_text()) == {"folder": "Templates"}


def _state(run: Run) -> None:
    ok(run("profile", "set", "editor", "vim"))
    ok(run("st", "set", "topic", "gps drift"))
    ok(run("add", "The survey starts in May"))


def test_a_whole_export_replaces_a_new_vault_s_untouched_template_files(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    _state(run)
    out = tmp_path / "all.json"
    ok(run("export", "-o", str(out)))
    other = tmp_path / "other"
    init_vault(other, config_text=FAKE_CONFIG)
    done = as_json(cli_runner("--vault", str(other), "import", "--format", "tmem", str(out), "--json"))
    actions = {i["path"]: (i["action"], i["why"]) for i in done["items"]}
    replaced = ("updated", "replaced the new vault's untouched template file")
    assert actions["memory/long-term/user_profile.md"] == replaced
    assert actions["memory/short-term/context_stack.json"] == replaced
    assert done["skipped"] == 0
    for rel in ("memory/long-term/user_profile.md", "memory/short-term/context_stack.json"):
        assert (other / rel).read_bytes() == (vault_path / rel).read_bytes()
    shown = as_json(cli_runner("--vault", str(other), "profile", "show", "--json"))
    assert shown["facts"] == {"editor": "vim"}
    head = git_log(other)
    again = as_json(cli_runner("--vault", str(other), "import", "--format", "tmem", str(out), "--json"))
    assert again["updated"] == again["merged"] == 0 and git_log(other) == head


def test_template_files_changed_in_both_vaults_merge_unless_a_line_changed_both_ways(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    _state(run)
    heading = "# System preferences\n"
    prefs_here = vault_path / "memory/long-term/system/preferences.md"
    write(
        vault_path,
        "memory/long-term/system/preferences.md",
        prefs_here.read_text().replace(heading, "# How I work\n"),
    )
    commit(Vault(vault_path), ["memory/long-term/system/preferences.md"], "person: a preference")
    out = tmp_path / "all.json"
    ok(run("export", "-o", str(out)))
    other = tmp_path / "other"
    init_vault(other, config_text=FAKE_CONFIG)
    there: Run = lambda *a: cli_runner("--vault", str(other), *a)  # noqa: E731
    ok(there("profile", "set", "shell", "zsh"))
    ok(there("st", "set", "place", "office"))
    prefs = other / "memory/long-term/system/preferences.md"
    write(
        other, "memory/long-term/system/preferences.md", prefs.read_text().replace(heading, "# Agent rules\n")
    )
    commit(Vault(other), ["memory/long-term/system/preferences.md"], "person: another preference")
    kept_prefs = prefs.read_bytes()
    done = as_json(there("import", "--format", "tmem", str(out), "--json"))
    actions = {i["path"]: (i["action"], i["why"]) for i in done["items"]}
    merged = ("merged", "changed here too: merged with the vault's own, as a sync would")
    assert actions["memory/long-term/user_profile.md"] == merged
    assert actions["memory/short-term/context_stack.json"] == merged
    assert as_json(there("profile", "show", "--json"))["facts"] == {"shell": "zsh", "editor": "vim"}
    stack = json.loads((other / "memory/short-term/context_stack.json").read_text())
    assert {"topic", "place"} <= set(stack)
    # Both vaults changed one line of the template's differently: the vault's stays as it is, said
    # so, and nothing is written beside it.
    assert actions["memory/long-term/system/preferences.md"] == (
        "skipped",
        "exists with other content (left as it is)",
    )
    assert prefs.read_bytes() == kept_prefs
    assert not list(prefs.parent.glob("preferences-*.md"))


# ---- a big vault ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["big.json", "big.jsonl"])
def test_an_export_into_a_file_holds_one_note_at_a_time(memory: Memory, tmp_path: Path, name: str) -> None:
    """Memory stays flat whatever the vault's size: 21 MB of notes exported with a peak of a few
    (the whole export was built as one text, after every note was read, a few times the vault).
    The file is the text `Export.render` makes, byte for byte; exported again into it, in place."""
    import tracemalloc

    from tiered_memory.app.api.portability import ExportRequest
    from tiered_memory.app.export import export, parse_export

    words = " ".join(f"word{i % 977}" for i in range(150_000))  # ~1.3 MB a note
    for i in range(18):
        write(
            memory.vault.root, f"memory/long-term/big{i:02d}.md", f"---\ntitle: Big {i}\n---\n{words} {i}\n"
        )
    commit(memory.vault, [f"memory/long-term/big{i:02d}.md" for i in range(18)], "person: big notes")
    memory.refresh()
    out = tmp_path / name
    fmt = "jsonl" if name.endswith("l") else "json"
    tracemalloc.start()
    try:
        result = export(memory, ExportRequest(output=str(out), format=fmt))
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.notes >= 18 and out.stat().st_size > 20_000_000
    assert peak < 12_000_000, peak
    text = out.read_text(encoding="utf-8")
    assert parse_export(text).render(fmt) == text
    again = export(memory, ExportRequest(output=str(out), format=fmt))
    assert again.replaced == result.notes and again.appended == 0 and again.kept == 0


def test_a_note_too_large_for_the_index_is_named_not_left_out_in_silence(
    run: Run, vault_path: Path, tmp_path: Path
) -> None:
    write(vault_path, "memory/long-term/huge.md", "---\ntitle: Huge\n---\n" + "word " * 500_000)
    commit(Vault(vault_path), ["memory/long-term/huge.md"], "person: a huge note")
    done = ok(run("export", "-o", str(tmp_path / "x.json")))
    assert "1 note(s) larger than index.max_file_mb left out (memory/long-term/huge.md)" in done.stderr
