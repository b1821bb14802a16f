"""The index speaks Obsidian: aliases and inline tags are searchable, links resolve the way Obsidian
resolves them (outgoing, backlinks, related), moved notes keep their ids, and dates survive a clone."""

from __future__ import annotations

import os
import subprocess
import unicodedata
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import git, write

from tiered_memory.app.memory import Memory
from tiered_memory.index.graph import name_key
from tiered_memory.index.indexer import Indexer
from tiered_memory.index.retrieve import SearchRequest
from tiered_memory.model.note import default_id
from tiered_memory.model.note_dates import git_blob_ids
from tiered_memory.storage import blobtimes
from tiered_memory.storage.vault import Vault

BASE = "memory/notes"  # a folder of the person's own, outside the tier folders
PLAN = f"{BASE}/Projects/Plan.md"
OTHER_PLAN = f"{BASE}/Archive/Plan.md"
GEODESY = f"{BASE}/Geodesy.md"
DAILY = f"{BASE}/Daily/2026-11-20.md"
SURVEY = f"{BASE}/Projects/Survey.md"


@pytest.fixture
def indexer(vault: Vault) -> Iterator[Indexer]:
    opened = Indexer(vault)
    yield opened
    opened.close()


@pytest.fixture
def obsidian_vault(vault_path: Path) -> Path:
    write(
        vault_path,
        GEODESY,
        "---\naliases: [WGS84, World Geodetic System]\ntags: [reference]\n---\n"
        "# Geodesy\nThe datum everyone uses. #geodesy/datum\n",
    )
    write(
        vault_path,
        PLAN,
        "# Plan\nSurvey the coast. Uses [[WGS84]] and [[Survey#Scope|the survey]].\n#geodesy\n",
    )
    write(vault_path, OTHER_PLAN, "# Old plan\nSuperseded, see [[Plan]].\n")
    write(vault_path, DAILY, "Met Ana about the [plan](../Projects/Plan.md). ![[map.png]] [[Nowhere]]\n")
    write(vault_path, SURVEY, "# Survey\nScope: the whole coast. #geodesy/datum #fieldwork\n")
    return vault_path


def test_aliases_are_searched_like_titles(obsidian_vault: Path, indexer: Indexer) -> None:
    indexer.refresh()
    assert [p for p, _ in indexer.fts.search("World Geodetic System")][:1] == [GEODESY]
    assert [p for p, _ in indexer.fts.search("wgs84")][:1] == [GEODESY]
    row = indexer.catalog.get(GEODESY)
    assert row is not None and row.aliases == ["WGS84", "World Geodetic System"]


def test_inline_and_nested_tags_are_tags(obsidian_vault: Path, indexer: Indexer) -> None:
    indexer.refresh()
    row = indexer.catalog.get(GEODESY)
    assert row is not None and row.tags == ["reference", "geodesy/datum"]
    nested = {p for p, _ in indexer.fts.search("coast datum geodesy", where={"tags": ["geodesy"]})}
    assert nested == {GEODESY, PLAN, SURVEY}  # `geodesy` finds `geodesy/datum` too
    exact = {p for p, _ in indexer.fts.search("coast datum", where={"tags": ["geodesy/datum"]})}
    assert exact == {GEODESY, SURVEY}


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
def test_tag_filters_find_nested_tags_in_every_search_mode(
    obsidian_vault: Path, memory: Memory, mode: str
) -> None:
    request = SearchRequest("coast datum", mode=mode, tags=["geodesy"])  # type: ignore[arg-type]
    hits = {hit.path for hit in memory.search(request, record_access=False).hits}
    assert hits and hits <= {GEODESY, PLAN, SURVEY}
    assert SURVEY in hits


def test_every_note_has_a_tier(obsidian_vault: Path, indexer: Indexer) -> None:
    indexer.refresh()
    assert indexer.catalog.get(PLAN).tier == "long"  # type: ignore[union-attr]
    assert indexer.catalog.get(DAILY).title == "2026-11-20"  # type: ignore[union-attr]


def test_outgoing_links_resolve_like_obsidian(obsidian_vault: Path, indexer: Indexer) -> None:
    indexer.refresh()
    links = indexer.graph.outgoing(PLAN)
    assert [(link.target, link.heading, link.resolved) for link in links] == [
        ("WGS84", "", GEODESY),  # an alias (tmem's extension)
        ("Survey", "Scope", SURVEY),
    ]
    daily = {link.target: link.resolved for link in indexer.graph.outgoing(DAILY)}
    assert daily == {"../Projects/Plan.md": PLAN, "map.png": None, "Nowhere": None}
    # Two notes named Plan: the one in the linking note's folder wins, then the shortest path.
    assert indexer.graph.resolve("Plan", OTHER_PLAN) == OTHER_PLAN
    assert indexer.graph.resolve("Plan", SURVEY) == PLAN
    assert indexer.graph.resolve("Archive/Plan", SURVEY) == OTHER_PLAN
    assert indexer.graph.resolve("memory/notes/Projects/Plan.md", DAILY, kind="markdown") == PLAN


