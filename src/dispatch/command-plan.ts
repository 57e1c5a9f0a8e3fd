import type { ControlCommand } from "../config/schema.js";
import { planControl } from "../control/plan.js";
import type { ControlAction, ControlSituation } from "../control/plan.js";
import type { CommandEffect, ControlSource, PlanRejection } from "../control/types.js";
import type { InboundEvent } from "../routing/inbound.js";
import type { WorkItem } from "../workitem/index.js";

/**
 * What a control command does, as data: planControl (control/plan.ts) says what the command
 * means in its situation; planCommand adds how the dispatcher carries that out — when the
 * command's record is written, which registry change is made under the item's control lock, and
 * what slow part follows once the lock is released. Pure, so the table is pinned by tests; the
 * effects table (command-effects.ts) applies a plan without deciding anything again.
 */

/** A command to apply to one work item, from a comment or the CLI. */
export interface CommandInput {
  readonly workItem: WorkItem;
  readonly command: ControlCommand;
  readonly source: ControlSource;
  readonly actor: string;
  readonly note?: string | undefined;
  readonly deliveryId: string;
  /** The graph a start chose for the item, kept in its record (graphAtStart reads it). */
  readonly graph?: string | undefined;
  /** The harness an operator's start chose (the CLI's `--agent`), kept in its record (chooseHarness reads it). */
  readonly harness?: string | undefined;
  /** The spawn policy arms the item (its labels, as the event or the tracker shows them). */
  readonly armed: boolean;
  readonly itemClosed: boolean;
  /** What a spawn starts from and reactions go to: the comment, or a synthetic event for the CLI. */
  readonly event: InboundEvent;
}

/** What a command meets, with whether a start could have its harness. */
export interface CommandSituation extends ControlSituation {
  /** Why the default harness cannot be had (a start only); undefined when it can. */
  readonly harnessProblem?: string | undefined;
}

/**
 * When the command's record is written, relative to the registry change. `first`: the record is
 * the intent and the change its effect (a spawn, a stop), so a `kill -9` between the two leaves
 * something a restart completes — a start recorded without its claim is a pending start, a stop
 * recorded next to a live session is finished. `after`: the change first (a pause, a resume, a
 * confirmation), so a crash between leaves the session as asked with only the record missing.
 * `never`: the command changes nothing worth recording (a resume of an active session).
 */
export type RecordTiming = "first" | "after" | "never";

/** The registry change made under the item's control lock. */
export type Transition = "claim" | "pause" | "resume" | "close" | "none";

/** The slow part, once the lock is released. */
export type FollowUp =
  /** The claimed session's checkout, harness and announcement (startClaimed). */
  | "start-harness"
  /** The start stands, pending: its harness cannot be had. */
  | "start-pending"
  /** The stopped session's harness ended, its checkout released (finishClose). */
  | "finish-close"
  | "announce-paused"
  /** The resumed harness told to re-read the thread (it was not sent what it missed). */
  | "notify-resumed"
  | "none";

export type CommandPlan =
  | { readonly kind: "reject"; readonly reason: PlanRejection }
  | {
      readonly kind: "apply";
      readonly action: ControlAction;
      /** What the command did, unless the registry change says otherwise (a claim lost: noop). */
      readonly effect: CommandEffect;
      readonly record: RecordTiming;
      readonly transition: Transition;
      readonly followUp: FollowUp;
      /** Why a start is pending from the outset. */
      readonly problem?: string;
    };

export type AppliedPlan = Extract<CommandPlan, { readonly kind: "apply" }>;

/**
 * | planControl's action | harness  | record | transition | follow-up       | effect          |
 * |----------------------|----------|--------|------------|-----------------|-----------------|
 * | spawn                | can run  | first  | claim      | start-harness   | started         |
 * | spawn                | cannot   | after  | none       | start-pending   | start-pending   |
 * | close                |          | first  | close      | finish-close    | stopped         |
 * | pause                |          | after  | pause      | announce-paused | paused          |
 * | resume               |          | after  | resume     | notify-resumed  | resumed         |
 * | none                 |          | after  | none       | none            | noop / recorded |
 *
 * `record` is `never` wherever planControl does not record the command.
 */
export function planCommand(situation: CommandSituation): CommandPlan {
  const plan = planControl(situation);
  if (plan.kind === "reject") return plan;
  const { action, effect } = plan;
  const timing = (wanted: RecordTiming): RecordTiming => (plan.record ? wanted : "never");
  const apply = (record: RecordTiming, transition: Transition, followUp: FollowUp): AppliedPlan => ({
    kind: "apply",
    action,
    effect,
    record: timing(record),
    transition,
    followUp,
  });
  switch (action) {
    case "spawn":
      if (situation.harnessProblem !== undefined) {
        return { ...apply("after", "none", "start-pending"), effect: "start-pending", problem: situation.harnessProblem };
      }
      return apply("first", "claim", "start-harness");
    case "close":
      return apply("first", "close", "finish-close");
    case "pause":
      return apply("after", "pause", "announce-paused");
    case "resume":
      return apply("after", "resume", "notify-resumed");
    case "none":
      return apply("after", "none", "none");
  }
}
