import { z } from "zod";
import { recordShapeModuleText } from "../state/index.js";

/**
 * The session record's one description: its TypeScript types (record.ts) are inferred from this
 * schema, every write is validated with it, and so is every read of one record. It is kept apart
 * from record.ts so that listing the registry (`the-loop sessions list`) never loads the schema
 * library: what zod-free code needs of it comes from its generated shape (record-shape.ts).
 */

export const workItemSchema = z.object({
  ref: z.string().min(1),
  tracker: z.enum(["github", "local"]),
  host: z.string(),
  repository: z.string(),
  number: z.number().int().positive(),
  kind: z.enum(["issue", "pull_request"]),
  url: z.string(),
  id: z.string(),
});

export const sessionWorkspaceSchema = z.object({
  checkout: z.string().min(1),
  strategy: z.enum(["worktree", "clone"]),
  /** The PR head branch checked out; absent when the default branch was. */
  branch: z.string().optional(),
});

export const sessionPullRequestSchema = z.object({
  ref: z.string().min(1),
  source: z.enum(["closing-reference", "branch", "explicit"]),
  linkedAt: z.string(),
});

export const sessionClaimerSchema = z.object({
  pid: z.number().int().positive(),
  startTicks: z.number().int().optional(),
});

/**
 * A session record: one per work item. `active` and `paused` are live; a work item never has
 * two live sessions. `closed` and `failed` are not: `failed` is a session whose harness died
 * more times in a row than `routing.supervision.maxRestarts` allows (failed to start, with
 * `failureReason`). Written before the harness starts, and only ever replaced whole under its lock.
 */
export const sessionRecordSchema = z.object({
  version: z.literal(1),
  workItem: workItemSchema,
  harness: z.string().min(1),
  harnessSessionId: z.string().min(1),
  cwd: z.string().min(1),
  status: z.enum(["active", "paused", "closed", "failed"]),
  createdAt: z.string(),
  lastEventAt: z.string(),
  tmuxTarget: z.string().min(1),
  recentDeliveries: z.array(z.string()),
  url: z.string(),
  closedAt: z.string().optional(),
  closeReason: z.string().optional(),
  /** The question an agent asked with `the-loop ask`, until the next event answers it. */
  awaitingInput: z.object({ question: z.string(), askedAt: z.string() }).optional(),
  /** The checkout the session runs in, when it has its own (removed on close unless kept). */
  workspace: sessionWorkspaceSchema.optional(),
  /** Pull requests whose events reach this session, with how each was bound. */
  pullRequests: z.array(sessionPullRequestSchema).optional(),
  /**
   * When the session's harness was last started in tmux: written by the process that claimed the
   * session once its spawn succeeded, and by a respawn. Until it is there, a pane missing from
   * tmux is one the claimer is still starting, not a dead harness (see harnessStarted). Records
   * written before this field existed have none.
   */
  harnessStartedAt: z.string().optional(),
  /**
   * The process that made that start (as claimedBy names one). While it runs, and the start is
   * recent, a pane not live yet is one it is still bringing up: the supervision leaves it be.
   */
  harnessStartedBy: sessionClaimerSchema.optional(),
  /**
   * The process that claimed the session, as a pidfile names its holder (its pid and, where /proc
   * tells it, its start time in clock ticks since boot). While the harness is not marked started,
   * a claimer that no longer runs will never start it: a delivery then takes over at once instead
   * of waiting out harnessStartBound. Records written before this field existed have none.
   */
  claimedBy: sessionClaimerSchema.optional(),
  /**
   * The SHA-256 (hex) of the credential the session's harness was given at its last start
   * (THE_LOOP_SESSION_TOKEN): what proves a request on the daemon's socket comes from this
   * session. The credential itself is never stored. Records written before it existed have none.
   */
  credentialSha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  /**
   * How many times in a row the supervision started the harness again after it died (a harness
   * that ran long enough starts the count again); absent before the first restart.
   */
  restarts: z.number().int().min(0).optional(),
  /** Why the session failed to start (status `failed`): what its harness did, how many restarts. */
  failureReason: z.string().optional(),
});

export const SESSION_RECORD_SHAPE_FILE = "src/registry/record-shape.ts";

/** The generated module of the schema's shape (`npm run generate` writes it to SESSION_RECORD_SHAPE_FILE). */
export function sessionRecordShapeModule(): string {
  return recordShapeModuleText(
    "sessionRecordShape",
    "sessionRecordSchema (src/registry/record-schema.ts)",
    z.toJSONSchema(sessionRecordSchema, { io: "input" }),
  );
}
