import { z } from "zod";
import { BOARD_COLUMNS } from "./read.js";

/**
 * The shape of every response of the dashboard's API, one schema per route: docs/dashboard.md
 * shows each as JSON Schema (generated: `npm run generate`), and the integration tests parse the
 * daemon's real answers with these, so the documents, the code and the answers agree.
 */

const time = z.string().describe("ISO 8601, UTC");
const nullable = <T extends z.ZodType>(schema: T) => schema.nullable();

const errorSchema = z.looseObject({ error: z.string().describe("What is wrong, and how to fix it") });

const meSchema = z.strictObject({
  operator: nullable(z.string()).describe("dashboard.operator: who actions are recorded as; null: read-only"),
  readOnly: z.boolean(),
  actions: z.array(z.string()).describe("The actions the dashboard may take (none when read-only)"),
});

const problemSchema = z.strictObject({ file: z.string(), message: z.string() });

const runsOnSchema = z.strictObject({
  daemon: z.string().describe("The daemon's name (state.daemonName)"),
  host: z.string(),
  here: z.boolean().describe("Whether that is this dashboard's host: its terminal view is shown only there"),
});

const itemSchema = z.strictObject({
  ref: z.string().describe("Canonical work item ref"),
  title: nullable(z.string()).describe("Its title as the-loop last read it (a local item's snapshot, a GitHub item's last event); null when unknown"),
  url: nullable(z.string()).describe("The item on its tracker, when a session recorded it"),
  column: z.enum(BOARD_COLUMNS).describe("The board's column: queued, working, waiting (for a person), blocked, done"),
  session: nullable(
    z.strictObject({
      status: z.string().describe("active, paused or closed"),
      harness: z.string(),
      tmuxTarget: z.string(),
      createdAt: time,
      lastEventAt: time,
      closeReason: nullable(z.string()),
      question: nullable(z.strictObject({ text: z.string(), askedAt: time })).describe("The agent's open question (`the-loop ask`)"),
    }),
  ),
  graph: nullable(
    z.strictObject({
      name: z.string(),
      node: z.string(),
      phase: nullable(z.string()),
      status: z.string().describe("running, waiting, blocked, done, failed, exhausted, stalled, canceled"),
      generation: z.number().int(),
      updatedAt: time,
    }),
  ),
  control: nullable(
    z.strictObject({
      command: z.string(),
      source: z.string().describe("comment, cli, hook or dashboard"),
      actor: z.string(),
      requestedAt: time,
      cleared: z.boolean(),
    }),
  ).describe("The item's last control command"),
  queue: nullable(z.strictObject({ position: z.number().int().min(1), queuedAt: time, harness: z.string() })).describe(
    "Its place in the start queue (routing.limits)",
  ),
  budget: nullable(
    z.strictObject({
      tokens: z
        .strictObject({ used: nullable(z.number()), limit: nullable(z.number()) })
        .describe("Model tokens used (null: unreadable) and the limit in force (null: none)"),
      minutes: z.strictObject({ used: nullable(z.number()), limit: nullable(z.number()) }).describe("Wall-clock minutes of the session and the limit in force"),
      warnAt: z.number().describe("routing.budget.warnAt: the share of a limit at which the-loop warns"),
      exceeded: nullable(z.strictObject({ dimension: z.string(), used: z.number(), limit: z.number(), at: time })).describe(
        "The limit that paused the session",
      ),
    }),
  ).describe("Its budget use (routing.budget, docs/fleet.md#budgets), once its session's use is recorded; null until then"),
  lastActivity: nullable(time),
  runsOn: nullable(runsOnSchema)
    .optional()
    .describe("With state.store: postgres, where its session runs: the daemon whose lease the item is under (null: none holds it); absent on files"),
});

const itemsSchema = z.strictObject({ items: z.array(itemSchema).describe("Newest activity first"), problems: z.array(problemSchema) });

const sessionsSchema = z.strictObject({
  sessions: z.array(
    z.looseObject({
      workItem: z.looseObject({ ref: z.string() }),
      status: z.string(),
      harness: z.string(),
      tmuxTarget: z.string(),
      runsOn: nullable(runsOnSchema).optional().describe("With state.store: postgres, the daemon and host it runs on; absent on files"),
    }),
  ),
  problems: z.array(problemSchema),
});

const eventSchema = z
  .looseObject({ ts: time, source: z.string(), event: z.string(), level: z.string() })
  .describe("One line of the event log (docs/events.md)");

const eventsSchema = z.strictObject({
  events: z.array(eventSchema).describe("Newest first"),
  complete: z.boolean().describe("False when the log is longer than the part read (64 MB from its end)"),
});

const whySchema = z.strictObject({
  ref: z.string(),
  verdict: z.strictObject({
    state: z.string().describe("As `the-loop why --json` names it: running, at-gate, awaiting-input, paused, …"),
    summary: z.string(),
    next: nullable(z.string()).describe("The one thing that would move the item; null when nothing is needed"),
    lastRefusal: nullable(z.string()),
  }),
  usage: nullable(
    z.strictObject({
      tokens: nullable(z.number().int()).describe("Model tokens so far; null when its agent CLI's usage cannot be read (never 0 for unknown)"),
      unreadable: nullable(z.string()).describe("Why the tokens cannot be read; null when they can"),
      minutes: z.number().int().describe("Wall-clock minutes of the live session"),
      limits: z
        .strictObject({ tokens: nullable(z.number().int()), minutes: nullable(z.number()) })
        .describe("routing.budget as in force for the item; null: none"),
      text: z.string().describe("The usage line `the-loop why` prints: `12,345/100,000 tok, 12/240 min`"),
    }),
  ).describe("The live session's budget use so far, as `the-loop why` gives it (docs/fleet.md#budgets); null without a live session"),
  timeline: z
    .array(z.strictObject({ ts: time, event: z.string(), level: z.string(), text: z.string().describe("The event in `why`'s words") }))
    .describe("Newest first"),
});

