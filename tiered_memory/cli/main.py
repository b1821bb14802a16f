"""The `tmem` group: the global options, and the one table of its commands.

COMMANDS declares each command once: the function that defines it, as "module:name" of
tiered_memory.cli, and its help line for the listing. The module is imported when the command is
looked up, not at start-up: `tmem --help` imports no command module and `tmem search` only its own
(each module imports the application behind its commands; importing all of them cost more than a
keyword search). tests/cli/test_cli.py checks every entry against the command it names.
"""

from __future__ import annotations

__all__ = ["ALIASES", "COMMANDS", "LazyCommands", "LazyGroup", "cli", "register"]

import importlib
from collections.abc import ItemsView, Iterator, KeysView, ValuesView

import click

from tiered_memory.cli.edge import TmemGroup

# command -> ("tiered_memory.cli.<module>:<its click command>", its short help; "" if hidden)
COMMANDS: dict[str, tuple[str, str]] = {
    "init": (
        "tiered_memory.cli.setup:init",
        "Create a vault at PATH (default: the current folder) from the template, as a...",
    ),
    "config": (
        "tiered_memory.cli.setup:config",
        "Your own settings, for every vault: `default-vault` is used when no --vault,...",
    ),
    "add": (
        "tiered_memory.cli.notes:add",
        "Remember TEXT (or stdin, or --file) as a new note, committed to git.",
    ),
    "show": ("tiered_memory.cli.notes:show", "Print a note, by id or path."),
    "list": (
        "tiered_memory.cli.notes:list_",
        "List notes, newest first within each tier, with optional filters.",
    ),
    "edit": ("tiered_memory.cli.notes:edit", "Open a note in $EDITOR, then reindex and commit it."),
    "forget": (
        "tiered_memory.cli.notes:forget",
        "Remove a note (or --entity NAME: all about someone) in a git commit (`tmem...",
    ),
    "search": ("tiered_memory.cli.search:search", "Hybrid search (keyword + vector) over the vault."),
    "reindex": (
        "tiered_memory.cli.notes:reindex",
        "Bring the side indexes up to date (incremental unless --full).",
    ),
    "status": (
        "tiered_memory.cli.notes:status",
        "Notes per tier and category, index freshness, embedder, vault size and git...",
    ),
    "promote": (
        "tiered_memory.cli.lifecycle:promote",
        "Move a note up a tier (short -> mid -> long), keeping its id, in one commit.",
    ),
    "archive": (
        "tiered_memory.cli.lifecycle:archive",
        "Move a note to the archive (kept and searchable last; never deleted).",
    ),
    "restore-from-archive": (
        "tiered_memory.cli.lifecycle:restore_from_archive",
        "Bring an archived note back to where it came from (refuses to replace a file).",
    ),
    "maintain": (
        "tiered_memory.cli.lifecycle:maintain",
        "Daily maintenance in one commit: expire, fold recalls, merge duplicates,...",
    ),
    "st": ("tiered_memory.cli.lifecycle:st", "Short-term memory: key/value context with a time-to-live..."),
    "schedule": (
        "tiered_memory.cli.schedule:schedule",
        "Run `tmem maintain` daily from a user crontab or systemd user timer (or...",
    ),
    "profile": (
        "tiered_memory.cli.longterm:profile",
        "The user profile (long-term/user_profile.md): `- key: value` facts among free...",
    ),
    "knowledge": (
        "tiered_memory.cli.longterm:knowledge",
        "Domain knowledge, filed by domain in long-term memory.",
    ),
    "decide": (
        "tiered_memory.cli.longterm:decide",
        "Record a decision and the reason for it.",
    ),
    "lesson": ("tiered_memory.cli.longterm:lesson", "Lessons learned (category error)."),
    "pattern": ("tiered_memory.cli.longterm:pattern", "Recurring patterns: ways of working that repeat."),
    "project": (
        "tiered_memory.cli.projects:project",
        "Mid-term projects: mid-term/projects/{id}/ with status.md, tasks.json and...",
    ),
    "task": ("tiered_memory.cli.projects:task", "A project's tasks: add them, mark them done, list them."),
    "session": (
        "tiered_memory.cli.sessions:session_group",
        "Record a conversation: start it, append messages, end it (summary + archive +...",
    ),
    "ingest": (
        "tiered_memory.cli.sessions:ingest_command",
        "Store a whole transcript as an archived session (and extract its memories).",
    ),
    "extract": (
        "tiered_memory.cli.sessions:extract_command",
        "Find memories in a compaction summary, a transcript or a session, and store...",
    ),
    "context": (
        "tiered_memory.cli.agents:context",
        "Print a context block for an agent's system prompt, within a token budget.",
    ),
    "entity": (
        "tiered_memory.cli.agents:entity",
        "People and other entities: profiles under long-term/relationships/.",
    ),
    "mcp": ("tiered_memory.cli.mcp:mcp", "Serve the vault to agents over MCP."),
    "install": (
        "tiered_memory.cli.install:install",
        "Connect AGENT to tmem: its MCP server and its session hooks (context at the...",
    ),
    "hook": (
        "tiered_memory.cli.hook:hook",
        "Run an agent hook: reads the agent's hook JSON on stdin and never fails the...",
    ),
    "links": (
        "tiered_memory.cli.links:links",
        "Links of a note ([[wikilinks]], embeds, Markdown links) and the notes that...",
    ),
    "update": (
        "tiered_memory.cli.revise:update",
        "Change a note (by id or path) in one commit: its body and frontmatter fields.",
    ),
    "related": (
        "tiered_memory.cli.revise:related",
        "Notes related to one: by its links and shared tags, else by similarity of...",
    ),
    "scan": ("tiered_memory.cli.agents:scan", "Report secrets already stored in the vault (masked)."),
    "sync": (
        "tiered_memory.cli.sync:sync_command",
        "Commit pending edits, merge others' commits note by note, push.",
    ),
    "merge-driver": ("tiered_memory.cli.sync:merge_driver_command", ""),
    "resolve": (
        "tiered_memory.cli.sync:resolve_command",
        "Open a conflicted note (by id or path) in $EDITOR, then clear `conflict:...",
    ),
    "log": (
        "tiered_memory.cli.sync:log_command",
        "A note's history (by id or path) across moves between tiers, even after it...",
    ),
    "restore": (
        "tiered_memory.cli.sync:restore_command",
        "Bring back a forgotten note, or an older version of one, as a new commit...",
    ),
    "backup": (
        "tiered_memory.cli.sync:backup_command",
        "Write the vault's whole history as a dated git bundle, keeping the newest N.",
    ),
    "post-merge": ("tiered_memory.cli.sync:post_merge_command", ""),
    "export": (
        "tiered_memory.cli.portability:export_command",
        "Export notes and sessions (messages nested under each session) as JSON or...",
    ),
    "import": (
        "tiered_memory.cli.portability:import_command",
        "Import memories from PATH in one commit, through redaction and dedup (like...",
    ),
    "unlock": (
        "tiered_memory.cli.crypto:unlock",
        "Unlock encrypted notes: the key is derived from your passphrase and held in...",
    ),
    "lock": (
        "tiered_memory.cli.crypto:lock",
        "Forget the key: encrypted notes are unreadable and unsearchable until `tmem...",
    ),
    "encrypt": (
        "tiered_memory.cli.crypto:encrypt",
        "Store a note (ID or path) encrypted from now on; --all: every note the rules...",
    ),
    "decrypt": (
        "tiered_memory.cli.crypto:decrypt",
        "Store a note (ID or path) as plain text from now on (it stays so).",
    ),
    "rekey": (
        "tiered_memory.cli.crypto:rekey",
        "A new passphrase: every encrypted note sealed again under the new key, in one...",
    ),
    "textconv": ("tiered_memory.cli.crypto:textconv", ""),
    "daemon": (
        "tiered_memory.cli.daemon:daemon_group",
        "The background daemon: live indexing, warm searches, auto-commit of hand...",
    ),
    "doctor": (
        "tiered_memory.cli.doctor:doctor",
        "Check the daemon, the watcher and the indexes; exit 1 while a problem remains.",
    ),
}
# Second names for the same commands: `remember` is `add`, `recall` is `search`.
ALIASES = {"remember": "add", "recall": "search"}


