import { randomUUID } from "node:crypto";
import { messageOf } from "../errors.js";
import type { ControlCommand, RoutingConfig } from "../config/schema.js";
import { controlStateOf, planControl, spawnHold } from "../control/plan.js";
import type { ControlAction, ControlPlan, SpawnHold } from "../control/plan.js";
import { CONTROL_RECENT_DELIVERIES_MAX } from "../control/store.js";
import type { ControlStore, ControlTransaction } from "../control/store.js";
import type { CommandEffect, ControlOutcome, ControlRecord, ControlRequest, ControlSource, PlanRejection } from "../control/types.js";
import { isProcessAlive, processStartTicks } from "../daemon/pidfile.js";
import type { EventSink } from "../events/log.js";
import { HookChain } from "../hooks/chain.js";
import type { HookRefusal } from "../hooks/types.js";
import { ProgramNotFoundError, SessionMissingError, TargetLiveError } from "../harness/runner.js";
import type { SessionRunner } from "../harness/runner.js";
import { harnessAdapter, isResumableSessionId, newHarnessSessionId } from "../harness/adapters.js";
import type { HarnessAdapter } from "../harness/adapters.js";
import type { EventHandler, HandleResult } from "../ingress/poller.js";
import { DeliveryLru } from "../routing/dedupe.js";
import { armsSpawn, route, standingState } from "../routing/router.js";
import type { Decision, DeliveryMemory, RegistryView, RoutingPolicy } from "../routing/router.js";
import { boundExcerpt, deliveryKeys } from "../routing/inbound.js";
import type { InboundEvent } from "../routing/inbound.js";
import type { LifecyclePointName } from "../sdk/hooks/catalog.js";
import type { TrackerSet } from "../trackers/resolve.js";
import type { WorkItemState } from "../trackers/tracker.js";
import type { WorkspaceProvider, WorkspaceRequest } from "../workspace/provider.js";
import type { WorkItem } from "../workitem/index.js";
import { formatWorkItemRef, githubItemUrl, hostOf, parseWorkItemRef, repositoryOf, workItemSlug } from "../workitem/index.js";
import { announcementText, refusalText } from "./announce.js";
import { closeSession, finishClose } from "./close.js";
import type { CloseOptions } from "./close.js";
import { KeyedQueue, Semaphore } from "./keyed-queue.js";
import { boundedInputText, boundedReason, deliveredInputKind, workItemEntity } from "./lifecycle.js";
import type { HarnessPreparer } from "./harness-trust.js";
import { HarnessNotReadyError, awaitReady } from "./readiness.js";
import type { InputKind } from "./lifecycle.js";
import { LinkedItemCheck, applyLink } from "./linkage.js";
import type { PullRequestLinks } from "./links.js";
import { renderBootPrompt, renderEventPrompt, renderResumeNote } from "./prompts.js";
import type { PromptInput, PromptTemplates } from "./prompts.js";
import { RECENT_DELIVERIES_MAX, isLive, tmuxTargetFor } from "./record.js";
import type { SessionClaimer, SessionRecord, SessionWorkspace } from "./record.js";
import { Reactions } from "./reactions.js";
import type { ReactionMoment } from "./reactions.js";
import type { ClaimResult, SessionRegistry } from "./registry.js";

/**
 * Performs the router's decisions. Events for one work item run one after another in arrival
 * order; different work items run in parallel. Spawns and closes (slow: tmux, a harness start,
 * a comment on the tracker) also take a slot of a bounded pool, so a burst of them cannot
 * starve the machine — and deliveries never wait for that pool, so a slow spawn never delays an
 * event bound for another, already running session.
 */

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
  /** Pull request → work item bindings; without it a PR's events follow only what they name themselves. */
  readonly links?: PullRequestLinks;
  /** Checkouts for sessions (routing.workspace); without it every session starts in spawnCwd. */
  readonly workspaces?: WorkspaceProvider;
  /** The operator's lifecycle hooks, loaded once per process; without it none run. */
  readonly hooks?: HookChain;
  /** Settles what a harness would ask a person before it starts (Claude Code's folder trust). */
  readonly prepareHarness?: HarnessPreparer;
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

/** Drops that depend on the event alone, never on a session: final the moment the event arrives. */
const EVENT_GUARDS: ReadonlySet<string> = new Set([
  "disabled-event",
  "duplicate-delivery",
  "no-work-item",
  "self-authored",
  "unauthorized-actor",
]);
const NOTHING_SEEN: DeliveryMemory = { has: () => false };

const SETTLED: HandleResult = { settled: true };
const RETRY: HandleResult = { settled: false };

/**
 * How often an event may move to the queue of the session it turned out to reach before it is
 * carried out where it stands (each move adds one queue, so this bounds the wait, not safety).
 */
const MAX_HOPS = 2;
/** perform()'s answer when the event reaches a work item whose queue it does not hold. */
type Hop = { readonly hop: string };
/** Why an event is dropped whose session another process closed while the event was being carried out. */
const SESSION_CLOSED = "session-closed";
/**
 * Why a claimer's event is settled without a spawn of its own: its spawn met the harness another
 * process started for the same session after waiting past harnessStartBound (see startClaimed).
 */
const HARNESS_STARTED_ELSEWHERE = "harness-started-elsewhere";

/**
 * The longest a claimed session's harness takes to start in the claimer's process without a
 * checkout, from the claim to the harnessStartedAt mark, summed from the timeouts of each step:
 * the tmux runner's spawn (at most six tmux calls, each stopped after 10 s), a tracker lookup of
 * the item's title for the boot prompt (the GitHub client's 30 s request timeout) and a record
 * write (15 s, the record lock's wait) — 105 s, rounded up.
 */
const HARNESS_START_BOUND_MS = 120_000;
/** The longest pause between two reads of a record while waiting for its harness to start. */
const HARNESS_START_POLL_MAX_MS = 250;

/** How an attempt to start a session for an event ended; its events are emitted by then. */
type SpawnOutcome =
  | { readonly kind: "started"; readonly record: SessionRecord }
  /** Another process started one first. */
  | { readonly kind: "occupied"; readonly occupant: SessionRecord }
  /** The item's control record holds it (checked again under the control lock). */
  | { readonly kind: "held"; readonly hold: SpawnHold }
  /** Nothing runs; `retry`: trying the same event again may work. */
  | { readonly kind: "failed"; readonly error: string; readonly retry: boolean }
  /** Closed by another process while it was starting (settled as session-closed). */
  | { readonly kind: "closed" }
  /**
   * A lifecycle hook refused the start or the launch (recorded, commented, the item disarmed).
   * `redirect`: the live session of the work item a pull request's own session was refused for,
   * which takes the event instead.
   */
  | { readonly kind: "refused"; readonly refusal: HookRefusal; readonly redirect?: SessionRecord };

type Refused = Extract<SpawnOutcome, { readonly kind: "refused" }>;
type Occupied = Extract<SpawnOutcome, { readonly kind: "occupied" }>;

/** How a start came about, as `work_item_start` tells it. */
type StartTrigger = "comment" | "cli" | "event" | "retry";

/** How putting text into a session's harness ended (see paste). */
type PasteResult = "pasted" | "closed" | "paused" | "spawn-failed" | "interrupted";

/** A command to apply to one work item, from a comment or the CLI. */
interface CommandInput {
  readonly workItem: WorkItem;
  readonly command: ControlCommand;
  readonly source: ControlSource;
  readonly actor: string;
  readonly note?: string | undefined;
  readonly deliveryId: string;
  /** The spawn policy arms the item (its labels, as the event or the tracker shows them). */
  readonly armed: boolean;
  readonly itemClosed: boolean;
  /** What a spawn starts from and reactions go to: the comment, or a synthetic event for the CLI. */
  readonly event: InboundEvent;
}

/** What the part of a command done under the item's control lock left for the rest to finish. */
type Decided =
  | { readonly kind: "rejected"; readonly reason: PlanRejection }
  | {
      readonly kind: "applied";
      readonly action: ControlAction;
      readonly effect: CommandEffect;
      /** The session the command acted on (or the one it found live), as the transition left it. */
      readonly session?: SessionRecord;
      /** A spawn whose claim this command won: the harness is started outside the lock. */
      readonly claimed?: SessionRecord;
      /** Why a start is pending without a claim (the harness cannot be resolved). */
      readonly error?: string;
    };

/** Why a claimed session closed without a harness: a lifecycle hook refused its launch. */
const HOOK_REFUSED = "hook-refused";

/** How often a command is decided again when the session changed between the read and the transition. */
const MAX_REPLANS = 3;

export class Dispatcher implements EventHandler {
  private readonly queue = new KeyedQueue();
  private readonly heavy: Semaphore;
  private readonly memory: DeliveryLru;
  private readonly now: () => Date;
  /** When each freshly (re)started harness may first receive input, by tmux target. */
  private readonly readyAt = new Map<string, number>();
  private readonly reactions: Reactions;
  private readonly linkCheck: LinkedItemCheck;
  private accepting = true;
  /** Events handed in and not yet settled (an event may wait in several queues at once). */
  private inFlight = 0;
  /** Read per event, swapped by reconfigure(). */
  private routing: RoutingConfig;
  private policy: RoutingPolicy;
  private templates: PromptTemplates;
  /** What the router sees: the item's session and its last control command. */
  private readonly view: RegistryView;
  /** This process, as the sessions it claims name their claimer. */
  private readonly self: SessionClaimer = thisProcess();
  private readonly hooks: HookChain;
  /**
   * Events whose input `input_received` has seen: a comment that was to boot a session and ends
   * up delivered into a running one (found occupied, or redirected after a refused launch) is
   * still one input.
   */
  private readonly inputSeen = new WeakSet<InboundEvent>();

  constructor(private readonly options: DispatcherOptions) {
    this.routing = options.routing;
    this.policy = options.policy;
    this.templates = options.templates;
    this.hooks = options.hooks ?? HookChain.empty(options.events);
    this.heavy = new Semaphore(options.routing.maxConcurrentDispatches);
    this.memory = new DeliveryLru(options.routing.dedupCacheSize);
    this.now = options.now ?? (() => new Date());
    this.view = {
      sessionFor: (ref) => options.registry.get(ref),
      controlFor: (ref) => options.control.get(ref),
    };
    // A getter, so a reload's reaction settings count from the next reaction on.
    const current = (): RoutingConfig => this.routing;
    this.reactions = new Reactions({
      get config() {
        return current().reactions;
      },
      trackers: options.trackers,
      events: options.events,
    });
    this.linkCheck = new LinkedItemCheck({
      trackers: options.trackers,
      registry: options.registry,
      events: options.events,
      now: this.now,
    });
  }

  /**
   * Swaps what is read per event: the routing settings (spawn policy, control, harnesses, tmux,
   * announcements, reactions, workspaces), the router's policy and the prompt templates. Events
   * already being carried out finish with what they started with where they read it already.
   * The pool size and the delivery LRU's size are fixed at construction.
   */
  reconfigure(next: DispatcherConfig): void {
    this.routing = next.routing;
    this.policy = next.policy;
    this.templates = next.templates;
  }

