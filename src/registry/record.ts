/**
 * A session record: one JSON file per work item, `<registryDir>/<slug>.json`. `active` and
 * `paused` are live; a work item never has two live sessions. The file is the durable truth the
 * daemon and the CLI share, so it is only ever replaced whole (atomic write) under its lock.
 */

import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import type { z } from "zod";
import { DamagedRecordError } from "../state/record-kind.js";
import type { RecordDamage, RecordKind } from "../state/record-kind.js";
import { sessionRecordShape } from "./record-shape.js";
import type { sessionClaimerSchema, sessionPullRequestSchema, sessionRecordSchema, sessionWorkspaceSchema, workItemSchema } from "./record-schema.js";

/** The schema (record-schema.ts) is the one description of a record; these types are inferred from it. */
export type SessionRecord = z.output<typeof sessionRecordSchema>;
export type SessionWorkItem = z.output<typeof workItemSchema>;
export type SessionWorkspace = z.output<typeof sessionWorkspaceSchema>;
export type SessionPullRequest = z.output<typeof sessionPullRequestSchema>;
export type SessionClaimer = z.output<typeof sessionClaimerSchema>;
export type SessionStatus = SessionRecord["status"];

/** Read from the schema's generated shape, so code that loads no schema library has them too. */
export const SESSION_STATUSES = sessionRecordShape.properties.status.enum;
export const LIVE_STATUSES: ReadonlySet<SessionStatus> = new Set(["active", "paused"]);

// A shape left stale by a change to the schema fails to compile here (and its test fails).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const shapeIsCurrent: Same<(typeof SESSION_STATUSES)[number], SessionStatus> = true;
void shapeIsCurrent;

/** Delivery ids and content keys kept on a record, newest last (two per event at most): what makes a redelivery after a restart a no-op. */
export const RECENT_DELIVERIES_MAX = 100;

const REMEDY = "inspect it and repair it, or move it aside to forget that session";

/** A session record file that does not hold its work item's record. */
export class RegistryRecordError extends DamagedRecordError {
  override readonly name: string = "RegistryRecordError";
  constructor(damage: RecordDamage) {
    super(damage, REMEDY);
  }
}

const STATUS_SET: ReadonlySet<unknown> = new Set(SESSION_STATUSES);

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * What a listing checks of a record: the fields it shows, by hand. `sessions list` over ten
 * thousand records has a budget of 300 ms with process start, the file reads alone take most of
 * it on a small machine, and a full check would add about 5% more (bench/sessions-list.ts prints
 * the price of a schema parse). Whatever acts on one record reads it in full (get()).
 */
function listingProblem(value: unknown): string | undefined {
  if (!isObject(value)) return "not a JSON object";
  if (value.version !== 1) return `unknown version ${JSON.stringify(value.version)}`;
  const workItem = value.workItem;
  if (!isObject(workItem) || typeof workItem.ref !== "string" || workItem.ref === "") return "workItem.ref: missing";
  if (typeof value.status !== "string" || !STATUS_SET.has(value.status)) return `status: unknown ${JSON.stringify(value.status)}`;
  for (const key of ["createdAt", "lastEventAt", "harness", "harnessSessionId", "tmuxTarget", "cwd", "url"] as const) {
    if (typeof value[key] !== "string") return `${key}: missing`;
  }
  if (!Array.isArray(value.recentDeliveries)) return "recentDeliveries: missing";
  return undefined;
}

/** Oldest first, then by ref. */
function compareRecords(a: SessionRecord, b: SessionRecord): number {
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  if (a.workItem.ref !== b.workItem.ref) return a.workItem.ref < b.workItem.ref ? -1 : 1;
  return 0;
}

/**
 * Session records as a record kind (state/record-store.ts): one JSON file per work item,
 * `<registryDir>/<slug>.json`. The schema is loaded when a write first needs it; the registry,
 * which reads single records with it, hands it over loaded.
 */
export const sessionRecordKind: RecordKind<typeof sessionRecordSchema> = {
  name: "session record",
  itemField: "workItem.ref",
  schema: async () => (await import("./record-schema.js")).sessionRecordSchema,
  listCheck: listingProblem,
  order: compareRecords,
  remedy: REMEDY,
  damaged: (damage) => new RegistryRecordError(damage),
  misaddressed: (named, item) => `refusing to write a record for ${named} as the session of ${item}`,
};

/** The reason a session's record closes with when another daemon adopts its item (docs/scale.md, "Losing a host: adoption"). */
export const ADOPTED_REASON = "adopted";

/**
 * What a new session of an item takes over from the record it replaces: an adopted session's
 * linked pull requests, so the adopter's session still receives their events and watches their
 * checks (the bindings themselves are shared; the record's list is what the checks' poller reads).
 */
export function carriedFrom(previous: SessionRecord | undefined): Pick<SessionRecord, "pullRequests"> {
  if (previous?.closeReason !== ADOPTED_REASON || previous.pullRequests === undefined || previous.pullRequests.length === 0) return {};
  return { pullRequests: previous.pullRequests.map((link) => ({ ...link })) };
}

export function isLive(record: Pick<SessionRecord, "status"> | undefined): boolean {
  return record !== undefined && LIVE_STATUSES.has(record.status);
}

/**
 * `loop-<root tag>-<slug>`: the tag keeps apart the sessions of two state roots (two projects) whose
 * work items share a slug (`local:default#1`) on one tmux server. Tags are hex and slugs are
 * `[a-z0-9-]`, so tmux never rewrites the name. Without a tag: `loop-<slug>`, the name sessions
 * were given before names carried one (their records still name it, and it is used as recorded).
 */
export function tmuxTargetFor(slug: string, rootTag?: string): string {
  return rootTag === undefined ? `loop-${slug}` : `loop-${rootTag}-${slug}`;
}

/**
 * 8 hex digits of the SHA-256 of the state root's real path: stable for one root however it is
 * reached (a relative path, a symlink), different for another. A root not yet made is taken as
 * its resolved path.
 */
export function stateRootTag(root: string): string {
  let real: string;
  try {
    real = realpathSync.native(root);
  } catch {
    real = resolve(root);
  }
  return createHash("sha256").update(real).digest("hex").slice(0, 8);
}
