// tmem for opencode: store each session in your tmem vault whenever the agent goes idle.
//
// opencode runs JavaScript plugins, not shell hooks, and tmem installs no JavaScript: to use this
// one, copy it to ~/.config/opencode/plugins/ (every project) or .opencode/plugins/ (one
// project) and restart opencode. `tmem install opencode` connects the MCP server; this plugin adds
// the transcript. Each time a session goes idle it is exported (`opencode export <id>`) and handed
// to `tmem ingest`: one session in the vault for each opencode session, updated as it grows, its
// memories extracted from what is new. Nothing leaves the machine.
//
// `tmem` must be on opencode's PATH (or write its absolute path below). An export past 32 MB (a
// long session's tool output) is more than tmem reads whole: then the session is read straight
// from opencode's storage instead (`tmem ingest <id>`), a part at a time.
export const TmemPlugin = async ({ $ }) => ({
  event: async ({ event }) => {
    if (event.type !== "session.idle") return
    const id = event.properties?.sessionID
    if (!/^ses_[0-9A-Za-z]+$/.test(id ?? "")) return
    // Quietly: a session that could not be stored must never interrupt the next one.
    const exported = await $`opencode export ${id} | tmem ingest --format opencode --agent opencode -`
      .quiet()
      .nothrow()
    if (exported.exitCode !== 0) await $`tmem ingest --agent opencode ${id}`.quiet().nothrow()
  },
})