  /**
   * Routes the event and queues it on its work item; resolves once it has been carried out. The
   * guards that depend only on the event (filter, dedupe, marker, authorization) drop it here, at
   * once. What depends on the item's session (spawn, deliver, close, or a spawn-policy drop) is
   * decided again when the event's turn comes: an event queued behind a spawn or a close must see
   * the session as that earlier event left it, not as it was when both arrived.
   *
   * The event waits in the queue of every work item it names (with its pull request's binding
   * applied, see applyLink): whichever of them it reaches — a linked item's session, the PR's own,
   * or a new one — it keeps its place among that item's events, and two events about one PR are
   * decided one after the other, so one cannot start a session for the PR while the other is
   * starting one for the issue the PR is for.
   */
  handle(received: InboundEvent): Promise<HandleResult> {
    if (!this.accepting) return Promise.resolve(RETRY);
    const event = applyLink(received, this.options.links, (problem) => this.linkProblem(received, problem)).event;
    const arrival = this.decide(event, this.memory);
    if (arrival === undefined) return Promise.resolve(RETRY);
    // The comment alone makes it ambiguous: final at arrival, like the event guards.
    if (arrival.action === "drop" && arrival.reason === "control-ambiguous") return Promise.resolve(this.ambiguous(event, arrival));
    if (arrival.action === "drop" && EVENT_GUARDS.has(arrival.reason)) return Promise.resolve(this.dropped(event, arrival));
    // Past the work-item guard, so the event names at least one work item.
    const keys = [...new Set(event.workItems.map((item) => item.ref))];
    this.remember(event);
    this.options.events.emit("dispatch.queued", {
      work_item: arrival.workItem?.ref ?? keys[0] ?? "",
      delivery_id: event.deliveryId,
      action: arrival.action,
    });
    this.inFlight += 1;
    return this.enqueue(keys, event, 0).finally(() => {
      this.inFlight -= 1;
    });
  }

  /**
   * Runs the event once it is first in line in every queue of `keys`. When its turn shows it
   * reaching a work item outside them (a binding written since it arrived), it is queued again
   * with that item's queue added — behind the events already there, instead of beside them.
   */
  private enqueue(keys: readonly string[], event: InboundEvent, hops: number): Promise<HandleResult> {
    let moved: Promise<HandleResult> | undefined;
    const ran = this.exclusive(keys, async () => {
      const outcome = await this.perform(event, hops < MAX_HOPS ? new Set(keys) : undefined);
      if (!("hop" in outcome)) return outcome;
      // Queued while this turn still holds its queues, so no later event gets ahead of it in them.
      moved = this.enqueue([...keys, outcome.hop], event, hops + 1);
      return RETRY;
    });
    return ran.then((result) => moved ?? result);
  }

  /**
   * `job` once it is first in every queue of `keys`. Its place is taken in all of them at once,
   * when it is queued, so a job only ever waits for jobs queued before it: no two can each hold
   * a queue the other waits for.
   */
  private exclusive<T>(keys: readonly string[], job: () => Promise<T>): Promise<T> {
    const [only] = keys;
    if (keys.length === 1 && only !== undefined) return this.queue.run(only, job);
    let finished!: () => void;
    const done = new Promise<void>((resolve) => (finished = resolve));
    const turns = keys.map(
      (key) =>
        new Promise<void>((turn) => {
          void this.queue.run(key, () => {
            turn();
            return done;
          });
        }),
    );
    return Promise.all(turns)
      .then(() => job())
      .finally(() => finished());
  }

  /**
   * Stops taking events and waits for the queued ones, then (briefly) for reactions still in
   * flight; returns how many events were still queued.
   */
  async drain(): Promise<number> {
    this.accepting = false;
    const queued = this.inFlight;
    await this.queue.idle();
    await this.reactions.idle();
    return queued;
  }

  /** Every id the event may come back under (its delivery id, its content key) is remembered. */
  private remember(event: InboundEvent): void {
    for (const id of deliveryKeys(event)) this.memory.add(id);
  }

  /** Forgotten again when the event is to be retried. */
  private forget(event: InboundEvent): void {
    for (const id of deliveryKeys(event)) this.memory.delete(id);
  }

  /** A damaged binding file must not stop the PR's events: they route as if it were absent. */
  private linkProblem(event: InboundEvent, problem: string): void {
    this.options.events.emit("dispatch.failed", {
      work_item: event.pullRequest?.ref ?? event.workItems[0]?.ref ?? "",
      delivery_id: event.deliveryId,
      action: "link",
      error: problem,
      will_retry: false,
    });
  }

  /** The router's decision, or undefined (reported) when a registry record cannot be read. */
  private decide(event: InboundEvent, memory: DeliveryMemory): Decision | undefined {
    try {
      return route(event, this.policy, this.view, memory);
    } catch (error) {
      // A damaged record: nothing can be decided for this item until a person looks at it.
      this.options.events.emit("dispatch.failed", {
        work_item: event.workItems[0]?.ref ?? "",
        delivery_id: event.deliveryId,
        action: "route",
        error: messageOf(error),
        will_retry: true,
      });
      return undefined;
    }
  }

  private dropped(event: InboundEvent, decision: Decision & { action: "drop" }): HandleResult {
    if (decision.reason === "control-ambiguous") return this.ambiguous(event, decision);
    this.options.events.emit("routing.dropped", {
      reason: decision.reason,
      delivery_id: event.deliveryId,
      kind: event.kind,
      work_item: decision.workItem?.ref,
      actor: event.actor ?? undefined,
    });
    return SETTLED;
  }

  /**
   * A comment naming two different commands (R1.4): nothing is executed and nothing forwarded.
   * The comment gets the failure reaction, so its author sees it was not taken and can re-state it.
   */
  private ambiguous(event: InboundEvent, decision: Decision & { action: "drop"; reason: "control-ambiguous" }): HandleResult {
    this.options.events.emit("control.ambiguous", {
      work_item: decision.workItem.ref,
      commands: [...decision.commands],
      actor: event.actor ?? undefined,
      delivery_id: event.deliveryId,
    });
    this.react(event, "failed");
    return SETTLED;
  }

  /**
   * Reactions acknowledge what a person did on the tracker. An event the-loop made up itself (the
   * CLI's commands, the retry of a pending start: source `cli`) has no comment to react on, and a
   * reaction on the item would only be noise: the CLI leaves its own comment.
   */
  private react(event: InboundEvent, moment: ReactionMoment): void {
    if (event.source === "cli") return;
    this.reactions.react(event, moment);
  }

  /** `held`: the queues the event holds, when it may still move to another (see enqueue). */
  private async perform(queued: InboundEvent, held?: ReadonlySet<string>): Promise<HandleResult | Hop> {
    // A binding written since the event was queued (by the event ahead of it) counts now; the
    // damaged-file report was made at arrival.
    const linked = applyLink(queued, this.options.links, () => undefined);
    const event = await this.linkCheck.verify(linked.event, linked.link?.workItem.ref);
    // This delivery id is in the in-memory LRU since it was queued; only the record's memory counts now.
    const decision = this.decide(event, NOTHING_SEEN);
    if (decision === undefined) {
      this.forget(event);
      this.react(event, "failed");
      return RETRY;
    }
    if (decision.action === "drop") {
      if (event.kind === "closed" && decision.reason === "no-session" && decision.workItem !== undefined) {
        await this.releaseLeftCheckout(decision.workItem.ref);
      }
      return this.dropped(event, decision);
    }
    const { workItem, action } = decision;
    if (held !== undefined && !held.has(workItem.ref)) return { hop: workItem.ref };
    this.options.events.emit("routing.routed", {
      work_item: workItem.ref,
      delivery_id: event.deliveryId,
      kind: event.kind,
      decision: action,
      actor: event.actor ?? undefined,
    });
    try {
      if (action === "close") return await this.withSlot((slot) => this.close(workItem, event, slot));
      if (action === "deliver") {
        const current = this.options.registry.get(workItem.ref);
        if (!current || !isLive(current)) return this.settle(workItem, event, "session-vanished");
        return await this.deliver(current, event);
      }
      if (action === "control") return await this.commandFromComment(decision, event);
      const outcome = await this.withSlot((slot) => this.spawn(workItem, event, slot));
      switch (outcome.kind) {
        case "started":
        case "closed":
          return SETTLED;
        case "held":
          return this.settle(workItem, event, outcome.hold);
        // Someone else (the CLI, another process) started it first: this event is input for that session.
        case "occupied":
          return await this.deliver(outcome.occupant, event);
        case "failed":
          return outcome.retry ? RETRY : SETTLED;
        case "refused":
          if (outcome.redirect !== undefined && (held === undefined || held.has(outcome.redirect.workItem.ref))) {
            return await this.deliver(outcome.redirect, event);
          }
          return this.settle(workItem, event, "hook-refused");
      }
    } catch (error) {
      this.forget(event);
      this.options.events.emit("dispatch.failed", {
        work_item: workItem.ref,
        delivery_id: event.deliveryId,
        action,
        error: messageOf(error),
        will_retry: true,
      });
      this.react(event, "failed");
      return RETRY;
    }
  }

  private settle(workItem: WorkItem, event: InboundEvent, reason: string): HandleResult {
    this.options.events.emit("dispatch.dropped", { work_item: workItem.ref, delivery_id: event.deliveryId, reason });
    return SETTLED;
  }

  private adapter(name: string): HarnessAdapter {
    return harnessAdapter(name, this.routing);
  }

  private async promptInput(workItem: WorkItem, event: InboundEvent, record?: SessionRecord): Promise<PromptInput> {
    let title = event.title;
    if (title === undefined) {
      try {
        title = (await this.options.trackers.forRef(workItem.ref).getItem(parseWorkItemRef(workItem.ref))).title;
      } catch {
        title = undefined;
      }
    }
    return {
      workItem,
      event,
      title,
      askCommand: `the-loop ask --work-item ${workItem.ref} "your question"`,
      awaitingQuestion: record?.awaitingInput?.question,
    };
  }

  /**
   * A spawn the router decided on (the spawn policy arms the item and the start gate let it
   * through). The claim is made inside the item's control transaction, where the gate is checked
   * again: a stop from another process (the CLI) between the decision and the claim either comes
   * first — and holds this spawn — or finds the claimed session and closes it. Never both missed.
   */
  private async spawn(workItem: WorkItem, event: InboundEvent, slot: PoolSlot, trigger: StartTrigger = "event"): Promise<SpawnOutcome> {
    const harnessName = this.routing.defaultHarness;
    const adapter = this.resolveAdapter(workItem, event, harnessName);
    if (typeof adapter === "string") return { kind: "failed", error: adapter, retry: false };
    // A live session means this event is its input (the claim below says so): nothing starts.
    // Not even read when no hook runs here, so a dispatch without hooks does what it always did.
    const observed = this.hooks.handles("work_item_start") || this.hooks.handles("input_received");
    if (observed && !isLive(this.options.registry.get(workItem.ref))) {
      // The command standing when the hook was asked: a refusal disarms the item only if it still stands.
      const asked = this.options.control.get(workItem.ref);
      const refusal = await this.atPoint(slot, "work_item_start", () => this.startRefusal(workItem, event, trigger, harnessName));
      if (refusal !== undefined) {
        return await this.refuse(workItem, event, "work_item_start", refusal, (current) => sameCommand(current, asked));
      }
      // A comment that starts a session is delivered as its boot prompt.
      const inputKind = deliveredInputKind(event, undefined);
      if (inputKind !== undefined) {
        await this.atPoint(slot, "input_received", () => this.inputReceived(workItem, event, { kind: inputKind, text: boundedInputText(event.body) }));
      }
    }
    const gated = await this.options.control.transaction(
      workItem.ref,
      async (tx): Promise<{ readonly hold: SpawnHold } | { readonly claim: ClaimResult; readonly standing: ControlRecord | undefined }> => {
        const standing = tx.read();
        const hold = spawnHold(standingState(standing, this.policy), this.policy.control);
        if (hold !== undefined) return { hold };
        return { claim: await this.claim(workItem, event, harnessName), standing };
      },
    );
    if ("hold" in gated) return { kind: "held", hold: gated.hold };
    const { claim, standing } = gated;
    if (!claim.claimed) return { kind: "occupied", occupant: claim.record };
    this.react(event, "started");
    const started = await this.startClaimed(workItem, event, adapter, claim.record, slot, (current) => sameCommand(current, standing));
    if (started.kind === "started") await this.confirmPendingStart(workItem.ref, event);
    if (started.kind === "failed") await this.markStandingStartPending(workItem.ref, event);
    return started;
  }

