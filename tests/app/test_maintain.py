"""`tmem maintain` over a fixture vault of many ages, statuses and projects at a fixed "now":
the tree after it, one commit, the report, dry-run == applied, idempotence, hand edits kept."""

from __future__ import annotations

import fcntl
import json
import os
import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import Result
from helpers import FIXED_NOW, git, git_log, write

from tiered_memory.app.api import Empty
from tiered_memory.app.api.lifecycle import MaintainResult
from tiered_memory.app.maintain import apply_maintenance, plan_maintenance, run_maintenance
from tiered_memory.app.memory import Memory
from tiered_memory.app.merging import _jaccard_pairs
from tiered_memory.app.status import status
from tiered_memory.errors import EmbedderUnavailable, LockTimeout
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.model import note as notes
from tiered_memory.model.layout import ACCESS_LOG
from tiered_memory.storage import access, locks
from tiered_memory.storage.vault import Vault

NOW = FIXED_NOW  # 2026-11-22 12:00 UTC
Run = Callable[..., Result]
DOMAINS = "memory/long-term/knowledge_base/domains"
P = "memory/mid-term/projects"


def days_ago(n: float) -> str:
    return (NOW - timedelta(days=n)).isoformat()


def note(meta: dict[str, object], body: str) -> str:
    lines = "".join(f"{k}: {json.dumps(v) if not isinstance(v, str) else v}\n" for k, v in meta.items())
    return f"---\n{lines}---\n{body}"


def status_md(pid: str, state: str, updated: str) -> str:
    meta = {
        "id": f"project-{pid}",
        "title": pid.title(),
        "category": "project",
        "status": state,
        "project": pid,
    }
    return note({**meta, "created": updated, "updated": updated}, f"# {pid.title()}\n")


DUP = "Survey tablets drift two metres near the pylons on the northern ridge every afternoon"

