import type { ControlCommand } from "../config/schema.js";
import type { SessionStatus } from "../sessions/record.js";

/**
 * Execution control: the four commands an authorized person gives by comment keyword or from the
 * CLI, what each did, and the record kept per work item. Every name here is shared by the parser,
 * the router, the dispatcher, the control-record store and the CLI, so they cannot drift apart.
 */

export { CONTROL_COMMANDS, DEFAULT_CONTROL_KEYWORDS } from "../config/schema.js";
export type { ControlCommand, ControlConfig } from "../config/schema.js";

/**
 * Where a command came from: a comment on the tracker, `the-loop sessions <command>`, or a
 * lifecycle hook that refused a start (its record disarms the item; the actor is the hook's name).
 */
export type ControlSource = "comment" | "cli" | "hook";

/** Commands that ask for execution to run; the others stop or hold it. */
export const ARMING_COMMANDS: ReadonlySet<ControlCommand> = new Set(["start", "resume"]);

/** What an applied command did (the `effect` of `control.command`). */
export type ControlEffect =
  /** A session was spawned for the item. */
  | "started"
  /** The start was honoured and recorded but the spawn failed; the next event or daemon start retries it. */
  | "start-pending"
  /** A paused session is active again and was told to re-read the thread. */
  | "resumed"
  | "paused"
  /** The live session was closed through the normal close path. */
  | "stopped"
  /** No live session: the command is remembered as the item's control state (pause, stop). */
  | "recorded"
  /** Already in the state asked for. */
  | "noop"
  /** A lifecycle hook refused the start (`proceed: false`): the item is disarmed until the next start. */
  | "refused";

/** What a command itself does (planControl); `refused` is only ever a hook's record. */
export type CommandEffect = Exclude<ControlEffect, "refused">;

/** Why a recognised command was refused (`control.rejected`); a refused command is never recorded. */
export type ControlRejection =
  /** start on an item the spawn policy does not arm (no auto-execute label, or `spawnOnUnmatched: never`). */
  | "not-armed"
  /** start on a closed item. */
  | "item-closed"
  /** resume with no live session. */
  | "nothing-to-resume"
  /** start refused by a lifecycle hook (`proceed: false` at work_item_start); the item is disarmed. */
  | "hook-refused";

/** The refusals the command table itself decides (planControl); a hook's comes after it. */
export type PlanRejection = Exclude<ControlRejection, "hook-refused">;

/**
 * The last command recorded for a work item: `<state.root>/sessions/control/<slug>.json`, written
 * atomically under its lock. Arming commands are recorded only when they acted; disarming ones
 * always, so a stopped item stays stopped.
 */
export interface ControlRecord {
  version: 1;
  /** Canonical work item ref. */
  ref: string;
  command: ControlCommand;
  source: ControlSource;
  /** The tracker login (comment) or the local OS user (cli). */
  actor: string;
  /** ISO 8601 UTC. */
  requestedAt: string;
  effect: ControlEffect;
  /** The comment's URL, or the CLI command that was run. */
  note?: string | undefined;
  deliveryId?: string | undefined;
  /**
   * Delivery ids and content keys of the commands the item took (this one included), newest
   * last: a command redelivered, or seen again by the other ingress path, is not taken twice.
   */
  recentDeliveries?: string[] | undefined;
  /**
   * Set when the item's session ended for another reason (the item closed, `sessions close`): the
   * command is kept for the record but no longer governs whether the item may start.
   */
  clearedAt?: string | undefined;
  clearedBy?: string | undefined;
}

/** What the last command means for starting a session on the item. */
export type ControlState =
  /** No command governs the item: the spawn policy and requireStartCommand decide. */
  | "none"
  /** An honoured start (or resume) stands: the item may spawn without another command. */
  | "start-requested"
  /** Paused or stopped: nothing spawns until the next start. */
  | "disarmed";

/** A command to carry out on one work item (the CLI's path; a comment's goes through the router). */
export interface ControlRequest {
  /** Canonical work item ref. */
  readonly ref: string;
  readonly command: ControlCommand;
  readonly source: ControlSource;
  readonly actor: string;
  readonly note?: string;
  readonly deliveryId?: string;
}

export type ControlOutcome =
  | {
      readonly applied: true;
      readonly effect: CommandEffect;
      /** The item's session after the command, when it has one. */
      readonly session?: { readonly tmuxTarget: string; readonly status: SessionStatus };
      /** Why a start is pending (its spawn failed), or what else went wrong after the command applied. */
      readonly problem?: string;
    }
  | { readonly applied: false; readonly reason: ControlRejection; readonly message: string };
