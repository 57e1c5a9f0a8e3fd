import { z } from "zod";
import { SPAWN_POLICIES } from "../../config/schema.js";
import type { CliConfig } from "../../config/schema.js";
import type { EventRecord } from "../../events/reader.js";
import { readLatestEvents } from "../../events/tail.js";
import { readUsage } from "../../budget/summary.js";
import type { UsageSummary } from "../../budget/summary.js";
import { isLive } from "../../registry/record.js";
import type { SessionRecord } from "../../registry/record.js";
import { heldAhead, heldText } from "../../graph-run/index.js";
import type { GraphState } from "../../graph-run/index.js";
import { storesOn } from "../../stores/stores.js";
import type { Stores } from "../../stores/stores.js";
import { DamagedRecordError } from "../../state/index.js";
import type { StatePaths } from "../../state/layout.js";
import { messageOf } from "../../errors.js";
import type { WhySituation } from "../../why/index.js";

/**
 * What `the-loop why` reads about one work item — its records, the end of the event log and the
 * settings its verdict weighs — as the daemon reads them for a session that asks about its own
 * item (`session.why` on the session's socket: a sandboxed session sees no state root). The
 * verdict itself is the CLI's pure function of these (src/why/explain.ts), applied by the
 * asking side, so the daemon answers with data and both read the same facts.
 */

/** Enough of the item's story to explain where it stands: the newest events, as `why` reads them. */
export const WHY_EVENTS = 200;
/** A log of every item for years is not read to its start for one item's question. */
export const WHY_LOG_BYTES = 64 * 1024 * 1024;

/** The settings `why` weighs (WhySettings of src/why/events.ts). */
export function whySettingsOf(config: Pick<CliConfig, "routing" | "graph">) {
  const { routing, graph } = config;
  return {
    authorizedUsers: routing.authorizedUsers,
    spawnOnUnmatched: routing.spawnOnUnmatched,
    autoExecuteLabel: routing.autoExecuteLabel,
    control: { enabled: routing.control.enabled, requireStartCommand: routing.control.requireStartCommand, keywords: routing.control.keywords },
    graph: { enabled: graph.enabled, keywords: graph.keywords },
  };
}

/** A record that exists but cannot be read, with what is wrong and how to fix it. */
const damaged = z.object({ damaged: z.string() });
const controlKeywords = z.object({ start: z.string(), stop: z.string(), pause: z.string(), resume: z.string() });
const gateKeywords = z.object({ approve: z.string(), requestChanges: z.string() });

/** A live session's usage as the daemon answers it (`session.why`, `session.usage`): src/budget/summary.ts's UsageSummary. */
export const usageAnswerSchema = z.looseObject({
  tokens: z.number().nullable(),
  unreadable: z.string().optional(),
  minutes: z.number(),
  limits: z.object({ tokens: z.number().optional(), minutes: z.number().optional() }),
});

/** The daemon's answer to `session.usage`: null when the item has no live session. */
export const usageOfAnswerSchema = usageAnswerSchema.nullable();

/** The daemon's answer to `session.why`; every record is null when there is none. */
export const whyAnswerSchema = z.object({
  ref: z.string(),
  settings: z.object({
    authorizedUsers: z.array(z.string()),
    spawnOnUnmatched: z.enum(SPAWN_POLICIES),
    autoExecuteLabel: z.string(),
    control: z.object({ enabled: z.boolean(), requireStartCommand: z.boolean(), keywords: controlKeywords }),
    graph: z.object({ enabled: z.boolean(), keywords: gateKeywords }),
  }),
  session: z
    .union([
      damaged,
      z.looseObject({
        status: z.string(),
        harness: z.string(),
        tmuxTarget: z.string(),
        createdAt: z.string(),
        closedAt: z.string().optional(),
        closeReason: z.string().optional(),
        failureReason: z.string().optional(),
        awaitingInput: z.looseObject({ question: z.string() }).optional(),
      }),
    ])
    .nullable(),
  control: z
    .union([
      damaged,
      z.looseObject({
        command: z.string(),
        source: z.string(),
        actor: z.string(),
        effect: z.string(),
        requestedAt: z.string(),
        clearedAt: z.string().optional(),
      }),
    ])
    .nullable(),
  graph: z
    .union([
      damaged,
      z.looseObject({
        graph: z.string(),
        node: z.string(),
        status: z.string(),
        reasonCode: z.string().optional(),
        reason: z.string().optional(),
        denial: z.looseObject({ hook: z.string(), point: z.string(), reason: z.string() }).optional(),
      }),
    ])
    .nullable(),
  held: z.union([damaged, z.array(z.looseObject({ author: z.string(), decision: z.string(), heldAt: z.string(), reason: z.string() }))]).nullable(),
  events: z.array(z.looseObject({ ts: z.string(), source: z.string(), event: z.string(), level: z.string(), pid: z.number().optional() })),
  log: z.object({ scannedBytes: z.number(), complete: z.boolean(), malformed: z.number(), missing: z.boolean() }),
  /** A live session's usage against routing.budget (src/budget/summary.ts); null without a live session, absent from a daemon before budgets. */
  usage: usageAnswerSchema.nullish(),
  /** The edge its run waits at (routing.limits.perNode), with the runs ahead, in `why`'s words; null when it waits at none. */
  heldAtEdge: z.string().nullish(),
});