def test_backlinks_and_related(obsidian_vault: Path, indexer: Indexer) -> None:
    indexer.refresh()
    assert [link.source for link in indexer.graph.backlinks(PLAN)] == [DAILY]  # not Archive's [[Plan]]
    assert [link.source for link in indexer.graph.backlinks(GEODESY)] == [PLAN]
    related = indexer.graph.related(SURVEY)
    assert [(r.path, r.reason) for r in related] == [
        (PLAN, "linked from"),
        (GEODESY, "shared tags"),
    ]
    assert related[1].shared_tags == ["geodesy", "geodesy/datum"]


def test_a_property_that_names_a_note_is_a_backlink(obsidian_vault: Path, indexer: Indexer) -> None:
    loops = f"{BASE}/Projects/C For Loops.md"
    write(obsidian_vault, loops, '---\nprogramming language: "[[Plan]]"\nrelated:\n---\nfor (;;) {}\n')
    indexer.refresh()
    assert [link.source for link in indexer.graph.backlinks(PLAN)] == [DAILY, loops]
    assert [link.resolved for link in indexer.graph.outgoing(loops)] == [PLAN]


def test_a_file_name_in_decomposed_unicode_answers_a_link_typed_composed(
    obsidian_vault: Path, indexer: Indexer
) -> None:
    cafe = unicodedata.normalize("NFD", f"{BASE}/Caffè e Università.md")  # as a Mac names it
    write(obsidian_vault, cafe, "# Caffè\nThe coffee machine.\n")
    write(obsidian_vault, f"{BASE}/Coffee.md", "See [[Caffè e Università]].\n")  # as typed
    indexer.refresh()
    assert [link.resolved for link in indexer.graph.outgoing(f"{BASE}/Coffee.md")] == [cafe]


def test_a_note_that_appears_later_resolves_old_links(obsidian_vault: Path, indexer: Indexer) -> None:
    indexer.refresh()
    write(obsidian_vault, f"{BASE}/Nowhere.md", "# Nowhere\n")
    indexer.refresh()
    assert [link.source for link in indexer.graph.backlinks(f"{BASE}/Nowhere.md")] == [DAILY]


def test_a_note_linked_many_times_is_listed_once(obsidian_vault: Path, indexer: Indexer) -> None:
    """`tmem links` shows each note a note links to once, however often the text links it; a
    link to another heading of it is another entry."""
    write(
        obsidian_vault,
        f"{BASE}/Hub.md",
        "See [[Survey]], then [[Survey|the survey]] and [[survey]].\n"
        "Its [[Survey#Scope]] twice: [[Survey#Scope]]. Also [[Nowhere]] and [[Nowhere]].\n",
    )
    indexer.refresh()
    links = indexer.graph.outgoing(f"{BASE}/Hub.md")
    assert [(link.target, link.heading, link.resolved) for link in links] == [
        ("Survey", "", SURVEY),
        ("Survey", "Scope", SURVEY),
        ("Nowhere", "", None),
    ]


def test_deleted_notes_leave_no_links(obsidian_vault: Path, indexer: Indexer) -> None:
    indexer.refresh()
    (obsidian_vault / DAILY).unlink()
    indexer.refresh()
    assert indexer.graph.backlinks(PLAN) == []
    assert indexer.graph.outgoing(DAILY) == []


def test_name_keys() -> None:
    assert name_key("./Projects\\Plan.MD") == "projects/plan"
    assert name_key("/a/b.markdown") == "a/b"


# ---- identity ------------------------------------------------------------------------------------


