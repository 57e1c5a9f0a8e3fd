import { join } from "node:path";
import { z } from "zod";
import { DamagedRecordError, FILE_BACKEND } from "../state/index.js";
import type { LocatedRecordStore, LockOptions, RecordBackend, RecordDamage, RecordKind, StatePaths } from "../state/index.js";

/**
 * Gate answers held while the-loop cannot learn the login it posts as (self-check.ts): one record
 * per work item in the one record store (state/record-store.ts), `<state.root>/graphs/held/<slug>.json`,
 * so a hold survives a daemon restart. Each answer keeps what deciding it needs — who gave it,
 * which answer, how — and when it was first held (the hold's bound counts from there). It is
 * removed once decided: taken, refused, or refused for want of the login.
 */

const timestamp = z.iso.datetime();

export const heldGateAnswerSchema = z.strictObject({
  /** The delivery id of the comment or review: the same answer is held once. */
  id: z.string().min(1).max(512),
  author: z.string().min(1).max(256),
  decision: z.enum(["approved", "changes-requested"]),
  via: z.enum(["keyword", "review"]),
  heldAt: timestamp,
  /** The last reason it could not be decided. */
  reason: z.string().max(4_000),
});

export const heldGateAnswersSchema = z.strictObject({
  version: z.literal(1),
  ref: z.string().min(1),
  /** Oldest first: decided in the order they were given. */
  answers: z.array(heldGateAnswerSchema).max(100),
});

export type HeldGateAnswer = z.output<typeof heldGateAnswerSchema>;
export type HeldGateAnswers = z.output<typeof heldGateAnswersSchema>;

/** Answers one item may have held at once: past it the oldest is refused (asked for again). */
export const HELD_ANSWERS_MAX = 100;

function remedyFor(item: string): string {
  return `its answers are not decided: delete the file (the answers in it are then given again on ${item}), or repair it by hand`;
}

export class HeldGateAnswersError extends DamagedRecordError {
  override readonly name: string = "HeldGateAnswersError";
  constructor(damage: RecordDamage) {
    super(damage, remedyFor(damage.item));
  }
}

export const heldGateAnswersKind: RecordKind<typeof heldGateAnswersSchema> = {
  name: "held gate answers record",
  itemField: "ref",
  schema: heldGateAnswersSchema,
  order: (a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0),
  remedy: remedyFor("REF"),
  damaged: (damage) => new HeldGateAnswersError(damage),
};

export type HeldGateAnswerStore = LocatedRecordStore<HeldGateAnswers>;

/** Where held gate answers live: beside the graph states, in their own folder. */
export function heldAnswersDir(paths: Pick<StatePaths, "graphsDir">): string {
  return join(paths.graphsDir, "held");
}

export function openHeldGateAnswers(
  paths: Pick<StatePaths, "graphsDir">,
  options: { readonly lock?: LockOptions; readonly backend?: RecordBackend } = {},
): HeldGateAnswerStore {
  return (options.backend ?? FILE_BACKEND).records(heldGateAnswersKind, {
    key: "held-gate-answers",
    file: { dir: heldAnswersDir(paths), ...(options.lock ? { lock: options.lock } : {}) },
  });
}
