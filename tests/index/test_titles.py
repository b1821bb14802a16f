"""A note's title is what Obsidian shows: its `title:` key, else its file name. Its first heading is
searched like an alias, and a query that is a note's title or alias finds that note first."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from helpers import as_json, write

Run = Callable[..., Result]

FORMATS = "en/Accepted file formats.md"
EMBED = "en/Linking notes and files/Embed files.md"
CALLOUTS = "en/Editing and formatting/Callouts.md"
GEODESY = "en/Geodesy.md"


@pytest.fixture
def help_vault(vault_path: Path) -> Path:
    """Shaped like Obsidian's own help vault, where headings often differ from file names."""
    write(
        vault_path,
        FORMATS,
        "# Embed files\nObsidian recognizes these files. You can embed files of each format:\n"
        "images, audio, video and PDF files embed in notes; embed files with ![[file]].\n",
    )
    write(vault_path, EMBED, "Learn how to embed other notes and media in your notes.\n")
    write(
        vault_path,
        CALLOUTS,
        "## Change the title\nBy default, the title of the callout is its type identifier.\n"
        "Callouts highlight content: note, tip, warning.\n",
    )
    write(vault_path, GEODESY, "---\naliases: [WGS84]\n---\n# Datums\nThe datum everyone uses, WGS84 too.\n")
    return vault_path


def hits(run: Run, query: str, mode: str = "keyword") -> list[dict[str, str]]:
    found: list[dict[str, str]] = as_json(run("search", "--json", "--mode", mode, query))["results"]
    return found


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_note_named_by_the_query_comes_first_under_its_file_name(
    run: Run, help_vault: Path, mode: str
) -> None:
    found = hits(run, "Embed files", mode)
    assert [found[0]["path"], found[0]["title"]] == [EMBED, "Embed files"]
    titles = {h["path"]: h["title"] for h in found}
    assert titles[FORMATS] == "Accepted file formats"  # not its heading
    assert hits(run, "embed FILES.md", mode)[0]["path"] == EMBED  # case and suffix aside
    assert hits(run, "wgs84", mode)[0]["path"] == GEODESY  # an alias is a name too


def test_a_first_heading_is_searched_like_an_alias(run: Run, help_vault: Path) -> None:
    assert hits(run, "Datums")[0]["path"] == GEODESY
    listed = {n["path"]: n["title"] for n in as_json(run("list", "--json"))}
    assert listed[CALLOUTS] == "Callouts" and listed[GEODESY] == "Geodesy"
    shown = as_json(run("show", "--json", CALLOUTS))
    assert shown["title"] == "Callouts"


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_note_with_a_title_key_is_found_by_the_file_name_its_links_use(
    vault_path: Path, run: Run, mode: str
) -> None:
    """Agents keep notes under slug file names with a sentence for `title:`; the person's links
    name the file (`[[verificar-test-con-mutacion]]`), and a note linking to it many times must not
    outrank the note itself when the query is that name."""
    target = "knowledge/verificar-test-con-mutacion.md"
    write(
        vault_path,
        target,
        "---\ntitle: un test nuevo no vale hasta que le rompes el código y falla\n---\n"
        "Rompe a propósito lo que dice vigilar y confirma el rojo.\n",
    )
    for i in range(4):
        write(
            vault_path,
            f"knowledge/aprendizaje-{i}.md",
            f"---\ntitle: otro aprendizaje {i} sobre un test\n---\n"
            "Un test que compara dos constantes no prueba nada. Ver [[verificar-test-con-mutacion]].\n",
        )
    assert hits(run, "verificar-test-con-mutacion", mode)[0]["path"] == target
    assert hits(run, "verificar test con mutacion", mode)[0]["path"] == target
