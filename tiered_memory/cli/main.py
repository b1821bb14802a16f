"""The `tmem` group: the global options, and every command group registered by a plain import.

The import happens when a command is looked up, not at start-up: `tmem --help` imports no
command module and `tmem search` only its own (each module imports the application behind its
commands; importing all of them cost more than a keyword search). COMMANDS names each command's
module and its help line for the listing; tests/test_cli.py checks it against the commands.
"""

from __future__ import annotations

import importlib
from collections.abc import ItemsView, Iterator, KeysView, ValuesView

import click

from tiered_memory.cli.edge import TmemGroup

# command -> (module under tiered_memory.cli listing it in COMMANDS, its short help; "" if hidden)
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("setup", "Create a vault at PATH (default: the current folder) from the template, as a..."),
    "config": ("setup", "Your own settings, for every vault: `default-vault` is used when no --vault,..."),
    "add": ("notes", "Remember TEXT (or stdin, or --file) as a new note, committed to git."),
    "show": ("notes", "Print a note, by id or path."),
    "list": ("notes", "List notes, newest first within each tier, with optional filters."),
    "edit": ("notes", "Open a note in $EDITOR, then reindex and commit it."),
    "forget": ("notes", "Remove a note (or --entity NAME: all about someone) in a git commit (`tmem..."),
    "search": ("search", "Hybrid search (keyword + vector) over the vault."),
    "reindex": ("notes", "Bring the side indexes up to date (incremental unless --full)."),
    "status": ("notes", "Notes per tier and category, index freshness, embedder, vault size and git..."),
    "promote": ("lifecycle", "Move a note up a tier (short -> mid -> long), keeping its id, in one commit."),
    "archive": ("lifecycle", "Move a note to the archive (kept and searchable last; never deleted)."),
    "restore-from-archive": (
        "lifecycle",
        "Bring an archived note back to where it came from (refuses to replace a file).",
    ),
    "maintain": ("lifecycle", "Daily maintenance in one commit: expire, fold recalls, merge duplicates,..."),
    "st": ("lifecycle", "Short-term memory: key/value context with a time-to-live..."),
    "schedule": ("schedule", "Run `tmem maintain` daily from a user crontab or systemd user timer (or..."),
    "profile": (
        "longterm",
        "The user profile (long-term/user_profile.md): `- key: value` facts among free...",
    ),
    "knowledge": ("longterm", "Domain knowledge (long-term/knowledge_base/domains/{domain}/)."),
    "decide": ("longterm", "Record a decision and why: long-term/decisions/YYYY-MM-DD_slug.md."),
    "lesson": ("longterm", "Lessons learned (category error)."),
    "pattern": ("longterm", "Recurring patterns."),
    "project": ("projects", "Mid-term projects: mid-term/projects/{id}/ with status.md, tasks.json and..."),
    "task": ("projects", "A project's tasks (mid-term/projects/{id}/tasks.json)."),
    "session": (
        "sessions",
        "Record a conversation: start it, append messages, end it (summary + archive +...",
    ),
    "ingest": ("sessions", "Store a whole transcript (OpenAI JSONL, Claude Code JSONL or Markdown chat)..."),
    "extract": ("sessions", "Find memories in a compaction summary, a transcript or a session, and store..."),
    "context": ("agents", "Print a context block for an agent's system prompt, within a token budget."),
    "entity": ("agents", "People and other entities: profiles under long-term/relationships/."),
    "mcp": ("mcp", "Serve the vault to agents over MCP."),
    "install": ("install", "Connect AGENT to tmem: its MCP server and its session hooks (context at the..."),
    "hook": ("hook", "Run an agent hook: reads the agent's hook JSON on stdin and never fails the..."),
    "links": ("links", "Links of a note ([[wikilinks]], embeds, Markdown links) and the notes that..."),
    "update": ("revise", "Change a note (by id or path) in one commit: its body and frontmatter fields."),
    "related": (
        "revise",
        "Notes related to one: by its links and shared tags, else by similarity of...",
    ),
    "scan": ("agents", "Report secrets already stored in the vault (masked)."),
    "sync": ("sync", "Commit pending edits, merge others' commits note by note, push."),
    "merge-driver": ("sync", ""),
    "resolve": ("sync", "Open a conflicted note (by id or path) in $EDITOR, then clear `conflict:..."),
    "log": ("sync", "A note's history (by id or path) across moves between tiers, even after it..."),
    "restore": ("sync", "Bring back a forgotten note, or an older version of one, as a new commit..."),
    "backup": ("sync", "Write the vault's whole history as a dated git bundle, keeping the newest N."),
    "post-merge": ("sync", ""),
    "export": ("portability", "Export notes and sessions (messages nested under each session) as JSON or..."),
    "import": (
        "portability",
        "Import memories from PATH in one commit, through redaction and dedup (like...",
    ),
    "unlock": ("crypto", "Unlock encrypted notes: the key is derived from your passphrase and held in..."),
    "lock": ("crypto", "Forget the key: encrypted notes are unreadable and unsearchable until `tmem..."),
    "encrypt": ("crypto", "Store a note (ID or path) encrypted from now on; --all: every note the rules..."),
    "decrypt": ("crypto", "Store a note (ID or path) as plain text from now on (it stays so)."),
    "rekey": ("crypto", "A new passphrase: every encrypted note sealed again under the new key, in one..."),
    "textconv": ("crypto", ""),
    "daemon": ("daemon", "The background daemon: live indexing, warm searches, auto-commit of hand..."),
    "doctor": ("doctor", "Check the daemon, the watcher and the indexes; exit 1 while a problem remains."),
}
# Second names for the same commands: `remember` is `add`, `recall` is `search`.
ALIASES = {"remember": "add", "recall": "search"}


def register(module_name: str) -> None:
    """Add every command of one command module (tiered_memory.cli.<module_name>) to `cli`."""
    module = importlib.import_module(f"tiered_memory.cli.{module_name}")
    for command in module.COMMANDS:
        cli.add_command(command)
    for alias, name in ALIASES.items():
        if COMMANDS[name][0] == module_name:
            cli.add_command(cli.commands[name], alias)


class LazyCommands(dict[str, click.Command]):
    """`cli.commands`: looking up one command imports its module; listing them all imports all."""

    def _load(self, name: str) -> None:
        if not dict.__contains__(self, name) and (found := COMMANDS.get(ALIASES.get(name, name))):
            register(found[0])

    def loaded(self, name: str) -> click.Command | None:
        return dict.get(self, name)

    def load_all(self) -> None:
        for module_name in dict.fromkeys(module for module, _help in COMMANDS.values()):
            if not any(dict.__contains__(self, n) for n, (m, _h) in COMMANDS.items() if m == module_name):
                register(module_name)

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
            if command is not None:
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
