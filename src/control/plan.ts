import type { CommandEffect, ControlCommand, ControlRecord, ControlState, PlanRejection } from "./types.js";
import { ARMING_COMMANDS } from "./types.js";

/**
 * The execution-control decisions as plain functions over data: what a command does in each
 * situation, and whether an item may start a session. The dispatcher performs the plan; the
 * router consults the gate. Both tables are pinned by tests.
 */

/** What a command (and the router) sees of a work item's session: live and running, live and paused, or none live. */
export type SessionState = "active" | "paused" | "none";

/**
 * The one mapping from a session record (or what the router sees of one) to its SessionState:
 * `active` and `paused` are live, anything else (a closed record, no record) is `none`. Structural,
 * so the router and the sessions side both stand on it without importing each other.
 */
export function sessionStateOf(record: { readonly status: string } | undefined): SessionState {
  if (record?.status === "active") return "active";
  if (record?.status === "paused") return "paused";
  return "none";
}

/** What a command meets on its work item. */
export interface ControlSituation {
  readonly command: ControlCommand;
  /** The item's live session, if any. */
  readonly session: SessionState;
  /** The spawn policy arms the item: `always`, or `labeled` and it carries the label. */
  readonly armed: boolean;
  readonly itemClosed: boolean;
  /** Its start waits in the start queue (routing.limits, docs/fleet.md): a resume with no live session releases it there. */
  readonly queued?: boolean;
}

/** What to do to the session, besides recording the command. */
export type ControlAction = "spawn" | "resume" | "pause" | "close" | "none";

export type ControlPlan =
  | { readonly kind: "reject"; readonly reason: PlanRejection }
  | { readonly kind: "apply"; readonly action: ControlAction; readonly record: boolean; readonly effect: CommandEffect };

function apply(action: ControlAction, record: boolean, effect: CommandEffect): ControlPlan {
  return { kind: "apply", action, record, effect };
}

function reject(reason: PlanRejection): ControlPlan {
  return { kind: "reject", reason };
}

/**
 * | command | no live session                                   | paused            | active          |
 * |---------|---------------------------------------------------|-------------------|-----------------|
 * | start   | armed and open: record, spawn; else refuse         | record, resume    | record, no-op   |
 * | resume  | queued: record (start-pending); else refuse (nothing-to-resume) | record, resume | no-op      |
 * | pause   | record (the item stays disarmed)                   | record, no-op     | record, pause   |
 * | stop    | record (the item stays disarmed)                   | record, close     | record, close   |
 *
 * An arming command is recorded only when it acts or confirms a running session; a refused one
 * leaves nothing behind, so arming the item later does not start it. The one exception is a
 * queued start (docs/fleet.md): a pause keeps its place in the queue, so the resume that follows
 * has something to resume — the start — and is recorded as it stands, pending in its place.
 */
export function planControl(situation: ControlSituation): ControlPlan {
  const { command, session } = situation;
  switch (command) {
    case "start":
      if (session === "active") return apply("none", true, "noop");
      if (session === "paused") return apply("resume", true, "resumed");
      if (situation.itemClosed) return reject("item-closed");
      if (!situation.armed) return reject("not-armed");
      return apply("spawn", true, "started");
    case "resume":
      if (session === "paused") return apply("resume", true, "resumed");
      if (session === "active") return apply("none", false, "noop");
      if (situation.queued === true) return apply("none", true, "start-pending");
      return reject("nothing-to-resume");
    case "pause":
      if (session === "active") return apply("pause", true, "paused");
      if (session === "paused") return apply("none", true, "noop");
      return apply("none", true, "recorded");
    case "stop":
      if (session === "none") return apply("none", true, "recorded");
      return apply("close", true, "stopped");
  }
}

/** The state a control record puts the item in; a cleared record governs nothing. */
export function controlStateOf(record: Pick<ControlRecord, "command" | "clearedAt"> | undefined): ControlState {
  if (record === undefined || record.clearedAt !== undefined) return "none";
  return ARMING_COMMANDS.has(record.command) ? "start-requested" : "disarmed";
}

/** Why an item the spawn policy arms does not start a session now; undefined: it may. */
export type SpawnHold = "awaiting-start" | "execution-stopped";

/**
 * The start gate, for an item the spawn policy arms and that has no live session. A pause or
 * stop holds it whatever the settings (disarming always wins); otherwise, with the start command
 * required, only an honoured start lets it spawn. With control off no comment can start anything,
 * so requiring a start would strand every item: the label alone spawns, as before.
 */
export function spawnHold(state: ControlState, control: { readonly enabled: boolean; readonly requireStartCommand: boolean }): SpawnHold | undefined {
  if (state === "disarmed") return "execution-stopped";
  if (state === "start-requested") return undefined;
  return control.enabled && control.requireStartCommand ? "awaiting-start" : undefined;
}