FIXTURE: dict[str, str] = {
    # short-term
    "memory/short-term/chat-old.md": note(
        {"id": "chat-old", "created": "2026-11-20T09:00:00Z"}, "# Old chat\nweather talk\n"
    ),
    "memory/short-term/chat-new.md": note(
        {"id": "chat-new", "created": "2026-11-22T10:00:00Z"}, "# New chat\nlunch plans\n"
    ),
    "memory/short-term/survey-idea.md": note(
        {"id": "survey-idea", "created": "2026-11-22T09:00:00Z"}, "# Idea\nsketch for the survey tablets\n"
    ),
    "memory/short-term/from-session.md": note(
        {"id": "from-session", "session": "ses-9", "created": "2026-11-22T08:00:00Z"},
        "# From a session\nnotes\n",
    ),
    "memory/short-term/temp/old-scratch.md": note(
        {"id": "old-scratch", "created": "2026-11-20T08:00:00Z"}, "scratch\n"
    ),
    "memory/short-term/context_stack.json": json.dumps(
        {
            "gone": {"value": 1, "set_at": days_ago(2), "expires_at": days_ago(1)},
            "kept": {"value": 2, "set_at": days_ago(0), "expires_at": (NOW + timedelta(hours=3)).isoformat()},
        }
    ),
    "memory/archive/sessions/2026/11/21/ses-9.md": note(
        {
            "id": "ses-9",
            "session": "ses-9",
            "category": "session",
            "status": "completed",
            "created": days_ago(1),
        },
        "# Session 9\n",
    ),
    # mid-term
    f"{P}/survey/status.md": status_md("survey", "active", days_ago(2)),
    f"{P}/survey/tasks.json": '{"tasks": []}\n',
    f"{P}/survey/notes.md": note({"id": "survey-notes", "created": days_ago(2)}, "# Survey notes\n"),
    f"{P}/survey/insight.md": note(
        {"id": "insight", "importance": 0.9, "created": days_ago(3)},
        "# Insight\nGround control beats RTK here\n",
    ),
    f"{P}/done/status.md": status_md("done", "completed", days_ago(3)),
    f"{P}/done/tasks.json": '{"tasks": []}\n',
    f"{P}/done/notes.md": note({"id": "done-notes", "created": days_ago(3)}, "# Done notes\n"),
    f"{P}/done/2026-10-01_use-x.md": note(
        {"id": "use-x", "category": "decision", "created": "2026-10-01T10:00:00Z"}, "# Use X\nbecause Y\n"
    ),
    f"{P}/done/flaky.md": note(
        {"id": "flaky", "category": "error", "created": days_ago(4)}, "# Flaky CI\nnaive dates\n"
    ),
    f"{P}/done/meeting.md": note({"id": "meeting", "created": days_ago(4)}, "# Meeting\nagenda\n"),
    f"{P}/dropped/status.md": status_md("dropped", "cancelled", days_ago(1)),
    f"{P}/dropped/a.md": note({"id": "dropped-a", "importance": 0.95, "created": days_ago(1)}, "# A\n"),
    f"{P}/stale/status.md": status_md("stale", "active", days_ago(120)),
    f"{P}/stale/b.md": note({"id": "stale-b", "created": days_ago(120)}, "# B\n"),
    "memory/mid-term/active_contexts.json": json.dumps(
        {
            "projects": {p: {"status": "active"} for p in ("survey", "done", "dropped", "stale")},
            "current": "survey",
        }
    ),
    # long-term
    f"{DOMAINS}/old-fact.md": note(
        {"id": "old-fact", "superseded_by": "new-fact", "created": days_ago(9)}, "# Old\nThe datum is WGS84\n"
    ),
    f"{DOMAINS}/new-fact.md": note(
        {"id": "new-fact", "created": days_ago(5)}, "# New\nThe datum is CGCS2000 now\n"
    ),
    f"{DOMAINS}/dup-a.md": note(
        {"id": "dup-a", "confidence": 0.9, "source": "chat-1", "created": days_ago(5)}, DUP + "\n"
    ),
    f"{DOMAINS}/dup-b.md": note(
        {"id": "dup-b", "confidence": 0.6, "source": "chat-2", "created": days_ago(5)}, DUP + "\n"
    ),
    f"{DOMAINS}/unrecalled.md": note(
        {"id": "unrecalled", "confidence": 0.8, "created": days_ago(60)},
        "# Unrecalled\nA rarely useful observation\n",
    ),
    f"{DOMAINS}/recalled.md": note(
        {"id": "recalled", "confidence": 0.5, "created": days_ago(60)},
        "# Recalled\nPostgres runs on port 5433\n",
    ),
    f"{DOMAINS}/fresh.md": note({"id": "fresh", "created": days_ago(5)}, "# Fresh\nKeep answers short\n"),
    # archive
    "memory/archive/sessions/2025/01/01/ancient.md": note(
        {"id": "ancient", "created": "2025-01-01T10:00:00Z", "moved_at": "2025-06-01T10:00:00Z"},
        "# Ancient\n",
    ),
}

EXPECTED_MOVES = {
    "memory/short-term/chat-old.md": "memory/archive/sessions/2026/11/20/chat-old.md",
    "memory/short-term/survey-idea.md": f"{P}/survey/survey-idea.md",
    "memory/short-term/from-session.md": "memory/archive/sessions/2026/11/22/from-session.md",
    f"{P}/survey/insight.md": f"{DOMAINS}/insight.md",
    f"{P}/done/status.md": "memory/archive/projects/done/status.md",
    f"{P}/done/tasks.json": "memory/archive/projects/done/tasks.json",
    f"{P}/done/notes.md": "memory/archive/projects/done/notes.md",
    f"{P}/done/meeting.md": "memory/archive/projects/done/meeting.md",
    f"{P}/done/2026-10-01_use-x.md": "memory/long-term/decisions/2026-10-01_use-x.md",
    f"{P}/done/flaky.md": "memory/long-term/knowledge_base/lessons/flaky.md",
    f"{P}/dropped/status.md": "memory/archive/projects/dropped/status.md",
    f"{P}/dropped/a.md": "memory/archive/projects/dropped/a.md",
    f"{P}/stale/status.md": "memory/archive/projects/stale/status.md",
    f"{P}/stale/b.md": "memory/archive/projects/stale/b.md",
    f"{DOMAINS}/old-fact.md": "memory/archive/long-term/knowledge_base/domains/old-fact.md",
    f"{DOMAINS}/dup-b.md": "memory/archive/long-term/knowledge_base/domains/dup-b.md",
}
TEMPLATE_FILES = {
    "memory/short-term/current_session.md",
    "memory/long-term/user_profile.md",
    "memory/long-term/relationships/contacts.md",
    "memory/long-term/system/capabilities.md",
    "memory/long-term/system/preferences.md",
}
EXPECTED_TREE = (
    {EXPECTED_MOVES.get(p, p) for p in FIXTURE if p != "memory/short-term/temp/old-scratch.md"}
    | TEMPLATE_FILES
    | {"memory/archive/sessions/2026/11/20/temp/old-scratch.md"}
)
REPORT = ".tmem-reports/2026-11-22.md"  # hidden: no note list shows it; tracked: it travels


