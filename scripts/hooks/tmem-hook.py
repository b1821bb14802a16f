#!/usr/bin/env python3
"""Old name of tmem's agent hooks, kept so existing settings go on working: it runs
`tmem hook session-start` or `tmem hook session-end` with the same stdin.

New setups need no script: `tmem install claude-code` (or codex, cursor, opencode, kimi) writes
hooks that call `tmem hook ...` directly. TMEM_BIN names the tmem program (default: `tmem`).
"""

from __future__ import annotations

import os
import subprocess
import sys

EVENTS = {"session-start": "session-start", "ingest": "session-end"}

if __name__ == "__main__":
    event = EVENTS.get(sys.argv[1] if len(sys.argv) > 1 else "")
    if event is None:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    try:
        sys.exit(subprocess.call([os.environ.get("TMEM_BIN", "tmem"), "hook", event]))
    except OSError as exc:  # no tmem: never block the agent
        print(f"tmem hook: {exc}", file=sys.stderr)
        sys.exit(0)
