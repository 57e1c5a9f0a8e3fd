/**
 * A session record: one JSON file per work item, `<registryDir>/<slug>.json`. `active` and
 * `paused` are live; a work item never has two live sessions. The file is the durable truth the
 * daemon and the CLI share, so it is only ever replaced whole (atomic write) under its lock.
 */

import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import { resolve } from "node:path";

export const SESSION_STATUSES = ["active", "paused", "closed"] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];
export const LIVE_STATUSES: ReadonlySet<SessionStatus> = new Set(["active", "paused"]);

/** Delivery ids and content keys kept on a record, newest last (two per event at most): what makes a redelivery after a restart a no-op. */
export const RECENT_DELIVERIES_MAX = 100;

export interface SessionWorkItem {
  readonly ref: string;
  readonly tracker: "github" | "local";
  readonly host: string;
  readonly repository: string;
  readonly number: number;
  readonly kind: "issue" | "pull_request";
  readonly url: string;
  readonly id: string;
}

export interface SessionRecord {
  version: 1;
  workItem: SessionWorkItem;
  harness: string;
  harnessSessionId: string;
  cwd: string;
  status: SessionStatus;
  createdAt: string;
  lastEventAt: string;
  tmuxTarget: string;
  recentDeliveries: string[];
  url: string;
  closedAt?: string | undefined;
  closeReason?: string | undefined;
  /** The question an agent asked with `the-loop ask`, until the next event answers it. */
  awaitingInput?: { question: string; askedAt: string } | undefined;
  /** The checkout the session runs in, when it has its own (removed on close unless kept). */
  workspace?: SessionWorkspace | undefined;
  /** Pull requests whose events reach this session, with how each was bound. */
  pullRequests?: SessionPullRequest[] | undefined;
  /**
   * When the session's harness was last started in tmux: written by the process that claimed the
   * session once its spawn succeeded, and by a respawn. Until it is there, a pane missing from
   * tmux is one the claimer is still starting, not a dead harness (see harnessStarted). Records
   * written before this field existed have none.
   */
  harnessStartedAt?: string | undefined;
  /**
   * The process that claimed the session, as a pidfile names its holder (its pid and, where /proc
   * tells it, its start time in clock ticks since boot). While the harness is not marked started,
   * a claimer that no longer runs will never start it: a delivery then takes over at once instead
   * of waiting out harnessStartBound. Records written before this field existed have none.
   */
  claimedBy?: SessionClaimer | undefined;
}

export interface SessionClaimer {
  pid: number;
  startTicks?: number | undefined;
}

export interface SessionWorkspace {
  checkout: string;
  strategy: "worktree" | "clone";
  /** The PR head branch checked out; absent when the default branch was. */
  branch?: string | undefined;
}

export interface SessionPullRequest {
  ref: string;
  source: "closing-reference" | "branch" | "explicit";
  linkedAt: string;
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