  /** A spawn that did not happen: recorded, and the comment it came from marked as failed. */
  private spawnFailed(ref: string, harness: string, event: InboundEvent, error: string): void {
    this.options.events.emit("session.spawn_failed", { work_item: ref, harness, error, delivery_id: event.deliveryId });
    this.react(event, "failed");
  }

  /** The harness adapter, or (reported) why it cannot be had: a configuration problem no retry fixes. */
  private resolveAdapter(workItem: WorkItem, event: InboundEvent, harnessName: string): HarnessAdapter | string {
    try {
      return this.adapter(harnessName);
    } catch (error) {
      this.spawnFailed(workItem.ref, harnessName, event, messageOf(error));
      return messageOf(error);
    }
  }

  /** Claims the item's session record for a new session, unless one is live (then: the occupant). */
  private claim(workItem: WorkItem, event: InboundEvent, harnessName: string): Promise<ClaimResult> {
    const at = this.now().toISOString();
    const target = tmuxTargetFor(workItemSlug(parseWorkItemRef(workItem.ref)), this.options.stateRootTag);
    const sessionId = newHarnessSessionId();
    return this.options.registry.claim(workItem, () => ({
      version: 1,
      workItem: { ...workItem },
      harness: harnessName,
      harnessSessionId: sessionId,
      cwd: this.options.spawnCwd,
      status: "active",
      createdAt: at,
      lastEventAt: at,
      tmuxTarget: target,
      recentDeliveries: [...deliveryKeys(event)],
      url: workItem.url,
      claimedBy: { ...this.self },
    }));
  }

  /**
   * The rest of a spawn once the claim is won, shared by an event's spawn and a start command:
   * the checkout, the harness with the boot prompt, the announcement. A failure closes the claim
   * again (`spawn-failed`, which leaves a standing start record pending).
   */
  private async startClaimed(
    workItem: WorkItem,
    event: InboundEvent,
    adapter: HarnessAdapter,
    claimed: SessionRecord,
    slot: PoolSlot,
    /** Whether the item's control record is still the one this start went by (see refuse). */
    unchanged: (current: ControlRecord | undefined) => boolean,
  ): Promise<SpawnOutcome> {
    const routing = this.routing;
    const harnessName = claimed.harness;
    const target = claimed.tmuxTarget;
    // Only after the claim: of two processes spawning for one item, only the winner prepares.
    const prepared = await this.prepareWorkspace(workItem, event, harnessName, claimed);
    if ("failed" in prepared) return { kind: "failed", error: prepared.failed, retry: true };
    if ("closed" in prepared) {
      this.settle(workItem, event, SESSION_CLOSED);
      return { kind: "closed" };
    }
    const cwd = prepared.cwd;

    const bootPrompt = renderBootPrompt(this.templates, await this.promptInput(workItem, event));
    const launch = await this.atPoint(slot, "session_spawn", () =>
      this.hooks.run(
        "session_spawn",
        {
          workItem: workItemEntity(workItem),
          actor: event.actor ?? "",
          harness: harnessName,
          tmuxTarget: target,
          cwd,
          harnessSessionId: claimed.harnessSessionId,
          pullRequest: event.pullRequest?.ref ?? "",
          deliveryId: event.deliveryId,
          proceed: true,
          reason: "",
          prompt: bootPrompt,
        },
        { workItem: workItem.ref },
      ),
    );
    if (launch.refusal !== undefined) return await this.refuseLaunch(workItem, event, claimed, launch.refusal, unchanged);
    const prompt = launch.context.prompt;
    try {
      await this.prepareHarness(workItem.ref, adapter.name, cwd);
      await this.options.runner.spawn({
        target,
        cwd,
        argv: adapter.fresh({ sessionId: claimed.harnessSessionId, prompt, workItem: workItem.ref }),
        env: this.options.sessionEnv(workItem.ref),
      });
    } catch (error) {
      const elsewhere = error instanceof TargetLiveError ? this.startedByOther(claimed) : undefined;
      if (elsewhere !== undefined) return await this.startedElsewhere(workItem, event, elsewhere, slot);
      await this.options.registry.close(workItem.ref, "spawn-failed", this.now());
      const remedy =
        error instanceof ProgramNotFoundError
          ? `; install it, or point routing.harnesses.${harnessName}.command at it (or choose another routing.defaultHarness)`
          : error instanceof TargetLiveError
          ? // Another project, or a person, may own it: never advise ending it.
            ` (no live session record here names it, and it may belong to another project on this tmux server, so it is left alone; see what runs in it with \`tmux${
              routing.tmux.socketName ? ` -L ${routing.tmux.socketName}` : ""
            } attach -r -t =${target}\`, or give this project a tmux server of its own with routing.tmux.socketName)`
          : "";
      const message = `${messageOf(error)}${remedy}`;
      this.spawnFailed(workItem.ref, harnessName, event, message);
      this.forget(event);
      // Neither comes right by trying again at once; the next event for the item tries afresh.
      return { kind: "failed", error: message, retry: !(error instanceof TargetLiveError || error instanceof ProgramNotFoundError) };
    }
    // From here on a pane missing from tmux is a dead harness, not one still being started.
    try {
      await this.markHarnessStarted(claimed);
    } catch (error) {
      // The harness runs regardless; without the mark, a delivery that finds its pane gone waits
      // out harnessStartBound before it takes the harness for dead.
      this.options.events.emit("dispatch.failed", {
        work_item: workItem.ref,
        delivery_id: event.deliveryId,
        action: "spawn",
        error: `the harness started, but its session record could not note it: ${messageOf(error)}`,
        will_retry: false,
      });
    }
    if (await this.endIfClosed(claimed)) {
      this.settle(workItem, event, SESSION_CLOSED);
      return { kind: "closed" };
    }
    if (!adapter.promptInArgv.fresh) await this.bootAsInput(workItem, event, claimed, prompt);
    this.options.events.emit("session.spawned", {
      work_item: workItem.ref,
      harness: harnessName,
      harness_session_id: claimed.harnessSessionId,
      tmux_target: target,
      cwd,
      delivery_id: event.deliveryId,
    });
    this.react(event, "completed");
    await this.recordLink(workItem, event);
    await this.announceSpawned(workItem, event, { ...claimed, cwd }, slot, routing.announce.enabled);
    return { kind: "started", record: claimed };
  }

