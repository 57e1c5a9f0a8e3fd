import { z } from "zod";
import { EXIT_FAILURE, ExitError } from "../errors.js";
import { CorruptFileError, FileDocumentStore } from "../state/index.js";
import type { DocumentStore } from "../state/index.js";
import { parseLegacyLedger } from "./legacy-poll-state.js";
import type { LegacyLedger } from "./legacy-poll-state.js";

/**
 * The poller's durable memory: per source, the cursor up to which every change is settled, plus
 * the changes after it that are settled already (`handled`) or have failed (`attempts`). The
 * cursor only moves once its whole batch is settled, so a crash never skips a change, and the
 * ids in `handled` keep a restart from handing out a settled one again.
 */

export const POLL_STATE_VERSION = 1;

/**
 * `handled` only holds ids after the cursor, which moves as soon as a batch is fully settled, so
 * it is small in practice; the cap only stops a pathological backlog from growing it unbounded.
 */
export const MAX_HANDLED_IDS = 10_000;

export interface PollSourceState {
  /** Opaque tracker cursor: every change up to it is settled. */
  cursor: string;
  /** Ids of changes after the cursor that are settled (handled, or given up), oldest first. */
  handled: string[];
  /** Failed attempts of changes after the cursor that are not settled yet. */
  attempts: Record<string, number>;
  /**
   * Changes after the cursor that the handler holds (an adoption's start waits in the start
   * queue), each with when it was first held: not failures, and given up only past the poller's
   * maxHeldMs. Absent in a file from before it, and when nothing is held.
   */
  held?: Record<string, string>;
  updatedAt: string;
}

export interface PollState {
  version: typeof POLL_STATE_VERSION;
  /** Keyed by source key (`local:*`, `local:demo,other`). */
  sources: Record<string, PollSourceState>;
}

const sourceStateSchema = z.object({
  cursor: z.string(),
  handled: z.array(z.string()),
  attempts: z.record(z.string(), z.number().int().nonnegative()),
  held: z.record(z.string(), z.string()).optional(),
  updatedAt: z.string(),
});

const pollStateSchema = z.object({
  version: z.literal(POLL_STATE_VERSION),
  sources: z.record(z.string(), sourceStateSchema),
});

/** A poll state file that is not what the poller writes. Exit 1. */
export class PollStateError extends ExitError {
  override readonly name: string = "PollStateError";
  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(`${path} is not valid poll state (${reason}); move it aside to start from now (history is then taken as read)`, EXIT_FAILURE);
  }
}

export function emptyPollState(): PollState {
  return { version: POLL_STATE_VERSION, sources: {} };
}

/** Keeps the newest ids: older ones are the likeliest to be behind a cursor already. */
export function capHandled(handled: readonly string[]): string[] {
  return handled.length > MAX_HANDLED_IDS ? handled.slice(-MAX_HANDLED_IDS) : [...handled];
}

/** Where poll state is kept: a file's path, or a document of the state (the database's `poll-state` row). */
export type PollStateTarget = string | DocumentStore;

const documentOf = (target: PollStateTarget): DocumentStore => (typeof target === "string" ? new FileDocumentStore({ file: target }) : target);

/**
 * The state in `path`; empty when there is none yet. An older per-item ledger is turned into
 * state by `adopt` (each source's starting cursor; empty without it). Throws PollStateError when
 * the content is neither.
 */
export async function loadPollState(target: PollStateTarget, adopt?: (ledger: LegacyLedger) => Record<string, PollSourceState>): Promise<PollState> {
  const document = documentOf(target);
  const path = document.where;
  let value: unknown;
  try {
    value = await document.read();
  } catch (error) {
    if (error instanceof CorruptFileError) throw new PollStateError(path, "it is not JSON");
    throw error;
  }
  if (value === undefined) return emptyPollState();
  const result = pollStateSchema.safeParse(value);
  if (!result.success) {
    const legacy = parseLegacyLedger(value);
    if (legacy === undefined) throw new PollStateError(path, problemOf(result.error));
    if ("problem" in legacy) throw new PollStateError(path, legacy.problem);
    return { version: POLL_STATE_VERSION, sources: copySources(adopt?.(legacy.ledger) ?? {}) };
  }
  return { version: POLL_STATE_VERSION, sources: copySources(result.data.sources) };
}

/** Replaces the state atomically: a crash at any instant leaves the old or the new state, whole. */
export async function savePollState(target: PollStateTarget, state: PollState): Promise<void> {
  await documentOf(target).write({ version: POLL_STATE_VERSION, sources: copySources(state.sources) } satisfies PollState);
}

/**
 * Writes the state of `keys` only, into the stored state read under the document's lock: when
 * several daemons share one state, each writes the sources it polls and keeps the others' as stored.
 */
export async function savePollSources(target: PollStateTarget, state: PollState, keys: readonly string[]): Promise<void> {
  const document = documentOf(target);
  await document.transaction(async (current) => {
    let stored: Record<string, PollSourceState> = {};
    if (current !== undefined) {
      const result = pollStateSchema.safeParse(current);
      if (!result.success) throw new PollStateError(document.where, problemOf(result.error));
      stored = result.data.sources;
    }
    const mine = Object.fromEntries(keys.flatMap((key) => (state.sources[key] !== undefined ? [[key, state.sources[key]] as const] : [])));
    return { value: { version: POLL_STATE_VERSION, sources: copySources({ ...stored, ...mine }) } satisfies PollState, result: undefined };
  });
}

/**
 * A deep copy, so a write in flight never sees the caller's later mutations. fromEntries defines
 * own properties, so even a key like `__proto__` in a hand-edited file stays plain data.
 */
function copySources(sources: Readonly<Record<string, PollSourceState>>): Record<string, PollSourceState> {
  return Object.fromEntries(
    Object.entries(sources).map(([key, source]) => [
      key,
      {
        cursor: source.cursor,
        handled: capHandled(source.handled),
        attempts: Object.fromEntries(Object.entries(source.attempts)),
        ...(source.held !== undefined && Object.keys(source.held).length > 0 ? { held: Object.fromEntries(Object.entries(source.held)) } : {}),
        updatedAt: source.updatedAt,
      },
    ]),
  );
}

function problemOf(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "unexpected content";
  const where = issue.path.length > 0 ? `at ${issue.path.map(String).join(".")}: ` : "";
  return `${where}${issue.message}`;
}
