import { messageOf } from "../errors.js";
import type { ControlOutcome, ControlRequest } from "../control/types.js";
import { HookChain } from "../hooks/chain.js";
import type { EventHandler } from "../routing/index.js";
import { DeliveryLru } from "../routing/dedupe.js";
import { registryViewOf, route } from "../routing/router.js";
import type { Decision, DeliveryMemory, RegistryView } from "../routing/router.js";
import { deliveryKeys } from "../routing/inbound.js";
import type { InboundEvent } from "../routing/inbound.js";
import { formatWorkItemRef, parseWorkItemRef } from "../workitem/index.js";
import { closeForEvent, damagedClosing, releaseLeftCheckout } from "./item-closed.js";
import { commandFromComment, controlRequest, finishStop, retryStart, standingCommands } from "./commands.js";
import { RETRY, SETTLED, deliveryEvents, dispatchFailed, handBack, settle, thisProcess, turnOf, withSlot } from "../sessions/context.js";
import type { DeliveryEvents, DispatchContext, DispatcherConfig, DispatcherOptions, HandleResult } from "../sessions/context.js";
import { deliverEvent } from "../sessions/delivery.js";
import { graphClaim, graphForce } from "../graph-driver/start-claim-force.js";
import { graphOperatorAnswer } from "../graph-driver/operator-answer.js";
import type { OperatorAnswerRequest } from "../graph-driver/operator-answer.js";
import { graphGate, releaseHeldAnswers } from "../graph-driver/gate-answers.js";
import { DEFAULT_HELD_RETRY, HeldAnswerRetry } from "../graph-run/held-retry.js";
import { postQuestion } from "../sessions/ask.js";
import type { AskAnswer } from "../sessions/ask.js";
import { journalledMoves, resumeJournalledEffects } from "../graph-driver/carry-out.js";
import { drainLoopEvents } from "../graph-driver/loop-events.js";
import { releaseHeldRuns } from "../graph-driver/node-room.js";
import { cancelRunOfClosedItem, endStalledRun, stalledRuns } from "../graph-driver/run-ends.js";
import { closeEndedRunSession, endedRunSessions } from "../graph-driver/run-end-session.js";
import type { ClaimAnswer, ClaimRequest, ForceRequest } from "../graph-driver/start-claim-force.js";
import { KeyedQueue, Semaphore } from "../sessions/keyed-queue.js";
import { LinkedItemCheck, applyLink } from "./pr-linkage.js";
import { isLive } from "../registry/record.js";
import { Reactions } from "../sessions/reactions.js";
import { spawnTurn } from "./spawn.js";
import { dequeueStart } from "./dequeue.js";
import { queuedToStart } from "./slots.js";
import { superviseSession } from "../supervision/index.js";
import { UsageReaders, checkBudget } from "./budget-watch.js";
import { dropped } from "./dropped.js";
import { resolveCheck } from "./check-resolve.js";
import { forwardingOf, heldEvent, heldForAdoption, turnIntent, whereOwned } from "./owned.js";
import type { EventForward, IntentOf, Otherwise, Takeover } from "./owned.js";
import type { TakenLease } from "../fleet/ownership.js";
import { soleOwner } from "../fleet/ownership.js";
import type { Ownership } from "../fleet/ownership.js";

export type { DispatcherConfig, DispatcherOptions } from "../sessions/context.js";
export type { Takeover, TurnIntent } from "./owned.js";

/**
 * Performs the router's decisions. Events for one work item run one after another in arrival
 * order, different items in parallel, each job where the item's owner is (owned.ts). Spawns and
 * closes also take a slot of a bounded pool; deliveries never wait for it. This class is the
 * facade (queues, routing, public methods); collaborators over one DispatchContext (context.ts)
 * carry out each decision — spawn.ts, delivery.ts, pane.ts, commands.ts, hook-points.ts,
 * closing.ts and the graph's modules — and never call back up into it.
 */

