/**
 * The fleet's events of the session family (catalog.ts, where EVENT_CATALOG takes them in): the
 * start queue of routing.limits, and what routing.budget's watch says of a session's use
 * (docs/fleet.md). The same field specs and rules as the rest of the catalog.
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
} as const;
