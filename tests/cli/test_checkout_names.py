"""Through the CLI: what `tmem add` and `tmem entity add` name can be checked out on Windows and
macOS; a name that cannot is refused in one line (exit 2) where a person chose it for something new;
`tmem doctor` names, one a line, the files of the vault a clone there could not check out."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from click.testing import Result
from helpers import as_json, commit, git, one_error_line, remember, write

from tiered_memory.storage.vault import Vault

Run = Callable[..., Result]


def test_add_titled_con_in_a_folder_and_entity_com1(run: Run, vault_path: Path) -> None:
    note = remember(run, "console notes", "--title", "Con", "--folder", "Notes")
    assert note["path"] == "Notes/Con-note.md"
    entity = as_json(run("entity", "add", "COM1", "--kind", "place", "--json"))
    assert entity["path"].endswith("/com1-note.md"), entity
    tracked = git(vault_path, "ls-files").split()
    assert "Notes/Con-note.md" in tracked and "Notes/Con.md" not in tracked


def test_add_rust_then_rust_lowercase_in_one_folder(run: Run, vault_path: Path) -> None:
    first = remember(run, "the language", "--title", "Rust", "--folder", "Notes")
    second = remember(run, "iron oxide", "--title", "rust", "--folder", "Notes")
    assert first["path"] == "Notes/Rust.md"
    assert second["path"] == "Notes/rust-2.md"
    assert {p.lower() for p in git(vault_path, "ls-files", "Notes").split()} == {
        "notes/rust.md",
        "notes/rust-2.md",
    }


def test_a_new_folder_or_project_named_like_a_device_is_one_line_exit_2(run: Run, vault_path: Path) -> None:
    line = one_error_line(run("add", "--folder", "Work/CON", "--", "x"), 2)
    assert "'CON' is a device name on Windows" in line
    line = one_error_line(run("add", "--project", "aux", "--", "x"), 2)
    assert "device name" in line
    line = one_error_line(run("project", "new", "nul"), 2)
    assert "device name" in line
    assert not (vault_path / "Work").exists()
    assert not (vault_path / "memory/mid-term/projects/aux").exists()


def test_doctor_names_each_file_windows_or_macos_cannot_check_out(run: Run, vault_path: Path) -> None:
    names = ["Recipes/con.md", "Recipes/Soup.md", "Recipes/soup.md", "Odd/what?.md", "aux/a.md"]
    for rel in names:
        write(vault_path, rel, "# x\n")
    commit(Vault(vault_path), names[:3], "a person's files")  # the rest not committed yet: named too
    run("reindex")
    found = run("doctor")
    assert found.exit_code == 0  # said, not a problem: a vault kept on Linux alone may keep them
    lines = [line.strip() for line in found.stdout.splitlines()]
    assert any(
        line.startswith("note     names    4 name(s) in the vault cannot be checked out on Windows or macOS")
        for line in lines
    ), found.stdout
    assert "e.g. Recipes/con.md: 'con' is a device name on Windows" in lines
    assert "e.g. Recipes/soup.md: differs only in case from Recipes/Soup.md" in lines
    assert "e.g. Odd/what?.md: '?' is a character Windows refuses in a name" in lines
    assert "e.g. aux: 'aux' is a device name on Windows" in lines
    assert (vault_path / "Recipes/con.md").read_text(encoding="utf-8") == "# x\n"  # never renamed


def test_doctor_is_quiet_about_names_in_a_vault_tmem_named(run: Run) -> None:
    remember(run, "console notes", "--title", "Con", "--folder", "Notes")
    run("reindex")
    assert not any("names" in line for line in run("doctor").stdout.splitlines())
