"""Dedup and supersede over real vaults: duplicates and near-duplicates boost the note they repeat,
contradictions supersede the old fact (and leave search), mere neighbours are added untouched."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import git, git_log

from tiered_memory.app import dedup
from tiered_memory.app.filing import NewNote, add
from tiered_memory.app.memory import Memory
from tiered_memory.index.embeddings import FakeEmbedder
from tiered_memory.model import statements
from tiered_memory.model.search import SearchRequest
from tiered_memory.storage.vault import Vault


def note_files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in (root / "memory").rglob("*.md")}


def search_ids(memory: Memory, query: str, include_superseded: bool = False) -> list[str]:
    request = SearchRequest(query=query, mode="keyword", include_superseded=include_superseded)
    return [h.id for h in memory.search(request, record_access=False).hits]


def with_config(vault_path: Path, text: str) -> Memory:
    (vault_path / "tmem.yaml").write_text("embeddings:\n  provider: fake\n" + text, encoding="utf-8")
    mem = Memory(Vault(vault_path), embedder_factory=lambda: FakeEmbedder(64))
    mem.indexer.vectors()  # the model warm, as in the daemon: only then does dedup compare embeddings
    return mem


# ---- statements ------------------------------------------------------------------------------------

CONTRADICTIONS = [
    ("The project uses CGCS2000", "The project uses WGS84"),
    ("My name is Alice", "My name is Bob"),
    ("my name is Alice.", "I am called Bob"),
    ("The project uses Docker", "The project doesn't use Docker anymore"),
    ("The project uses Python 3.11", "The project uses Python 3.12"),
    ("The project uses the CGCS2000 coordinate system", "The project uses the WGS84 coordinate system"),
    ("I live in Berlin", "I'm based in Munich"),
    ("The deadline is Friday", "The deadline is next Monday"),
    ("I prefer tabs over spaces", "I prefer spaces over tabs"),
    ("项目使用CGCS2000坐标系", "项目使用WGS84坐标系"),
    ("我叫Alice", "我的名字是Bob"),
    ("项目使用Docker", "项目不再使用Docker"),
    ("我在阿里巴巴工作", "我在腾讯工作"),
]
NEIGHBOURS = [
    ("We use PostgreSQL for storage", "We use React for the frontend"),  # different purpose
    ("The project uses Python and PostgreSQL", "The project uses Python"),  # a restatement of part
    ("Alice is a designer", "Alice is my manager"),  # membership and role can both hold
    ("The project uses the pytest test runner", "The project uses the ruff linter"),  # different kinds
    ("The project doesn't use Docker", "The project uses Podman"),  # compatible
    ("It is slow", "It is fast"),  # a pronoun: unclear what about
    ("The staging server uses port 8080", "The production server uses port 9090"),  # other subject
    ("The server runs on port 8080. It restarts nightly.", "The server runs on port 9090"),  # long note
    ("Run pytest before pushing", "Run ruff before pushing"),  # no statement at all
]


@pytest.mark.parametrize(("old", "new"), CONTRADICTIONS)
def test_contradicting_statements(old: str, new: str) -> None:
    a, b = statements.parse(old), statements.parse(new)
    assert a is not None and b is not None
    assert statements.contradiction(a, b), (a, b)


@pytest.mark.parametrize(("old", "new"), NEIGHBOURS)
def test_neighbouring_statements_do_not_contradict(old: str, new: str) -> None:
    a, b = statements.parse(old), statements.parse(new)
    assert a is None or b is None or statements.contradiction(a, b) is None, (a, b)


def test_same_fact_ignores_punctuation_case_and_articles() -> None:
    a = statements.parse("The project uses WGS-84.")
    b = statements.parse("the project uses wgs84")
    assert a is not None and b is not None
    assert statements.same_fact(a, b) and statements.contradiction(a, b) is None


# ---- remember: duplicates ----------------------------------------------------------------------


def test_exact_duplicate_boosts_confidence_and_records_the_source(memory: Memory, vault_path: Path) -> None:
    first = dedup.remember(
        memory,
        NewNote(
            "Always run the unit tests before pushing to main.",
            category="pattern",
            confidence=0.7,
            source="session:ses-a",
        ),
    )
    assert first.action == "added"
    files = note_files(vault_path)
    commits = len(git_log(vault_path))
    again = dedup.remember(
        memory,
        NewNote("Always run unit tests before you push to main.", category="pattern", source="session:ses-b"),
    )
    assert again.action == "merged"
    assert again.note.id == first.note.id and again.other is not None
    assert note_files(vault_path) == files  # no copy
    stored = memory.vault.read_note(first.note.path)
    assert stored.confidence == pytest.approx(0.8)
    assert stored.meta["sources"] == ["session:ses-a", "session:ses-b"]
    assert stored.body == first.note.body  # the text itself is untouched
    assert len(git_log(vault_path)) == commits + 1
    assert git_log(vault_path)[0].startswith(
        'dedup: "Always run the unit tests before pushing to main." seen again'
    )
    assert "already known" in again.message and "0.70 -> 0.80" in again.message


def test_confidence_is_capped_at_one_and_a_repeated_session_does_not_count_twice(memory: Memory) -> None:
    dedup.remember(
        memory, NewNote("Deploys happen on Tuesdays after standup.", confidence=0.95, source="session:s1")
    )
    second = dedup.remember(memory, NewNote("Deploys happen on Tuesdays after standup", source="session:s2"))
    assert second.note.confidence == 1.0
    third = dedup.remember(memory, NewNote("deploys happen on tuesdays after standup!", source="session:s2"))
    assert third.action == "merged" and "same source again" in third.message
    assert third.note.meta["sources"] == ["session:s1", "session:s2"]


def test_near_duplicate_by_token_overlap_threshold(vault_path: Path) -> None:
    old = "We decided to pin numpy to 1.26 because 2.0 broke the build"
    new = "We decided to pin numpy to version 1.26 since numpy 2.0 broke our build"
    assert dedup.jaccard(old, new) == pytest.approx(0.7)
    strict = with_config(vault_path, "dedup:\n  token_overlap: 0.8\n  cosine: 1.0\n")
    dedup.remember(strict, NewNote(old, category="decision"))
    assert dedup.judge(strict, NewNote(new, category="decision")).action == "added"
    strict.close()
    loose = with_config(vault_path, "dedup:\n  token_overlap: 0.65\n  cosine: 1.0\n")
    verdict = dedup.judge(loose, NewNote(new, category="decision"))
    assert verdict.action == "merged" and verdict.other is not None
    assert "word overlap 0.70 >= 0.65" in verdict.other.reason
    loose.close()


def test_near_duplicate_by_embedding_cosine(vault_path: Path) -> None:
    mem = with_config(vault_path, "dedup:\n  token_overlap: 1.0\n  cosine: 0.75\n")
    dedup.remember(mem, NewNote("We decided to pin numpy to 1.26 because 2.0 broke the build"))
    verdict = dedup.judge(
        mem, NewNote("We decided to pin numpy to version 1.26 since numpy 2.0 broke our build")
    )
    assert verdict.action == "merged" and verdict.other is not None
    assert verdict.other.cosine is not None and verdict.other.cosine >= 0.75
    assert "cosine" in verdict.other.reason
    without = dedup.judge(
        mem,
        NewNote("We decided to pin numpy to version 1.26 since numpy 2.0 broke our build"),
        use_embedder=False,
    )
    assert without.action == "added"
    mem.close()


@pytest.mark.model
def test_near_duplicate_with_the_real_model(vault_path: Path) -> None:
    (vault_path / "tmem.yaml").write_text("", encoding="utf-8")  # defaults: packaged MiniLM, cosine 0.9
    mem = Memory(Vault(vault_path))
    mem.indexer.vectors()  # warm, as in the daemon
    dedup.remember(mem, NewNote("We decided to pin numpy to 1.26 because 2.0 broke the build"))
    assert (
        dedup.judge(
            mem, NewNote("We decided to pin numpy to version 1.26 since numpy 2.0 broke our build")
        ).action
        == "merged"
    )
    assert dedup.judge(mem, NewNote("Run the integration tests with pytest nightly")).action == "added"
    mem.close()


# ---- remember: contradictions ----------------------------------------------------------------------


def test_contradiction_supersedes_and_leaves_search(memory: Memory, vault_path: Path) -> None:
    old = dedup.remember(memory, NewNote("The project uses CGCS2000", category="fact"))
    assert search_ids(memory, "project uses") == [old.note.id]
    commits = len(git_log(vault_path))
    new = dedup.remember(memory, NewNote("The project uses WGS84", category="fact", source="session:ses-2"))
    assert new.action == "superseded"
    assert new.other is not None and new.other.id == old.note.id
    stored_old = memory.vault.read_note(old.note.path)
    assert stored_old.meta["superseded_by"] == new.note.id
    assert stored_old.status == "superseded"
    assert stored_old.body == old.note.body
    assert new.note.meta["supersedes"] == old.note.id
    assert (
        "supersedes" in new.message and "The project uses CGCS2000" in new.message and "--all" in new.message
    )
    assert search_ids(memory, "project uses") == [new.note.id]
    assert set(search_ids(memory, "project uses", include_superseded=True)) == {new.note.id, old.note.id}
    assert len(git_log(vault_path)) == commits + 1  # both notes in one commit
    assert (
        git_log(vault_path)[0] == 'supersede: "The project uses WGS84" replaces "The project uses CGCS2000"'
    )


def test_a_note_the_person_wrote_is_never_merged_into_or_superseded(memory: Memory, vault_path: Path) -> None:
    rel = "Storage/Server facts.md"
    text = "---\ncreated: 2025-07-19T15:42\nrelated:\n---\nThe home server backs up to the second SSD every night.\n"
    (vault_path / "Storage").mkdir()
    (vault_path / rel).write_text(text, encoding="utf-8")
    commits = len(git_log(vault_path))
    same = dedup.remember(memory, NewNote("The home server backs up to the second SSD every night."))
    assert (vault_path / rel).read_text(encoding="utf-8") == text
    assert same.action == "merged" and same.note.path == rel and "a note of your own" in same.message
    assert len(git_log(vault_path)) == commits  # nothing written, nothing committed
    flipped = dedup.remember(
        memory, NewNote("The home server no longer backs up to the second SSD every night.")
    )
    assert flipped.action == "added" and flipped.other is not None and flipped.other.path == rel
    assert (vault_path / rel).read_text(encoding="utf-8") == text
    assert rel in [
        h.path for h in memory.search(SearchRequest(query="home server SSD"), record_access=False).hits
    ]


def test_name_change_and_chinese_contradiction(memory: Memory) -> None:
    dedup.remember(memory, NewNote("My name is Alice", category="fact"))
    assert dedup.remember(memory, NewNote("My name is Bob", category="fact")).action == "superseded"
    dedup.remember(memory, NewNote("项目使用CGCS2000坐标系", category="fact"))
    outcome = dedup.remember(memory, NewNote("项目使用WGS84坐标系", category="fact"))
    assert outcome.action == "superseded" and outcome.other is not None
    assert outcome.other.title == "项目使用CGCS2000坐标系"


def test_a_contradiction_is_never_merged_however_close(vault_path: Path) -> None:
    mem = with_config(vault_path, "dedup:\n  token_overlap: 0.3\n  cosine: 0.1\n")
    dedup.remember(mem, NewNote("The project uses CGCS2000"))
    assert dedup.judge(mem, NewNote("The project uses WGS84")).action == "superseded"
    mem.close()


def test_several_stale_facts_are_superseded_together(memory: Memory) -> None:
    a = dedup.remember(memory, NewNote("The deadline is Friday", project="falcon"))
    # Written by hand before dedup existed: two active notes that already disagree.
    b = add(memory, NewNote("The deadline is Thursday", project="falcon"))
    outcome = dedup.remember(memory, NewNote("The deadline is next Monday", project="falcon"))
    assert outcome.action == "superseded"
    assert {n.id for n in outcome.superseded} == {a.note.id, b.id}
    assert sorted(outcome.note.meta["supersedes"]) == sorted([a.note.id, b.id])


def test_other_projects_are_not_touched(memory: Memory) -> None:
    dedup.remember(memory, NewNote("The project uses CGCS2000", project="tunnel"))
    outcome = dedup.remember(memory, NewNote("The project uses WGS84", project="bridge"))
    assert outcome.action == "added"
    assert len(search_ids(memory, "project uses")) == 2


# ---- remember: neighbours --------------------------------------------------------------------------


@pytest.mark.parametrize(("old", "new"), NEIGHBOURS)
def test_neighbours_are_added_untouched(memory: Memory, old: str, new: str) -> None:
    first = dedup.remember(memory, NewNote(old))
    before = memory.vault.read_text(first.note.path)
    outcome = dedup.remember(memory, NewNote(new))
    assert outcome.action == "added", outcome.message
    assert memory.vault.read_text(first.note.path) == before


def test_superseded_and_archived_notes_are_not_candidates(memory: Memory) -> None:
    dedup.remember(memory, NewNote("The project uses CGCS2000"))
    dedup.remember(memory, NewNote("The project uses WGS84"))
    # Saying the superseded fact again is a new contradiction of the current one, not a duplicate
    # of the hidden note.
    back = dedup.remember(memory, NewNote("The project uses CGCS2000"))
    assert (
        back.action == "superseded"
        and back.other is not None
        and back.other.title == "The project uses WGS84"
    )


def test_remember_many_is_one_commit_and_later_items_see_earlier_ones(
    memory: Memory, vault_path: Path
) -> None:
    commits = len(git_log(vault_path))
    outcomes, sha = dedup.remember_many(
        memory,
        [
            NewNote("The project uses CGCS2000"),
            NewNote("Always apply the meteorological correction first"),
            NewNote("always apply the meteorological correction first."),
            NewNote("The project uses WGS84"),
        ],
        "extract: memories from notes.md",
    )
    assert [o.action for o in outcomes] == ["added", "added", "merged", "superseded"]
    assert sha is not None
    assert len(git_log(vault_path)) == commits + 1
    assert git_log(vault_path)[0] == "extract: memories from notes.md (2 added, 1 merged, 1 superseded)"


def test_secrets_in_new_memories_never_reach_files(memory: Memory, vault_path: Path) -> None:
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    dedup.remember(memory, NewNote(f"The deploy key is {key}"))
    dedup.remember(memory, NewNote(f"the deploy key is {key}", source="session:x"))
    for path in (vault_path / "memory").rglob("*.md"):
        assert key not in path.read_text(encoding="utf-8")
    import subprocess

    history = subprocess.run(
        ["git", "-C", str(vault_path), "log", "-p"], capture_output=True, text=True
    ).stdout
    assert key not in history


def test_cosine_one_means_words_only_and_no_model_is_loaded(vault_path: Path) -> None:
    (vault_path / "tmem.yaml").write_text("dedup:\n  cosine: 1.0\n", encoding="utf-8")

    def no_model() -> FakeEmbedder:
        raise AssertionError("the embedder was loaded")

    mem = Memory(Vault(vault_path), embedder_factory=no_model)
    dedup.remember(mem, NewNote("Always tag releases with the date"))
    assert dedup.remember(mem, NewNote("always tag releases with the date.")).action == "merged"
    mem.close()


# ---- remember: details that make a new fact ----------------------------------------------------

NEW_FACTS = [  # close copies that must never be merged: the new detail is the fact
    ("Use port 8081 for the tile server in dev", "Use port 8082 for the tile server in dev"),
    ("Release 2.3 shipped on 2026-11-02", "Release 2.4 shipped on 2026-11-16"),
    ("The weekly sync meets at 10:30 on Mondays", "The weekly sync meets at 11:00 on Mondays"),
    ("The nightly build runs with Python 3.11", "The nightly build runs with Python 3.12"),
    ("The tile server is owned by Alice Chen", "The tile server is owned by Bob Chen"),
    ("Ask Dana Smith about the travel budget", "Ask Dana Jones about the travel budget"),
    ('The API key lives in the "prod" vault', 'The API key lives in the "staging" vault'),
    ("Deploy the tile server on Fridays", "Do not deploy the tile server on Fridays"),
    ("The team uses Docker for local builds", "The team no longer uses Docker for local builds"),
]
PARAPHRASES = [  # true restatements that must still merge
    ("Always run the unit tests before pushing to main.", "Always run unit tests before you push to main."),
    (
        "We decided to pin numpy to 1.26 because 2.0 broke the build",
        "We decided to pin numpy to version 1.26 since numpy 2.0 broke our build",
    ),
    ("The project uses WGS-84.", "the project uses wgs84"),
    ("Deploys happen on Tuesdays after standup.", "deploys happen on Tuesdays after standup!"),
]


@pytest.mark.parametrize(("old", "new"), NEW_FACTS)
def test_a_changed_number_date_version_name_or_negation_is_never_merged(
    vault_path: Path, old: str, new: str
) -> None:
    mem = with_config(vault_path, "dedup:\n  token_overlap: 0.5\n  cosine: 0.5\n")
    first = dedup.remember(mem, NewNote(old, category="fact"))
    second = dedup.remember(mem, NewNote(new, category="fact"))
    assert second.action in ("added", "superseded"), second.message
    assert second.note.id != first.note.id
    assert new.split()[-1].strip('".') in memory_text(mem, second.note.path)
    assert second.other is not None and second.other.id == first.note.id  # the caller is told
    mem.close()


@pytest.mark.parametrize(("old", "new"), PARAPHRASES)
def test_true_paraphrases_still_merge(vault_path: Path, old: str, new: str) -> None:
    mem = with_config(vault_path, "dedup:\n  token_overlap: 0.5\n  cosine: 0.5\n")
    first = dedup.remember(mem, NewNote(old, category="fact"))
    again = dedup.remember(mem, NewNote(new, category="fact"))
    assert again.action == "merged" and again.note.id == first.note.id, again.message
    mem.close()


def test_negation_and_announced_changes_supersede_plain_variants_are_kept_side_by_side(
    vault_path: Path,
) -> None:
    mem = with_config(vault_path, "dedup:\n  token_overlap: 0.5\n  cosine: 0.5\n")
    dedup.remember(mem, NewNote("Deploy the tile server on Fridays", category="fact"))
    flipped = dedup.remember(mem, NewNote("Do not deploy the tile server on Fridays", category="fact"))
    assert flipped.action == "superseded" and "negated" in flipped.message
    dedup.remember(mem, NewNote("Use port 8081 for the tile server in dev", category="fact"))
    variant = dedup.remember(mem, NewNote("Use port 8082 for the tile server in dev", category="fact"))
    assert variant.action == "added" and "8081 -> 8082" in variant.message
    assert "tmem archive" in variant.message
    changed = dedup.remember(mem, NewNote("Now use port 8083 for the tile server in dev", category="fact"))
    assert changed.action == "superseded" and changed.other is not None
    visible = search_ids(mem, "tile server port")
    assert changed.note.id in visible
    mem.close()


def test_preferences_dedup_across_projects_facts_do_not(memory: Memory) -> None:
    first = dedup.remember(
        memory, NewNote("I prefer tabs over spaces in Python files", category="preference", project="alpha")
    )
    again = dedup.remember(
        memory, NewNote("I prefer tabs over spaces in Python files", category="preference", project="beta")
    )
    assert again.action == "merged" and again.note.id == first.note.id
    fact = dedup.remember(memory, NewNote("The build uses make and ninja", category="fact", project="alpha"))
    other = dedup.remember(memory, NewNote("The build uses make and ninja", category="fact", project="beta"))
    assert other.action == "added" and other.note.id != fact.note.id


def memory_text(memory: Memory, path: str) -> str:
    return (memory.vault.root / path).read_text(encoding="utf-8")


def test_a_persons_note_marked_tmems_after_it_was_written_is_never_merged_into_or_superseded(
    memory: Memory, vault_path: Path
) -> None:
    """tmem's mark (`filed_by: tmem`, with an `id` and `created`) added to a person's note by a
    later commit (another clone's, pulled; a plugin's): the note is still theirs, and an agent's
    memory that repeats or contradicts it writes nothing into it."""
    rel = "Storage/Server facts.md"
    (vault_path / "Storage").mkdir()
    (vault_path / rel).write_text(
        "The home server backs up to the second SSD every night.\n", encoding="utf-8"
    )
    git(vault_path, "add", rel)
    git(vault_path, "-c", "user.name=p", "-c", "user.email=p@p", "commit", "-qm", "a person's note")
    text = (
        "---\nid: server-facts\ncreated: 2025-07-19T15:42\nfiled_by: tmem\n---\n"
        "The home server backs up to the second SSD every night.\n"
    )
    (vault_path / rel).write_text(text, encoding="utf-8")
    git(vault_path, "-c", "user.name=o", "-c", "user.email=o@o", "commit", "-qam", "mark it as tmem's")
    same = dedup.remember(memory, NewNote("The home server backs up to the second SSD every night."))
    assert same.action == "merged" and "a note of your own" in same.message
    flipped = dedup.remember(
        memory, NewNote("The home server no longer backs up to the second SSD every night.")
    )
    assert flipped.action == "added" and flipped.other is not None and flipped.other.path == rel
    assert (vault_path / rel).read_text(encoding="utf-8") == text