def test_a_moved_note_keeps_its_id_and_answers_to_the_old_one(vault_path: Path, indexer: Indexer) -> None:
    old, new = f"{BASE}/inbox/idea.md", f"{BASE}/Projects/idea-renamed.md"
    write(vault_path, old, "# Idea\nA hand-written idea.\n")
    indexer.refresh()
    old_id = indexer.catalog.get(old).id  # type: ignore[union-attr]
    (vault_path / new).parent.mkdir(parents=True, exist_ok=True)
    os.replace(vault_path / old, vault_path / new)
    report = indexer.refresh()
    assert [(m.old_path, m.new_path, m.id) for m in report.moved] == [(old, new, old_id)]
    assert indexer.catalog.get(new).id == old_id  # type: ignore[union-attr]
    assert [r.path for r in indexer.catalog.by_id(old_id)] == [new]
    assert [r.path for r in indexer.catalog.by_id(default_id(new))] == [new]
    # A second move, seen in two batches (a watcher reports the deletion first).
    third = f"{BASE}/idea.md"
    os.replace(vault_path / new, vault_path / third)
    indexer.update_paths([new], vectors=False)
    indexer.update_paths([third], vectors=False)
    assert indexer.catalog.get(third).id == old_id  # type: ignore[union-attr]
    assert [r.path for r in indexer.catalog.by_id(default_id(new))] == [third]
    # The kept id survives a rebuild of the keyword indexes.
    indexer.refresh(full=True)
    assert indexer.catalog.get(third).id == old_id  # type: ignore[union-attr]


def test_moves_of_identical_notes_are_not_guessed(vault_path: Path, indexer: Indexer) -> None:
    for name in ("a", "b"):
        write(vault_path, f"{BASE}/{name}.md", "# Template\n")
    indexer.refresh()
    for name in ("a", "b"):
        os.replace(vault_path / f"{BASE}/{name}.md", vault_path / f"{BASE}/{name}2.md")
    report = indexer.refresh()
    assert report.moved == []
    assert indexer.catalog.get(f"{BASE}/a2.md").id == default_id(f"{BASE}/a2.md")  # type: ignore[union-attr]


def test_notes_with_their_own_id_are_not_renamed(vault_path: Path, indexer: Indexer) -> None:
    write(vault_path, f"{BASE}/x.md", "---\nid: kafka-1a2b\n---\nbody\n")
    indexer.refresh()
    os.replace(vault_path / f"{BASE}/x.md", vault_path / f"{BASE}/y.md")
    report = indexer.refresh()
    assert report.moved == [] and indexer.catalog.get(f"{BASE}/y.md").id == "kafka-1a2b"  # type: ignore[union-attr]


# ---- dates ---------------------------------------------------------------------------------------


def _commit_at(root: Path, when: str, message: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message],
        check=True,
        env=env,
    )


def test_a_fresh_clone_keeps_when_notes_were_written(vault_path: Path, tmp_path: Path) -> None:
    note = f"{BASE}/survey-log.md"
    write(vault_path, note, "---\ncreated: 2026-09-01\n---\nFirst version.\n")
    _commit_at(vault_path, "2026-10-01T10:00:00+00:00", "first")
    write(vault_path, note, "---\ncreated: 2026-09-01\n---\nEdited by hand, no date bumped.\n")
    _commit_at(vault_path, "2026-11-20T09:00:00+00:00", "edit")
    clone = tmp_path / "clone"
    git(vault_path.parent, "clone", "-q", str(vault_path), str(clone))
    cloned = Indexer(Vault(clone))
    try:
        cloned.refresh()
        row = cloned.catalog.get(note)
    finally:
        cloned.close()
    assert row is not None
    assert datetime.fromtimestamp(row.updated, UTC) == datetime(2026, 11, 20, 9, tzinfo=UTC)
    assert datetime.fromtimestamp(row.created, UTC) == datetime(2026, 9, 1, tzinfo=UTC)


def test_an_uncommitted_edit_is_dated_by_its_mtime(vault_path: Path, indexer: Indexer) -> None:
    note = f"{BASE}/scratch.md"
    path = write(vault_path, note, "---\ncreated: 2026-01-01\n---\nDraft.\n")
    when = datetime(2026, 11, 21, 8, tzinfo=UTC).timestamp()
    os.utime(path, (when, when))
    indexer.refresh()
    assert indexer.catalog.get(note).updated == when  # type: ignore[union-attr]