  /**
   * The claimed session, if its spawn met a harness another process started for it: still live,
   * and marked started by someone else (this claimer marks only after its own spawn succeeds).
   * That happens when a delivery waited past harnessStartBound for this claimer and took it for
   * dead (see paste). Undefined when the record cannot be read: the spawn then fails as it would.
   */
  private startedByOther(claimed: SessionRecord): SessionRecord | undefined {
    try {
      const current = this.options.registry.get(claimed.workItem.ref);
      return current !== undefined && sameLiveSession(current, claimed) && current.harnessStartedAt !== undefined ? current : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * The end of a start whose harness another process started (startedByOther). Closing the
   * session would leave that harness running for a closed record, so the session stays as it is.
   * The harness got the other process's event as its prompt, not this one's boot prompt: the event
   * is settled as harness-started-elsewhere. The announcement and a PR binding are still this
   * start's to make.
   */
  private async startedElsewhere(workItem: WorkItem, event: InboundEvent, session: SessionRecord, slot: PoolSlot): Promise<SpawnOutcome> {
    this.settle(workItem, event, HARNESS_STARTED_ELSEWHERE);
    this.react(event, "completed");
    await this.recordLink(workItem, event);
    await this.announceSpawned(workItem, event, session, slot, this.routing.announce.enabled);
    return { kind: "started", record: session };
  }

  /**
   * Notes on the record that the session's harness has been started (harnessStartedAt), with
   * `extra` beside it, unless the record no longer holds this session live. Whether it did.
   */
  private async markHarnessStarted(session: SessionRecord, extra: { readonly harnessSessionId?: string } = {}): Promise<boolean> {
    let marked = false;
    await this.options.registry.update(session.workItem.ref, (current) => {
      if (!sameLiveSession(current, session)) return undefined;
      marked = true;
      return { ...current, ...extra, harnessStartedAt: this.now().toISOString() };
    });
    return marked;
  }

  /**
   * The session's working directory: its own checkout when a workspace provider gives one (the
   * record then names it, so a respawn and the close find it), else spawnCwd. `failed` instead
   * when the checkout failed (the claim is closed again, reported), `closed` when the session was
   * closed meanwhile (`the-loop sessions close` during a long clone) — that close could not
   * release a checkout it did not know of, so this does, and no harness is started for a closed
   * session.
   */
  private async prepareWorkspace(
    workItem: WorkItem,
    event: InboundEvent,
    harnessName: string,
    claimed: SessionRecord,
  ): Promise<{ readonly cwd: string } | { readonly failed: string } | { readonly closed: true }> {
    const provider = this.options.workspaces;
    if (provider === undefined || !this.routing.workspace.enabled) return { cwd: this.options.spawnCwd };
    let workspace: SessionWorkspace | undefined;
    let recorded = false;
    try {
      workspace = await provider.prepare(workItem, workspaceRequest(workItem, event));
      if (workspace === undefined) return { cwd: this.options.spawnCwd };
      const made = workspace;
      await this.options.registry.update(workItem.ref, (record) => {
        if (!sameLiveSession(record, claimed)) return undefined;
        recorded = true;
        return { ...record, cwd: made.checkout, workspace: made };
      });
    } catch (error) {
      await this.options.registry.close(workItem.ref, "spawn-failed", this.now());
      const message = `its checkout could not be prepared: ${messageOf(error)}`;
      this.spawnFailed(workItem.ref, harnessName, event, message);
      this.forget(event);
      return { failed: message };
    }
    if (recorded) return { cwd: workspace.checkout };
    // A session claimed anew by another process prepares this same checkout for itself: leave it be.
    if (!isLive(this.options.registry.get(workItem.ref))) await provider.release(workItem.ref, workspace);
    return { closed: true };
  }

  /**
   * Whether the session `started` for was closed (by another process) while its harness was being
   * started; if so, that harness is ended again, whatever killHarnessOnClose says — it started
   * after the close and has done nothing worth keeping. The close marks the record first and ends
   * the harness after, so either that close found this harness running, or this check sees it closed.
   */
  private async endIfClosed(started: SessionRecord): Promise<boolean> {
    const ref = started.workItem.ref;
    if (sameLiveSession(this.options.registry.get(ref), started)) return false;
    const tmux = this.routing.tmux;
    const result = await this.options.runner.terminate(started.tmuxTarget, {
      killHarness: true,
      graceMs: Math.round(tmux.harnessKillGraceSeconds * 1000),
      killSession: !tmux.keepSessionOnClose,
    });
    if (result.signal !== "none") {
      this.options.events.emit("session.harness_terminated", { work_item: ref, tmux_target: started.tmuxTarget, signal: result.signal });
    }
    return true;
  }

  /**
   * A checkout prepared for a spawn whose harness then failed is left for the next attempt to
   * reuse; once the item closes there will be none, so it is released — unless something still
   * runs in the session's tmux target (a harness an earlier close left running there).
   */
  private async releaseLeftCheckout(ref: string): Promise<void> {
    const provider = this.options.workspaces;
    if (provider === undefined) return;
    const record = this.options.registry.get(ref);
    const checkout = record?.workspace?.checkout;
    if (record?.status !== "closed" || record.closeReason !== "spawn-failed" || checkout === undefined) return;
    let left: SessionWorkspace | undefined;
    try {
      if ((await this.options.runner.probe(record.tmuxTarget)) === "live") return;
      // Off the record first, so the checkout is released once even if two closes race.
      await this.options.registry.update(ref, (current) => {
        if (current.status !== "closed" || current.workspace?.checkout !== checkout) return undefined;
        left = current.workspace;
        const { workspace: _released, ...rest } = current;
        return rest;
      });
    } catch (error) {
      this.options.events.emit("workspace.clean_failed", { work_item: ref, checkout, error: messageOf(error) });
      return;
    }
    if (left !== undefined) await provider.release(ref, left);
  }

  /**
   * An event about a pull request reached the session of another work item: from now on the PR's
   * events go there even when they no longer name that item. The binding and the record's list
   * are written once; a failure to write them is reported and does not undo the delivery.
   */
  private async recordLink(workItem: WorkItem, event: InboundEvent): Promise<void> {
    const pullRequest = event.pullRequest?.ref;
    if (pullRequest === undefined || pullRequest === workItem.ref) return;
    const links = this.options.links;
    const at = this.now();
    try {
      const changed = links ? await links.bind(pullRequest, workItem, event.linkedBy?.[workItem.ref] ?? "closing-reference", at) : undefined;
      const stored = links?.get(pullRequest);
      // An explicit binding to another item, made since this event was routed, keeps its place:
      // the PR's events no longer come here, so the record must not say they do.
      if (stored !== undefined && stored.workItem.ref !== workItem.ref) return;
      // The record says how the binding in force was made, which an earlier event may have decided.
      const source =
        stored !== undefined && stored.workItem.ref === workItem.ref
          ? stored.source
          : (event.linkedBy?.[workItem.ref] ?? "closing-reference");
      let added = false;
      await this.options.registry.update(workItem.ref, (record) => {
        if (record.pullRequests?.some((link) => link.ref === pullRequest)) return undefined;
        added = true;
        return { ...record, pullRequests: [...(record.pullRequests ?? []), { ref: pullRequest, source, linkedAt: at.toISOString() }] };
      });
      if (changed ?? added) this.options.events.emit("session.pr_linked", { work_item: workItem.ref, pull_request: pullRequest, linked_by: source });
    } catch (error) {
      this.options.events.emit("dispatch.failed", {
        work_item: workItem.ref,
        delivery_id: event.deliveryId,
        action: "link",
        error: `the delivery succeeded, but binding ${pullRequest} to it failed: ${messageOf(error)}`,
        will_retry: false,
      });
    }
  }

  private async announce(ref: string, target: string, harness: string): Promise<void> {
    try {
      const comment = await this.options.trackers
        .forRef(ref)
        .postComment(
          parseWorkItemRef(ref),
          announcementText({ ref, tmuxTarget: target, harness, socketName: this.routing.tmux.socketName }),
        );
      this.options.events.emit("session.announced", { work_item: ref, comment_id: comment.id });
    } catch (error) {
      this.options.events.emit("session.announce_failed", { work_item: ref, error: messageOf(error) });
    }
  }

  // ---- lifecycle hooks ----------------------------------------------------------------------

  /** `work` holding a slot of the heavy pool, which a hook chain run within it lets go of (atPoint). */
  private async withSlot<T>(work: (slot: PoolSlot) => Promise<T>): Promise<T> {
    const slot = await PoolSlot.take(this.heavy);
    try {
      return await work(slot);
    } finally {
      slot.release();
    }
  }

  /**
   * Runs a point's chain from inside heavy work. A hook may take its whole timeout (a local one,
   * longer): while it decides, the slot goes to the spawns and closes of other items waiting for
   * it, and is taken back after, so a slow hook holds up its own work item and nothing else
   * (R6.2). With no executor at the point nothing is let go, so a dispatch without hooks takes
   * the pool exactly as it always has.
   */
  private async atPoint<T>(slot: PoolSlot, point: LifecyclePointName, run: () => Promise<T>): Promise<T> {
    if (!this.hooks.handles(point)) return run();
    return slot.without(run);
  }

  /**
   * `work_item_start`, for a start about to claim a session: the refusal when the chain ended on
   * `proceed: false`. Nothing exists yet — no claim, no checkout — so a refusal undoes nothing.
   */
  private async startRefusal(
    workItem: WorkItem,
    event: InboundEvent,
    trigger: StartTrigger,
    harnessName: string,
  ): Promise<HookRefusal | undefined> {
    const outcome = await this.hooks.run(
      "work_item_start",
      {
        workItem: workItemEntity(workItem),
        actor: event.actor ?? "",
        trigger,
        harness: harnessName,
        deliveryId: event.deliveryId,
        proceed: true,
        reason: "",
      },
      { workItem: workItem.ref },
    );
    return outcome.refusal;
  }

  /**
   * `session_spawn` refused the launch of a claimed session: the claim is closed (its checkout
   * released; no harness ever ran) and the refusal applied as at work_item_start. Only this claim
   * is closed: one closed meanwhile (a stop, `the-loop sessions close`) has been dealt with by
   * whoever closed it, and a session claimed since then is another process's to run.
   */
  private async refuseLaunch(
    workItem: WorkItem,
    event: InboundEvent,
    claimed: SessionRecord,
    refusal: HookRefusal,
    unchanged: (current: ControlRecord | undefined) => boolean,
  ): Promise<SpawnOutcome> {
    let closing = false;
    const closed = await this.options.registry.update(workItem.ref, (current) => {
      if (!sameLiveSession(current, claimed) || current.harnessSessionId !== claimed.harnessSessionId) return undefined;
      closing = true;
      const { awaitingInput: _never, ...rest } = current;
      return { ...rest, status: "closed", closedAt: this.now().toISOString(), closeReason: HOOK_REFUSED };
    });
    if (!closing || closed === undefined) {
      this.settle(workItem, event, SESSION_CLOSED);
      return { kind: "closed" };
    }
    // No harness of this session's own ever ran, so nothing is left running for killHarnessOnClose
    // to spare, nor a checkout to keep for one: anything in its pane started after the claim for
    // it (as in endIfClosed), and ends with it.
    const options = this.closeOptions();
    await finishClose({ ...options, tmux: { ...options.tmux, killHarnessOnClose: true } }, closed, HOOK_REFUSED);
    return this.refuse(workItem, event, "session_spawn", refusal, unchanged);
  }

  /**
   * Applies a hook's `proceed: false` (R2.6): the item is disarmed by a control record in the
   * hook's name (no event or pending start starts it again; a new start command does), one
   * marked comment names the hook and its reason, and the event is settled. For a pull request's
   * own session, the event goes to the live session of a work item it names instead.
   *
   * The hook may have taken its time, and another process may have acted on the item meanwhile.
   * A session it started makes the refusal moot: nothing is refused, and the caller treats that
   * session as one found running (`occupied`). A command it recorded (`unchanged` says the
   * record is no longer the one this start went by) is the item's newer state and is kept: the
   * refusal is still commented and recorded, but disarms nothing.
   */
  private async refuse(
    workItem: WorkItem,
    event: InboundEvent,
    point: string,
    refusal: HookRefusal,
    unchanged: (current: ControlRecord | undefined) => boolean,
  ): Promise<Refused | Occupied> {
    const ref = workItem.ref;
    const reason = boundedReason(refusal.reason);
    const applied = await this.options.control.transaction(
      ref,
      async (tx): Promise<{ readonly occupant: SessionRecord } | { readonly disarmed: boolean }> => {
        const live = this.options.registry.get(ref);
        if (live !== undefined && isLive(live)) return { occupant: live };
        const current = tx.read();
        if (!unchanged(current)) {
          // The newer command stands, and remembers this start too, so a redelivery of it is not taken again.
          if (current !== undefined) await tx.write({ ...current, recentDeliveries: rememberedCommands(current, event) });
          return { disarmed: false };
        }
        await tx.write({
          version: 1,
          ref,
          command: "stop",
          source: "hook",
          actor: refusal.hook,
          requestedAt: this.now().toISOString(),
          effect: "refused",
          note: reason,
          deliveryId: event.deliveryId,
          recentDeliveries: rememberedCommands(current, event),
        });
        return { disarmed: true };
      },
    );
    if ("occupant" in applied) return { kind: "occupied", occupant: applied.occupant };
    let posted = false;
    try {
      await this.options.trackers.forRef(ref).postComment(
        parseWorkItemRef(ref),
        refusalText({
          ref,
          point,
          hook: refusal.hook,
          reason,
          startKeyword: this.routing.control.keywords.start,
          disarmed: applied.disarmed,
        }),
      );
      posted = true;
    } catch (error) {
      this.options.events.emit("session.announce_failed", { work_item: ref, error: `the refusal could not be posted: ${messageOf(error)}` });
    }
    this.options.events.emit("hooks.refused", {
      point,
      hook: refusal.hook,
      reason,
      work_item: ref,
      delivery_id: event.deliveryId,
      comment_posted: posted,
    });
    this.react(event, "failed");
    const redirect =
      point === "session_spawn" && workItem.kind === "pull_request"
        ? event.workItems
            .filter((item) => item.ref !== ref)
            .map((item) => this.options.registry.get(item.ref))
            .find((record) => record !== undefined && isLive(record))
        : undefined;
    return { kind: "refused", refusal: { ...refusal, reason }, ...(redirect !== undefined ? { redirect } : {}) };
  }

  /**
   * `session_spawned`, then the announcement unless the chain's `announce` says not to.
   * `announce`: routing.announce.enabled as the start read it.
   */
  private async announceSpawned(workItem: WorkItem, event: InboundEvent, session: SessionRecord, slot: PoolSlot, announce: boolean): Promise<void> {
    const outcome = await this.atPoint(slot, "session_spawned", () =>
      this.hooks.run(
        "session_spawned",
        {
          workItem: workItemEntity(workItem),
          harness: session.harness,
          tmuxTarget: session.tmuxTarget,
          cwd: session.cwd,
          harnessSessionId: session.harnessSessionId,
          deliveryId: event.deliveryId,
          announce,
        },
        { workItem: workItem.ref },
      ),
    );
    if (outcome.context.announce) await this.announce(workItem.ref, session.tmuxTarget, session.harness);
  }

  /** `input_received`: a person's input is about to be delivered or run. Observation only. */
  private async inputReceived(
    workItem: WorkItem,
    event: InboundEvent,
    input: { readonly kind: InputKind; readonly text: string; readonly command?: ControlCommand },
  ): Promise<void> {
    if (this.inputSeen.has(event)) return;
    this.inputSeen.add(event);
    await this.hooks.run(
      "input_received",
      {
        workItem: workItemEntity(workItem),
        actor: event.actor ?? "",
        inputKind: input.kind,
        text: input.text,
        command: input.command ?? "",
        inputSource: event.source,
        url: event.commentUrl ?? "",
        deliveryId: event.deliveryId,
      },
      { workItem: workItem.ref },
    );
  }

  private async deliver(record: SessionRecord, event: InboundEvent): Promise<HandleResult> {
    const workItem = record.workItem as WorkItem;
    if (record.status === "paused") return this.settle(workItem, event, "session-paused");
    if (deliveryKeys(event).some((id) => record.recentDeliveries.includes(id))) return this.settle(workItem, event, "already-processed");
    this.react(event, "started");
    const inputKind = deliveredInputKind(event, record);
    if (inputKind !== undefined) await this.inputReceived(workItem, event, { kind: inputKind, text: boundedInputText(event.body) });
    const text = renderEventPrompt(this.templates, await this.promptInput(workItem, event, record));
    const pasted = await this.paste(record, text);
    if (pasted === "closed") return this.settle(workItem, event, SESSION_CLOSED);
    if (pasted === "paused") return this.settle(workItem, event, "session-paused");
    if (pasted === "spawn-failed" || pasted === "interrupted") {
      // Not dropped: the session this event was for never got a harness (its claimer's spawn
      // failed), or this process stopped waiting for it. Handed out again, the event is decided
      // afresh — a failed spawn left no live session, so it may start one itself.
      this.forget(event);
      this.options.events.emit("dispatch.failed", {
        work_item: workItem.ref,
        delivery_id: event.deliveryId,
        action: "deliver",
        error:
          pasted === "spawn-failed"
            ? "the session's harness could not be started by the process that claimed it; the event is tried again"
            : "the-loop stopped while the session's harness was still being started by another process; the event is tried again",
        will_retry: true,
      });
      this.react(event, "failed");
      return RETRY;
    }
    await this.options.registry.update(workItem.ref, (current) => {
      const { awaitingInput: _answered, ...rest } = current;
      const keys = deliveryKeys(event);
      const recent = [...rest.recentDeliveries.filter((id) => !keys.includes(id)), ...keys];
      return { ...rest, lastEventAt: this.now().toISOString(), recentDeliveries: recent.slice(-RECENT_DELIVERIES_MAX) };
    });
    this.options.events.emit("dispatch.succeeded", {
      work_item: workItem.ref,
      delivery_id: event.deliveryId,
      tmux_target: record.tmuxTarget,
    });
    this.react(event, "completed");
    await this.recordLink(workItem, event);
    return SETTLED;
  }

  /**
   * Puts `text` into the session's harness, starting the harness again (with `text` as its
   * prompt) when its pane died. `closed`: the session was closed by another process meanwhile,
   * and nothing was started for it; `paused`: it was paused meanwhile, and nothing was pasted;
   * `spawn-failed`: it was closed because its claimer's start failed, so its harness never ran;
   * `interrupted`: this dispatcher began to drain while it waited for that start.
   *
   * A pane missing from a session whose harness is not marked started yet (harnessStarted) is
   * not a dead harness: its claimer — another process, most likely — is still starting it, and
   * a respawn here would race that start (the claimer's spawn would then fail over the harness
   * started here, and close the session under it). The start is waited for (awaitHarnessStart);
   * only a claimer known to run no more (claimerGone), or one that has not marked it within
   * harnessStartBound, is taken for dead.
   */
  private async paste(record: SessionRecord, text: string): Promise<PasteResult> {
    const ref = record.workItem.ref;
    let known = record;
    let waited = false;
    let raced = false;
    for (;;) {
      await this.untilReady(known);
      // Read again right before the paste: a pause or a close by another process (the CLI) since
      // the caller read the record — during the grace above, or a tracker lookup for the prompt —
      // must hold this text off (R3.2), as it would had it come first. Nothing is pasted into a
      // paused session or a closed one.
      const now = this.options.registry.get(ref);
      if (now === undefined || !sameLiveSession(now, record)) return closedAs(now, record);
      if (now.status === "paused") return "paused";
      try {
        await this.deliverText(record, text);
        return "pasted";
      } catch (error) {
        if (!(error instanceof SessionMissingError)) throw error;
      }
      // A pane gone because another process closed the session (`the-loop sessions close`) is not
      // a dead harness: starting one again would run an agent for a closed session, in a
      // checkout that close may have removed.
      const current = this.options.registry.get(ref);
      if (current === undefined || !sameLiveSession(current, record)) return closedAs(current, record);
      if (!waited && !this.harnessStarted(current)) {
        waited = true;
        const started = await this.awaitHarnessStart(current);
        if (typeof started !== "string") {
          // Started by its claimer: delivered like any input, after the harness's startup grace.
          known = started;
          continue;
        }
        if (started !== "abandoned") return started;
        // Claimed, never started: the claimer died between its claim and its spawn.
      }
      try {
        if (!(await this.heavy.use(() => this.respawn(current, text)))) return closedAs(this.options.registry.get(ref), record);
      } catch (error) {
        // Another process started the harness between the delivery above and this respawn (two
        // deliveries finding one dead pane, or a claimer slower than the bound): the text goes there.
        if (!(error instanceof TargetLiveError) || raced) throw error;
        raced = true;
        known = this.options.registry.get(ref) ?? current;
        continue;
      }
      if (await this.endIfClosed(record)) return "closed";
      return "pasted";
    }
  }

  /**
   * Whether the session's harness has been started, so that a pane missing from tmux means it
   * died: marked (harnessStartedAt), or claimed longer ago than a start can take — a record
   * written before the mark existed, or one whose claimer died before it started the harness.
   */
  private harnessStarted(session: SessionRecord): boolean {
    return session.harnessStartedAt !== undefined || this.harnessStartLeftMs(session) <= 0;
  }

  /** How much of harnessStartBound is left since the session was claimed (by its createdAt). */
  private harnessStartLeftMs(session: SessionRecord): number {
    const age = this.now().getTime() - Date.parse(session.createdAt);
    if (Number.isNaN(age)) return 0;
    return this.harnessStartBound(session) - Math.max(0, age);
  }

  /**
   * How long the claimer of `session` may take to start its harness, from its claim to its mark:
   * HARNESS_START_BOUND_MS, plus — when the session gets a checkout — the checkout's own worst
   * case: the wait for the repository's lock, which another process's checkout may hold as long
   * as its git commands may run (the workspace's own lock timeout, 5 × gitTimeoutSeconds + 10 s),
   * and then this checkout's git commands, as long again. Local work items never get a checkout.
   */
  private harnessStartBound(session: SessionRecord): number {
    if (this.options.harnessStartWaitMs !== undefined) return this.options.harnessStartWaitMs;
    const workspace = this.routing.workspace;
    const checkout = this.options.workspaces !== undefined && workspace.enabled && session.workItem.tracker !== "local";
    return HARNESS_START_BOUND_MS + (checkout ? 2 * (5 * workspace.gitTimeoutSeconds * 1000 + 10_000) : 0);
  }

  /**
   * Waits for the claimer of `session` (unmarked, live) to mark its harness started, reading the
   * record again after pauses that double up to HARNESS_START_POLL_MAX_MS, until what is left of
   * harnessStartBound has passed. The marked record; otherwise `closed` or `spawn-failed` when the
   * session was closed meanwhile, `interrupted` when this dispatcher began to drain (the event is
   * handed back rather than holding up the drain for the rest of the bound), `abandoned` when
   * the record is still unmarked and its claimer runs no more (claimerGone) or the bound passed.
   */
  private async awaitHarnessStart(session: SessionRecord): Promise<SessionRecord | Exclude<PasteResult, "pasted" | "paused"> | "abandoned"> {
    const ref = session.workItem.ref;
    // Real time, not this.now(): how long this process waits, whatever clock stamps the records.
    const deadline = performance.now() + this.harnessStartLeftMs(session);
    let pause = 10;
    let current = session;
    for (;;) {
      const left = deadline - performance.now();
      if (left <= 0 || this.claimerGone(current)) return "abandoned";
      if (!this.accepting) return "interrupted";
      await new Promise((resolve) => setTimeout(resolve, Math.min(pause, left)));
      pause = Math.min(pause * 2, HARNESS_START_POLL_MAX_MS);
      const read = this.options.registry.get(ref);
      if (read === undefined || !sameLiveSession(read, session)) return closedAs(read, session);
      if (read.harnessStartedAt !== undefined) return read;
      current = read;
    }
  }

  /**
   * Whether the process that claimed `session` is known to run no more: its pid names no process,
   * or (where /proc tells start times) a process that started at another time than the claimer —
   * the pid was reused. This process is never gone; neither is a claimer the record does not
   * name (a record written before claimedBy existed): for those only harnessStartBound tells.
   */
  private claimerGone(session: SessionRecord): boolean {
    const claimer = session.claimedBy;
    if (claimer === undefined) return false;
    if (claimer.pid === this.self.pid && (claimer.startTicks === undefined || claimer.startTicks === this.self.startTicks)) return false;
    return !isProcessAlive(claimer.pid, claimer.startTicks);
  }

  /** Pastes into the session's pane, Enter waiting for the harness to show the paste where it knows how to tell. */
  private async deliverText(record: SessionRecord, text: string): Promise<void> {
    let pastedPattern: RegExp | undefined;
    try {
      pastedPattern = this.adapter(record.harness).pastedPattern;
    } catch {
      pastedPattern = undefined;
    }
    await this.options.runner.deliver(record.tmuxTarget, text, pastedPattern === undefined ? {} : { pastedPattern });
  }

  /** What the harness would ask a person before it starts; never fails the spawn it precedes. */
  private async prepareHarness(workItem: string, harness: string, cwd: string): Promise<void> {
    await this.options.prepareHarness?.({
      workItem,
      harness,
      cwd,
      routing: this.routing,
      env: { ...process.env, ...this.options.sessionEnv(workItem) },
    });
  }

  /**
   * A command harness whose argv has no `{prompt}` is handed the boot prompt as its first input,
   * the same paste later events use, once it is ready. A failure is recorded; the session stays.
   */
  private async bootAsInput(workItem: WorkItem, event: InboundEvent, claimed: SessionRecord, prompt: string): Promise<void> {
    const started = this.options.registry.get(workItem.ref) ?? claimed;
    let outcome: string;
    try {
      outcome = await this.paste(started, prompt);
    } catch (error) {
      outcome = messageOf(error);
    }
    if (outcome === "pasted") return;
    this.options.events.emit("dispatch.failed", {
      work_item: workItem.ref,
      delivery_id: event.deliveryId,
      action: "spawn",
      error: `the harness started, but its boot prompt could not be handed to it as input (${outcome}); comment again to give it its task`,
      will_retry: false,
    });
  }

  /**
   * Waits until the harness can take input: for one with a ready pattern (Claude Code), until its
   * screen shows it and no dialog, up to tmux.readyTimeoutSeconds; for the rest, the startup grace.
   * Throws HarnessNotReadyError (after recording session.not_ready) when it never is: the text is
   * not pasted where it would answer a dialog, and the event is tried again.
   */
  private async untilReady(record: SessionRecord): Promise<void> {
    const runner = this.options.runner;
    let adapter: HarnessAdapter | undefined;
    try {
      adapter = this.adapter(record.harness);
    } catch {
      adapter = undefined;
    }
    const readyPattern = adapter?.readyPattern;
    if (readyPattern === undefined || runner.screen === undefined) return this.startupGrace(record);
    const target = record.tmuxTarget;
    const outcome = await awaitReady({
      rule: { readyPattern, ...(adapter?.blockedPattern ? { blockedPattern: adapter.blockedPattern } : {}) },
      screen: async () => {
        try {
          return await runner.screen?.(target);
        } catch (error) {
          if (error instanceof SessionMissingError) return undefined;
          throw error;
        }
      },
      boundMs: this.routing.tmux.readyTimeoutSeconds * 1000,
      keepWaiting: () => this.accepting,
    });
    this.readyAt.delete(target);
    if (outcome.ready) return;
    const blocked = outcome.state === "blocked";
    this.options.events.emit("session.not_ready", {
      work_item: record.workItem.ref,
      tmux_target: target,
      waited_ms: outcome.waitedMs,
      blocked,
      screen: outcome.tail.slice(-600),
    });
    throw new HarnessNotReadyError(target, outcome.waitedMs, blocked);
  }

  /**
   * A harness that has just started may not read its terminal yet (a TUI sets up bracketed paste
   * first); input pasted before that can be split into lines or lost. Only this work item waits.
   */
  private async startupGrace(record: SessionRecord): Promise<void> {
    const graceMs = this.routing.tmux.startupGraceSeconds * 1000;
    // The record's mark says when a harness another process started came up; readyAt, one started here.
    const startedAt = Math.max(Date.parse(record.createdAt), record.harnessStartedAt === undefined ? 0 : Date.parse(record.harnessStartedAt) || 0);
    const readyAt = Math.max(startedAt + graceMs, this.readyAt.get(record.tmuxTarget) ?? 0);
    const wait = readyAt - this.now().getTime();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(wait, graceMs)));
    this.readyAt.delete(record.tmuxTarget);
  }

