import type { LoadedCapability } from "../capabilities/load.js";
import type { GateKeywords } from "../graph-run/comments.js";
import type { GateVocabulary } from "../graph-run/gate.js";
import type { HeldGateAnswerStore } from "../graph-run/held.js";
import type { GraphStateStore } from "../graph-run/store.js";
import type { Graph } from "../graph/types.js";
import type { RoutingConfig } from "../config/schema.js";
import type { SpawnHold } from "../control/plan.js";
import { CONTROL_RECENT_DELIVERIES_MAX } from "../control/store.js";
import type { ControlStore } from "../control/store.js";
import type { ControlRecord } from "../control/types.js";
import { isProcessAlive, processStartTicks } from "../state/process.js";
import { bindEvents } from "../events/bound.js";
import type { BoundEvents } from "../events/bound.js";
import type { EventSink } from "../events/log.js";
import type { HookChain } from "../hooks/chain.js";
import type { HookRefusal } from "../hooks/types.js";
import type { Ownership } from "../fleet/ownership.js";
import { harnessAdapter } from "../harness/adapters.js";
import type { HarnessAdapter } from "../harness/adapters.js";
import type { SessionRunner } from "../harness/runner.js";
import type { HandleResult } from "../routing/index.js";
import { deliveryKeys } from "../routing/inbound.js";
import type { InboundEvent } from "../routing/inbound.js";
import type { RoutingPolicy } from "../routing/router.js";
import type { TrackerSet } from "../trackers/resolve.js";
import type { WorkspaceProvider } from "../workspace/provider.js";
import type { WorkItem } from "../workitem/index.js";
import type { CloseOptions } from "./close.js";
import type { HarnessPreparer } from "../harness/preparer.js";
import { PoolSlot } from "./keyed-queue.js";
import type { Semaphore } from "./keyed-queue.js";
import type { PullRequestLinks } from "../registry/pr-links.js";
import type { CiAttemptStore } from "../feedback/attempts.js";
import type { HeldRetrySchedule } from "../graph-run/held-retry.js";
import type { PromptTemplates } from "./prompts.js";
import type { ReactionMoment } from "./reactions.js";
import { isLive } from "../registry/record.js";
import type { SessionClaimer, SessionRecord } from "../registry/record.js";
import type { SessionRegistry } from "../registry/registry.js";
import type { StartQueue } from "../registry/start-queue.js";
import type { BudgetStore } from "../budget/store.js";

/**
 * What the dispatcher's collaborators (spawn, delivery, pane, hook points, commands, closing)
 * share: the options it was built with, the settings a reload swaps, the pool, and the few
 * helpers every one of them needs. The facade builds one context and hands it down; nothing here
 * or below it calls back up into the facade.
 */

export type { HandleResult } from "../ingress/poller.js";

/** The installed capabilities as the graph's runtime dispatches them (capability-points.ts). */
export interface CapabilityRuntime {
  readonly loaded: readonly LoadedCapability[];
  /** How the daemon runs `the-loop` itself: the Node binary, the CLI entry, and `--config` with the daemon's config file. */
  readonly selfArgv: readonly string[];
  /** The environment of those runs, exactly (the config file included, so a command finds the same capabilities). */
  readonly env: Readonly<Record<string, string>>;
  /** The longest a step, a query or a predicate may run. */
  readonly timeoutMs: number;
}

/** What the dispatcher is given when `graph.enabled` is on. */
export interface GraphSetup {
  readonly graphs: ReadonlyMap<string, Graph>;
  readonly defaultGraph: Graph;
  readonly states: GraphStateStore;
  readonly vocabulary: GateVocabulary;
  readonly keywords: GateKeywords;
  readonly allowSelfApproval: boolean;
  /** The config file the daemon runs with: a claim made under another config is refused. */
  readonly configFile: string | undefined;
  /** `graph.stallAfterMinutes` in milliseconds: a run with no progress for that long ends `stalled`. Absent: never. */
  readonly stallAfterMs?: number;
  /**
   * `graph.closeAfterMinutes` in milliseconds: how long a session stays once its run ended (0: it
   * closes at once). Absent: it stays until someone closes it (`never`).
   */
  readonly closeAfterMs?: number;
  /** The installed capabilities: their hooks pass at the points the graph's nodes bind. Absent: none. */
  readonly capabilities?: CapabilityRuntime;
  /**
   * Gate answers held while the login the-loop posts as is unknown (graph-gate.ts). Absent: an
   * answer that would be held is refused instead.
   */
  readonly held?: HeldGateAnswerStore;
  /** The longest an answer is held (default DEFAULT_HOLD_MS). */
  readonly holdMs?: number;
  /** How the daemon asks again for the login while answers are held (default DEFAULT_HELD_RETRY). */
  readonly heldRetry?: HeldRetrySchedule;
  /**
   * The lock every move that may follow an edge takes while routing.limits.perNode is set, so the
   * runs at a capped node are counted and the move written without another in between, across
   * processes: a lock file on one host, or a turn under a database lock the daemons sharing it take. Absent: the moves of this process take their turns (one process only).
   */
  readonly roomLock?: string | (<T>(work: () => Promise<T>) => Promise<T>);
}