def build(root: Path, extra_config: str = "") -> None:
    for rel, text in FIXTURE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if extra_config:
        with open(root / "tmem.yaml", "a", encoding="utf-8") as handle:
            handle.write(extra_config)
    git(root, "add", "--all")
    git(
        root, "-c", "user.name=fixture", "-c", "user.email=fixture@localhost", "commit", "-q", "-m", "fixture"
    )
    accesses = [{"id": "recalled", "at": (NOW - timedelta(hours=h)).isoformat()} for h in (30, 20, 10)]
    (root / ACCESS_LOG).write_text("".join(json.dumps(a) + "\n" for a in accesses), encoding="utf-8")


def tree(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in (root / "memory").rglob("*")
        if p.is_file() and p.name != ".gitkeep"
    }


def snapshot(root: Path) -> dict[str, bytes]:
    return {rel: (root / rel).read_bytes() for rel in tree(root)}


@pytest.fixture
def fixture_memory(vault_path: Path) -> Iterator[Memory]:
    build(vault_path)
    mem = Memory(Vault(vault_path), embedder_factory=lambda: FakeEmbedder(64), now=lambda: NOW)
    yield mem
    mem.close()


def test_maintain_applies_every_rule_in_one_commit(fixture_memory: Memory, vault_path: Path) -> None:
    before = git_log(vault_path)
    report = run_maintenance(fixture_memory, now=NOW)
    assert tree(vault_path) == EXPECTED_TREE
    log = git_log(vault_path)
    assert log[1:] == before and len(log) == len(before) + 1
    assert log[0] == (
        "maintain 2026-11-22: 16 moved, 1 merged, 2 decayed, 1 recalled, 1 keys expired, 1 temp archived"
    )
    assert git(vault_path, "status", "--porcelain", "memory") == ""  # every change is in that commit
    assert {m.src: m.dst for m in report.moves} == EXPECTED_MOVES
    assert report.report == REPORT and REPORT in git(vault_path, "ls-files")
    text = (vault_path / report.report).read_text(encoding="utf-8")
    for src, dst in EXPECTED_MOVES.items():
        assert f"`{src}` -> `{dst}`" in text
    assert "kept `dup-a`" in text and "`dup-b` archived as superseded" in text
    assert "`unrecalled`: 0.8 -> 0.72" in text and "`use-x`: 1 -> 0.9" in text
    assert "`recalled`: 3 recall(s), confidence 0.5 -> 0.55" in text
    assert "Most recalled" in text and "`gone`" in text and "old-scratch.md" in text
    # As `status` counts them: the five untouched template files and JSON state are no notes.
    assert report.tier_counts == {"short": 1, "mid": 3, "long": 8, "archive": 14}
    assert status(fixture_memory, Empty()).tiers == report.tier_counts
    # What the daemon sends back rebuilds the very same result.
    assert MaintainResult.from_dict(json.loads(json.dumps(report.to_dict()))) == report


def test_maintain_frontmatter_changes(fixture_memory: Memory, vault_path: Path) -> None:
    run_maintenance(fixture_memory, now=NOW)
    read = fixture_memory.vault.read_note
    kept, dropped = (
        read(f"{DOMAINS}/dup-a.md"),
        read("memory/archive/long-term/knowledge_base/domains/dup-b.md"),
    )
    assert kept.meta["merged_from"] == ["dup-b"] and kept.meta["sources"] == ["chat-1", "chat-2"]
    assert kept.confidence == 0.9
    assert dropped.status == "superseded" and dropped.superseded_by == "dup-a"
    assert dropped.meta["move_reason"] == "superseded by dup-a" and dropped.body == DUP + "\n"
    decayed = read(f"{DOMAINS}/unrecalled.md")
    assert decayed.confidence == 0.72 and decayed.meta["decayed_at"] == NOW
    recalled = read(f"{DOMAINS}/recalled.md")
    assert recalled.access_count == 3 and recalled.confidence == 0.55
    assert recalled.meta["last_accessed"] == NOW - timedelta(hours=10)
    assert not (vault_path / ACCESS_LOG).exists()
    joined = read(f"{P}/survey/survey-idea.md")
    assert joined.id == "survey-idea" and joined.project == "survey"
    assert joined.meta["promoted_from"] == "memory/short-term/survey-idea.md"
    assert joined.meta["moved_at"] == NOW and "about project survey" in joined.meta["move_reason"]
    stack = json.loads((vault_path / "memory/short-term/context_stack.json").read_text())
    assert list(stack) == ["kept"]
    registry = json.loads((vault_path / "memory/mid-term/active_contexts.json").read_text())
    assert list(registry["projects"]) == ["survey"] and registry["current"] == "survey"
    assert fixture_memory.resolve("stale-b") == "memory/archive/projects/stale/b.md"


