"""Notes without an `id:` key whose default ids collide (`C.md`, `C++.md`, `C#.md` all slug to
`c`): each goes by a distinct id that every door resolves, a note alone with its id keeps it, and a
note's file is never written to."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import as_json, commit, git, ok, write

from tiered_memory.model import note as notes
from tiered_memory.model import note_stats
from tiered_memory.model.note_ids import Claim, IdMove, carried, renamer, settle, suffixed
from tiered_memory.storage.vault import Vault

LT = "memory/long-term"
TEXTS = {f"{LT}/C.md": "# C\n\nThe language.\n", f"{LT}/C++.md": "# C++\n\nTemplates.\n"}


def _ids(run: Callable[..., Result]) -> dict[str, str]:
    return {str(n["path"]): str(n["id"]) for n in as_json(ok(run("list", "--json")))}


def test_the_rule_keeps_the_best_spelled_name_and_suffixes_the_others_by_their_own_path() -> None:
    claims = [Claim("memory/long-term/C++.md", "c"), Claim("memory/long-term/C.md", "c")]
    assert settle(claims) == {"memory/long-term/C++.md": suffixed("memory/long-term/C++.md", "c")}
    # The suffix comes from the path below the tier: the same after a promotion, whoever else is there.
    assert suffixed("memory/mid-term/C++.md", "c") == suffixed("memory/long-term/C++.md", "c")
    more = settle([*claims, Claim("memory/long-term/C#.md", "c")])
    assert more["memory/long-term/C++.md"] == suffixed("memory/long-term/C++.md", "c")
    assert settle([Claim("a.md", "c", own=True), Claim("C.md", "c")]) == {"C.md": suffixed("C.md", "c")}
    assert settle([Claim("C++.md", "c")]) == {}  # alone: its default id stays


def test_state_is_carried_once_and_a_note_taking_its_id_back_takes_its_entry_back() -> None:
    away = IdMove("c", "c-0c476a", f"{LT}/C++.md", 100.0)
    kept = {"c": {"access_count": 3}}
    once = carried(kept, [away])
    assert once == {"c-0c476a": {"access_count": 3}}
    assert carried({**once, "c": {"access_count": 1}}, [away]) == {**once, "c": {"access_count": 1}}
    back = IdMove("c-0c476a", "c", f"{LT}/C++.md", 200.0)
    assert back.back and carried({**once, "c": {"access_count": 9}}, [back]) == {"c": {"access_count": 3}}
    rename = renamer([away])
    assert rename("c", "1970-01-01T00:01:00+00:00") == "c-0c476a"  # logged before the move
    assert rename("c", "1970-01-01T00:02:00+00:00") == "c"  # after it: the newcomer's


def test_colliding_default_ids_become_distinct_and_every_door_resolves_them(
    vault: Vault, run: Callable[..., Result], tmp_path: Path
) -> None:
    for rel, text in TEXTS.items():
        write(vault.root, rel, text)
    commit(vault, list(TEXTS), "person: two notes")
    ids = _ids(run)
    plus = suffixed(f"{LT}/C++.md", "c")
    assert ids[f"{LT}/C.md"] == "c" and ids[f"{LT}/C++.md"] == plus
    assert "The language." in ok(run("show", "c")).output
    shown = as_json(ok(run("show", plus, "--json")))
    assert shown["id"] == plus and "Templates." in shown["body"]
    assert as_json(ok(run("related", plus, "--json")))["id"] == plus
    assert as_json(ok(run("links", plus, "--json")))["note"]["id"] == plus
    exported = tmp_path / "export.jsonl"
    ok(run("export", "-o", str(exported)))
    entries = [json.loads(line) for line in exported.read_text(encoding="utf-8").splitlines()]
    assert {str(e["path"]): e["id"] for e in entries if e.get("kind") == "note"}.items() >= {
        f"{LT}/C.md": "c",
        f"{LT}/C++.md": plus,
    }.items()
    assert (vault.root / f"{LT}/C.md").read_text(encoding="utf-8") == TEXTS[f"{LT}/C.md"]
    assert (vault.root / f"{LT}/C++.md").read_text(encoding="utf-8") == TEXTS[f"{LT}/C++.md"]
    # An archived note's path changes, so the move writes the id it went by into it, as for any note.
    ok(run("archive", plus))
    ids = _ids(run)
    assert ids["memory/archive/long-term/C++.md"] == plus and ids[f"{LT}/C.md"] == "c"


def test_a_note_alone_with_its_id_keeps_it_until_another_file_takes_the_better_spelling(
    vault: Vault, run: Callable[..., Result]
) -> None:
    write(vault.root, f"{LT}/C++.md", TEXTS[f"{LT}/C++.md"])
    commit(vault, [f"{LT}/C++.md"], "person: a note")
    assert _ids(run)[f"{LT}/C++.md"] == "c"
    write(vault.root, f"{LT}/C#.md", "# C#\n\n.NET.\n")
    ids = _ids(run)
    # C# sorts first at the same spelling: the trade-off docs/architecture.md names.
    assert ids[f"{LT}/C#.md"] == "c" and ids[f"{LT}/C++.md"] == suffixed(f"{LT}/C++.md", "c")
    (vault.root / f"{LT}/C#.md").unlink()
    assert _ids(run)[f"{LT}/C++.md"] == "c"


# ---- side-file state follows a note whose id changes ------------------------------------------------

_DIES = """
import os, signal, sys
from tiered_memory.index import settled_ids
from tiered_memory.storage import transaction
from tiered_memory.cli.main import cli

where = sys.argv[2]

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

if where == "before-commit":
    transaction.Transaction.commit = die
