"""A memory added with Chinese, Japanese, Korean (or Cyrillic...) text gets an id and a file name
in its own script, and every command that takes an id takes that one: show, search, links,
`[[links]]`, sync to another clone, a conflict on it."""

from __future__ import annotations

import subprocess
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from helpers import FAKE_CONFIG, as_json, git, ok, write

from tiered_memory.cli.main import cli
from tiered_memory.storage.vault import init_vault


def tmem(root: Path | None, *args: str) -> Result:
    prefix = ["--vault", str(root)] if root else []
    return CliRunner().invoke(cli, [*prefix, *args], catch_exceptions=False)


def add(root: Path, text: str, *args: str) -> dict[str, Any]:
    result: dict[str, Any] = as_json(tmem(root, "add", "--json", *args, "--", text))["note"]
    return result


@pytest.mark.parametrize(
    ("title", "stem"),
    [
        ("黄山日出", "黄山日出"),
        ("東京の朝", "東京の朝"),
        ("한국어 메모", "한국어-메모"),
        ("Москва", "москва"),
    ],
)
def test_added_memory_is_named_in_its_own_script(vault_path: Path, title: str, stem: str) -> None:
    note = add(vault_path, f"{title}: 早起きして山に登った。", "--title", title)
    assert note["id"].startswith(f"{stem}-") and len(note["id"]) == len(stem) + 5
    assert note["path"].endswith(f"/{note['id']}.md")
    assert (vault_path / note["path"]).is_file()
    shown = as_json(tmem(vault_path, "show", "--json", note["id"]))
    assert shown["path"] == note["path"] and shown["title"] == title


def test_show_search_and_links_take_a_cjk_id(vault_path: Path) -> None:
    sunrise = add(vault_path, "黄山的日出非常壮观，要早上五点出发。", "--title", "黄山日出")
    note_id = sunrise["id"]
    assert note_id.startswith("黄山日出-")
    hits = as_json(tmem(vault_path, "search", "--json", "--mode", "keyword", "黄山日出"))["results"]
    assert hits[0]["id"] == note_id and hits[0]["path"] == sunrise["path"]
    assert f"id: {note_id}" in ok(tmem(vault_path, "search", "--mode", "keyword", "黄山日出")).stdout

    linking = add(vault_path, f"出发前看 [[{note_id}]]。", "--title", "行程")
    links = as_json(tmem(vault_path, "links", "--json", note_id))
    assert [n["source"]["path"] for n in links["backlinks"]] == [linking["path"]]


def test_an_id_given_decomposed_finds_the_note(vault_path: Path) -> None:
    # macOS hands names over decomposed: the id pasted from there finds the note too.
    write(vault_path, "memory/long-term/서울.md", "---\nid: 서울-친구\ntitle: 서울\n---\n친구와 점심.\n")
    decomposed = unicodedata.normalize("NFD", "서울-친구")
    assert decomposed != "서울-친구"
    assert as_json(tmem(vault_path, "show", "--json", decomposed))["path"] == "memory/long-term/서울.md"


def test_a_cjk_named_memory_syncs_and_keeps_both_sides_of_a_conflict(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    laptop = tmp_path / "laptop"
    init_vault(laptop, config_text=FAKE_CONFIG)
    git(laptop, "remote", "add", "origin", str(remote))
    note = add(laptop, "每周四下午三点开组会。", "--title", "组会时间")
    assert note["id"].startswith("组会时间-")
    ok(tmem(laptop, "sync"))
    desktop = tmp_path / "desktop"
    subprocess.run(["git", "clone", "-q", str(remote), str(desktop)], check=True)
    ok(tmem(None, "init", "--adopt", str(desktop)))
    assert as_json(tmem(desktop, "show", "--json", note["id"]))["path"] == note["path"]

    for root, day in ((laptop, "周二"), (desktop, "周五")):
        path = root / note["path"]
        path.write_text(path.read_text(encoding="utf-8").replace("每周四", f"每{day}"), encoding="utf-8")
    ok(tmem(laptop, "sync"))
    report = as_json(tmem(desktop, "sync", "--json"))
    assert report["conflicts"] == [note["path"]]
    text = (desktop / note["path"]).read_text(encoding="utf-8")
    assert "每周二" in text and "每周五" in text
    assert as_json(tmem(desktop, "show", "--json", note["id"]))["path"] == note["path"]


def test_a_long_title_in_rare_characters_fits_a_file_name(vault_path: Path) -> None:
    """In a person's folder a note is named by its title: 80 characters of CJK Extension B take
    320 bytes, more than a file system's 255."""
    (vault_path / "Notes").mkdir()
    title = "𠀀" * 80
    note = add(vault_path, "生僻字的标题。", "--folder", "Notes", "--title", title)
    name = Path(note["path"]).name
    assert note["path"].startswith("Notes/") and name.startswith("𠀀" * 50)
    assert len(name.encode("utf-8")) <= 203 and (vault_path / note["path"]).is_file()
    assert as_json(tmem(vault_path, "show", "--json", note["id"]))["title"] == title