def test_dry_run_changes_nothing_and_plans_what_is_applied(fixture_memory: Memory, vault_path: Path) -> None:
    files, log = snapshot(vault_path), git_log(vault_path)
    access_log = (vault_path / ACCESS_LOG).read_bytes()
    dry = run_maintenance(fixture_memory, now=NOW, dry_run=True)
    assert snapshot(vault_path) == files and git_log(vault_path) == log
    assert (vault_path / ACCESS_LOG).read_bytes() == access_log
    assert dry.dry_run and dry.commit is None
    real = run_maintenance(fixture_memory, now=NOW)
    assert dry.moves == real.moves
    assert (dry.merges, dry.decays, dry.boosts) == (real.merges, real.decays, real.boosts)
    assert (dry.expired_keys, dry.temp_archived) == (real.expired_keys, real.temp_archived)
    assert dry.report == real.report and dry.tier_counts == real.tier_counts


def test_a_second_run_the_same_day_changes_nothing(fixture_memory: Memory, vault_path: Path) -> None:
    run_maintenance(fixture_memory, now=NOW)
    files, log = snapshot(vault_path), git_log(vault_path)
    again = run_maintenance(fixture_memory, now=NOW + timedelta(hours=1))
    assert not again.changed and again.commit is None and again.report is None
    assert snapshot(vault_path) == files and git_log(vault_path) == log


class _Killed(BaseException):
    """Stands for a kill -9: nothing after it runs, no handler catches it."""