const graphSchema = z.strictObject({
  ref: z.string(),
  run: nullable(
    z.strictObject({
      graph: z.string(),
      node: z.string(),
      phase: nullable(z.string()),
      status: z.string(),
      generation: z.number().int(),
      reason_code: nullable(z.string()),
      reason: nullable(z.string()),
      started_at: time,
      updated_at: time,
      history: z.array(z.looseObject({ at: time, kind: z.string(), node: z.string() })).describe("As `graph status --json` shows it, oldest first"),
    }),
  ),
  graph: nullable(
    z.strictObject({
      name: z.string(),
      start: z.string(),
      nodes: z.array(
        z.strictObject({ id: z.string(), phase: nullable(z.string()), actor: z.enum(["agent", "human"]), terminal: z.boolean(), description: z.string() }),
      ),
      edges: z.array(z.strictObject({ from: z.string(), to: z.string(), on: z.string() })),
      mermaid: z.string().describe("The graph as `graph show --mermaid` prints it"),
    }),
  ),
});

const commentsSchema = z.strictObject({
  comments: z
    .array(
      z.strictObject({
        id: z.string(),
        author: z.string().describe("The tracker's login; ghost for a deleted account"),
        createdAt: time,
        body: z.string().describe("The comment's text, control characters stripped, cut at 20,000 characters: render it as text, never as HTML"),
        fromTheLoop: z.boolean().describe("It carries the-loop's marker: the-loop posted it"),
        url: nullable(z.string()).describe("The comment on its tracker (http or https); null for a local item's"),
      }),
    )
    .describe("Oldest first, the last 200"),
});

const screenSchema = z
  .strictObject({
    cols: z.number().int().min(1),
    rows: z.number().int().min(1),
    text: z
      .string()
      .describe("The visible pane as `tmux capture-pane -p -e` prints it: SGR colours kept, every other control sequence stripped, lines joined by \\r\\n"),
  })
  .describe("A full snapshot of the pane, sent at connect and at each change");

const controlActionSchema = z.looseObject({
  workItem: z.string().describe("The work item acted on: the one named, or the one the pull request named is bound to"),
  command: z.enum(["start", "stop", "pause", "resume"]),
  applied: z.literal(true),
  effect: z.string().describe("started, start-pending, resumed, paused, stopped, recorded, noop"),
  session: z.strictObject({ tmuxTarget: z.string(), status: z.string() }).optional(),
  problem: z.string().optional(),
  boundFrom: z.string().optional().describe("The pull request named, when it is bound to workItem (`sessions link`) and the command acts there"),
  note: z.string().optional().describe("Why the command acted on another item than the one named"),
  comment: z.union([z.strictObject({ posted: z.literal(true), id: z.string() }), z.strictObject({ posted: z.literal(false), error: z.string() })]),
});

const gateActionSchema = z.strictObject({
  moved: z.boolean(),
  ref: z.string(),
  graph: nullable(z.string()),
  node: nullable(z.string()),
  status: nullable(z.string()),
  reason_code: nullable(z.string()),
  reason: nullable(z.string()),
});

const closeActionSchema = z.strictObject({ closed: z.string(), tmuxTarget: z.string() });
const answerActionSchema = z.strictObject({ workItem: z.string(), delivered: z.literal(true), problem: z.string().optional() });

/** Each route and its 200 answer, in the order docs/dashboard.md lists them. */
export const RESPONSE_SCHEMAS = {
  "GET /api/v1/me": meSchema,
  "GET /api/v1/items": itemsSchema,
  "GET /api/v1/sessions": sessionsSchema,
  "GET /api/v1/items/{ref}/why": whySchema,
  "GET /api/v1/items/{ref}/graph": graphSchema,
  "GET /api/v1/items/{ref}/comments": commentsSchema,
  "GET /api/v1/items/{ref}/terminal/stream (each `event: screen` message's data; `event: ended` when the session is gone)": screenSchema,
  "GET /api/v1/events": eventsSchema,
  "GET /api/v1/events/stream (each `event: event` message's data)": eventSchema,
  "POST /api/v1/items/{ref}/actions/{start|stop|pause|resume}": controlActionSchema,
  "POST /api/v1/items/{ref}/actions/{approve|request-changes} (409 with the same fields when the gate did not move)": gateActionSchema,
  "POST /api/v1/items/{ref}/actions/close": closeActionSchema,
  "POST /api/v1/items/{ref}/actions/answer": answerActionSchema,
  "Every refusal and error (400, 401, 403, 404, 409, 413, 415, 421, 500, 502, 503)": errorSchema,
} as const;

export const RESPONSE_SCHEMAS_SECTION = "dashboard responses";

/** The section of docs/dashboard.md: a heading and a JSON Schema per route. */
export function renderResponseSchemas(): string {
  return Object.entries(RESPONSE_SCHEMAS)
    .map(([route, schema]) => {
      const json = z.toJSONSchema(schema, { target: "draft-2020-12", io: "output" });
      return `#### ${route}\n\n\`\`\`json\n${JSON.stringify(json, null, 2)}\n\`\`\``;
    })
    .join("\n\n");
}
