import type { GraphState } from "./state.js";
import { isFinalGraphStatus } from "../graph/types.js";
import type { FinalGraphStatus, Graph } from "../graph/types.js";
import { durationText } from "./outcomes.js";

/**
 * What a session is told when its run ends or is blocked under it, and when a session whose run
 * ended is closed (`graph.closeAfterMinutes`). Pure: the graph driver pastes the text and closes
 * the session (graph-driver/run-end-session.ts). Each message begins `the-loop run ended for REF`
 * or `the-loop block for REF`, as the assignment begins `the-loop assignment for REF`, so an agent
 * (and a person reading the transcript) can tell the-loop's own messages from anything else.
 */

/** The history kinds that end a run: where its end time is read. */
const END_KINDS: ReadonlySet<string> = new Set(["completed", "failed", "exhausted", "stalled", "canceled"]);

/** When the run ended: its last ending history entry, else its last change. */
export function runEndedAt(state: GraphState): string {
  for (let index = state.history.length - 1; index >= 0; index -= 1) {
    const entry = state.history[index];
    if (entry !== undefined && END_KINDS.has(entry.kind)) return entry.at;
  }
  return state.updatedAt;
}

/** How a session's close after its run's end is said: `in 10 minutes`, `now`, or that it stays. */
export function closeAfterText(closeAfterMs: number | undefined): string {
  if (closeAfterMs === undefined) return "This session stays open until someone closes it (graph.closeAfterMinutes: never).";
  if (closeAfterMs === 0) return "This session is closed now (graph.closeAfterMinutes: 0); its transcript is kept.";
  return `This session is closed in ${durationText(closeAfterMs)} (graph.closeAfterMinutes); its transcript is kept.`;
}

/** `close_after` of graph.session_told: minutes as the config spells them, or `never`. */
export function closeAfterField(closeAfterMs: number | undefined): string {
  return closeAfterMs === undefined ? "never" : String(closeAfterMs / 60_000);
}

const ENDED: Readonly<Record<FinalGraphStatus, string>> = {
  done: "is done: its terminal node was reached",
  failed: "failed",
  exhausted: "is exhausted (out of generations)",
  stalled: "stalled (no progress within graph.stallAfterMinutes)",
  canceled: "was canceled",
};

/** The one message a session gets when its run ends. */
export function runEndedText(graph: Graph, state: GraphState, closeAfterMs: number | undefined): string {
  const status = isFinalGraphStatus(state.status) ? state.status : "done";
  const lines = [`the-loop run ended for ${state.ref}: the ${graph.name} run ${ENDED[status]}, at node "${state.node}".`];
  if (status !== "done" && state.reason !== undefined) lines.push("", `Why: ${state.reason}`);
  lines.push("", "There is nothing left to work on in this run: do not claim a node again, and do not start new work for it.", closeAfterText(closeAfterMs));
  return lines.join("\n");
}

/** What stopped the item: the block's reason code (`capability-gate`, `capability-step`, …). */
export type BlockWhat = string;

const BLOCKED_BY: Readonly<Record<string, string>> = {
  "capability-gate": "a capability's gate stopped it",
  "capability-step": "a capability's step failed and halts",
  "task-resolver": "a task's content could not be resolved",
  "capability-changed": "a capability's bundle changed since it was consented to, so it was not used",
};

/** The message a session gets when a gate or a check blocks its item (after its claim, or at the node it was given). */
export function blockedText(input: {
  readonly ref: string;
  readonly graph: string;
  readonly node: string;
  readonly what: BlockWhat;
  readonly reason: string;
}): string {
  return [
    `the-loop block for ${input.ref}: the item is blocked at node "${input.node}" of the ${input.graph} graph: ${BLOCKED_BY[input.what] ?? "a capability stopped it"}.`,
    "",
    `The gate's message: ${input.reason}`,
    "",
    "If it names something in your working directory, fix it. The item stays blocked until an authorized person's gate answer, or `the-loop graph force`, resumes it: do not claim again until you are given an assignment.",
  ].join("\n");
}

export interface CloseDueInput {
  readonly status: GraphState["status"];
  /** runEndedAt of the item's state. */
  readonly endedAt: string;
  /** The live session's createdAt: a session begun after the run ended is not that run's. */
  readonly sessionCreatedAt: string;
  readonly now: Date;
  /** graph.closeAfterMinutes in ms; undefined: never. */
  readonly closeAfterMs: number | undefined;
}

/** Whether the item's live session is to be closed now because its run ended long enough ago. */
export function sessionCloseDue(input: CloseDueInput): boolean {
  if (input.closeAfterMs === undefined || !isFinalGraphStatus(input.status)) return false;
  const ended = Date.parse(input.endedAt);
  if (Number.isNaN(ended)) return false;
  const created = Date.parse(input.sessionCreatedAt);
  if (!Number.isNaN(created) && created > ended) return false;
  return input.now.getTime() - ended >= input.closeAfterMs;
}
