import type { z } from "zod";
import type { ControlCommand } from "../config/schema.js";
import type { SessionStatus } from "../registry/record.js";
import type { controlRecordSchema } from "./record-schema.js";

/**
 * Execution control: the four commands an authorized person gives by comment keyword or from the
 * CLI, what each did, and the record kept per work item. Every name here is shared by the parser,
 * the router, the dispatcher, the control-record store and the CLI, so they cannot drift apart.
 */

export { CONTROL_COMMANDS, DEFAULT_CONTROL_KEYWORDS } from "../config/schema.js";
export type { ControlCommand, ControlConfig } from "../config/schema.js";

/**
 * The last command recorded for a work item: `<state.root>/sessions/control/<slug>.json`. Its one
 * description is controlRecordSchema (record-schema.ts, where each field is documented); the
 * type is inferred from it.
 */
export type ControlRecord = z.output<typeof controlRecordSchema>;

/**
 * Where a command came from: a comment on the tracker, `the-loop sessions <command>`, or a
 * lifecycle hook that refused a start (CONTROL_SOURCES).
 */
export type ControlSource = ControlRecord["source"];

/** Commands that ask for execution to run; the others stop or hold it. */
export const ARMING_COMMANDS: ReadonlySet<ControlCommand> = new Set(["start", "resume"]);

/** What an applied command did (the `effect` of `control.command`; each is described in CONTROL_EFFECTS). */
export type ControlEffect = ControlRecord["effect"];

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
  /** The graph a start chose for the item (`--graph`); ignored on the other commands. */
  readonly graph?: string;
  /** The harness an operator's start chose for the item (`--agent`, the CLI only); ignored on the other commands. */
  readonly harness?: string;
  /** What the boot prompt of the session a start spawns ends with (an adoption's note); ignored on the other commands. */
  readonly bootNote?: string;
  /**
   * The branch the checkout of the session a start spawns is made on, when no pull request's
   * event names one (an adoption's: the lost host's pull request branch); ignored on the other commands.
   */
  readonly branch?: string;
}

export type ControlOutcome =
  | {
      readonly applied: true;
      readonly effect: CommandEffect;
      /** The item's session after the command, when it has one. */
      readonly session?: { readonly tmuxTarget: string; readonly status: SessionStatus };
      /** Why a start is pending (its spawn failed, or the caps queued it), or what else went wrong after the command applied. */
      readonly problem?: string;
      /** The start waits in the start queue (routing.limits): pending, and nothing failed. */
      readonly queued?: true;
    }
  | { readonly applied: false; readonly reason: ControlRejection; readonly message: string };
