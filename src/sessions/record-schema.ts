import { z } from "zod";
import { SESSION_STATUSES } from "./record.js";
import type { SessionRecord } from "./record.js";

/**
 * The validation of session records, kept apart from their types so that reading a listing
 * (`the-loop sessions list`) never loads the schema library. Every write is checked against it.
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
  workspace: z
    .object({ checkout: z.string().min(1), strategy: z.enum(["worktree", "clone"]), branch: z.string().optional() })
    .optional(),
  pullRequests: z
    .array(
      z.object({
        ref: z.string().min(1),
        source: z.enum(["closing-reference", "branch", "explicit"]),
        linkedAt: z.string(),
      }),
    )
    .optional(),
  harnessStartedAt: z.string().optional(),
  claimedBy: z.object({ pid: z.number().int().positive(), startTicks: z.number().int().optional() }).optional(),
});

// The schema and the hand-written type must describe the same record.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const schemaMatchesType: Same<z.output<typeof sessionRecordSchema>, SessionRecord> = true;
void schemaMatchesType;