/** Drops that depend on the event alone, never on a session: final the moment the event arrives. */
const EVENT_GUARDS: ReadonlySet<string> = new Set(["duplicate-delivery", "no-work-item", "self-echo", "unauthorized-actor"]);
const NOTHING_SEEN: DeliveryMemory = { has: () => false };

/** How often an event may move to the queue of the session it reached before it runs where it stands (bounds the wait, not safety). */
const MAX_HOPS = 2;
/** perform()'s answer when the event reaches a work item whose queue it does not hold. */
type Hop = { readonly hop: string };

export class Dispatcher implements EventHandler {
  private readonly queue = new KeyedQueue();
  private readonly memory: DeliveryLru;
  private readonly reactions: Reactions;
  private readonly linkCheck: LinkedItemCheck;
  private accepting = true;
  /** Events handed in and not yet settled (an event may wait in several queues at once). */
  private inFlight = 0;
  /** Read per event, swapped by reconfigure(). */
  private config: DispatcherConfig;
  /** What the router sees: the item's session and its last control command. */
  private readonly view: RegistryView;
  /** What every collaborator is handed. */
  private readonly ctx: DispatchContext;
  /** Asks again for the login the-loop posts as while gate answers are held (graph-gate.ts). */
  private readonly heldRetry: HeldAnswerRetry;

  constructor(
    private readonly options: DispatcherOptions,
    private readonly ownership: Ownership = soleOwner("local"),
    private readonly forward?: EventForward, // an event for an item another live daemon owns goes to it (src/forwarding/)
  ) {
    this.config = { routing: options.routing, policy: options.policy, templates: options.templates };
    this.memory = new DeliveryLru(options.routing.dedupCacheSize);
    this.view = registryViewOf(options.registry, options.control);
    const now = options.now ?? (() => new Date());
    // Getters, so a reload's settings count from the next read on (a reaction, a spawn, a paste).
    const current = (): DispatcherConfig => this.config;
    const accepting = (): boolean => this.accepting;
    this.reactions = new Reactions({
      get config() {
        return current().routing.reactions;
      },
      trackers: options.trackers,
      events: options.events,
    });
    this.linkCheck = new LinkedItemCheck({ trackers: options.trackers, registry: options.registry, events: options.events, now });
    this.ctx = {
      options,
      now,
      self: thisProcess(),
      hooks: options.hooks ?? HookChain.empty(options.events),
      ownership,
      heavy: new Semaphore(options.routing.maxConcurrentDispatches),
      readyAt: new Map(),
      inputSeen: new WeakSet(),
      get routing() {
        return current().routing;
      },
      get policy() {
        return current().policy;
      },
      get templates() {
        return current().templates;
      },
      get accepting() {
        return accepting();
      },
      react: (event, moment) => {
        // An event the-loop made up itself has no comment to react on, and a reaction on the
        // item would only be noise: the CLI leaves its own comment.
        // Nor has a CI failure: no one wrote it, and a reaction on the pull request would say nothing.
        if (event.source !== "cli" && event.kind !== "check_failed") this.reactions.react(event, moment);
      },
      forget: (event) => {
        for (const id of deliveryKeys(event)) this.memory.delete(id);
      },
      answersHeld: () => this.heldRetry.arm(),
    };
    this.heldRetry = new HeldAnswerRetry(
      () => this.releaseHeldAnswers(),
      options.graph?.heldRetry ?? DEFAULT_HELD_RETRY,
      (error) => options.events.emit("graph.effect_failed", { work_item: "", graph: "", node: "", effect: "release-held-answers", error: messageOf(error) }),
    );
  }

