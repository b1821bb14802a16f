"""Command groups beyond the core ones in cli.py, one module per area (lifecycle, daemon, sync, agents).

Each module here exposes `COMMANDS: list[click.Command]`; `register` adds them all to the main
group. Modules import only click at the top, so `tmem --help` stays fast.
"""

from __future__ import annotations

import importlib
import pkgutil

import click


def register(group: click.Group) -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for command in getattr(module, "COMMANDS", []):
            group.add_command(command)
