"""A note whose frontmatter cannot be read is indexed as plain text; the catalog keeps why, so
`tmem status` and `tmem doctor` name it whichever process indexed it (with a daemon running, the
daemon's log used to be the only place that said so)."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result
from daemon_process import DaemonProc, tmem, wait_for
from helpers import write

from tiered_memory.index.catalog import Catalog

Run = Callable[..., Result]
LONG = "memory/long-term/knowledge_base/domains"
BROKEN = "---\ntitle: Quokka [facts\ntags: [a, b\n---\n# Quokka facts\n\nThe quokka smiles on Rottnest.\n"
WHY = "malformed YAML frontmatter (line 4)"


@pytest.fixture
def daemon(vault_path: Path, tmp_path: Path) -> Iterator[DaemonProc]:
    proc = DaemonProc(vault_path, tmp_path / "daemon.log")
    yield proc
    if proc.proc.poll() is None:
        os.kill(proc.proc.pid, signal.SIGCONT)
    proc.stop()


def test_status_and_doctor_name_a_malformed_note_the_daemon_indexed(daemon: DaemonProc) -> None:
    root = daemon.root
    rel = f"{LONG}/quokka.md"
    write(root, rel, BROKEN)  # by hand, in an editor: the daemon's watcher indexes it
    wait_for(lambda: daemon.paths("quokka rottnest", mode="keyword") == [rel], what="the note indexed")
    assert WHY in daemon.log.read_text(encoding="utf-8")  # the daemon logged it, as before

    status = tmem(root, "status")
    assert status.returncode == 0, status.stderr
    assert f"malformed:  {rel}: {WHY} (indexed as plain text; fix it by hand)" in status.stdout.splitlines()
    listed = json.loads(tmem(root, "status", "--json").stdout)["malformed"]
    assert listed == [{"path": rel, "why": WHY}]

    doctor = tmem(root, "doctor")
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    shown = [line.strip() for line in doctor.stdout.splitlines()]
    assert shown[shown.index(f"e.g. {rel}: {WHY}") - 1].startswith(
        "PROBLEM  notes    1 note(s) have frontmatter tmem cannot read"
    )
    assert "to fix: fix their frontmatter by hand (tmem never rewrites what it cannot parse)" in shown

    # Fixed by hand: the daemon reindexes it and neither names it any more.
    write(root, rel, BROKEN.replace("[facts", "facts").replace("[a, b", "[a, b]"), bump=2)
    wait_for(lambda: not json.loads(tmem(root, "status", "--json").stdout)["malformed"], what="the fix")
    doctor = tmem(root, "doctor", "--json")
    assert "notes" not in [f["check"] for f in json.loads(doctor.stdout)["findings"]]


def test_many_malformed_notes_are_counted_after_the_first_few(run: Run, vault_path: Path) -> None:
    paths = [f"{LONG}/broken-{i:02d}.md" for i in range(13)]
    for i, rel in enumerate(paths):
        write(vault_path, rel, BROKEN.replace("Rottnest", f"island {i}"))
    write(vault_path, f"{LONG}/open.md", "---\ntitle: Open\nno closing fence\n")
    assert run("reindex", "--keyword-only").exit_code == 0

    shown = run("status").stdout.splitlines()
    named = [line for line in shown if line.startswith("malformed:")]
    assert named[:2] == [
        f"malformed:  {paths[0]}: {WHY} (indexed as plain text; fix it by hand)",
        f"malformed:  {paths[1]}: {WHY} (indexed as plain text; fix it by hand)",
    ]
    assert len(named) == 11 and named[-1] == "malformed:  ... and 4 more (`tmem status --json` lists all)"
    listed = json.loads(run("status", "--json").stdout)["malformed"]
    assert {"path": f"{LONG}/open.md", "why": "frontmatter has no closing ---"} in listed
    assert len(listed) == 14

    doctor = run("doctor", "--json")
    assert doctor.exit_code == 1
    finding = next(f for f in json.loads(doctor.stdout)["findings"] if f["check"] == "notes")
    assert not finding["ok"] and finding["message"].startswith("14 note(s) have frontmatter")
    assert finding["examples"] == [f"{p}: {WHY}" for p in paths[:5]] + ["... and 9 more"]


def test_a_catalog_of_the_previous_version_is_rebuilt_and_names_them(run: Run, vault_path: Path) -> None:
    rel = f"{LONG}/quokka.md"
    write(vault_path, rel, BROKEN)
    assert run("reindex", "--keyword-only").exit_code == 0
    catalog = Catalog(vault_path / ".tmem" / "catalog.sqlite")
    try:
        catalog.db.execute("UPDATE notes SET warning=''")  # as a catalog written before it kept them
        catalog.db.execute("PRAGMA user_version=4")
        catalog.db.commit()
    finally:
        catalog.close()
    assert run("search", "--mode", "keyword", "quokka").exit_code == 0  # opening it rebuilds it
    assert json.loads(run("status", "--json").stdout)["malformed"] == [{"path": rel, "why": WHY}]


def test_a_vault_with_many_malformed_notes_names_a_few_on_the_first_command(
    vault_path: Path, run: Run
) -> None:
    """Adopting a vault whose agents wrote 46 notes of broken YAML printed 46 warnings on the first
    command (and handed them all to an agent's first tool call). A few are named, the rest counted;
    `tmem status` still lists every one."""
    for i in range(13):
        write(vault_path, f"knowledge/broken-{i:02}.md", BROKEN)
    result = run("search", "--mode", "keyword", "quokka rottnest")
    assert result.exit_code == 0, result.output
    named = [line for line in result.stderr.splitlines() if WHY in line]
    assert len(named) == 10
    assert "... and 3 more like these (`tmem doctor` lists the notes tmem cannot read)" in result.stderr
    assert len(json.loads(run("status", "--json").stdout)["malformed"]) == 13
