/**
 * The fleet's events (catalog.ts, where EVENT_CATALOG takes them in): the start queue of
 * routing.limits, what routing.budget's watch says of a session's use (docs/fleet.md), and, on a
 * database several daemons share, the poll sources' locks and the work items' leases (docs/scale.md). The same field specs and rules as the rest of the catalog.
 */
export const FLEET_EVENTS = {
  "session.queued": {
    family: "session",
    level: "info",
    summary: "An authorized start found a routing.limits cap full and waits in the start queue (`position`: 1 is next; `cap`: the cap that holds it).",
    fields: { work_item: "string", harness: "string", position: "integer", cap: "string", delivery_id: "string?" },
  },
  "session.dequeued": {
    family: "session",
    level: "info",
    summary:
      "A start left the start queue (`reason`: slot-free — it starts now; stopped, awaiting-start, item-closed, spawn-policy, live — it does not). A pause keeps the item's place: it leaves no queue.",
    fields: { work_item: "string", reason: "string", delivery_id: "string?" },
  },
  "session.budget_warned": {
    family: "session",
    level: "warning",
    summary:
      "A session's use reached routing.budget.warnAt of a limit (`dimension`: tokens or minutes; `used` of `limit`): a marked comment says so, once per limit.",
    fields: {
      work_item: "string",
      harness: "string",
      dimension: "string",
      used: "integer",
      limit: "integer",
      tokens: "integer?",
      minutes: "integer",
      delivery_id: "string?",
    },
  },
  "session.budget_exceeded": {
    family: "session",
    level: "warning",
    summary:
      "A session reached a routing.budget limit: its turn was interrupted (`interrupted`: the harness's interrupt keys were sent), the item paused with reason budget, and a marked comment gives the figures. `sessions resume --budget +N` raises the limit.",
    fields: {
      work_item: "string",
      harness: "string",
      dimension: "string",
      used: "integer",
      limit: "integer",
      tokens: "integer?",
      minutes: "integer",
      interrupted: "boolean",
      error: "string?",
      delivery_id: "string?",
    },
  },
  "session.budget_raised": {
    family: "session",
    level: "info",
    summary: "An operator raised a session's budget limit with `sessions resume --budget +N` (`dimension` by `by`, to `limit`).",
    fields: { work_item: "string", dimension: "string", by: "integer", limit: "integer?" },
  },
  "poll.source_taken": {
    family: "poll",
    level: "info",
    summary:
      "This daemon (`daemon`) took a poll source's lock on the shared database and polls it from now on, from the cursor and ETags its last holder (`from`, when known) stored. Never on the file store.",
    fields: { poll_source: "string", daemon: "string", from: "string?" },
  },
  "poll.source_skipped": {
    family: "poll",
    level: "info",
    summary:
      "Another daemon (`holder`, when known) holds a poll source's lock on the shared database: this one (`daemon`) does not poll it, and takes it over when the holder's connection ends. Said when it changes, not every cycle.",
    fields: { poll_source: "string", daemon: "string", holder: "string?" },
  },
  "session.adopted": {
    family: "session",
    level: "warning",
    summary:
      "This daemon (`daemon`) adopted a work item whose owner (`from`) stopped renewing its lease: past the lease and state.adoptGraceSeconds, with the old harness ended by its watchdog, it closed the old session record (reason adopted) and started a new session in a fresh workspace whose boot prompt says it was adopted and holds the transcript tail the database kept (`tail_lines`; 0 when none), and posted a marked comment on the item. `queued`: the caps (routing.limits) held the new start in the start queue, which keeps the boot note until it starts. `closed_as`: the turn that took the lease was the item's closing (`item-closed`) or a stop (`stopped`): no new session is started, nor a comment posted, and that turn closes the old record with this reason (session.closed follows).",
    fields: {
      work_item: "string",
      daemon: "string",
      from: "string",
      tail_lines: "integer",
      started: "boolean",
      queued: "boolean?",
      closed_as: "string?",
      error: "string?",
    },
  },
  "session.fenced": {
    family: "session",
    level: "warning",
    summary:
      "A session's watchdog ended its harness and tmux session (`signal`: the last signal it sent) because the item's lease was no longer its daemon's (`daemon`): another daemon owns it, it is gone, or it lapsed (`reason`; also when the database could not be read past the lease's known end). Written by the watchdog itself, so it is there when its daemon was killed; when the database cannot be reached it is only in the watchdog's log (logs/watchdog.log).",
    fields: { work_item: "string", daemon: "string", tmux_target: "string", reason: "string", signal: "string" },
  },
  "lease.taken": {
    family: "lease",
    level: "info",
    summary:
      "This daemon (`daemon`) took the lease of a work item on the shared database (docs/scale.md): it alone spawns, delivers and closes for it while it renews the lease. `from`: the daemon whose lease had lapsed, when there was one.",
    fields: { work_item: "string", daemon: "string", from: "string?" },
  },
  "lease.refused": {
    family: "lease",
    level: "info",
    summary:
      "Work for an item another live daemon owns (`owner`, on `host`) was not run here (`work`: event, command or start): the owner does it. An event is forwarded to the owner instead (forward.sent): for an event this says the inbox could not be written. Never on the file store, where one daemon owns everything.",
    fields: { work_item: "string", daemon: "string", owner: "string", host: "string?", work: "string" },
  },
  "lease.lost": {
    family: "lease",
    level: "warning",
    summary:
      "This daemon found the lease of an item it ran gone — it lapsed (no heartbeat within fleet.leaseSeconds) and another daemon took it (`owner`) — and closed its own tmux session of the item without pasting into it again (`closed`: whether one was there).",
    fields: { work_item: "string", daemon: "string", owner: "string?", closed: "boolean" },
  },
  "lease.released": {
    family: "lease",
    level: "debug",
    summary:
      "This daemon gave up the lease of an item with no live session here: one it had not acted on for a lease's length, or one whose start it left queued for a daemon with room (routing.limits.perDaemon).",
    fields: { work_item: "string", daemon: "string" },
  },
  "forward.sent": {
    family: "forward",
    level: "info",
    summary:
      "An event or a CLI command (`kind`) for an item another live daemon owns (`owner`) was written to the shared database's inbox, addressed to it, instead of being dropped (docs/scale.md). `outcome`: recorded; readdressed (the same delivery was pending for another daemon, now for this owner); pending (it was pending for this owner already); done-already (the owner had it): each delivery is recorded once.",
    fields: { work_item: "string", daemon: "string", owner: "string", kind: "string", outcome: "string", delivery_id: "string?" },
  },
  "forward.received": {
    family: "forward",
    level: "info",
    summary:
      "This daemon (`daemon`) took a row of the inbox addressed to it (`kind`: event or command, written by `from`) and runs it through its own dispatch: an event is routed — authorized first — as if it had arrived here.",
    fields: { work_item: "string", daemon: "string", from: "string", kind: "string", delivery_id: "string?" },
  },
  "forward.readdressed": {
    family: "forward",
    level: "info",
    summary:
      "A row of the inbox addressed to a daemon that is gone (no heartbeat, no live lease of the item: `from`) was moved to the item's next owner (`to`; this daemon when nobody holds the item, which then takes it).",
    fields: { work_item: "string", daemon: "string", from: "string", to: "string", kind: "string" },
  },
  "forward.dropped": {
    family: "forward",
    level: "warning",
    summary:
      "A row of the inbox handed on `hops` times without an owner carrying it out was given up (marked done with a refusal), so it cannot circle between daemons.",
    fields: { work_item: "string", daemon: "string", from: "string", kind: "string", hops: "integer" },
  },
} as const;
