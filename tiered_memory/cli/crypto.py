"""`tmem unlock`, `lock`, `encrypt`, `decrypt`, `rekey` and `textconv` (git's diff driver)."""

from __future__ import annotations

__all__ = ["PASSPHRASE_ENV", "decrypt", "encrypt", "lock", "rekey", "textconv", "unlock"]

import os
import sys

import click

from tiered_memory.app.api import Empty, Op
from tiered_memory.app.api.crypto import (
    DECRYPT,
    ENCRYPT,
    LOCK,
    REKEY,
    TEXTCONV,
    UNLOCK,
    CryptRequest,
    CryptResult,
    RekeyRequest,
    TextconvRequest,
    UnlockRequest,
)
from tiered_memory.cli.options import backend, emit, json_option, warn
from tiered_memory.present import crypto as show

PASSPHRASE_ENV = "TMEM_PASSPHRASE"


def _passphrase(confirm: bool, prompt: str = "Passphrase") -> str:
    given = os.environ.get(PASSPHRASE_ENV)
    if given:
        return given
    if not sys.stdin.isatty():
        line = sys.stdin.readline().rstrip("\n")
        if line:
            return line
    return str(click.prompt(prompt, hide_input=True, confirmation_prompt=confirm))


@click.command()
@click.option("--new", is_flag=True, help="Set up encryption for this vault with a new passphrase.")
@click.option(
    "--keyring",
    "use_keyring",
    is_flag=True,
    help="Also keep the key in the OS keyring (later commands need no passphrase).",
)
@json_option
@click.pass_context
def unlock(ctx: click.Context, new: bool, use_keyring: bool, as_json: bool) -> None:
    """Unlock encrypted notes: the key is derived from your passphrase and held in the daemon's
    memory (never on disk) until `tmem lock` or the daemon stops.

    The passphrase is asked for, or read from $TMEM_PASSPHRASE or one line of stdin.
    """
    tmem = backend(ctx)
    result = tmem.run(UNLOCK, UnlockRequest(_passphrase(new), new=new, keyring=use_keyring))
    if tmem.kind != "daemon" and not result.keyring:
        warn(show.KEY_NOT_KEPT)
    emit(result.to_dict(), as_json, show.unlocked_text(result, in_daemon=tmem.kind == "daemon"))


@click.command()
@json_option
@click.pass_context
def lock(ctx: click.Context, as_json: bool) -> None:
    """Forget the key: encrypted notes are unreadable and unsearchable until `tmem unlock`."""
    done = backend(ctx).run(LOCK, Empty())
    emit(done.to_dict(), as_json, show.locked_text(done))


def _crypt_command(name: str, op: Op[CryptRequest, CryptResult], doc: str) -> click.Command:
    @click.command(name, help=doc)
    @click.argument("ref", required=False, default="")
    @click.option("--all", "all_", is_flag=True, help="Every note, as the privacy rules say.")
    @json_option
    @click.pass_context
    def command(ctx: click.Context, ref: str, all_: bool, as_json: bool) -> None:
        result = backend(ctx).run(op, CryptRequest(ref=ref, all=all_))
        emit(result.to_dict(), as_json, show.crypt_text(name, result))

    return command


encrypt = _crypt_command(
    "encrypt", ENCRYPT, "Store a note (ID or path) encrypted from now on; --all: every note the rules name."
)
decrypt = _crypt_command(
    "decrypt", DECRYPT, "Store a note (ID or path) as plain text from now on (it stays so)."
)


@click.command()
@json_option
@click.pass_context
def rekey(ctx: click.Context, as_json: bool) -> None:
    """A new passphrase: every encrypted note sealed again under the new key, in one commit.
    (Older commits keep the old ciphertext: the old passphrase still opens them.)"""
    result = backend(ctx).run(REKEY, RekeyRequest(_passphrase(True, "New passphrase")))
    emit(result.to_dict(), as_json, show.rekeyed_text(result))


@click.command(hidden=True)
@click.argument("file", type=click.Path(dir_okay=False))
@click.pass_context
def textconv(ctx: click.Context, file: str) -> None:
    """git's textconv for encrypted notes: the plaintext while unlocked, else a notice."""
    with open(file, encoding="utf-8", errors="surrogateescape") as handle:
        text = handle.read()
    result = backend(ctx).run(TEXTCONV, TextconvRequest(text))
    sys.stdout.write(result.text)