export interface DispatcherOptions {
  readonly routing: RoutingConfig;
  readonly policy: RoutingPolicy;
  readonly registry: SessionRegistry;
  /** The last control command of each work item (`<state.root>/sessions/control`). */
  readonly control: ControlStore;
  readonly runner: SessionRunner;
  readonly trackers: TrackerSet;
  readonly events: EventSink;
  readonly templates: PromptTemplates;
  /** Working directory of new sessions (routing.spawnWorkdir, resolved). */
  readonly spawnCwd: string;
  /** What the-loop gives every session of its own (its work item, config file, PATH), over the runner's environment. */
  readonly sessionEnv: (workItem: string) => Record<string, string>;
  /**
   * The state root's tag (stateRootTag) in the tmux name of every session claimed from now on, so
   * two projects never meet on one tmux server; a record keeps the name it was claimed with.
   * Absent: the untagged name.
   */
  readonly stateRootTag?: string;
  readonly now?: () => Date;
  /** How long a resumed harness must stay up to count as resumed (default 1500 ms). */
  readonly resumeProbeMs?: number;
  /**
   * How long a claimed session's harness may take to start in the claimer's process, from the
   * claim to its harnessStartedAt mark (default: harnessStartBound, from the timeouts of what a
   * start does). A delivery that finds no pane in an unmarked session waits for it this long.
   */
  readonly harnessStartWaitMs?: number;
  /** The CI failures each pull request's session was told of (routing.feedback); without it none is counted or capped. */
  readonly ciAttempts?: CiAttemptStore;
  /** Pull request → work item bindings; without it a PR's events follow only what they name themselves. */
  readonly links?: PullRequestLinks;
  /** Checkouts for sessions (routing.workspace); without it every session starts in spawnCwd. */
  readonly workspaces?: WorkspaceProvider;
  /** The operator's lifecycle hooks, loaded once per process; without it none run. */
  readonly hooks?: HookChain;
  /** Settles what a harness would ask a person before it starts (Claude Code's folder trust). */
  readonly prepareHarness?: HarnessPreparer;
  /** The process graph, when `graph.enabled` is on; without it a started item is one session. */
  readonly graph?: GraphSetup;
  /** The starts waiting for a slot under routing.limits (docs/fleet.md); without it no start ever waits. */
  readonly startQueue?: StartQueue;
  /** What each session used, raised and was told of its budget (docs/fleet.md#budgets); without it nothing is counted. */
  readonly budgets?: BudgetStore;
}

/**
 * What the dispatcher reads per event, swapped whole by reconfigure() on a config reload. What is
 * fixed at construction (the pool size, the delivery LRU's size) stays as it was built.
 */
export interface DispatcherConfig {
  readonly routing: RoutingConfig;
  readonly policy: RoutingPolicy;
  readonly templates: PromptTemplates;
}

export interface DispatchContext {
  readonly options: DispatcherOptions;
  readonly now: () => Date;
  /** This process, as the sessions it claims name their claimer. */
  readonly self: SessionClaimer;
  readonly hooks: HookChain;
  /** Which work items this daemon owns (their leases, on a shared database); unset: all of them. */
  readonly ownership?: Ownership;
  /** The pool spawns and closes (and respawns) take a slot of; deliveries do not. */
  readonly heavy: Semaphore;
  /** When each freshly (re)started harness may first receive input, by tmux target. */
  readonly readyAt: Map<string, number>;
  /**
   * Events whose input `input_received` has seen: a comment that was to boot a session and ends
   * up delivered into a running one (found occupied, or redirected after a refused launch) is
   * still one input.
   */
  readonly inputSeen: WeakSet<InboundEvent>;
  /** Read at each use (getters): reconfigure() swaps them; work already going keeps what it read. */
  readonly routing: RoutingConfig;
  readonly policy: RoutingPolicy;
  readonly templates: PromptTemplates;
  /** False once drain() began: waits that could hold the drain up give up instead. */
  readonly accepting: boolean;
  /**
   * A reaction on what the event came from. An event the-loop made up itself (the CLI's
   * commands, the retry of a pending start: source `cli`) gets none.
   */
  react(event: InboundEvent, moment: ReactionMoment): void;
  /** The event leaves the in-memory dedupe, so its retry is not taken for a duplicate. */
  forget(event: InboundEvent): void;
  /** A gate answer was held: the daemon asks for the login again, on a backoff (held-retry.ts). */
  answersHeld?(): void;
}

