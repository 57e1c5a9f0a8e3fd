import { z } from "zod";

/**
 * A session record: one JSON file per work item, `<registryDir>/<slug>.json`. `active` and
 * `paused` are live; a work item never has two live sessions. The file is the durable truth the
 * daemon and the CLI share, so it is only ever replaced whole (atomic write) under its lock.
 */

export const SESSION_STATUSES = ["active", "paused", "closed"] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];
export const LIVE_STATUSES: ReadonlySet<SessionStatus> = new Set(["active", "paused"]);

/** Delivery ids kept on a record, newest last: what makes a redelivery after a restart a no-op. */
export const RECENT_DELIVERIES_MAX = 50;

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

export const sessionRecordSchema = z.object({
  version: z.literal(1),
  workItem: workItemSchema,
  harness: z.string().min(1),
  harnessSessionId: z.string().min(1),
  cwd: z.string().min(1),
  status: z.enum(SESSION_STATUSES),
  createdAt: z.string(),
  lastEventAt: z.string(),
  tmuxTarget: z.string().min(1),
  recentDeliveries: z.array(z.string()),
  url: z.string(),
  closedAt: z.string().optional(),
  closeReason: z.string().optional(),
  /** The question an agent asked with `the-loop ask`, until the next event answers it. */
  awaitingInput: z.object({ question: z.string(), askedAt: z.string() }).optional(),
});

export type SessionRecord = z.output<typeof sessionRecordSchema>;

export function isLive(record: Pick<SessionRecord, "status"> | undefined): boolean {
  return record !== undefined && LIVE_STATUSES.has(record.status);
}

/** `loop-<slug>`: slugs are `[a-z0-9-]`, so tmux never rewrites the name. */
export function tmuxTargetFor(slug: string): string {
  return `loop-${slug}`;
}