  private markStarted(target: string): void {
    this.readyAt.set(target, this.now().getTime() + this.routing.tmux.startupGraceSeconds * 1000);
  }

  /**
   * The pane died: start the harness again, resuming its conversation when it can; the event is
   * the prompt. False when the session is no longer live (nothing was started). The record is
   * marked before the spawn: a claimer still starting this session (one slower than
   * harnessStartBound) whose spawn then meets this harness finds it taken over (startedByOther)
   * instead of closing the session under it.
   */
  private async respawn(record: SessionRecord, prompt: string): Promise<boolean> {
    const ref = record.workItem.ref;
    const adapter = this.adapter(record.harness);
    if (!(await this.markHarnessStarted(record))) return false;
    await this.prepareHarness(ref, adapter.name, record.cwd);
    const spawnWith = async (argv: string[]): Promise<void> => {
      await this.options.runner.spawn({ target: record.tmuxTarget, cwd: record.cwd, argv, env: this.options.sessionEnv(ref) });
      this.markStarted(record.tmuxTarget);
    };
    // A harness started without the text in its argv is handed it as its first input.
    const handOver = async (inArgv: boolean): Promise<void> => {
      if (inArgv) return;
      await this.untilReady(record);
      await this.deliverText(record, prompt);
    };
    const canResume =
      this.routing.tmux.resumeOnRespawn && adapter.resume && isResumableSessionId(record.harnessSessionId);
    if (canResume && adapter.resume) {
      try {
        await spawnWith(adapter.resume({ sessionId: record.harnessSessionId, prompt, workItem: ref }));
        await new Promise((resolve) => setTimeout(resolve, this.options.resumeProbeMs ?? 1_500));
        if ((await this.options.runner.probe(record.tmuxTarget)) === "live") {
          this.options.events.emit("session.respawned", {
            work_item: ref,
            tmux_target: record.tmuxTarget,
            harness_session_id: record.harnessSessionId,
            resumed: true,
          });
          await handOver(adapter.promptInArgv.resume);
          return true;
        }
        throw new Error("the resumed harness exited at once");
      } catch (error) {
        // A harness another process started meanwhile: no resume failed, and none is to be made.
        if (error instanceof TargetLiveError) throw error;
        this.options.events.emit("session.resume_failed", {
          work_item: ref,
          tmux_target: record.tmuxTarget,
          error: messageOf(error),
        });
      }
    }
    const sessionId = newHarnessSessionId();
    await spawnWith(adapter.fresh({ sessionId, prompt, workItem: ref }));
    await this.markHarnessStarted(record, { harnessSessionId: sessionId });
    this.options.events.emit("session.respawned", {
      work_item: ref,
      tmux_target: record.tmuxTarget,
      harness_session_id: sessionId,
      resumed: false,
    });
    await handOver(adapter.promptInArgv.fresh);
    return true;
  }