/**
 * The part of the context a function uses: the context's fields `K` and, of its options, the
 * fields `O` (or all of them, when `K` names `options`). A function asks for what it reads, so its
 * signature lists its inputs, and the type checker keeps the list true.
 */
export type ContextNeeds<K extends keyof DispatchContext, O extends keyof DispatcherOptions = never> = Pick<DispatchContext, Exclude<K, "options">> &
  ("options" extends K ? Pick<DispatchContext, "options"> : [O] extends [never] ? unknown : { readonly options: Pick<DispatcherOptions, O> });

// ---- one event on one work item ------------------------------------------------------------

/** The fields every event about one delivery on one work item carries. */
export type DeliveryFields = { readonly work_item: string; readonly delivery_id: string };
export type DeliveryEvents = BoundEvents<DeliveryFields>;

/** One event's turn on one work item, with the event sink bound to both once. */
export interface Turn {
  readonly workItem: WorkItem;
  readonly event: InboundEvent;
  readonly events: DeliveryEvents;
}

export function turnOf(ctx: Pick<DispatchContext, "options">, workItem: WorkItem, event: InboundEvent): Turn {
  return { workItem, event, events: deliveryEvents(ctx.options.events, workItem.ref, event.deliveryId) };
}

export function deliveryEvents(sink: EventSink, workItem: string, deliveryId: string): DeliveryEvents {
  return bindEvents(sink, { work_item: workItem, delivery_id: deliveryId });
}

export const SETTLED: HandleResult = { settled: true };
export const RETRY: HandleResult = { settled: false };
/** Not settled and not failed: the event waits for an adoption's queued start (dispatch/owned.ts), handed out again without counting as an attempt. */
export const HELD: HandleResult = { settled: false, held: true };

/** Why an event is dropped whose session another process closed while the event was being carried out. */
export const SESSION_CLOSED = "session-closed";

/** What dispatch.failed says was being done. */
export type FailedAction = "route" | "link" | "spawn" | "deliver" | "close" | "control";

/** The one dispatch.failed: `willRetry` says whether the event comes back. */
export function dispatchFailed(events: DeliveryEvents, action: FailedAction, error: string, willRetry = false): void {
  events.emit("dispatch.failed", { action, error, will_retry: willRetry });
}

/**
 * An event handed back to be tried again: forgotten by the dedupe, reported as a failure that
 * will be retried, its comment marked failed.
 */
export function handBack(ctx: ContextNeeds<"forget" | "react">, turn: Turn, action: FailedAction, error: string): HandleResult {
  ctx.forget(turn.event);
  dispatchFailed(turn.events, action, error, true);
  ctx.react(turn.event, "failed");
  return RETRY;
}

/** The event settled without being acted on (dispatch.dropped). */
export function settle(turn: Turn, reason: string): HandleResult {
  turn.events.emit("dispatch.dropped", { reason });
  return SETTLED;
}

// ---- what collaborators hand each other ----------------------------------------------------

/** How an attempt to start a session for an event ended; its events are emitted by then. */
export type SpawnOutcome =
  | { readonly kind: "started"; readonly record: SessionRecord }
  /** Another process started one first. */
  | Occupied
  /** The item's control record holds it (checked again under the control lock), or a full cap queued it. */
  | { readonly kind: "held"; readonly hold: SpawnHold | "queued" }
  /** Nothing runs; `retry`: trying the same event again may work. */
  | { readonly kind: "failed"; readonly error: string; readonly retry: boolean }
  /** Closed by another process while it was starting (settled as session-closed). */
  | Closed
  | Refused;

export type Occupied = { readonly kind: "occupied"; readonly occupant: SessionRecord };
export type Closed = { readonly kind: "closed" };
/**
 * A lifecycle hook refused the start or the launch (recorded, commented, the item disarmed).
 * `redirect`: the live session of the work item a pull request's own session was refused for,
 * which takes the event instead.
 */
