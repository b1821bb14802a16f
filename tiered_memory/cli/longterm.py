"""Long-term commands: `profile`, `knowledge add`, `decide`, `lesson add`, `pattern add`.

Each parses its input, runs one operation through the backend and renders the result with `present`.
"""

from __future__ import annotations

__all__ = [
    "decide",
    "knowledge",
    "knowledge_add",
    "lesson",
    "pattern",
    "profile",
    "profile_set",
    "profile_show",
]

from collections.abc import Callable
from typing import Any

import click

from tiered_memory.app.api import Empty
from tiered_memory.app.api.longterm import (
    DECIDE,
    KNOWLEDGE_ADD,
    LESSON_ADD,
    PATTERN_ADD,
    PROFILE_SET,
    PROFILE_SHOW,
    DecideRequest,
    KnowledgeRequest,
    LongTermRequest,
    ProfileSetRequest,
)
from tiered_memory.cli.options import backend, emit, json_option, split_list
from tiered_memory.present import longterm as show


@click.group()
def profile() -> None:
    """The user profile (long-term/user_profile.md): `- key: value` facts among free text."""


@profile.command("show")
@json_option
@click.pass_context
def profile_show(ctx: click.Context, as_json: bool) -> None:
    """Show the profile's facts (and, in text mode, the whole file)."""
    found = backend(ctx).run(PROFILE_SHOW, Empty())
    emit(found.to_dict(), as_json, show.profile_text(found))


@profile.command("set")
@click.argument("key")
@click.argument("value", nargs=-1, required=True)
@json_option
@click.pass_context
def profile_set(ctx: click.Context, key: str, value: tuple[str, ...], as_json: bool) -> None:
    """Set a profile fact: replaces the `- KEY: ...` line, or adds one; other text is kept."""
    text = " ".join(value)
    found = backend(ctx).run(PROFILE_SET, ProfileSetRequest(key, text))
    emit(found.to_dict(), as_json, show.fact_text(found, key, text))


@click.group()
def knowledge() -> None:
    """Domain knowledge, filed by domain in long-term memory.

    Notes go to long-term/knowledge_base/domains/{domain}/.
    """


_common = [
    click.option("--title", help="Title (default: the first line)."),
    click.option("--tags", multiple=True, help="Comma-separated tags (repeatable)."),
]


def _with_common(func: Callable[..., Any]) -> Callable[..., Any]:
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
    request = KnowledgeRequest(" ".join(text), domain, title=title, tags=split_list(tags))
    view = backend(ctx).run(KNOWLEDGE_ADD, request)
    emit(view.to_dict(), as_json, show.filed_text(view))


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
    """Record a decision and the reason for it.

    The note is long-term/decisions/YYYY-MM-DD_slug.md, or in the project's folder with --project.
    """
    request = DecideRequest(" ".join(decision), why, project=project, title=title, tags=split_list(tags))
    view = backend(ctx).run(DECIDE, request)
    emit(view.to_dict(), as_json, show.filed_text(view))


def _adder(name: str, help_text: str, folder: str) -> click.Group:
    op = LESSON_ADD if name == "lesson" else PATTERN_ADD

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
        request = LongTermRequest(" ".join(text), project=project, title=title, tags=split_list(tags))
        view = backend(ctx).run(op, request)
        emit(view.to_dict(), as_json, show.filed_text(view))

    return group


lesson = _adder("lesson", "Lessons learned (category error).", "knowledge_base/lessons/")
pattern = _adder("pattern", "Recurring patterns: ways of working that repeat.", "knowledge_base/patterns/")