def register(name: str) -> None:
    """Add one command of COMMANDS (and its second names) to `cli`, importing its module."""
    module, _, attribute = COMMANDS[name][0].partition(":")
    command: click.Command = getattr(importlib.import_module(module), attribute)
    cli.add_command(command, name)
    for alias, aliased in ALIASES.items():
        if aliased == name:
            cli.add_command(command, alias)


class LazyCommands(dict[str, click.Command]):
    """`cli.commands`: looking up one command imports its module; listing them all imports all."""

    def _load(self, name: str) -> None:
        name = ALIASES.get(name, name)
        if not dict.__contains__(self, name) and name in COMMANDS:
            register(name)

    def loaded(self, name: str) -> click.Command | None:
        return dict.get(self, name)

    def load_all(self) -> None:
        for name in COMMANDS:
            self._load(name)

    def get(self, name: str, default: click.Command | None = None) -> click.Command | None:  # type: ignore[override]
        self._load(name)
        return dict.get(self, name, default)

    def __getitem__(self, name: str) -> click.Command:
        self._load(name)
        return dict.__getitem__(self, name)

    def __contains__(self, name: object) -> bool:
        return name in COMMANDS or name in ALIASES or dict.__contains__(self, name)

    def __iter__(self) -> Iterator[str]:
        self.load_all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self.load_all()
        return dict.__len__(self)

    def keys(self) -> KeysView[str]:  # type: ignore[override]
        self.load_all()
        return dict.keys(self)

    def values(self) -> ValuesView[click.Command]:  # type: ignore[override]
        self.load_all()
        return dict.values(self)

    def items(self) -> ItemsView[str, click.Command]:  # type: ignore[override]
        self.load_all()
        return dict.items(self)


class LazyGroup(TmemGroup):
    """Lists the commands from COMMANDS, without importing their modules."""

    commands: LazyCommands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *ALIASES, *dict.keys(self.commands)})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))  # as click.Group lays the listing out
        rows = []
        for name in names:
            command = self.commands.loaded(name)
            if name in ALIASES:
                # the same command under a second name: say so, rather than repeat its help
                text = f"Same as `tmem {ALIASES[name]}`."
            elif command is not None:
                text = "" if command.hidden else command.get_short_help_str(limit)
            else:
                text = click.Command(name, help=COMMANDS[ALIASES.get(name, name)][1]).get_short_help_str(
                    limit
                )
            if text:
                rows.append((name, text))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--vault",
    type=click.Path(file_okay=False),
    help="Vault folder (default: $TMEM_VAULT, then the current folder or a parent).",
)
@click.version_option(package_name="tiered-memory-vault", prog_name="tmem")
@click.pass_context
def cli(ctx: click.Context, vault: str | None) -> None:
    """tiered-memory: Markdown memory in a git vault, with hybrid search for people and agents."""
    ctx.ensure_object(dict)
    ctx.obj["vault"] = vault


cli.commands = LazyCommands()
