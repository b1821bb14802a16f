"""`tmem search` (`tmem recall`): ranked notes for a query, rendered by `present.notes`.

Its own module, importing little, because people wait on it: a keyword search in a fresh
process loads this and the ranking side of the application, nothing else.
"""

from __future__ import annotations

__all__ = ["search", "show_recent"]

from typing import Any

import click

from tiered_memory.app.api.recall import SEARCH
from tiered_memory.backend import fallback_hint
from tiered_memory.cli.options import (
    backend,
    emit,
    filter_lists,
    filter_options,
    json_option,
    parse_when,
    vault_root,
    warn,
)
from tiered_memory.cli.progress import progress_bar
from tiered_memory.errors import BadInput
from tiered_memory.model.search import SearchRequest
from tiered_memory.present import notes as show_notes
from tiered_memory.present import sessions as show_sessions
from tiered_memory.present.lines import hint_line


@click.command()
@click.argument("query", nargs=-1)
@filter_options
@click.option("--limit", "-k", type=int, default=None, help="Number of results (default: search.limit).")
@click.option(
    "--min-score",
    type=float,
    default=None,
    help="Leave out hits whose score, as listed, is below this (default: search.min_score; scores "
    "are mostly 0..1, a hit lifted by its session's neighbours can pass 1); 0 lists the nearest "
    "notes even when nothing answers the query closely (no search.min_confidence cut).",
)
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "keyword", "vector"]),
    default="hybrid",
    show_default=True,
    help="Retrieval mode: hybrid, keyword only, or vector only.",
)
@click.option("--session", help="Only notes of this session.")
@click.option(
    "--by",
    metavar="NAME",
    help="Only notes this machine or agent wrote (a commit author's name or email, or the agent, "
    "from its start; any case).",
)
@click.option(
    "--recent",
    type=int,
    is_flag=False,
    flag_value=5,
    default=None,
    help="List the N most recent sessions with their summaries instead of searching (default N: 5).",
)
@click.option("--all", "include_all", is_flag=True, help="Include superseded notes.")
@click.option("--explain", is_flag=True, help="Show every component of every score.")
@json_option
@click.pass_context
def search(
    ctx: click.Context,
    query: tuple[str, ...],
    limit: int | None,
    min_score: float | None,
    mode: str,
    session: str | None,
    by: str | None,
    include_all: bool,
    explain: bool,
    as_json: bool,
    since: str | None,
    until: str | None,
    **filters: Any,
) -> None:
    """Hybrid search (keyword + vector) over the vault."""
    recent = filters.pop("recent", None)
    if recent is not None:
        return show_recent(ctx, recent, as_json, " ".join(query))
    text = " ".join(query)
    if limit is not None and limit < 1:
        raise click.BadParameter("must be at least 1", param_hint="--limit")
    if min_score is not None and not 0.0 <= min_score <= 1.0:
        raise BadInput(f"--min-score {min_score:g}: a score is between 0 and 1")
    lists = filter_lists(filters)
    request = SearchRequest(
        query=text,
        limit=limit,
        min_score=min_score,
        mode=mode,  # type: ignore[arg-type]  # click.Choice checked it
        session=session,
        by=by,
        since=parse_when(since, "--since"),
        until=parse_when(until, "--until"),
        include_superseded=include_all,
        tiers=lists["tiers"],
        categories=lists["categories"],
        tags=lists["tags"],
        projects=lists["projects"],
        entities=lists["entities"],
        statuses=lists["statuses"],
        folders=lists["folders"],
    )
    # A search that needs the model starts the daemon (one warm model for every later command).
    with progress_bar(enabled=not as_json) as progress:
        tmem = backend(ctx, progress=progress, autostart=mode != "keyword", scan_ahead=True)
        result = tmem.run(SEARCH, request)
    if result.notice:
        warn(result.notice)
    emit(
        show_notes.result_dict(result, text, explain),
        as_json,
        lambda: show_notes.format_hits(result, explain),
    )
    if tmem.kind != "daemon":
        hint = fallback_hint(vault_root(ctx))
        if hint:
            click.echo(hint_line(hint), err=True)


def show_recent(ctx: click.Context, n: int, as_json: bool, query: str = "") -> None:
    """`tmem recall --recent N`: the latest sessions and their summaries instead of a search."""
    if query.strip():
        raise BadInput("--recent lists sessions and takes no query; search by topic without --recent")
    # Loaded here, not with the module: every search would pay for the session records.
    from tiered_memory.app.api.session_list import RECENT, SessionListRequest

    found = backend(ctx).run(RECENT, SessionListRequest(n))
    emit(
        show_sessions.session_list_json(found),
        as_json,
        lambda: show_sessions.session_list_text(found, with_summary=True),
    )