  /**
   * Swaps what is read per event: the routing settings (spawn policy, control, harnesses, tmux,
   * announcements, reactions, workspaces), the router's policy and the prompt templates. Events
   * already being carried out finish with what they started with where they read it already.
   * The pool size and the delivery LRU's size are fixed at construction.
   */
  reconfigure(next: DispatcherConfig): void {
    this.config = { routing: next.routing, policy: next.policy, templates: next.templates };
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
    // A CI failure from GitHub is resolved to its pull requests first, then each is handled like any event.
    if (received.kind === "check_failed" && received.check?.logAllowed === undefined) {
      return this.counted(() => resolveCheck(this.options, this.config.policy.authorizedUsers, received, (one) => this.handle(one)));
    }
    // A damaged binding file must not stop the PR's events: they route as if it were absent.
    const event = applyLink(received, this.options.links, (problem) =>
      dispatchFailed(this.eventsOf(received, received.pullRequest?.ref), "link", problem),
    ).event;
    const arrival = this.decide(event, this.memory);
    if (arrival === undefined) return Promise.resolve(RETRY);
    if (arrival.action === "drop" && (arrival.reason === "control-ambiguous" || EVENT_GUARDS.has(arrival.reason))) {
      // The comment alone makes it ambiguous: final at arrival, like the event guards.
      return Promise.resolve(dropped(this.ctx, event, arrival));
    }
    // Past the work-item guard, so the event names at least one work item.
    const keys = [...new Set(event.workItems.map((item) => item.ref))];
    for (const id of deliveryKeys(event)) this.memory.add(id);
    this.eventsOf(event, arrival.workItem?.ref ?? keys[0] ?? "").emit("dispatch.queued", { action: arrival.action });
    return this.counted(() => this.enqueue(keys, event, 0));
  }

  /**
   * Runs the event once it is first in line in every queue of `keys`. When its turn shows it
   * reaching a work item outside them (a binding written since it arrived), it is queued again
   * with that item's queue added — behind the events already there, instead of beside them.
   */
  private enqueue(keys: readonly string[], event: InboundEvent, hops: number): Promise<HandleResult> {
    let moved: Promise<HandleResult> | undefined;
    const ran = this.exclusive(
      keys,
      async () => {
        const outcome = await this.perform(event, hops < MAX_HOPS ? new Set(keys) : undefined);
        if (!("hop" in outcome)) return outcome;
        // Queued while this turn still holds its queues, so no later event gets ahead of it in them.
        moved = this.enqueue([...keys, outcome.hop], event, hops + 1);
        return RETRY;
      },
      { value: SETTLED, work: "event", held: heldEvent(event, this.ctx.forget), ...forwardingOf(this.forward, event, this.ctx.forget) },
      (item) => turnIntent(this.routeQuietly(event), item),
    );
    return ran.then((result) => moved ?? result);
  }

