"""The opencode plugin `tmem install opencode` writes: opencode's hooks are JavaScript modules
loaded from `~/.config/opencode/plugins/`, not shell commands.

On `session.idle` (the agent has finished answering) the plugin pipes `opencode export <id>` into
`tmem ingest`, so the vault holds one session per opencode session, updated as it grows; when that
fails (an export past what tmem reads whole), `tmem ingest <id>` reads the session from opencode's
own storage a part at a time. The command it runs is the absolute one the install found (and the
vault it was given), written into the file as a JSON array: Bun's `$` passes each element as one
argument, so no path is ever split or interpreted by a shell.

The file is made by this module and nothing else: a file at that path without `MARK` on its first
line is the person's, and neither install nor uninstall touches it.
"""

from __future__ import annotations

__all__ = ["FILE_NAME", "MARK", "is_ours", "plugin_text"]

import json
from collections.abc import Sequence

FILE_NAME = "tmem.js"
MARK = "// tmem for opencode"

_BODY = """\
//
// Written by `tmem install opencode`; `tmem install opencode --uninstall` removes it. Whenever the
// agent goes idle the session is exported (`opencode export <id>`) and stored by `tmem ingest`:
// one session in the vault per opencode session, updated as it grows. Nothing leaves the machine.
const TMEM = __ARGV__

export const TmemPlugin = async ({ $ }) => ({
  event: async ({ event }) => {
    if (event.type !== "session.idle") return
    const id = event.properties?.sessionID
    if (!/^ses_[0-9A-Za-z]+$/.test(id ?? "")) return
    // Quietly: a session that could not be stored must never interrupt the next one.
    const exported = await $`opencode export ${id} | ${TMEM} ingest --format opencode --agent opencode -`
      .quiet()
      .nothrow()
    if (exported.exitCode !== 0) await $`${TMEM} ingest --agent opencode ${id}`.quiet().nothrow()
  },
})
"""


def plugin_text(argv: Sequence[str]) -> str:
    """The plugin, running `argv` (tmem's absolute command, with `--vault` when one was named)."""
    return f"{MARK}: store each session in your tmem vault whenever the agent goes idle.\n" + _BODY.replace(
        "__ARGV__", json.dumps(list(argv), ensure_ascii=False)
    )


def is_ours(text: str | None) -> bool:
    """Whether a file's text is a plugin this module wrote (its first line starts with MARK)."""
    return text is not None and text.startswith(MARK)