else:
    settled_ids.SettledIds.done = die
cli(["--vault", sys.argv[1], "maintain"])
"""


def _stats(vault: Vault) -> dict[str, dict[str, object]]:
    path = vault.root / ".tmem-stats.json"
    return note_stats.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


@pytest.mark.slow
@pytest.mark.parametrize("killed", [None, "before-commit", "after-commit"])
def test_recalls_and_stats_follow_a_note_a_newcomer_took_the_id_from(
    vault: Vault, run: Callable[..., Result], tmp_path: Path, killed: str | None
) -> None:
    """`C++.md`, alone, goes by `c` and is recalled; maintenance keeps its count under `c`. Then
    `C.md` arrives and takes `c`: the count, and a recall logged under `c` before, go with C++ to
    its new id, in one maintenance commit; a run killed with SIGKILL before or after that commit
    leaves a vault the next run completes, and a further run changes nothing."""
    plus_path = f"{LT}/C++.md"
    write(vault.root, plus_path, TEXTS[plus_path])
    commit(vault, [plus_path], "person: a note")
    ok(run("search", "templates", "--mode", "keyword"))
    ok(run("maintain"))
    assert note_stats.count(_stats(vault)["c"]) == 1
    if killed is None:  # (a run killed before its commit folds the log twice, ids or not)
        ok(run("search", "templates", "--mode", "keyword"))  # logged under `c`, not folded yet
    write(vault.root, f"{LT}/C.md", TEXTS[f"{LT}/C.md"])
    commit(vault, [f"{LT}/C.md"], "person: another")
    plus = suffixed(plus_path, "c")
    assert _ids(run)[plus_path] == plus
    if killed is not None:
        script = tmp_path / "dies.py"
        script.write_text(_DIES, encoding="utf-8")
        died = subprocess.run(
            [sys.executable, str(script), str(vault.root), killed], capture_output=True, text=True
        )
        assert died.returncode == -9, died.stderr
        ok(run("status"))  # a valid vault meanwhile
    ok(run("maintain"))
    stats = _stats(vault)
    assert note_stats.count(stats[plus]) == (2 if killed is None else 1) and "c" not in stats
    head = git(vault.root, "rev-parse", "HEAD")
    ok(run("maintain"))
    assert _stats(vault) == stats and git(vault.root, "rev-parse", "HEAD") == head
    assert git(vault.root, "status", "--porcelain") == ""


# ---- names in every script ------------------------------------------------------------------------


def test_a_name_in_any_script_gives_an_id_of_its_words_and_latin_and_cjk_ids_stay() -> None:
    assert notes.default_id(f"{LT}/Заметка о встрече.md") == "заметка-о-встрече"
    assert notes.default_id("Notes/Σημείωση 2024.md") == "notes-σημείωση-2024"
    assert notes.default_id("Notes/مرحبا بالعالم.md") == "notes-مرحبا-بالعالم"
    assert notes.default_id("Notes/नमस्ते दुनिया.md") == "notes-नमस्ते-दुनिया"  # marks kept
    assert notes.default_id(f"{LT}/Straße.md") == "straße"
    # NFC, whatever the file system gave: macOS writes names decomposed.
    assert notes.default_id(f"{LT}/Ё\u0308лка.md".replace("Ё\u0308", "Е\u0308")) == "ёлка"
    # Nothing a file system reserves or a [[link]] reads, and a file name's size at most.
    odd = notes.default_id(f'{LT}/Заметка [a|b]#^ <x>: "?*.md')
    assert odd == "заметка-a-b-x" and not set(odd) & set('[]|#^<>:"?*/\\')
    assert len(notes.default_id(f"{LT}/{'Щ' * 300}.md").encode("utf-8")) <= notes.ID_BYTES
    for name in ("C++", "Café au lait", "my_note 2024", "Python学习", "회의 메모", "会議メモ", "con"):
        assert notes.default_id(f"{LT}/{name}.md") == notes.legacy_id(f"{LT}/{name}.md"), name


RU = {f"{LT}/Заметка о встрече.md": "Встреча в понедельник.\n", f"{LT}/Встреча с Анной.md": "Про тоннель.\n"}


def test_notes_indexed_by_the_old_rule_keep_their_ids_and_new_ones_get_their_words(
    vault: Vault, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    for rel, text in RU.items():
        write(vault.root, rel, text)
    commit(vault, list(RU), "person: notes in Russian")
    with monkeypatch.context() as old_rule:
        old_rule.setattr(notes, "default_id", notes.legacy_id)
        before = _ids(run)
    assert sorted(before[p] for p in RU)[0] == "note"  # both were "note": one of them suffixed
    with sqlite3.connect(vault.root / ".tmem/catalog.sqlite") as db:
        db.execute("DELETE FROM meta WHERE key='id_rule'")  # a catalog made before the rule
    assert {p: i for p, i in _ids(run).items() if p in RU} == {p: before[p] for p in RU}
    for rel in RU:
        shown = as_json(ok(run("show", before[rel], "--json")))
        assert shown["id"] == before[rel] and shown["path"] == rel
    write(vault.root, f"{LT}/Заметка о встрече.md", "Встреча во вторник.\n", bump=2)  # an edit
    ok(run("reindex"))
    write(vault.root, f"{LT}/Новая заметка.md", "Новое.\n")
    ids = _ids(run)
    assert {p: ids[p] for p in RU} == {p: before[p] for p in RU}
    assert ids[f"{LT}/Новая заметка.md"] == "новая-заметка"
    assert as_json(ok(run("show", "новая-заметка", "--json")))["path"] == f"{LT}/Новая заметка.md"