  private async close(workItem: WorkItem, event: InboundEvent, slot: PoolSlot): Promise<HandleResult> {
    const closed = await closeSession(this.closeOptions(), workItem.ref, "item-closed");
    // Closed by someone else since the decision: a dropped event gets no reaction.
    if (!closed) return this.settle(workItem, event, "no-session");
    this.react(event, "started");
    // The closure has no announcement of its own yet (it goes to channels, which the-loop does
    // not have): the chain runs for its observers, and `announce` is read by nothing.
    await this.atPoint(slot, "work_item_complete", () =>
      this.hooks.run(
        "work_item_complete",
        {
          workItem: workItemEntity(closed.workItem as WorkItem),
          actor: event.actor ?? "",
          harness: closed.harness,
          tmuxTarget: closed.tmuxTarget,
          announce: true,
        },
        { workItem: workItem.ref },
      ),
    );
    return SETTLED;
  }

  private closeOptions(): CloseOptions {
    return {
      registry: this.options.registry,
      runner: this.options.runner,
      tmux: this.routing.tmux,
      events: this.options.events,
      now: this.now,
      control: this.options.control,
      ...(this.options.workspaces ? { workspaces: this.options.workspaces } : {}),
    };
  }

  // ---- execution control ------------------------------------------------------------------

  /**
   * Applies a command the CLI gives (`the-loop sessions start|stop|pause|resume`) exactly as the
   * same keyword in a comment would be applied, minus authorization: shell access to this machine
   * is the authority. It waits its turn in the item's queue like an event, so it never interleaves
   * with the item's events here, and takes the item's control lock, so it never interleaves with
   * a command or a spawn in another process (the daemon) either. The item's labels and state are
   * read from its tracker. A start with no live session spawns here, with the daemon's own boot
   * prompt, workspace, harness and announcement, from a synthetic event (source `cli`, delivery
   * id `cli-start-<uuid>`). Throws when the item cannot be read, or a record is damaged.
   */
  /**
   * The item a CLI command acts on. Only a start needs the tracker's view (its labels and state
   * decide whether it may spawn); a pause, resume or stop of an existing session works from the
   * session's own record, so an operator can hold off a runaway agent while the tracker is down.
   */
  private async commandedItem(ref: string, command: ControlCommand): Promise<WorkItemState> {
    const record = command === "start" ? undefined : this.options.registry.get(ref);
    if (record === undefined) return this.options.trackers.forRef(ref).getItem(parseWorkItemRef(ref));
    return {
      item: record.workItem as WorkItem,
      title: "",
      body: "",
      author: "",
      // Not consulted: only a start asks whether the item is armed or closed.
      state: "open",
      labels: [],
      createdAt: record.createdAt,
      updatedAt: record.lastEventAt,
      closedAt: null,
    };
  }

  async control(request: ControlRequest): Promise<ControlOutcome> {
    if (!this.accepting) throw new Error("the dispatcher is shutting down and takes no more commands");
    const ref = formatWorkItemRef(parseWorkItemRef(request.ref));
    this.inFlight += 1;
    try {
      return await this.exclusive([ref], async () => {
        const state = await this.commandedItem(ref, request.command);
        const deliveryId = request.deliveryId ?? `cli-${request.command}-${randomUUID()}`;
        const event = this.syntheticEvent(state, { command: request.command, source: request.source, actor: request.actor, deliveryId });
        await this.inputReceived(state.item, event, { kind: "command", text: event.body ?? "", command: request.command });
        return this.applyCommand({
          workItem: state.item,
          command: request.command,
          source: request.source,
          actor: request.actor,
          note: request.note,
          deliveryId,
          armed: armsSpawn(state.labels, this.policy),
          itemClosed: state.state === "closed",
          event,
        });
      });
    } finally {
      this.inFlight -= 1;
    }
  }

  /**
   * Starts the sessions whose start was honoured but whose spawn failed (`start-pending`), or
   * that the daemon was not running to start: every item whose standing control record is a
   * start and that has no live session. Each is checked again in its own queue — still open,
   * still armed — and spawned through the same gated path an event takes, from a synthetic event
   * (source `cli`, as every event the-loop makes up itself; delivery id `control-retry-<uuid>`;
   * the actor is whoever gave the start). An item that is closed or no longer armed is skipped
   * with `dispatch.dropped` (item-closed / spawn-policy) and its start left standing, so arming or
   * reopening it lets its next event start it — the start was honoured while it was armed (R2.5).
   * Returns how many sessions were started.
   *
   * It also finishes the stops a process was killed in the middle of: a stop writes its record
   * before it closes the session (decideCommand), so a standing stop next to a live session is
   * one whose close never happened — it is closed now, through the close path a stop takes.
   */
  async retryPendingStarts(): Promise<number> {
    if (!this.accepting) return 0;
    const { records } = this.options.control.list();
    const stops = records.filter((record) => record.command === "stop" && controlStateOf(record) === "disarmed");
    const pending = records.filter((record) => controlStateOf(record) === "start-requested");
    const [started] = await Promise.all([
      Promise.all(pending.map((record) => this.retryStart(record.ref))),
      Promise.all(stops.map((record) => this.finishStop(record.ref))),
    ]);
    return started.filter(Boolean).length;
  }

  /** Closes the item's live session if its standing command is a stop (see retryPendingStarts). */
  private async finishStop(ref: string): Promise<void> {
    this.inFlight += 1;
    try {
      await this.exclusive([ref], async () => {
        try {
          if (!isLive(this.options.registry.get(ref))) return;
          const finished = await this.options.control.transaction(ref, async (tx) => {
            const standing = tx.read();
            if (standing?.command !== "stop" || controlStateOf(standing) !== "disarmed") return undefined;
            const closed = await this.options.registry.close(ref, "stopped", this.now());
            return closed === undefined ? undefined : { standing, closed };
          });
          if (finished === undefined) return;
          const { standing, closed } = finished;
          await this.heavy.use(() => finishClose(this.closeOptions(), closed, "stopped"));
          // The stop's own control.command was never emitted: its process died before the close.
          this.options.events.emit("control.command", {
            work_item: ref,
            command: "stop",
            command_source: standing.source,
            actor: standing.actor,
            effect: "stopped",
            ...(standing.deliveryId !== undefined ? { delivery_id: standing.deliveryId } : {}),
          });
        } catch (error) {
          this.options.events.emit("dispatch.failed", {
            work_item: ref,
            delivery_id: `control-stop-${randomUUID()}`,
            action: "close",
            error: `the stop of ${ref} was recorded but its session could not be closed: ${messageOf(error)}`,
            will_retry: false,
          });
        }
      });
    } finally {
      this.inFlight -= 1;
    }
  }

  private async retryStart(ref: string): Promise<boolean> {
    this.inFlight += 1;
    const deliveryId = `control-retry-${randomUUID()}`;
    try {
      return await this.exclusive([ref], async () => {
        try {
          if (isLive(this.options.registry.get(ref))) return false;
          const standing = this.options.control.get(ref);
          if (standing === undefined || controlStateOf(standing) !== "start-requested") return false;
          if (standingState(standing, this.policy) !== "start-requested") {
            this.options.events.emit("dispatch.dropped", { work_item: ref, delivery_id: deliveryId, reason: "unauthorized-actor" });
            return false;
          }
          const state = await this.options.trackers.forRef(ref).getItem(parseWorkItemRef(ref));
          const workItem = state.item;
          if (state.state === "closed") {
            this.options.events.emit("dispatch.dropped", { work_item: ref, delivery_id: deliveryId, reason: "item-closed" });
            return false;
          }
          if (!armsSpawn(state.labels, this.policy)) {
            this.options.events.emit("dispatch.dropped", { work_item: ref, delivery_id: deliveryId, reason: "spawn-policy" });
            return false;
          }
          const event = this.syntheticEvent(state, { command: "start", source: standing.source, actor: standing.actor, deliveryId });
          const outcome = await this.withSlot((slot) => this.spawn(workItem, event, slot, "retry"));
          if (outcome.kind === "held") this.settle(workItem, event, outcome.hold);
          return outcome.kind === "started";
        } catch (error) {
          this.options.events.emit("dispatch.failed", {
            work_item: ref,
            delivery_id: deliveryId,
            action: "spawn",
            error: messageOf(error),
            will_retry: false,
          });
          return false;
        }
      });
    } finally {
      this.inFlight -= 1;
    }
  }