def test_a_run_killed_after_its_commit_does_not_fold_its_recalls_twice(
    fixture_memory: Memory, vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def killed(paths: list[Path]) -> None:
        if paths:  # deleting what the commit folded: killed there
            raise _Killed

    with monkeypatch.context() as patch:
        patch.setattr(access, "done", killed)
        with pytest.raises(_Killed):
            run_maintenance(fixture_memory, now=NOW)
    assert fixture_memory.vault.read_note(f"{DOMAINS}/recalled.md").access_count == 3
    assert access.moved_aside(fixture_memory.vault.state_dir)  # left behind by the killed run
    assert "Recalls-Folded: recalls.folding." in git(vault_path, "log", "-1", "--format=%B")
    run_maintenance(fixture_memory, now=NOW + timedelta(days=1))
    assert fixture_memory.vault.read_note(f"{DOMAINS}/recalled.md").access_count == 3
    assert not access.moved_aside(fixture_memory.vault.state_dir)


def test_a_run_killed_before_its_commit_leaves_its_recalls_to_the_next(
    fixture_memory: Memory, vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = git_log(vault_path)

    def killed(*_args: object, **_kwargs: object) -> None:
        raise _Killed

    with monkeypatch.context() as patch:
        patch.setattr("tiered_memory.app.maintain.write_report", killed)
        with pytest.raises(_Killed):
            run_maintenance(fixture_memory, now=NOW)
    assert git_log(vault_path) == head
    run_maintenance(fixture_memory, now=NOW + timedelta(hours=1))
    recalled = fixture_memory.vault.read_note(f"{DOMAINS}/recalled.md")
    assert recalled.access_count == 3 and not access.moved_aside(fixture_memory.vault.state_dir)


def test_a_recall_made_while_maintenance_runs_waits_for_the_next_run(
    fixture_memory: Memory, vault_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tiered_memory.app.maintain as maintain

    planned = maintain.plan_maintenance

    def plan_then_search(*args: object, **kwargs: object) -> object:
        plan = planned(*args, **kwargs)  # type: ignore[arg-type]
        access.record(vault_path, ["recalled"], NOW)  # a search while the run applies its plan
        return plan

    monkeypatch.setattr(maintain, "plan_maintenance", plan_then_search)
    run_maintenance(fixture_memory, now=NOW)
    assert fixture_memory.vault.read_note(f"{DOMAINS}/recalled.md").access_count == 3
    assert access.load(vault_path) == {"recalled": (1, NOW.isoformat())}


def test_a_hand_edit_during_maintenance_is_kept(fixture_memory: Memory, vault_path: Path) -> None:
    log = git_log(vault_path)
    plan = plan_maintenance(fixture_memory, NOW)
    edits = {
        "memory/short-term/chat-old.md": "still talking about the weather\n",  # planned: archive
        f"{DOMAINS}/unrecalled.md": "useful after all\n",  # planned: decay
        f"{DOMAINS}/dup-b.md": "now different from its twin\n",  # planned: merge
        f"{P}/stale/b.md": "back to work\n",  # planned: the whole project to the archive
        f"{DOMAINS}/recalled.md": "recalled again\n",  # planned: fold 3 recalls
    }
    for rel, line in edits.items():
        with open(vault_path / rel, "a", encoding="utf-8") as handle:
            handle.write(line)
    report = apply_maintenance(fixture_memory, plan)
    for rel, line in edits.items():
        assert (vault_path / rel).read_text(encoding="utf-8").endswith(line), rel
    skipped = {s.path for s in report.skipped}
    assert set(edits) <= skipped
    assert f"{P}/stale/status.md" in skipped  # moves with its project
    assert f"{DOMAINS}/dup-a.md" not in {m.kept for m in report.merges}
    assert "merged_from" not in fixture_memory.vault.read_note(f"{DOMAINS}/dup-a.md").meta
    assert (vault_path / "memory/archive/projects/done/meeting.md").is_file()  # the rest went ahead
    assert git_log(vault_path)[1:] == log and git_log(vault_path)[0].startswith("maintain")
    assert "changed while maintenance ran" in (vault_path / (report.report or "")).read_text()
    assert access.counts(vault_path) == {"recalled": 3}  # folded by the next run instead
    status = git(vault_path, "status", "--porcelain", "memory")
    assert " M memory/short-term/chat-old.md" in status  # the person's edit is theirs to commit


def test_retention_when_configured(vault_path: Path) -> None:
    build(vault_path, "lifecycle:\n  archive_retention_days: 365\n")
    memory = Memory(Vault(vault_path), embedder_factory=lambda: FakeEmbedder(64), now=lambda: NOW)
    try:
        report = run_maintenance(memory)
    finally:
        memory.close()
    gone = "memory/archive/sessions/2025/01/01/ancient.md"
    assert {"src": gone, "dst": None, "kind": "retention", "id": "ancient"}.items() <= next(
        m for m in report.moves if m.src == gone
    ).to_dict().items()
    assert not (vault_path / gone).exists()
    assert "# Ancient" in git(vault_path, "show", f"HEAD~1:{gone}")  # still in git's history


def test_merge_by_token_overlap_without_an_embedder(vault_path: Path) -> None:
    build(vault_path)

    def unavailable() -> FakeEmbedder:
        raise EmbedderUnavailable("no model here")

    memory = Memory(Vault(vault_path), embedder_factory=unavailable, now=lambda: NOW)
    try:
        report = run_maintenance(memory, dry_run=True)
    finally:
        memory.close()
    assert [(m.kept_id, m.dropped_id, m.method, m.similarity) for m in report.merges] == [
        ("dup-a", "dup-b", "token overlap", 1.0)
    ]


def test_merge_threshold_is_configurable(vault_path: Path) -> None:
    build(vault_path)
    (vault_path / DOMAINS / "dup-b.md").write_text(
        note({"id": "dup-b", "created": days_ago(5)}, DUP.replace("every afternoon", "on most days") + "\n")
    )
    for threshold, merged in ((0.95, 0), (0.6, 1)):
        text = (vault_path / "tmem.yaml").read_text().split("lifecycle:")[0]
        (vault_path / "tmem.yaml").write_text(text + f"lifecycle:\n  merge_similarity: {threshold}\n")
        memory = Memory(Vault(vault_path), embedder_factory=lambda: FakeEmbedder(64), now=lambda: NOW)
        try:
            assert len(run_maintenance(memory, dry_run=True).merges) == merged
        finally:
            memory.close()


def test_only_one_maintenance_at_a_time(fixture_memory: Memory) -> None:
    lock = locks.lock_path(fixture_memory.vault.state_dir, "maintain")
    with open(lock, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        with pytest.raises(LockTimeout, match="maintenance is already running"):
            run_maintenance(fixture_memory, now=NOW)


def test_cli_maintain(run: Run, vault_path: Path) -> None:
    build(vault_path)
    when = "--now=2026-11-22T12:00:00Z"
    dry = run("maintain", "--dry-run", when)
    assert dry.exit_code == 0 and dry.stdout.startswith("plan (dry run, nothing changed):")
    data = json.loads(run("maintain", "--json", when).stdout)
    assert data["report"] == REPORT and len(data["moves"]) == 16
    assert all(
        set(m) == {"id", "src", "dst", "kind", "reason"} for m in data["moves"] + data["temp_archived"]
    )
    assert data["commit"] and not data["dry_run"]
    assert run("maintain", when).stdout == "nothing to do\n"
    bad = run("maintain", "--now", "yesterday-ish")
    assert bad.exit_code == 2


def test_maintain_on_a_fresh_vault_does_nothing(memory: Memory, vault_path: Path) -> None:
    log = git_log(vault_path)
    report = run_maintenance(memory, now=datetime(2027, 6, 1, tzinfo=UTC))
    assert not report.changed and git_log(vault_path) == log
    assert os.listdir(vault_path / "memory/archive/daily") == [".gitkeep"]
    assert not (vault_path / ".tmem-reports").exists()


def test_token_overlap_pairs_match_brute_force() -> None:
    rng = random.Random(3)
    words = [f"w{i}" for i in range(30)]
    pool = []
    for i in range(120):
        base = rng.sample(words, rng.randint(5, 14))
        if i % 3 and pool:
            base = pool[-1].text.split()[: len(base)] + base[:2]
        pool.append(notes.Note(f"memory/long-term/n{i}.md", body=" ".join(base)))
    sets = [set(n.text.split()) for n in pool]
    for threshold in (0.5, 0.7, 0.92, 1.0):
        brute = sorted(
            (i, j)
            for i in range(len(sets))
            for j in range(i + 1, len(sets))
            if len(sets[i] & sets[j]) / len(sets[i] | sets[j]) >= threshold
        )
        assert sorted((i, j) for _s, i, j in _jaccard_pairs(pool, threshold)) == brute, threshold


class CountingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__(64)
        self.texts = 0

    def embed(self, texts: list[str]) -> object:  # type: ignore[override]
        self.texts += len(texts)
        return super().embed(texts)


def test_merge_vectors_are_cached_between_runs(vault_path: Path) -> None:
    build(vault_path)
    embedder = CountingEmbedder()
    memory = Memory(Vault(vault_path), embedder_factory=lambda: embedder, now=lambda: NOW)
    try:
        run_maintenance(memory, dry_run=True)
        first = embedder.texts
        run_maintenance(memory, dry_run=True)
        assert first == 6 and embedder.texts == first  # nothing new to embed the second time
        (vault_path / DOMAINS / "fresh.md").write_text(
            note({"id": "fresh", "created": days_ago(5)}, "Keep answers short and to the point, please\n")
        )
        run_maintenance(memory, dry_run=True)
        assert embedder.texts == first + 1
    finally:
        memory.close()
    assert (vault_path / ".tmem" / "merge-vectors.npz").is_file()


def test_note_names_of_any_shape_do_not_stop_maintenance(memory: Memory, vault_path: Path) -> None:
    old = "2020-01-01T00:00:00Z"
    names = ["new\nline", "tab\there", "-dash", '"quoted"', "星号*"]
    for name in names:
        write(
            vault_path,
            f"memory/short-term/{name}.md",
            f"---\nupdated: {old}\ncreated: {old}\n---\n# {name}\n",
        )
    report = run_maintenance(memory, now=NOW)
    moved = {m.src for m in report.moves}
    assert {f"memory/short-term/{n}.md" for n in names} <= moved
    assert report.commit is not None
    assert git(vault_path, "status", "--porcelain") == ""
