"""Long-term commands: `profile`, `knowledge add`, `decide`, `lesson add`, `pattern add`."""

from __future__ import annotations

from typing import Any

import click

from tiered_memory.cli.options import emit, json_option, open_memory, split_list


def _note_out(note: Any, as_json: bool) -> None:
    from tiered_memory.present.notes import note_dict

    emit(note_dict(note), as_json, f"remembered {note.id}  ({note.path})")


@click.group()
def profile() -> None:
    """The user profile (long-term/user_profile.md): `- key: value` facts among free text."""


@profile.command("show")
@json_option
@click.pass_context
def profile_show(ctx: click.Context, as_json: bool) -> None:
    """Show the profile's facts (and, in text mode, the whole file)."""
    from tiered_memory.app import longterm

    data = longterm.profile_show(open_memory(ctx))
    emit(data, as_json, data["body"].strip() or "the profile is empty")


@profile.command("set")
@click.argument("key")
@click.argument("value", nargs=-1, required=True)
@json_option
@click.pass_context
def profile_set(ctx: click.Context, key: str, value: tuple[str, ...], as_json: bool) -> None:
    """Set a profile fact: replaces the `- KEY: ...` line, or adds one; other text is kept."""
    from tiered_memory.app import longterm

    data = longterm.profile_set(open_memory(ctx), key, " ".join(value))
    emit(data, as_json, f"{key}: {data['facts'].get(key, ' '.join(value))}")


@click.group()
def knowledge() -> None:
    """Domain knowledge (long-term/knowledge_base/domains/{domain}/)."""


_common = [
    click.option("--title", help="Title (default: the first line)."),
    click.option("--tags", multiple=True, help="Comma-separated tags (repeatable)."),
]


def _with_common(func: Any) -> Any:
    for option in reversed(_common):
        func = option(func)
    return func


@knowledge.command("add")
@click.argument("text", nargs=-1, required=True)
@click.option("--domain", "-d", required=True, help="The field this belongs to, e.g. geodesy.")
@_with_common
@json_option
@click.pass_context
def knowledge_add(
    ctx: click.Context,
    text: tuple[str, ...],
    domain: str,
    title: str | None,
    tags: tuple[str, ...],
    as_json: bool,
) -> None:
    """Add a piece of domain knowledge."""
    from tiered_memory.app import longterm

    note = longterm.knowledge_add(
        open_memory(ctx), " ".join(text), domain, title=title, tags=split_list(tags)
    )
    _note_out(note, as_json)


@click.command()
@click.argument("decision", nargs=-1, required=True)
@click.option("--why", required=True, help="The reason for the decision.")
@click.option(
    "--project", help="A project id: the decision goes to its folder (long-term when it completes)."
)
@_with_common
@json_option
@click.pass_context
def decide(
    ctx: click.Context,
    decision: tuple[str, ...],
    why: str,
    project: str | None,
    title: str | None,
    tags: tuple[str, ...],
    as_json: bool,
) -> None:
    """Record a decision and why: long-term/decisions/YYYY-MM-DD_slug.md."""
    from tiered_memory.app import longterm

    note = longterm.decide(
        open_memory(ctx), " ".join(decision), why, project=project, title=title, tags=split_list(tags)
    )
    _note_out(note, as_json)


def _adder(name: str, help_text: str, folder: str) -> click.Group:
    @click.group(name=name, help=help_text)
    def group() -> None:
        pass

    @group.command("add", help=f"Add one ({folder}, or the project's folder with --project).")
    @click.argument("text", nargs=-1, required=True)
    @click.option("--project", help="A project id: kept with the project until it completes.")
    @_with_common
    @json_option
    @click.pass_context
    def add(
        ctx: click.Context,
        text: tuple[str, ...],
        project: str | None,
        title: str | None,
        tags: tuple[str, ...],
        as_json: bool,
    ) -> None:
        from tiered_memory.app import longterm

        run = longterm.lesson_add if name == "lesson" else longterm.pattern_add
        note = run(open_memory(ctx), " ".join(text), project=project, title=title, tags=split_list(tags))
        _note_out(note, as_json)

    return group


lesson = _adder("lesson", "Lessons learned (category error).", "knowledge_base/lessons/")
pattern = _adder("pattern", "Recurring patterns.", "knowledge_base/patterns/")

COMMANDS: list[click.Command] = [profile, knowledge, decide, lesson, pattern]
