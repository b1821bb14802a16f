"""The vault on disk: init, discovery, safe paths, atomic writes and git commits (real git in tmp_path)."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
from pathlib import Path

import pytest
from helpers import FAKE_CONFIG, commit, git, git_log, move_file, write

from tiered_memory.errors import BadInput, NoteParseError, VaultError, VaultNotFound
from tiered_memory.model import note as notes
from tiered_memory.model.authors import host_label
from tiered_memory.storage.locate import ENV_VAULT, find_vault
from tiered_memory.storage.vault import Vault, atomic_write, init_vault
from tiered_memory.storage.walk import _TEMP_MARKERS, is_temp_name

SEED_DIRS = [
    "memory/short-term",
    "memory/short-term/temp",
    "memory/mid-term",
    "memory/mid-term/projects",
    "memory/mid-term/workflows",
    "memory/long-term",
    "memory/long-term/knowledge_base",
    "memory/long-term/knowledge_base/domains",
    "memory/long-term/knowledge_base/lessons",
    "memory/long-term/knowledge_base/patterns",
    "memory/long-term/decisions",
    "memory/long-term/relationships",
    "memory/long-term/system",
    "memory/archive",
    "memory/archive/sessions",
    "memory/archive/projects",
    "memory/archive/daily",
]
SEED_FILES = [
    "tmem.yaml",
    ".gitignore",
    "memory/short-term/current_session.md",
    "memory/short-term/context_stack.json",
    "memory/mid-term/active_contexts.json",
    "memory/long-term/user_profile.md",
    "memory/long-term/relationships/contacts.md",
    "memory/long-term/system/capabilities.md",
    "memory/long-term/system/preferences.md",
]


# ---- init -----------------------------------------------------------------------------------


def test_init_creates_the_seed_tree(tmp_path: Path) -> None:
    vault = init_vault(tmp_path / "v")
    root = vault.root
    for rel in SEED_DIRS:
        assert (root / rel).is_dir(), rel
    for rel in SEED_FILES:
        assert (root / rel).is_file(), rel
    # Empty seed folders survive a clone: git keeps them through a placeholder.
    tracked = set(git(root, "ls-files").splitlines())
    for rel in SEED_DIRS:
        assert any(t.startswith(rel + "/") for t in tracked), rel


def test_seed_notes_parse_cleanly(vault: Vault) -> None:
    files = list(vault.iter_files())
    assert {f.path for f in files} >= {p for p in SEED_FILES if p.startswith("memory/")}
    for info in files:
        note = vault.read_note(info.path)
        assert note.parse_warning is None, info.path
        assert note.tier is not None


def test_init_makes_one_commit_and_a_clean_tree(tmp_path: Path) -> None:
    root = init_vault(tmp_path / "v").root
    log = git_log(root)
    assert len(log) == 1
    assert log[0].startswith("init: ")
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"


def test_init_with_config_text(tmp_path: Path) -> None:
    root = init_vault(tmp_path / "v", config_text=FAKE_CONFIG).root
    assert (root / "tmem.yaml").read_text(encoding="utf-8") == FAKE_CONFIG
    assert Vault(root).config.embeddings.provider == "fake"
    assert git(root, "status", "--porcelain") == ""  # the config is in the first commit


def test_gitignore_ignores_derived_state(vault_path: Path) -> None:
    (vault_path / ".tmem").mkdir(exist_ok=True)
    (vault_path / ".tmem" / "catalog.sqlite").write_bytes(b"x")
    (vault_path / ".tmem-access.jsonl").write_text("{}\n")
    ignored = git(vault_path, "check-ignore", ".tmem/catalog.sqlite", ".tmem-access.jsonl").split()
    assert ignored == [".tmem/catalog.sqlite", ".tmem-access.jsonl"]
    assert git(vault_path, "status", "--porcelain") == ""


def test_init_into_an_existing_empty_git_repo(tmp_path: Path) -> None:
    root = tmp_path / "v"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    init_vault(root)
    assert git_log(root)[0].startswith("init: ")


def test_init_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    root = tmp_path / "v"
    write(root, "thesis.tex", "precious")
    with pytest.raises(VaultError) as info:
        init_vault(root)
    assert "not empty" in str(info.value)
    assert sorted(p.name for p in root.iterdir()) == ["thesis.tex"]
    assert (root / "thesis.tex").read_text() == "precious"


def test_init_refuses_an_existing_vault(vault_path: Path) -> None:
    before = git_log(vault_path)
    with pytest.raises(VaultError) as info:
        init_vault(vault_path)
    assert "already a tmem vault" in str(info.value)
    assert git_log(vault_path) == before


def test_init_refuses_a_file(tmp_path: Path) -> None:
    target = write(tmp_path, "file.txt", "x")
    with pytest.raises(VaultError):
        init_vault(target)


# ---- finding the vault ------------------------------------------------------------------------


@pytest.fixture
def three_vaults(tmp_path: Path) -> tuple[Path, Path, Path]:
    return tuple(init_vault(tmp_path / name).root for name in ("explicit", "env", "cwd"))  # type: ignore[return-value]


def test_find_vault_prefers_explicit_then_env_then_cwd(
    three_vaults: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    explicit, env, cwd = three_vaults
    monkeypatch.chdir(cwd / "memory" / "long-term" / "knowledge_base")
    assert find_vault() == cwd
    monkeypatch.setenv(ENV_VAULT, str(env))
    assert find_vault() == env
    assert find_vault(str(explicit)) == explicit


def test_find_vault_walks_up_from_a_subfolder(vault_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sub = vault_path / "memory" / "mid-term" / "projects" / "deep" / "deeper"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert find_vault() == vault_path.resolve()
    assert find_vault(cwd=sub) == vault_path.resolve()


def test_find_vault_not_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "nothing" / "here"
    empty.mkdir(parents=True)
    monkeypatch.chdir(empty)
    with pytest.raises(VaultNotFound) as info:
        find_vault()
    assert "no tmem vault" in str(info.value)
    assert "tmem init" in str(info.value)


@pytest.mark.parametrize("how", ["explicit", "env"])
def test_find_vault_named_folder_is_not_a_vault(
    tmp_path: Path, vault_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    # A wrong --vault or $TMEM_VAULT is an error, not a silent fall back to the current folder.
    monkeypatch.chdir(vault_path)
    bogus = tmp_path / "bogus"
    bogus.mkdir()
    if how == "env":
        monkeypatch.setenv(ENV_VAULT, str(bogus))
        origin = ENV_VAULT
    else:
        origin = "--vault"
    with pytest.raises(VaultNotFound) as info:
        find_vault(str(bogus) if how == "explicit" else None)
    assert origin in str(info.value)
    assert "not a tmem vault" in str(info.value)


# ---- safe paths ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "given",
    [
        "../../etc/passwd",
        "../outside.md",
        "memory/../../outside.md",
        "memory/long-term/../../../etc/passwd",
        "/etc/passwd",
        "long-term/\x00evil.md",
        "tmem.yaml",
        ".git/config",
        "memory/../tmem.yaml",
    ],
)
def test_safe_rel_refuses_paths_outside_memory(vault: Vault, given: str) -> None:
    with pytest.raises(BadInput):
        vault.safe_rel(given)


def test_safe_rel_refuses_an_absolute_path_outside(vault: Vault, tmp_path: Path) -> None:
    outside = write(tmp_path, "elsewhere/secret.md", "secret")
    with pytest.raises(BadInput) as info:
        vault.safe_rel(str(outside))
    assert "outside the vault" in str(info.value)


def test_safe_rel_refuses_a_symlink_out_of_the_vault(vault: Vault, tmp_path: Path) -> None:
    write(tmp_path, "elsewhere/secret.md", "secret")
    (vault.root / "memory" / "long-term" / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(BadInput):
        vault.safe_rel("memory/long-term/link/secret.md")


@pytest.mark.parametrize(
    "given",
    [
        "memory/long-term/user_profile.md",
        "long-term/user_profile.md",
        "long-term/./system/../user_profile.md",
    ],
)
def test_safe_rel_accepts_paths_in_memory(vault: Vault, given: str) -> None:
    assert vault.safe_rel(given) == "memory/long-term/user_profile.md"


def test_safe_rel_accepts_an_absolute_path_inside(vault: Vault) -> None:
    absolute = vault.root / "memory" / "long-term" / "user_profile.md"
    assert vault.safe_rel(str(absolute)) == "memory/long-term/user_profile.md"


# ---- listing and reading ------------------------------------------------------------------------


def test_iter_files_skips_hidden_temp_and_other_files(vault: Vault) -> None:
    root = vault.root
    for rel in [
        "memory/long-term/.hidden.md",
        "memory/long-term/.obsidian/workspace.json",
        "memory/long-term/.note.md.swp",
        "memory/long-term/note.md~",
        "memory/long-term/#note.md#",
        "memory/long-term/.#note.md",
        "memory/long-term/image.png",
        "memory/long-term/notes.txt",
        "memory/long-term/.note.md.abc123.tmp",
        "outside-memory.md",
    ]:
        write(root, rel, "x")
    write(root, "memory/long-term/real.md", "# Real\n")
    paths = [f.path for f in vault.iter_files()]
    assert all(notes.is_note_path(p) for p in paths)
    assert sorted(p for p in paths if p.startswith("memory/long-term/")) == [
        "memory/long-term/real.md",
        "memory/long-term/relationships/contacts.md",
        "memory/long-term/system/capabilities.md",
        "memory/long-term/system/preferences.md",
        "memory/long-term/user_profile.md",
    ]


def test_read_text_refuses_binary(vault: Vault) -> None:
    (vault.root / "memory" / "long-term" / "blob.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(NoteParseError) as info:
        vault.read_text("memory/long-term/blob.md")
    assert "binary" in str(info.value)
    assert str(info.value).startswith("memory/long-term/blob.md: ")


def test_read_text_refuses_non_utf8(vault: Vault) -> None:
    (vault.root / "memory" / "long-term" / "latin1.md").write_bytes("café".encode("latin-1"))
    with pytest.raises(NoteParseError) as info:
        vault.read_text("memory/long-term/latin1.md")
    assert "UTF-8" in str(info.value)


def test_read_text_missing_file(vault: Vault) -> None:
    with pytest.raises(NoteParseError):
        vault.read_text("memory/long-term/nope.md")


def test_read_note_keeps_crlf_and_sets_mtime(vault: Vault) -> None:
    path = vault.root / "memory" / "long-term" / "crlf.md"
    path.write_bytes(b"---\r\nid: crlf\r\n---\r\n# Windows\r\nline\r\n")
    note = vault.read_note("memory/long-term/crlf.md")
    assert note.id == "crlf"
    assert note.body == "# Windows\r\nline\r\n"
    assert note.mtime == path.stat().st_mtime


# ---- writing ------------------------------------------------------------------------------------


def test_atomic_write_replaces_content_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "d" / "note.md"
    atomic_write(target, "first\n")
    atomic_write(target, "second\r\nline without newline")
    assert target.read_bytes() == b"second\r\nline without newline"
    assert [p.name for p in target.parent.iterdir()] == ["note.md"]


def test_atomic_write_preserves_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "note.md"
    target.write_text("old")
    os.chmod(target, 0o600)
    atomic_write(target, "new")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.read_text() == "new"


def test_atomic_write_new_file_is_readable(tmp_path: Path) -> None:
    target = tmp_path / "new.md"
    atomic_write(target, "x")
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_atomic_write_failure_keeps_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "note.md"
    target.write_text("precious")
    with pytest.raises(UnicodeEncodeError):
        atomic_write(target, "lone surrogate \ud800 cannot be UTF-8")
    assert target.read_text() == "precious"
    assert [p.name for p in tmp_path.iterdir()] == ["note.md"]


def test_unique_path_adds_a_suffix(vault: Vault) -> None:
    rel = "memory/long-term/topic.md"
    assert vault.unique_path(rel) == rel
    write(vault.root, rel, "1")
    assert vault.unique_path(rel) == "memory/long-term/topic-2.md"
    write(vault.root, "memory/long-term/topic-2.md", "2")
    assert vault.unique_path(rel) == "memory/long-term/topic-3.md"


# ---- git ----------------------------------------------------------------------------------------


def test_commit_uses_fallback_identity_when_none_is_configured(vault: Vault) -> None:
    rel = "memory/long-term/new.md"
    write(vault.root, rel, "# New\n")
    sha = commit(vault, [rel], "remember: New [long-term/note]")
    assert sha is not None and len(sha) == 40
    me = f"tmem@{host_label(socket.gethostname())}"  # the machine's name: clones are told apart
    assert git(vault.root, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s").strip() == (
        f"{me} <{me}>|{me} <{me}>|remember: New [long-term/note]"
    )


def test_commit_uses_the_users_identity_when_configured(vault: Vault) -> None:
    git(vault.root, "config", "user.name", "Ada Lovelace")
    git(vault.root, "config", "user.email", "ada@example.org")
    rel = "memory/long-term/new.md"
    write(vault.root, rel, "# New\n")
    commit(vault, [rel], "remember: New")
    assert git(vault.root, "log", "-1", "--format=%an <%ae>").strip() == "Ada Lovelace <ada@example.org>"


def test_commit_stages_only_the_given_paths(vault: Vault) -> None:
    write(vault.root, "memory/long-term/mine.md", "mine")
    write(vault.root, "memory/long-term/users-own-draft.md", "not tmem's to commit")
    commit(vault, ["memory/long-term/mine.md"], "remember: mine")
    assert git(vault.root, "show", "--name-only", "--format=", "HEAD").split() == ["memory/long-term/mine.md"]
    assert "?? memory/long-term/users-own-draft.md" in git(vault.root, "status", "--porcelain")


def test_commit_stages_deletes_and_moves(vault: Vault) -> None:
    write(vault.root, "memory/short-term/a.md", "---\nid: a\n---\nsome content long enough to be a rename\n")
    commit(vault, ["memory/short-term/a.md"], "remember: a")
    final = move_file(vault, "memory/short-term/a.md", "memory/archive/sessions/a.md")
    commit(vault, ["memory/short-term/a.md", final], "archive: a")
    assert git(vault.root, "status", "--porcelain") == ""
    changes = git(vault.root, "show", "--name-status", "-M", "--format=", "HEAD").split()
    assert changes[0].startswith("R")
    assert changes[1:] == ["memory/short-term/a.md", "memory/archive/sessions/a.md"]

    (vault.root / final).unlink()
    commit(vault, [final], "forget: a")
    assert git(vault.root, "status", "--porcelain") == ""
    assert git(vault.root, "show", "--name-status", "--format=", "HEAD").split() == ["D", final]
    assert git_log(vault.root)[:3] == ["forget: a", "archive: a", "remember: a"]


def test_commit_with_nothing_changed_makes_no_commit(vault: Vault) -> None:
    before = git_log(vault.root)
    assert commit(vault, ["memory/long-term/user_profile.md"], "nothing") is None
    assert commit(vault, [], "nothing") is None
    assert git_log(vault.root) == before


def test_commit_can_be_turned_off(tmp_path: Path) -> None:
    root = init_vault(tmp_path / "v", config_text="git:\n  commit: false\n").root
    vault = Vault(root)
    write(root, "memory/long-term/n.md", "x")
    assert commit(vault, ["memory/long-term/n.md"], "remember: n") is None
    assert len(git_log(root)) == 1


def test_is_link_sees_a_link_anywhere_on_the_way(vault: Vault, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "x.md").write_text("secret\n")
    folder = vault.root / "memory" / "long-term"
    (folder / "plain.md").write_text("# plain\n")
    (folder / "file-link.md").symlink_to(outside / "deep" / "x.md")
    (folder / "dir-link").symlink_to(outside, target_is_directory=True)
    assert not vault.is_link("memory/long-term/plain.md")
    assert not vault.is_link("memory/long-term/missing.md")
    assert not vault.is_link("memory/nowhere/deeper/missing.md")
    assert vault.is_link("memory/long-term/file-link.md")
    assert vault.is_link("memory/long-term/dir-link/deep/x.md")
    assert vault.is_link("memory/long-term/dir-link/deep/missing.md")
    assert vault.is_link("memory/long-term/../long-term/plain.md")  # not the plain path: refused
    with pytest.raises(NoteParseError, match="symbolic link"):
        vault.read_text("memory/long-term/dir-link/deep/x.md")


@pytest.mark.parametrize("suffix", [".md", ".markdown", ".json"])
def test_the_scan_s_inline_temp_check_agrees_with_is_temp_name(suffix: str) -> None:
    """The freshness scan checks a visible note-suffixed name for `#` first and `.tmp.` only."""
    names = [f"note{suffix}", f"#note{suffix}#{suffix}", f"a.tmp.1{suffix}", f"~note{suffix}"]
    names += [f"note{marker}{suffix}" for marker in _TEMP_MARKERS]
    for name in names:
        assert is_temp_name(name) == (name[0] == "#" or ".tmp." in name), name
