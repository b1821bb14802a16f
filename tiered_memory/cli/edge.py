"""The error edge of `tmem`: errors from the core become one line on stderr and an exit code:
0 success, 1 the thing asked for does not exist, 2 bad usage or bad input, 3 tmem failed where
the input was fine (a daemon that stopped answering, a lock held too long, the index failing).

Only click and the errors are imported here: `tmem --help` loads this module and `cli/main.py`, no
more.
"""

from __future__ import annotations

__all__ = ["RAISE_ENV", "OneLineUsage", "TmemGroup", "fail", "printable"]

import os
import re
import sys
from typing import Any, NoReturn

import click

from tiered_memory.errors import EXIT_FAILED, TmemError

RAISE_ENV = "TMEM_RAISE_ERRORS"

# The control characters a terminal acts on: escape sequences (that retitle the window, clear the
# screen, plant a hyperlink under other text), a bare carriage return that hides what came before
# it. What tmem prints comes from notes, file names and pulled commits, all untrusted: a line for
# people shows them as `\x1b`. Tab, newline and a line's CRLF stay.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")


def printable(text: str) -> str:
    """`text` with the control characters a terminal would act on shown as `\\xNN`."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def fail(message: str, code: int) -> NoReturn:
    click.echo(printable(f"tmem: {message}"), err=True)
    sys.exit(code)


class OneLineUsage(click.UsageError):
    """A usage error as one line naming the command's help, not click's usage block of three."""

    def show(self, file: Any = None) -> None:
        where = self.ctx.command_path if self.ctx is not None else "tmem"
        click.echo(printable(f"{where}: {self.format_message()} (see `{where} --help`)"), err=True)


def _one_line(exc: click.UsageError) -> click.UsageError:
    # A group run without a command shows its help (click's NoArgsIsHelpError): not an error.
    if isinstance(exc, OneLineUsage | click.exceptions.NoArgsIsHelpError):
        return exc
    return OneLineUsage(exc.format_message(), exc.ctx)


class TmemGroup(click.Group):
    """Turns TmemError (and a few OS-level failures) into one clean line and an exit code; a
    usage error too (click's own block says the same in three)."""

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise _one_line(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _one_line(exc) from None
        except TmemError as exc:
            if os.environ.get(RAISE_ENV):
                raise
            fail(str(exc), exc.exit_code)
        except KeyboardInterrupt:
            fail("interrupted", 130)
        except (OSError, UnicodeError) as exc:
            if os.environ.get(RAISE_ENV):
                raise
            fail(f"{exc.__class__.__name__}: {exc}", 2)
        except Exception as exc:
            # The index under .tmem/ is derived data: busy with another process, or damaged. Looked
            # up, not imported: a command that never opened the index (a search through the
            # daemon) loads no sqlite3, and so raises none of its errors.
            sqlite = sys.modules.get("sqlite3")
            if sqlite is None or not isinstance(exc, sqlite.Error) or os.environ.get(RAISE_ENV):
                raise
            fail(f"the index failed ({exc}); if it persists, `tmem reindex --full` rebuilds it", EXIT_FAILED)