export type Refused = { readonly kind: "refused"; readonly refusal: HookRefusal; readonly redirect?: SessionRecord };

/** How a start came about, as `work_item_start` tells it. */
export type StartTrigger = "comment" | "cli" | "event" | "retry";

// ---- shared helpers ------------------------------------------------------------------------

export function adapterOf(ctx: ContextNeeds<"routing">, name: string): HarnessAdapter {
  return harnessAdapter(name, ctx.routing);
}

export function closeOptions(ctx: ContextNeeds<"now" | "routing", "control" | "events" | "registry" | "runner" | "stateRootTag" | "workspaces">): CloseOptions {
  const { options } = ctx;
  return {
    registry: options.registry,
    runner: options.runner,
    tmux: ctx.routing.tmux,
    events: options.events,
    now: ctx.now,
    control: options.control,
    ...(options.stateRootTag !== undefined ? { stateRootTag: options.stateRootTag } : {}),
    ...(options.workspaces ? { workspaces: options.workspaces } : {}),
  };
}

/** `work` holding a slot of the heavy pool, which a hook chain run within it lets go of (atPoint). */
export async function withSlot<T>(ctx: ContextNeeds<"heavy">, work: (slot: PoolSlot) => Promise<T>): Promise<T> {
  const slot = await PoolSlot.take(ctx.heavy);
  try {
    return await work(slot);
  } finally {
    slot.release();
  }
}

/** The same session as `known` (not one claimed since it was closed), and still live. */
export function sameLiveSession(record: SessionRecord | undefined, known: SessionRecord): boolean {
  return record !== undefined && isLive(record) && record.createdAt === known.createdAt;
}

/**
 * How a session no longer live as `known` was ended, read as `record`: `spawn-failed` when it is
 * that session, closed by its claimer because its harness could not be started (the harness never
 * ran, so an event for it deserves another try); `closed` for any other close.
 */
export function closedAs(record: SessionRecord | undefined, known: SessionRecord): "closed" | "spawn-failed" {
  const neverStarted = record?.createdAt === known.createdAt && record.status === "closed" && record.closeReason === "spawn-failed";
  return neverStarted ? "spawn-failed" : "closed";
}

/**
 * Whether two control records are the same command (its effect may have been updated since: a
 * start marked pending, then started). Both absent is the same "none".
 */
export function sameCommand(a: ControlRecord | undefined, b: ControlRecord | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.command === b.command && a.source === b.source && a.actor === b.actor && a.requestedAt === b.requestedAt && a.deliveryId === b.deliveryId;
}

/** The ids of the commands an item took, with this command's added: newest last, bounded. */
export function rememberedCommands(previous: ControlRecord | undefined, event: InboundEvent): string[] {
  const keys = deliveryKeys(event);
  const kept = (previous?.recentDeliveries ?? (previous?.deliveryId !== undefined ? [previous.deliveryId] : [])).filter((id) => !keys.includes(id));
  return [...kept, ...keys].slice(-CONTROL_RECENT_DELIVERIES_MAX);
}

// ---- claimers --------------------------------------------------------------------------------

/** This process as a session's claimer: its pid and, where /proc tells it, its start time. */
export function thisProcess(): SessionClaimer {
  const startTicks = processStartTicks(process.pid);
  return startTicks === undefined ? { pid: process.pid } : { pid: process.pid, startTicks };
}

/**
 * Whether the process that claimed `session` is known to run no more: its pid names no process,
 * or (where /proc tells start times) a process that started at another time than the claimer —
 * the pid was reused. `self` (this process) is never gone; neither is a claimer the record does not
 * name (a record written before claimedBy existed): for those only harnessStartBound tells.
 */
export function claimerGone(self: SessionClaimer, session: SessionRecord): boolean {
  const claimer = session.claimedBy;
  if (claimer === undefined) return false;
  if (claimer.pid === self.pid && (claimer.startTicks === undefined || claimer.startTicks === self.startTicks)) return false;
  return !isProcessAlive(claimer.pid, claimer.startTicks);
}

/**
 * Whether the last start of the session's harness was made by another process that still runs:
 * one that may be bringing the harness up right now. This process, and a start the record names
 * no maker of, are not elsewhere.
 */
export function startedByOtherLiveProcess(self: SessionClaimer, session: SessionRecord): boolean {
  const starter = session.harnessStartedBy;
  if (starter === undefined) return false;
  if (starter.pid === self.pid && (starter.startTicks === undefined || starter.startTicks === self.startTicks)) return false;
  return isProcessAlive(starter.pid, starter.startTicks);
}