  /**
   * `job` once it is first in every queue of `keys`. Its place is taken in all of them at once,
   * when it is queued, so a job only ever waits for jobs queued before it: no two can each hold
   * a queue the other waits for.
   */
  private exclusive<T>(keys: readonly string[], work: () => Promise<T>, otherwise?: Otherwise<T>, intent?: IntentOf): Promise<T> {
    const takeover = this.takeover;
    const takenOver = takeover && ((taken: TakenLease) => takeover(taken, (request) => controlRequest(this.ctx, taken.item, request), intent?.(taken.item)));
    const job = (): Promise<T> => whereOwned(this.ownership, this.options.events, keys, work, otherwise, takenOver);
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

  /** `work`, counted among the events in flight until it settles. */
  private async counted<T>(work: () => Promise<T>): Promise<T> {
    this.inFlight += 1;
    try {
      return await work();
    } finally {
      this.inFlight -= 1;
    }
  }

  /**
   * Stops taking events and waits for the queued ones, then (briefly) for reactions still in
   * flight; returns how many events were still queued.
   */
  async drain(): Promise<number> {
    this.accepting = false;
    this.heldRetry.stop();
    const queued = this.inFlight;
    await this.queue.idle();
    await drainLoopEvents(this.ctx);
    await this.reactions.idle();
    return queued;
  }

  /** The event sink bound to this event on `workItem` (by default its first). */
  private eventsOf(event: InboundEvent, workItem?: string): DeliveryEvents {
    return deliveryEvents(this.options.events, workItem ?? event.workItems[0]?.ref ?? "", event.deliveryId);
  }

  /** The router's decision as the event's turn would make it, unreported: what a takeover in that turn is told the turn will do. */
  private routeQuietly(event: InboundEvent): Decision | undefined {
    try {
      return route(event, this.config.policy, this.view, NOTHING_SEEN);
    } catch {
      return undefined;
    }
  }

  /** The router's decision, or undefined (reported) when a registry record cannot be read. */
  private decide(event: InboundEvent, memory: DeliveryMemory): Decision | undefined {
    try {
      return route(event, this.config.policy, this.view, memory);
    } catch (error) {
      // The closing of an item whose session record does not parse: the close is what a damaged
      // record must not block, so the session is closed (the record moved aside, close.ts).
      const closing = damagedClosing(event, error);
      if (closing !== undefined) return { action: "close", workItem: closing };
      // A damaged record: nothing can be decided for this item until a person looks at it.
      dispatchFailed(this.eventsOf(event), "route", messageOf(error), true);
      return undefined;
    }
  }

  /** `held`: the queues the event holds, when it may still move to another (see enqueue). */
  private async perform(queued: InboundEvent, held?: ReadonlySet<string>): Promise<HandleResult | Hop> {
    const ctx = this.ctx;
    // A binding written since the event was queued (by the event ahead of it) counts now; the
    // damaged-file report was made at arrival.
    const linked = applyLink(queued, this.options.links, () => undefined);
    const event = await this.linkCheck.verify(linked.event, linked.link?.workItem.ref);
    // This delivery id is in the in-memory LRU since it was queued; only the record's memory counts now.
    const decision = this.decide(event, NOTHING_SEEN);
    if (decision === undefined) {
      ctx.forget(event);
      ctx.react(event, "failed");
      return RETRY;
    }
    const gated = (await this.gateAnswer(decision, event, held)) ?? (await heldForAdoption(ctx, event, decision));
    if (gated !== undefined) return gated;
    if (decision.action === "drop") {
      if (event.kind === "closed" && decision.reason === "no-session" && decision.workItem !== undefined) {
        await releaseLeftCheckout(ctx, decision.workItem.ref);
        await cancelRunOfClosedItem(ctx, decision.workItem.ref, event);
      }
      return dropped(this.ctx, event, decision);
    }
    const { workItem, action } = decision;
    if (held !== undefined && !held.has(workItem.ref)) return { hop: workItem.ref };
    const turn = turnOf(ctx, workItem, event);
    turn.events.emit("routing.routed", { kind: event.kind, decision: action, actor: event.actor ?? undefined });
    try {
      switch (action) {
        case "close":
          return await withSlot(ctx, (slot) => closeForEvent(ctx, turn, slot));
        case "deliver": {
          const current = this.options.registry.get(workItem.ref);
          if (!current || !isLive(current)) return settle(turn, "session-vanished");
          return await deliverEvent(ctx, current, turn);
        }
        case "control":
          return await commandFromComment(ctx, decision, event);
        case "spawn":
          return await spawnTurn(this.ctx, turn, held);
      }
    } catch (error) {
      return handBack(ctx, turn, action, messageOf(error));
    }
  }

  /**
   * A gate answer, with the graph on: a person's comment or review on an item whose run waits for
   * one moves the graph instead of reaching the session (graph-run.ts). Whatever the router made
   * of the comment (deliver, a paused or absent session): a gate answered while the session is
   * paused still moves. Commands and closings are not gate answers.
   */
  private async gateAnswer(decision: Decision, event: InboundEvent, held: ReadonlySet<string> | undefined): Promise<HandleResult | Hop | undefined> {
    if (this.options.graph === undefined || decision.action === "control" || decision.action === "close") return undefined;
    const workItem = decision.workItem;
    if (workItem === undefined) return undefined;
    if (held !== undefined && !held.has(workItem.ref)) return { hop: workItem.ref };
    const turn = turnOf(this.ctx, workItem, event);
    try {
      return (await graphGate(this.ctx, workItem.ref, event)) === "taken" ? SETTLED : undefined;
    } catch (error) {
      dispatchFailed(turn.events, "route", `the gate answer could not be read: ${messageOf(error)}`);
      return SETTLED;
    }
  }

  /**
   * An agent's claim (`the-loop graph complete`, through the daemon's socket): decided in the
   * item's queue, so it never interleaves with the item's events.
   */
  async graphClaim(request: ClaimRequest): Promise<ClaimAnswer> {
    if (!this.accepting) throw new Error("the daemon is shutting down and takes no more claims; claim again once it runs");
    const ref = formatWorkItemRef(parseWorkItemRef(request.ref));
    return this.counted(() => this.exclusive([ref], () => graphClaim(this.ctx, { ...request, ref })));
  }

  /** `the-loop ask` inside a session, through the daemon's socket: the question posted on the item. */
  async askQuestion(ref: string, question: string): Promise<AskAnswer> {
    if (!this.accepting) throw new Error("the daemon is shutting down and takes no more questions; ask again once it runs");
    const { trackers, registry, events } = this.options;
    return this.counted(() => postQuestion({ hooks: this.ctx.hooks, trackers, registry, events }, ref, question));
  }

  /** `the-loop graph force`, in the item's queue. */
  async graphForce(request: ForceRequest): Promise<ClaimAnswer> {
    if (!this.accepting) throw new Error("the daemon is shutting down and takes no more commands");
    const ref = formatWorkItemRef(parseWorkItemRef(request.ref));
    return this.counted(() => this.exclusive([ref], () => graphForce(this.ctx, { ...request, ref })));
  }

  /** `the-loop graph approve | request-changes` (and the dashboard's buttons), in the item's queue. */
  async graphAnswer(request: OperatorAnswerRequest): Promise<ClaimAnswer> {
    if (!this.accepting) throw new Error("the daemon is shutting down and takes no more commands");
    const ref = formatWorkItemRef(parseWorkItemRef(request.ref));
    return this.counted(() => this.exclusive([ref], () => graphOperatorAnswer(this.ctx, { ...request, ref })));
  }

  /**
   * Ends the runs that made no progress within `graph.stallAfterMinutes` (`stalled`), each in its
   * item's queue and decided again there; the daemon calls it every poll interval. How many ended.
   */
  async endStalledRuns(): Promise<number> {
    if (!this.accepting) return 0;
    let refs: string[];
    try {
      refs = await stalledRuns(this.ctx);
    } catch (error) {
      this.options.events.emit("graph.effect_failed", { work_item: "", graph: "", node: "", effect: "stall-check", error: messageOf(error) });
      return 0;
    }
    const ended = await Promise.all(refs.map((ref) => this.counted(() => this.exclusive([ref], () => endStalledRun(this.ctx, ref), { value: false }))));
    return ended.filter(Boolean).length;
  }

  /**
   * Closes the sessions whose run ended `graph.closeAfterMinutes` ago (run-end-session.ts), each
   * in its item's queue and decided again there; the daemon calls it every poll interval. How many closed.
   */
  async closeEndedRunSessions(): Promise<number> {
    if (!this.accepting) return 0;
    let refs: string[];
    try {
      refs = await endedRunSessions(this.ctx);
    } catch (error) {
      this.options.events.emit("graph.effect_failed", { work_item: "", graph: "", node: "", effect: "close-ended-sessions", error: messageOf(error) });
      return 0;
    }
    const closed = await Promise.all(
      refs.map((ref) => this.counted(() => this.exclusive([ref], () => withSlot(this.ctx, () => closeEndedRunSession(this.ctx, ref)), { value: false }))),
    );
    return closed.filter(Boolean).length;
  }

  /**
   * Decides the gate answers held while the login the-loop posts as was unknown (graph-gate.ts),
   * each item in its queue: taken once the login is known, refused once it cannot be. Whether
   * answers are still held; the daemon's retry (held-retry.ts) calls it on a backoff.
   */
  async releaseHeldAnswers(): Promise<boolean> {
    const held = this.options.graph?.held;
    if (!this.accepting || held === undefined) return false;
    const { records } = await held.list();
    const outcomes = await Promise.all(
      records.map((record) => this.counted(() => this.exclusive([record.ref], () => releaseHeldAnswers(this.ctx, record.ref), { value: undefined }))),
    );
    return outcomes.includes("waiting");
  }

  /** Moves the runs waiting at an edge whose node has a place now (routing.limits.perNode, node-room.ts); the daemon calls it twice a second. */
  async releaseHeldRuns(): Promise<number> {
    return this.accepting ? releaseHeldRuns(this.ctx, (ref, job) => this.counted(() => this.exclusive([ref], job, { value: undefined as never }))) : 0;
  }

  /** The adoption of what a lost daemon ran, in the turn that took its item's lease (adoption/adopt.ts). */
  private takeover: Takeover | undefined;

  /** Sets what adopts an item whose lease any turn here takes from a lost daemon. */
  onTakeover(takeover: Takeover): void {
    this.takeover = takeover;
  }

  /** A turn in the item's queue that takes its lease (adopting it from a lost daemon; left queued, its lease stays given up) and no more; none once draining. */
  takeOver(ref: string): Promise<void> {
    const done = { value: undefined, held: () => undefined };
    return this.accepting ? this.counted(() => this.exclusive([ref], async () => undefined, done)) : Promise.resolve();
  }

  /**
   * Applies a command the CLI gives (`the-loop sessions start|stop|pause|resume`) exactly as the
   * same keyword in a comment would be applied (see controlRequest). It waits its turn in the
   * item's queue like an event, so it never interleaves with the item's events here.
   */
  async control(request: ControlRequest): Promise<ControlOutcome> {
    if (!this.accepting) throw new Error("the dispatcher is shutting down and takes no more commands");
    const ref = formatWorkItemRef(parseWorkItemRef(request.ref));
    const intent = request.command === "stop" ? ("stop" as const) : undefined;
    return this.counted(() =>
      this.exclusive(
        [ref],
        () => controlRequest(this.ctx, ref, request),
        undefined,
        () => intent,
      ),
    );
  }

  /**
   * Starts the sessions whose start was honoured but never carried out (`start-pending`, or the
   * daemon was not running): each item with a standing start and no live session, checked again
   * in its queue and spawned through an event's gated path (retryStart). One closed or no longer
   * armed is skipped (`dispatch.dropped`), its start left standing (docs/control.md#the-keywords).
   * Returns how many started. It also finishes the stops a killed process left half done (a
   * standing stop beside a live session), through a stop's close path.
   */
  async retryPendingStarts(): Promise<number> {
    if (!this.accepting) return 0;
    const { starts, stops } = standingCommands(this.ctx);
    const inQueue = <T>(ref: string, job: () => Promise<T>, value: T): Promise<T> => this.counted(() => this.exclusive([ref], job, { value }));
    // Graph moves whose effects a killed process never carried out (graph-effects.ts), first in their items' queues.
    const journalled = await journalledMoves(this.ctx);
    // Gate answers a stopped daemon held: asked about again soon.
    if (((await this.options.graph?.held?.list())?.records.length ?? 0) > 0) this.heldRetry.arm();
    const [started] = await Promise.all([
      Promise.all(starts.map((ref) => inQueue(ref, () => retryStart(this.ctx, ref), false))),
      Promise.all(stops.map((ref) => inQueue(ref, () => finishStop(this.ctx, ref), undefined))),
      Promise.all(journalled.map((ref) => inQueue(ref, () => resumeJournalledEffects(this.ctx, ref), undefined))),
    ]);
    return started.filter(Boolean).length;
  }

  /** Each live session's transcript reader, kept between looks (budget-watch.ts). */
  private readonly usageReaders = new UsageReaders(() => process.env);
  /** Items whose budget is being looked at now (a look that runs again meanwhile leaves them be). */
  private readonly budgeting = new Set<string>();

  /**
   * Looks at every live session's usage and budget (routing.budget, docs/fleet.md#budgets), each
   * in its item's queue: usage read and kept, a warning at the threshold, a pause at the limit.
   * The daemon calls it every BUDGET_CHECK_MS. How many items it paused.
   */
  async checkBudgets(): Promise<number> {
    if (!this.accepting || this.options.budgets === undefined) return 0;
    const refs = this.options.registry
      .list({ status: "live" })
      .records.map((record) => record.workItem.ref)
      .filter((ref) => this.ownership.holds(ref));
    this.usageReaders.keepOnly(new Set(refs));
    const paused = await Promise.all(
      refs
        .filter((ref) => !this.budgeting.has(ref))
        .map(async (ref) => {
          this.budgeting.add(ref);
          try {
            return await this.counted(() => this.exclusive([ref], () => checkBudget(this.ctx, this.usageReaders, ref), { value: false }));
          } catch (error) {
            dispatchFailed(
              deliveryEvents(this.options.events, ref, "budget-check"),
              "control",
              `the budget of ${ref} could not be checked: ${messageOf(error)}`,
              true,
            );
            return false;
          } finally {
            this.budgeting.delete(ref);
          }
        }),
    );
    return paused.filter(Boolean).length;
  }

  /** Queued starts being carried out here now: a pump that runs again meanwhile leaves them be. */
  private readonly dequeuing = new Set<string>();

  /**
   * Starts the queued starts a free slot lets through (routing.limits, docs/fleet.md), each in
   * its item's queue and checked again there (dequeue.ts). The daemon calls it twice a second
   * while the queue is not empty, so a session closed by any process — the daemon, the CLI, an
   * agent's end — frees its slot within a second. How many sessions started.
   */
  async startQueued(): Promise<number> {
    if (!this.accepting) return 0;
    const refs = queuedToStart(this.ctx).filter((ref) => !this.dequeuing.has(ref));
    const started = await Promise.all(
      refs.map(async (ref) => {
        this.dequeuing.add(ref);
        try {
          return await this.counted(() => this.exclusive([ref], () => dequeueStart(this.ctx, ref), { value: false }));
        } finally {
          this.dequeuing.delete(ref);
        }
      }),
    );
    return started.filter(Boolean).length;
  }
  /** Sessions being looked after here now: a look that runs again meanwhile leaves them be. */
  private readonly supervising = new Set<string>();

  /**
   * Looks after the active sessions' harnesses (routing.supervision, docs/fleet.md#supervision):
   * each whose pane is not live is decided on in its item's queue — restarted with its
   * conversation resumed, after the backoff, or failed to start once its restarts are spent
   * (supervise.ts). The daemon calls it every second. How many harnesses were started again.
   */
  async superviseSessions(): Promise<number> {
    if (!this.accepting || !this.ctx.routing.supervision.enabled) return 0;
    const { registry, runner } = this.options;
    const candidates = registry
      .list({ status: "active" })
      .records.filter(
        (record) => record.harnessStartedAt !== undefined && !this.supervising.has(record.workItem.ref) && this.ownership.holds(record.workItem.ref),
      );
    const restarted = await Promise.all(
      candidates.map(async (record) => {
        const ref = record.workItem.ref;
        // A live pane is the common case: looked at here, outside the item's queue, so a busy item's queue gets nothing more to do.
        if ((await runner.probe(record.tmuxTarget)) === "live") return false;
        this.supervising.add(ref);
        try {
          return (await this.counted(() => this.exclusive([ref], () => superviseSession(this.ctx, ref), { value: "skipped" as const }))) === "restarted";
        } finally {
          this.supervising.delete(ref);
        }
      }),
    );
    return restarted.filter(Boolean).length;
  }
}
