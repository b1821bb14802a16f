"""The text of the doors that have no operation record of their own (the daemon, install, the
schedule, hooks, git's merge driver) and of the small confirmations every command prints: made by
present/, byte for byte what the commands printed when they composed it themselves."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from tiered_memory.app.api.agents import EntityList, EntityView
from tiered_memory.app.api.crypto import CryptResult, Locked_, RekeyResult, SavedText, UnlockResult
from tiered_memory.app.api.notes import Saved, Updated
from tiered_memory.app.api.setup import ApproveResult, ConfigResult, InitResult
from tiered_memory.app.api.sync import BackupResult, Resolved
from tiered_memory.present import agents, crypto, daemon, hooks, install, lines, revise, schedule, setup, sync

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=datetime.now().astimezone().tzinfo)


def _ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).isoformat()


# ---- the daemon ---------------------------------------------------------------------------------


def test_a_fresh_ready_daemons_status() -> None:
    status = {
        "pid": 12,
        "uptime_s": 30,
        "ready": True,
        "vault": "/v",
        "last_event": None,
        "queue": 0,
        "notes": 10,
        "last_commit": None,
        "pending_commit": 0,
        "watcher": {"alive": True, "restarts": 0},
        "rss_mb": 80.4,
        "errors": 0,
    }
    assert daemon.status_text(status, NOW) == (
        "daemon:        running (pid 12), up 30 s, ready\n"
        "vault:         /v\n"
        "last event:    none since start\n"
        "queue:         0 event(s) waiting\n"
        "notes indexed: 10\n"
        "last commit:   none since start\n"
        "auto-commit:   0 edited note(s) waiting\n"
        "watcher:       alive, 0 restart(s)\n"
        "memory (RSS):  80 MB\n"
        "errors:        0"
    )


def test_a_busy_daemons_status_says_its_backlog_its_watcher_and_its_last_error() -> None:
    status = {
        "pid": 12,
        "uptime_s": 4000,
        "ready": False,
        "phase": "indexing",
        "vault": "/v",
        "last_event": {"at": _ago(hours=3), "paths": 2, "events": 5, "ms": 12},
        "queue": 3,
        "notes": 10,
        "vectors_waiting": 4,
        "last_commit": {"at": _ago(days=3), "sha": "0123456789abcdef", "message": "daemon: auto-commit"},
        "pending_commit": 1,
        "watcher": {"alive": False, "problem": "inotify limit", "restarts": 2},
        "rss_mb": 512.6,
        "errors": 3,
        "last_error": "boom",
    }
    assert daemon.status_text(status, NOW).splitlines() == [
        "daemon:        running (pid 12), up 67 min, indexing (not ready yet)",
        "vault:         /v",
        "last event:    3 h 00 min ago: 2 note path(s) from 5 event(s) in 12 ms",
        "queue:         3 event(s) waiting",
        "notes indexed: 10, 4 waiting for a vector (embedded in the background)",
        "last commit:   3.0 days ago  01234567 daemon: auto-commit",
        "auto-commit:   1 edited note(s) waiting",
        "watcher:       NOT RUNNING (inotify limit), 2 restart(s)",
        "memory (RSS):  513 MB",
        "errors:        3 (last: boom)",
    ]
    status["vectors_waiting"] = -1
    assert "notes indexed: 10, vectors being checked" in daemon.status_text(status, NOW)
    status.update(vectors_waiting=0, vector_drafts=9872)
    assert (
        "notes indexed: 10, 9872 with int8 draft vectors (refined to float32 in the background)"
        in daemon.status_text(status, NOW)
    )


def test_start_stop_and_a_daemon_that_does_not_answer() -> None:
    assert daemon.already_running_text(7) == "daemon already running (pid 7)"
    assert daemon.already_running_text(None) == "daemon already running"
    assert daemon.started_text(7, ready=True) == "daemon started (pid 7)"
    assert daemon.started_text(7, ready=False) == (
        "daemon started (pid 7), still indexing; `tmem daemon status` shows progress"
    )
    assert daemon.stopped_text(7) == "daemon stopped (pid 7)"
    assert daemon.stopped_text(7, killed=True) == "daemon killed (pid 7)"
    assert daemon.down_text(7, None) == (
        "daemon (pid 7) holds the vault lock but does not answer; `tmem doctor` looks into it"
    )
    assert daemon.down_text(None, {"pid": 7}) == (
        "daemon not running (pid 7 did not stop cleanly; `tmem doctor --fix` tidies up)"
    )
    assert daemon.down_text(None, None) == daemon.NOT_RUNNING == "daemon not running"


def test_the_daemon_records_give_the_json_and_the_text_the_door_wrote() -> None:
    """Each shape `daemon start|stop|status --json` printed when the door built it (the ones a
    test through the command line cannot reach: a lost race, a slow first indexing, a kill)."""
    cases: list[tuple[Any, dict[str, Any], str]] = [
        (
            daemon.DaemonStart(False, 7),
            {"running": True, "started": False, "pid": 7},
            "daemon already running (pid 7)",
        ),
        (daemon.DaemonStart(False), {"running": True, "started": False}, "daemon already running"),
        (daemon.DaemonStart(True, 7), {"running": True, "started": True, "pid": 7}, "daemon started (pid 7)"),
        (
            daemon.DaemonStart(True, 7, ready=False),
            {"running": True, "started": True, "pid": 7, "ready": False},
            daemon.started_text(7, ready=False),
        ),
        (daemon.DaemonStop(False), {"running": False, "stopped": False}, "daemon not running"),
        (daemon.DaemonStop(True, 7), {"running": False, "stopped": True, "pid": 7}, "daemon stopped (pid 7)"),
        (
            daemon.DaemonStop(True, 7, killed=True),
            {"running": False, "stopped": True, "killed": True, "pid": 7},
            "daemon killed (pid 7)",
        ),
    ]
    for record, data, text in cases:
        assert json.dumps(record.to_dict()) == json.dumps(data)  # key order included
        said = (
            daemon.start_text(record) if isinstance(record, daemon.DaemonStart) else daemon.stop_text(record)
        )
        assert said == text
    down = daemon.DaemonStatus(None, None, {"pid": 7})
    assert json.dumps(down.to_dict()) == json.dumps(
        {"running": False, "pid": None, "last_heartbeat": {"pid": 7}}
    )
    assert not down.running and daemon.state_text(down, NOW) == daemon.down_text(None, {"pid": 7})


# ---- install --------------------------------------------------------------------------------------


def _data(
    files: list[dict[str, Any]], *, dry_run: bool = False, uninstall: bool = False
) -> install.InstallReport:
    found = [install.InstalledFile(**f) for f in files]
    return install.InstallReport("codex", dry_run, uninstall, found, ["one"])


def test_install_says_each_file_and_what_to_do_next() -> None:
    files = [
        {"path": "/h/a.toml", "changed": True, "notes": ["added x"], "backup": "/h/a.toml.b", "diff": None},
        {"path": "/h/b.json", "changed": False, "notes": [], "backup": None, "diff": None},
    ]
    done = install.AtLogin(written=["/h/u.service"], method="systemd", units=["u.service"], stopped=42)
    assert install.install_text(_data(files), done) == (
        "codex: changed /h/a.toml\n"
        "  - added x\n"
        "  backup: /h/a.toml.b\n"
        "codex: /h/b.json: already up to date\n"
        "daemon: stopped the one already running (pid 42) so that the service runs it\n"
        "daemon: wrote /h/u.service\n"
        "daemon: u.service starts at login (started now)\n"
        "note: one\n"
        "restart codex to load them"
    )


def test_install_print_shows_the_diffs_and_the_service_it_would_write() -> None:
    files = [{"path": "/h/a", "changed": True, "notes": [], "backup": None, "diff": "--- a\n+++ a\n"}]
    done = install.AtLogin(written=["/h/u.service"], method="systemd", plan="# /h/u.service\n[Unit]\n")
    assert install.install_text(_data(files, dry_run=True), done) == (
        "codex: would change /h/a\n--- a\n+++ a\n"
        "daemon: would write /h/u.service (systemd)\n# /h/u.service\n[Unit]\n"
        "note: one"
    )


def test_uninstall_says_what_it_removed_or_that_nothing_was_there() -> None:
    removed = install.AtLogin(removed=["/h/u.service"])
    assert install.install_text(_data([], uninstall=True), install.AtLogin()) == (
        "codex: nothing of tmem's to remove\ndaemon: nothing starts it at login\nnote: one"
    )
    assert install.at_login_lines(removed, uninstall=True, dry_run=False) == ["daemon: removed /h/u.service"]
    assert install.at_login_lines(removed, uninstall=True, dry_run=True) == [
        "daemon: would remove /h/u.service"
    ]
    assert install.install_text(_data([]), None) == "codex: nothing to change\nnote: one"


def test_without_a_service_manager_install_says_how_to_start_the_daemon() -> None:
    by_hand = install.AtLogin(by_hand="/bin/tmem --vault /v daemon start")
    assert install.at_login_lines(by_hand, uninstall=False, dry_run=False) == [
        "daemon: no systemd user session or launchd here: start the daemon at login with "
        "`/bin/tmem --vault /v daemon start`"
    ]
    assert install.default_vault_note("/v") == "default-vault = /v (agents started from any folder use it)"


# ---- the schedule, hooks, git's merge driver -------------------------------------------------------


def test_schedule_texts() -> None:
    assert schedule.installed_text("cron", "30 3 * * * x", printed_only=True) == "30 3 * * * x"
    assert (
        schedule.installed_text("systemd", "# a\nb\n", printed_only=False) == "installed (systemd):\n# a\nb"
    )
    assert schedule.removed_text(["crontab: x", "/u.timer"]) == "removed crontab: x\nremoved /u.timer"
    assert schedule.removed_text([]) == "nothing was installed"
    assert schedule.schedule_text({"cron": ["x"], "systemd": [], "launchd": ["/p"]}) == "cron: x\nlaunchd: /p"
    assert schedule.schedule_text({"cron": []}) == "no schedule installed"


def test_a_hook_answers_in_the_agents_shape_and_says_its_problems_in_one_line() -> None:
    assert hooks.answer_text("claude-code", "<block>\n\n") == "<block>"
    assert json.loads(hooks.answer_text("cursor", "é\n")) == {"additional_context": "é"}
    assert hooks.answer_text("cursor", "é") == '{"additional_context": "é"}'
    assert hooks.answer_text("cursor", " \n") == ""
    assert (
        hooks.crashed_line("session-start", ValueError("bad")) == "tmem hook: session-start: ValueError: bad"
    )
    assert hooks.hook_line(None, "No such option") == "tmem hook: No such option"
    assert hooks.no_transcript_line("session-end") == (
        "tmem hook: session-end: the agent sent no transcript_path; nothing stored"
    )
    assert hooks.slow_daemon_line(0.31234, TimeoutError("timed out")) == (
        "tmem hook: user-prompt-submit: no answer from the daemon in 0.31s (timed out)"
    )


def test_merge_driver_lines() -> None:
    assert sync.merge_no_key_line("memory/a.md") == (
        "tmem merge-driver: memory/a.md: an encrypted note and no key here; left unmerged "
        "(`tmem sync` keeps both versions until `tmem resolve`)"
    )
    assert sync.merge_unopened_line("memory/a.md", ValueError("tampered")) == (
        "tmem merge-driver: memory/a.md: tampered; left unmerged"
    )
    assert sync.merge_conflict_line("memory/a.md") == (
        "tmem: memory/a.md: both sides changed the same lines; kept both, marked conflict: true "
        "(`tmem resolve` it)"
    )
    assert sync.post_merge_line(3) == "tmem: indexes updated for 3 changed note(s)"


# ---- confirmations ------------------------------------------------------------------------------


def test_encryption_texts() -> None:
    first = UnlockResult("k1", created=True, encrypted=2)
    assert crypto.unlocked_text(first, in_daemon=True) == (
        "encryption set up (key k1)\nunlocked (key k1, held in the daemon's memory); 2 encrypted note(s) readable"
    )
    assert crypto.unlocked_text(UnlockResult("k1"), in_daemon=False) == (
        "unlocked (key k1, held in this command's memory only); 0 encrypted note(s) readable"
    )
    assert (
        crypto.locked_text(Locked_(True)) == "locked"
        and crypto.locked_text(Locked_(False)) == "was not unlocked"
    )
    assert (
        crypto.crypt_text("decrypt", CryptResult(changed=["a.md", "b.md"]))
        == "decrypted a.md\ndecrypted b.md"
    )
    assert crypto.crypt_text("encrypt", CryptResult()) == "nothing to encrypt"
    assert crypto.rekeyed_text(RekeyResult("k2", 3)) == "new key k2: 3 note(s) sealed again"


def test_edits_and_updates() -> None:
    assert revise.saved_text(Saved("a.md", "A", "0123456789")) == "saved a.md (01234567)"
    assert revise.saved_text(Saved("a.md", "A")) == "saved a.md"
    assert (
        revise.saved_text(SavedText("a.md", "0123456789", encrypted=True))
        == "saved a.md (encrypted) (01234567)"
    )
    assert revise.saved_text(SavedText("a.md", encrypted=True)) == "saved a.md (encrypted)"
    assert revise.saved_text(SavedText("a.md", "0123456789")) == "saved a.md (01234567)"
    changed = Updated("a", "A", "a.md", ["body", "fields.tags"])
    assert revise.updated_text(changed) == "updated a.md: body, fields.tags"
    assert revise.updated_text(Updated("a", "A", "a.md")) == "a.md: nothing changed"


def test_setup_and_sync_confirmations() -> None:
    assert setup.init_text(InitResult("/v", too_large=["big.pdf"])) == (
        "created vault at /v\nnot committed (over git.attachment_max_mb): big.pdf"
    )
    approve = ApproveResult("/t.json", approved={"a": "x"}, waiting={"b": ["y"]})
    assert setup.approve_text(approve) == (
        'approved: a = "x"\nwaiting: b = ["y"]\n(`tmem config approve KEY` uses a value on this machine)'
    )
    assert setup.config_set_text(ConfigResult("/c.toml", {"default_vault": "/v"}), "default-vault") == (
        "default-vault = /v  (/c.toml)"
    )
    assert sync.resolved_text("a.md", Resolved("a.md", "0123456789")) == "resolved a.md (01234567)"
    assert sync.resolved_text("a.md", Resolved("a.md")) == "resolved a.md (nothing to commit)"
    made = BackupResult("/b/v.bundle", ["/b/v.bundle", "/b/w.bundle"], uncommitted=2)
    assert sync.backed_up_text(made) == "backed up to /b/v.bundle (2 kept)"
    assert sync.uncommitted_warning(made) == (
        "2 uncommitted change(s) are not in the backup (`tmem sync` commits them)"
    )


def test_the_lines_beside_a_result() -> None:
    assert lines.warning_line("x") == "warning: x"
    assert lines.hint_line("y") == "hint: y"
    assert lines.progress_line("embedding", 3, 1200) == "tmem: embedding 3/1,200…"
    assert lines.progress_line("loading the model", 0, 0) == "tmem: loading the model…"


def test_an_entity_list_counts_interactions_in_words_that_agree() -> None:
    def seen(count: int) -> EntityView:
        return EntityView("lin", "Lin", "person", [], "e.md", last_seen="2026-11-20", interaction_count=count)

    assert agents.entity_list_text(EntityList([seen(1)])).endswith("Lin  (1 interaction)")
    assert agents.entity_list_text(EntityList([seen(3)])).endswith("Lin  (3 interactions)")