  /**
   * The event a command the-loop gives itself stands in for: a comment carrying the command's
   * keyword by `actor`, with the item's labels and state as its tracker shows them now. Source
   * `cli`: no tracker delivered it, so it gets no reactions.
   */
  private syntheticEvent(
    state: WorkItemState,
    input: { readonly command: ControlCommand; readonly source: ControlSource; readonly actor: string; readonly deliveryId: string },
  ): InboundEvent {
    return {
      source: "cli",
      deliveryId: input.deliveryId,
      kind: "commented",
      trackerEvent: `cli:${input.command}`,
      workItems: [state.item],
      actor: input.actor,
      body: this.routing.control.keywords[input.command],
      labels: [...state.labels],
      itemState: state.state,
      title: state.title,
      occurredAt: this.now().toISOString(),
      excerpt: boundExcerpt({ command: input.command, source: input.source }),
    };
  }

  /**
   * A control keyword in an authorized person's comment (the router chose the work item). The
   * comment is a command, never harness input (R1.2): a session it starts boots from the comment
   * with its text replaced by the bare keyword — the same boot event the CLI's start makes — and
   * the agent reads the thread itself, as its boot prompt tells it to.
   */
  /**
   * Whether a start may spawn the item it acts on. The router can only judge by the labels and
   * state the event carries, which are its own entity's: a comment on a pull request that acts on
   * the work item the PR is linked to is judged by that item, as its tracker shows it now — the
   * label that arms is the item's, not the PR's. Only asked when it decides anything: a start
   * with no live session.
   */
  private async armingOf(
    decision: Decision & { action: "control" },
    comment: InboundEvent,
  ): Promise<{ readonly armed: boolean; readonly itemClosed: boolean }> {
    const linked = comment.linkedBy?.[decision.workItem.ref] !== undefined;
    if (!linked || decision.command !== "start" || decision.session !== "none") return decision;
    const state = await this.options.trackers.forRef(decision.workItem.ref).getItem(parseWorkItemRef(decision.workItem.ref));
    return { armed: armsSpawn(state.labels, this.policy), itemClosed: state.state === "closed" };
  }

  private async commandFromComment(decision: Decision & { action: "control" }, comment: InboundEvent): Promise<HandleResult> {
    // The router only decides a command for a named actor.
    const actor = comment.actor ?? "ghost";
    const event: InboundEvent = {
      ...comment,
      body: this.routing.control.keywords[decision.command],
      excerpt: boundExcerpt({ command: decision.command, source: "comment" }),
    };
    await this.inputReceived(decision.workItem, comment, {
      kind: "command",
      text: boundedInputText(comment.body),
      command: decision.command,
    });
    const { armed, itemClosed } = await this.armingOf(decision, comment);
    await this.applyCommand({
      workItem: decision.workItem,
      command: decision.command,
      source: "comment",
      actor,
      note: comment.commentUrl,
      deliveryId: comment.deliveryId,
      armed,
      itemClosed,
      event,
    });
    // Applied or refused, the comment has been acted on: it is never forwarded, and never retried.
    return SETTLED;
  }

  /**
   * One command on one work item, the same for a comment and the CLI. Under the item's control
   * lock: read the live session, plan (planControl decides; nothing here re-decides), make the
   * registry transition and write the record — so a command from another process can never
   * interleave, and a spawn racing it sees either none of it or all of it. Outside the lock, the
   * slow part: the harness and announcement of a spawn, the close of a stop, telling a resumed
   * harness to re-read the thread. Lock order is always control, then registry.
   */
  private async applyCommand(input: CommandInput): Promise<ControlOutcome> {
    const ref = input.workItem.ref;
    const { command, event } = input;
    const harnessName = this.routing.defaultHarness;
    // Resolved before the lock: a start that can act but whose harness cannot be had is pending.
    const adapter = command === "start" ? this.adapterOrProblem(harnessName) : undefined;
    if (adapter !== undefined && typeof adapter !== "string" && this.hooks.handles("work_item_start") && this.wouldSpawn(input)) {
      // Before the lock and the claim: a hook may take its timeout, and a refused start must
      // leave nothing behind but the refusal.
      const asked = this.options.control.get(ref);
      const refusal = await this.startRefusal(input.workItem, event, input.source === "cli" ? "cli" : "comment", harnessName);
      if (refusal !== undefined) {
        const refused = await this.refuse(input.workItem, event, "work_item_start", refusal, (current) => sameCommand(current, asked));
        // A session another process started meanwhile: the command is decided below on it, as
        // any start that finds a session running.
        if (refused.kind === "refused") return this.refusedCommand(input, refused);
      }
    }
    const at = this.now();
    const decided = await this.options.control.transaction(ref, (tx) => this.decideCommand(input, adapter, harnessName, at, tx));

    if (decided.kind === "rejected") {
      this.options.events.emit("control.rejected", {
        work_item: ref,
        command,
        command_source: input.source,
        actor: input.actor,
        reason: decided.reason,
        delivery_id: input.deliveryId,
      });
      this.react(event, "failed");
      return { applied: false, reason: decided.reason, message: this.rejectionMessage(ref, command, decided.reason) };
    }

    let effect = decided.effect;
    let problem = decided.error;
    if (decided.error !== undefined) {
      // The start stands (recorded as pending); the harness configuration is what failed.
      this.spawnFailed(ref, harnessName, event, decided.error);
    } else if (decided.claimed !== undefined && adapter !== undefined && typeof adapter !== "string") {
      this.react(event, "started");
      const claimed = decided.claimed;
      // The record this command wrote is its own: a newer command replaces it, with another delivery id.
      const own = (current: ControlRecord | undefined): boolean => current?.deliveryId === input.deliveryId;
      const started = await this.withSlot((slot) => this.startClaimed(input.workItem, event, adapter, claimed, slot, own));
      if (started.kind === "refused") return this.refusedCommand(input, started);
      if (started.kind === "occupied") {
        problem = `the lifecycle hook refused this launch, and the session another process started meanwhile runs (${started.occupant.tmuxTarget})`;
      }
      if (started.kind === "failed") {
        effect = "start-pending";
        problem = started.error;
        await this.markStartPending(ref, input.deliveryId);
      } else if (started.kind === "closed") {
        problem = "the session was closed by another process while it was starting";
      }
    } else if (decided.action === "close" && decided.session !== undefined) {
      const closed = decided.session;
      try {
        await this.heavy.use(() => finishClose(this.closeOptions(), closed, "stopped"));
        this.react(event, "completed");
      } catch (error) {
        // The stop stands (recorded, the session closed): trying the command again would be taken
        // for a redelivery of it, so the failure to end its harness is reported with it instead.
        problem = `the session is closed, but ending its harness failed: ${messageOf(error)}`;
        this.react(event, "failed");
      }
    } else if (decided.action === "pause" && decided.session !== undefined) {
      this.options.events.emit("session.paused", {
        work_item: ref,
        tmux_target: decided.session.tmuxTarget,
        command_source: input.source,
        actor: input.actor,
      });
      this.react(event, "completed");
    } else if (decided.action === "resume" && decided.session !== undefined) {
      const error = await this.notifyResumed(decided.session, input);
      this.options.events.emit("session.resumed", {
        work_item: ref,
        tmux_target: decided.session.tmuxTarget,
        command_source: input.source,
        actor: input.actor,
        notified: error === undefined,
        ...(error !== undefined ? { error } : {}),
      });
      if (error !== undefined) problem = `resumed, but the harness could not be told to re-read the thread: ${error}`;
      this.react(event, "completed");
    } else {
      this.react(event, "completed");
    }

    this.options.events.emit("control.command", {
      work_item: ref,
      command,
      command_source: input.source,
      actor: input.actor,
      effect,
      delivery_id: input.deliveryId,
      ...(problem !== undefined ? { error: problem } : {}),
    });
    const after = this.options.registry.get(ref);
    return {
      applied: true,
      effect,
      ...(after !== undefined ? { session: { tmuxTarget: after.tmuxTarget, status: after.status } } : {}),
      ...(problem !== undefined ? { problem } : {}),
    };
  }

  /**
   * Whether the command, as things stand, would spawn a session (read without the lock: the
   * transaction decides again). Only then is `work_item_start` asked.
   */
  private wouldSpawn(input: CommandInput): boolean {
    const current = this.options.registry.get(input.workItem.ref);
    const plan = planControl({
      command: input.command,
      session: current === undefined || !isLive(current) ? "none" : current.status === "paused" ? "paused" : "active",
      armed: input.armed,
      itemClosed: input.itemClosed,
    });
    return plan.kind === "apply" && plan.action === "spawn";
  }

  /** A start a lifecycle hook refused: reported as a refused command (the refusal itself is recorded). */
  private refusedCommand(input: CommandInput, refused: Refused): ControlOutcome {
    const ref = input.workItem.ref;
    this.options.events.emit("control.rejected", {
      work_item: ref,
      command: input.command,
      command_source: input.source,
      actor: input.actor,
      reason: "hook-refused",
      delivery_id: input.deliveryId,
    });
    return {
      applied: false,
      reason: "hook-refused",
      message: `the lifecycle hook "${refused.refusal.hook}" refused to start ${ref}: ${refused.refusal.reason}`,
    };
  }

  /** The harness adapter for a start, or why it cannot be had. */
  private adapterOrProblem(harnessName: string): HarnessAdapter | string {
    try {
      return this.adapter(harnessName);
    } catch (error) {
      return messageOf(error);
    }
  }