def test_head_is_read_like_git_and_blob_times_cover_merges(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    assert blobtimes.head(repo) is None  # no commit yet
    write(repo, "a.md", "base\n")
    _commit_at(repo, "2026-01-01T00:00:00+00:00", "base")
    git(repo, "checkout", "-q", "-b", "side")
    write(repo, "a.md", "base\nside\n")
    _commit_at(repo, "2026-02-01T00:00:00+00:00", "side")
    git(repo, "checkout", "-q", "main")
    write(repo, "b.md", "other\n")
    _commit_at(repo, "2026-03-01T00:00:00+00:00", "main")
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": "2026-04-01T00:00:00+00:00",
        "GIT_COMMITTER_DATE": "2026-04-01T00:00:00+00:00",
    }
    subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "merge",
            "-q",
            "--no-ff",
            "side",
            "-m",
            "merge",
        ],
        check=True,
        env=env,
    )
    head = git(repo, "rev-parse", "HEAD").strip()
    assert blobtimes.head(repo) == head
    git(repo, "pack-refs", "--all")
    assert blobtimes.head(repo) == head
    times = blobtimes.first_seen(repo, head)
    assert times is not None
    [side_blob] = git_blob_ids(b"base\nside\n")
    assert datetime.fromtimestamp(times[side_blob], UTC) == datetime(2026, 2, 1, tzinfo=UTC)  # not the merge
    since_main = blobtimes.first_seen(repo, head, git(repo, "rev-parse", "HEAD~1").strip())
    assert since_main is not None and side_blob in since_main
    # Against its side parent the merge "adds" b.md: the earliest time over all commits still wins.
    [other] = git_blob_ids(b"other\n")
    assert datetime.fromtimestamp(times[other], UTC) == datetime(2026, 3, 1, tzinfo=UTC)


def test_attachments_follow_edits_the_watcher_names(obsidian_vault: Path, indexer: Indexer) -> None:
    indexer.refresh()
    picture = obsidian_vault / BASE / "Projects/coast-survey.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n")
    indexer.update_paths([f"{BASE}/Projects/coast-survey.png"], vectors=False)
    assert [p for p, _ in indexer.fts.search("coast survey png")][:1] == [f"{BASE}/Projects/coast-survey.png"]
    row = indexer.attachments.rows([f"{BASE}/Projects/coast-survey.png"])[f"{BASE}/Projects/coast-survey.png"]
    assert (row.title, row.category, row.snippet) == ("coast-survey.png", "attachment", "PNG attachment, 8 B")
    assert indexer.catalog.get(f"{BASE}/Projects/coast-survey.png") is None  # not a note
    picture.unlink()
    indexer.update_paths([f"{BASE}/Projects/coast-survey.png"], vectors=False)
    assert f"{BASE}/Projects/coast-survey.png" not in [p for p, _ in indexer.fts.search("coast survey png")]
    assert indexer.attachments.stats() == {}


def test_a_rare_shared_tag_outranks_common_ones(vault_path: Path, indexer: Indexer) -> None:
    # Nearly every note has #work and #notes: sharing both says less than sharing #sextant, which
    # only two have.
    write(vault_path, f"{BASE}/Navigation.md", "# Navigation\n#work #notes #sextant\n")
    write(vault_path, f"{BASE}/Almanac.md", "# Almanac\n#work #notes\n")
    write(vault_path, f"{BASE}/Budget.md", "# Budget\n#work #notes\n")
    write(vault_path, f"{BASE}/Cooking.md", "# Cooking\n#work #notes\n")
    write(vault_path, f"{BASE}/Zenith.md", "# Zenith\n#sextant\n")
    indexer.refresh()
    related = indexer.graph.related(f"{BASE}/Navigation.md")
    assert related[0].path == f"{BASE}/Zenith.md"
    assert related[0].score > related[1].score


def test_notes_a_common_tag_ranks_alike_are_ordered_by_shared_links_and_entities_then_recency(
    vault_path: Path, indexer: Indexer
) -> None:
    def note(name: str, updated: str, body: str = "", entities: str = "[]") -> str:
        # With an id, a note is dated by its frontmatter `updated`, not by when the test wrote it.
        rel = f"{BASE}/{name}.md"
        write(
            vault_path,
            rel,
            f"---\nid: {name.lower()}\nupdated: {updated}\ntags: [work]\nentities: {entities}\n---\n# {name}\n{body}\n",
        )
        return rel

    source = note("Source", "2026-01-01", "Uses [[Sextant]].", "[Ana]")
    write(vault_path, f"{BASE}/Sextant.md", "# Sextant\n")
    old = note("Aardvark", "2025-01-01")
    new = note("Bison", "2026-06-01")
    cites = note("Zebra", "2024-01-01", "Also uses [[Sextant]].")
    names = note("Yak", "2023-01-01", entities="[ana]")
    indexer.refresh()
    by_tags = [r.path for r in indexer.graph.related(source) if r.reason == "shared tags"]
    assert by_tags == [cites, names, new, old]  # not the alphabetical order
    assert [r.path for r in indexer.graph.related(source, limit=3)] == [f"{BASE}/Sextant.md", cites, names]