export type WhyAnswer = z.output<typeof whyAnswerSchema>;

/** The daemon's `why` facts as the pure verdict reads them: the daemon answered, so it runs. */
export function whySituationOf(answer: WhyAnswer): WhySituation {
  return {
    ref: answer.ref,
    settings: answer.settings,
    session: answer.session ?? undefined,
    control: answer.control ?? undefined,
    graph: answer.graph ?? undefined,
    ...(answer.held !== null ? { held: answer.held } : {}),
    events: answer.events,
    daemonRunning: true,
    ...(answer.usage !== null && answer.usage !== undefined ? { usage: answer.usage } : {}),
    ...(typeof answer.heldAtEdge === "string" ? { heldAtEdge: answer.heldAtEdge } : {}),
  };
}

/**
 * A run waiting at an edge into a full node, in the words the CLI's `why` uses: the edge, the
 * cap as the config sets it now, and how many runs wait ahead of it under that cap (`states`:
 * every graph state record, the listing that counts them; undefined when it could not be read).
 * Undefined for a run that waits at no edge.
 */
export function heldAtEdgeOf(state: GraphState, states: readonly GraphState[] | undefined, perNode: Readonly<Record<string, number>>): string | undefined {
  const held = state.heldEdge;
  if (held === undefined || state.status !== "waiting") return undefined;
  return heldText(state, held, perNode[held.cap], states === undefined ? undefined : heldAhead(state, states));
}

/** The run's wait at an edge, its listing read only when it waits at one. */
async function heldAtEdgeIn(stores: Stores, config: Pick<CliConfig, "routing">, state: GraphState): Promise<string | null> {
  if (state.heldEdge === undefined || state.status !== "waiting") return null;
  let states: readonly GraphState[] | undefined;
  try {
    states = (await stores.graphStates.list()).records;
  } catch {
    // The wait is still told, without the count ahead; a damaged listing is reported by the commands that list.
    states = undefined;
  }
  return heldAtEdgeOf(state, states, config.routing.limits.perNode) ?? null;
}

/** The record, null when there is none, or what is wrong with it when it cannot be read. */
async function readRecord<T>(read: () => T | undefined | Promise<T | undefined>): Promise<T | { damaged: string } | null> {
  try {
    return (await read()) ?? null;
  } catch (error) {
    if (error instanceof DamagedRecordError) return { damaged: error.message };
    throw error;
  }
}

/** One work item's `why` facts, read from the state (its stores, files when omitted) as `the-loop why` reads them. */
export async function readWhySituation(
  paths: StatePaths,
  config: Pick<CliConfig, "routing" | "graph">,
  ref: string,
  stores: Stores = storesOn(paths),
): Promise<WhyAnswer> {
  const session = await readRecord(() => stores.registry.get(ref));
  const control = await readRecord(() => stores.control.get(ref));
  const graph = await readRecord(() => stores.graphStates.get(ref));
  // Held answers matter only to a run at a gate.
  const held =
    graph !== null && !("damaged" in graph) && graph.status === "waiting" ? await readRecord(async () => (await stores.heldAnswers.get(ref))?.answers) : null;
  let log;
  try {
    // state.store: postgres: the table every host on the database writes, not this host's file.
    log =
      stores.eventLog !== undefined
        ? await stores.eventLog.readLatest({ workItem: ref, minLevel: "info" }, WHY_EVENTS)
        : await readLatestEvents(paths.eventLog, { workItem: ref, minLevel: "info" }, { limit: WHY_EVENTS, maxBytes: WHY_LOG_BYTES });
  } catch (error) {
    throw new Error(`the daemon cannot read its event log: ${messageOf(error)}`, { cause: error });
  }
  const events: EventRecord[] = log.events;
  const usage = session !== null && !("damaged" in session) ? usageOfSession(stores, config, ref, session) : null;
  const heldAtEdge = graph !== null && !("damaged" in graph) ? await heldAtEdgeIn(stores, config, graph) : null;
  return {
    ref,
    settings: whySettingsOf(config),
    session,
    control,
    graph,
    held,
    events,
    log: { scannedBytes: log.scannedBytes, complete: log.reachedStart, malformed: log.malformed, missing: log.missing },
    usage,
    heldAtEdge,
  };
}

/** A live session's usage, from the one builder `the-loop why`, `graph status` and `sessions list` use too; null for any other. */
function usageOfSession(stores: Stores, config: Pick<CliConfig, "routing">, ref: string, session: SessionRecord): UsageSummary | null {
  if (!isLive(session)) return null;
  return readUsage(stores.budgets, config.routing.budget, ref, session);
}

/** The usage of the item's live session (`session.usage`, a session's own), or null without one; a damaged record is the registry's error. */
export function readItemUsage(paths: StatePaths, config: Pick<CliConfig, "routing">, ref: string, stores: Stores = storesOn(paths)): UsageSummary | null {
  const session = stores.registry.get(ref);
  return session === undefined ? null : usageOfSession(stores, config, ref, session);
}