  /**
   * The part of a command done under the item's control lock. A transition that finds the
   * session changed since it was read (closed by a process that took no control lock: a failed
   * spawn's own close, or an older the-loop) is planned again on what is there now.
   *
   * What a `kill -9` between the two writes leaves must be something a restart completes. A spawn
   * and a stop therefore write the record first — the record is the intent, the registry change
   * its effect: a start recorded without its claim is a pending start (retryPendingStarts spawns
   * it, and marks it start-pending if that spawn fails), a stop recorded while the session is
   * still live is finished by retryPendingStarts too.
   * The other order would leave a claimed session under a standing stop, or a closed session (its
   * harness never ended) under a standing start that respawns it. If the change fails in a live
   * process, the record is put back as it was, so the command's retry is not taken for a
   * redelivery of a command already applied. A pause and a resume change the registry first: a
   * crash between leaves the session as the command asked, with only the record missing.
   */
  private async decideCommand(
    input: CommandInput,
    adapter: HarnessAdapter | string | undefined,
    harnessName: string,
    at: Date,
    tx: ControlTransaction,
  ): Promise<Decided> {
    const ref = input.workItem.ref;
    const registry = this.options.registry;
    const recordOf = (effect: CommandEffect): ControlRecord => ({
      version: 1,
      ref,
      command: input.command,
      source: input.source,
      actor: input.actor,
      requestedAt: at.toISOString(),
      effect,
      ...(input.note !== undefined ? { note: input.note } : {}),
      deliveryId: input.deliveryId,
      recentDeliveries: rememberedCommands(tx.read(), input.event),
    });
    // A damaged control record stops the command here, before anything changes.
    const before = tx.read();
    /** Puts the record back as the command found it (after a record-first write). */
    let wrote = false;
    const restore = async (): Promise<void> => {
      if (wrote) await (before === undefined ? tx.remove() : tx.write(before));
    };
    for (let attempt = 1; ; attempt += 1) {
      const current = registry.get(ref);
      const live = current !== undefined && isLive(current) ? current : undefined;
      const plan: ControlPlan = planControl({
        command: input.command,
        session: live === undefined ? "none" : live.status === "paused" ? "paused" : "active",
        armed: input.armed,
        itemClosed: input.itemClosed,
      });
      if (plan.kind === "reject") {
        await restore();
        return { kind: "rejected", reason: plan.reason };
      }

      let effect = plan.effect;
      let session: SessionRecord | undefined = live;
      let claimed: SessionRecord | undefined;
      let error: string | undefined;
      let changed = false;
      const spawnable = plan.action === "spawn" && adapter !== undefined && typeof adapter !== "string";
      if (plan.action === "spawn" && !spawnable) {
        effect = "start-pending";
        error = typeof adapter === "string" ? adapter : "no harness to start";
      }
      const recordFirst = plan.record && (spawnable || plan.action === "close");
      if (recordFirst) {
        await tx.write(recordOf(effect));
        wrote = true;
      }
      try {
        switch (plan.action) {
          case "spawn":
            if (spawnable) {
              const claim = await this.claim(input.workItem, input.event, harnessName);
              session = claim.record;
              if (claim.claimed) claimed = claim.record;
              // Lost to a process that started one without this lock: the start confirms that session.
              else effect = "noop";
            }
            break;
          case "pause":
            session = await registry.setStatus(ref, ["active"], "paused", at);
            changed = session === undefined;
            break;
          case "resume":
            session = await registry.setStatus(ref, ["paused"], "active", at);
            changed = session === undefined;
            break;
          case "close":
            session = await registry.close(ref, "stopped", at);
            changed = session === undefined;
            break;
          case "none":
            break;
        }
      } catch (failure) {
        // The failure is what is reported. A record that cannot be put back either stays as the
        // intent it is: a pending start, or a stop that retryPendingStarts finishes.
        await restore().catch(() => undefined);
        throw failure;
      }
      if (changed) {
        if (attempt < MAX_REPLANS) continue;
        await restore();
        throw new Error(`the session of ${ref} kept changing while ${input.command} was being applied; try again`);
      }
      if (plan.record && (!recordFirst || effect !== plan.effect)) await tx.write(recordOf(effect));
      // The session remembers the command's delivery id, so a redelivery after a restart is
      // dropped. The command has acted by now: failing to note it must not report it as failed.
      if (claimed === undefined && session !== undefined && isLive(session)) {
        await registry.touch(ref, deliveryKeys(input.event), at).catch((failure: unknown) => {
          this.options.events.emit("dispatch.failed", {
            work_item: ref,
            delivery_id: input.deliveryId,
            action: "control",
            error: `the ${input.command} applied, but the session could not note its delivery: ${messageOf(failure)}`,
            will_retry: false,
          });
        });
      }
      return {
        kind: "applied",
        action: plan.action,
        effect,
        ...(session !== undefined ? { session } : {}),
        ...(claimed !== undefined ? { claimed } : {}),
        ...(error !== undefined ? { error } : {}),
      };
    }
  }

  /**
   * A start whose spawn failed stays standing; its record says so (if it is still this start's,
   * or — without `deliveryId` — whichever start stands).
   */
  private async markStartPending(ref: string, deliveryId?: string): Promise<void> {
    await this.options.control.transaction(ref, async (tx) => {
      const current = tx.read();
      if (current?.command !== "start" || controlStateOf(current) !== "start-requested") return;
      if (deliveryId !== undefined && current.deliveryId !== deliveryId) return;
      if (current.effect === "start-pending") return;
      await tx.write({ ...current, effect: "start-pending" });
    });
  }

  /**
   * A spawn for an event (or a retried start) failed where a start stands that says it started —
   * one whose process was killed between its record and its claim: its record says pending now.
   * Nothing depends on this, so a failure is reported and no more.
   */
  private async markStandingStartPending(ref: string, event: InboundEvent): Promise<void> {
    try {
      const standing = this.options.control.get(ref);
      if (standing?.command !== "start" || standing.effect === "start-pending" || controlStateOf(standing) !== "start-requested") return;
      await this.markStartPending(ref);
    } catch (error) {
      this.options.events.emit("dispatch.failed", {
        work_item: ref,
        delivery_id: event.deliveryId,
        action: "control",
        error: `the spawn failed, and its standing start could not be marked pending: ${messageOf(error)}`,
        will_retry: false,
      });
    }
  }

  /**
   * A pending start whose session has now started (at the item's next event, or a retry): its
   * record says it started. Nothing depends on this, so a failure is reported and no more.
   */
  private async confirmPendingStart(ref: string, event: InboundEvent): Promise<void> {
    try {
      const standing = this.options.control.get(ref);
      if (standing?.effect !== "start-pending" || controlStateOf(standing) !== "start-requested") return;
      await this.options.control.transaction(ref, async (tx) => {
        const current = tx.read();
        if (current?.effect !== "start-pending" || controlStateOf(current) !== "start-requested") return;
        await tx.write({ ...current, effect: "started" });
      });
    } catch (error) {
      this.options.events.emit("dispatch.failed", {
        work_item: ref,
        delivery_id: event.deliveryId,
        action: "control",
        error: `the session started, but its pending start record could not be updated: ${messageOf(error)}`,
        will_retry: false,
      });
    }
  }

  /**
   * Tells a resumed harness that events were dropped while it was paused (R3.3: they are not
   * replayed), through the path deliveries take — a dead pane is started again with the note as
   * its prompt. Undefined when told; otherwise why not (the resume stands either way).
   */
  private async notifyResumed(session: SessionRecord, input: CommandInput): Promise<string | undefined> {
    const pullRequests = (session.pullRequests ?? []).map((link) => ({ ref: link.ref, url: pullRequestUrl(link.ref) }));
    const text = renderResumeNote({ workItem: input.workItem, actor: input.actor, source: input.source, pullRequests });
    try {
      const pasted = await this.paste(session, text);
      if (pasted === "closed" || pasted === "spawn-failed") return "the session was closed meanwhile";
      if (pasted === "interrupted") return "the-loop stopped while the session's harness was still being started";
      // Paused again since: the next resume tells it.
      return pasted === "paused" ? "the session was paused again meanwhile" : undefined;
    } catch (error) {
      return messageOf(error);
    }
  }

  /** Why a command was refused, and how to make it possible. */
  private rejectionMessage(ref: string, command: ControlCommand, reason: PlanRejection): string {
    switch (reason) {
      case "not-armed":
        return this.policy.spawnOnUnmatched === "never"
          ? `${ref} is not armed: routing.spawnOnUnmatched is never, so no work item starts a session; set it to labeled (and add the label "${this.policy.autoExecuteLabel}") or always`
          : `${ref} is not armed: add the label "${this.policy.autoExecuteLabel}" first (routing.autoExecuteLabel), or set routing.spawnOnUnmatched: always`;
      case "item-closed":
        return `${ref} is closed, and a closed work item never starts a session: reopen it first`;
      case "nothing-to-resume":
        return `${ref} has no live session to ${command}; use start to start one`;
    }
  }
}

/** Where a person (or the agent) reads a pull request named by its ref; undefined when the ref alone must do. */
function pullRequestUrl(ref: string): string | undefined {
  try {
    const parsed = parseWorkItemRef(ref);
    return parsed.tracker === "github" ? githubItemUrl(parsed, "pull_request") : undefined;
  } catch {
    return undefined;
  }
}

/** This process as a session's claimer: its pid and, where /proc tells it, its start time. */
function thisProcess(): SessionClaimer {
  const startTicks = processStartTicks(process.pid);
  return startTicks === undefined ? { pid: process.pid } : { pid: process.pid, startTicks };
}

/** The same session as `known` (not one claimed since it was closed), and still live. */
function sameLiveSession(record: SessionRecord | undefined, known: SessionRecord): boolean {
  return record !== undefined && isLive(record) && record.createdAt === known.createdAt;
}

/**
 * How a session no longer live as `known` was ended, read as `record`: `spawn-failed` when it is
 * that session, closed by its claimer because its harness could not be started (the harness never
 * ran, so an event for it deserves another try); `closed` for any other close.
 */
function closedAs(record: SessionRecord | undefined, known: SessionRecord): "closed" | "spawn-failed" {
  const neverStarted = record?.createdAt === known.createdAt && record.status === "closed" && record.closeReason === "spawn-failed";
  return neverStarted ? "spawn-failed" : "closed";
}

/**
 * What to check out: the pull request's head when the session is for the PR or for an item of
 * the same repository it is linked to (a branch name means nothing in another repository).
 */
function workspaceRequest(workItem: WorkItem, event: InboundEvent): WorkspaceRequest {
  const pullRequest = event.pullRequest;
  if (pullRequest?.headBranch === undefined) return {};
  if (pullRequest.ref !== workItem.ref) {
    const own = parseWorkItemRef(pullRequest.ref);
    if (hostOf(own) !== workItem.host || repositoryOf(own) !== workItem.repository) return {};
  }
  return pullRequest.headInRepository === undefined
    ? { branch: pullRequest.headBranch }
    : { branch: pullRequest.headBranch, headInRepository: pullRequest.headInRepository };
}

/**
 * Whether two control records are the same command (its effect may have been updated since: a
 * start marked pending, then started). Both absent is the same "none".
 */
function sameCommand(a: ControlRecord | undefined, b: ControlRecord | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.command === b.command && a.source === b.source && a.actor === b.actor && a.requestedAt === b.requestedAt && a.deliveryId === b.deliveryId;
}

/**
 * One slot of a Semaphore, held by one piece of heavy work, that can be let go of and taken back
 * in the middle of it. The Semaphore hands slots out through use(); a slot here is a use() whose
 * work is waiting to be released, so the pool's order and bound stay the Semaphore's own.
 */
class PoolSlot {
  private give: (() => void) | undefined;

  private constructor(private readonly pool: Semaphore) {}

  static async take(pool: Semaphore): Promise<PoolSlot> {
    const slot = new PoolSlot(pool);
    await slot.acquire();
    return slot;
  }

  /** Lets the slot go; again, or without holding it, changes nothing. */
  release(): void {
    const give = this.give;
    this.give = undefined;
    give?.();
  }

  /** `work` without the slot, which is taken back (waiting for it as anyone would) afterwards. */
  async without<T>(work: () => Promise<T>): Promise<T> {
    this.release();
    try {
      return await work();
    } finally {
      await this.acquire();
    }
  }

  private acquire(): Promise<void> {
    return new Promise<void>((entered) => {
      void this.pool.use(() => {
        const held = new Promise<void>((release) => (this.give = release));
        entered();
        return held;
      });
    });
  }
}

/** The ids of the commands an item took, with this command's added: newest last, bounded. */
function rememberedCommands(previous: ControlRecord | undefined, event: InboundEvent): string[] {
  const keys = deliveryKeys(event);
  const kept = (previous?.recentDeliveries ?? (previous?.deliveryId !== undefined ? [previous.deliveryId] : [])).filter(
    (id) => !keys.includes(id),
  );
  return [...kept, ...keys].slice(-CONTROL_RECENT_DELIVERIES_MAX);
}
