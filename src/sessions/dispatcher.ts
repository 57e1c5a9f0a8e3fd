import { messageOf } from "../errors.js";
import type { RoutingConfig } from "../config/schema.js";
import type { EventSink } from "../events/log.js";
import { ProgramNotFoundError, SessionMissingError, TargetLiveError } from "../harness/runner.js";
import type { SessionRunner } from "../harness/runner.js";
import { harnessAdapter, isResumableSessionId, newHarnessSessionId } from "../harness/adapters.js";
import type { HarnessAdapter } from "../harness/adapters.js";
import type { EventHandler, HandleResult } from "../ingress/poller.js";
import { DeliveryLru } from "../routing/dedupe.js";
import { route } from "../routing/router.js";
import type { Decision, DeliveryMemory, RoutingPolicy } from "../routing/router.js";
import type { InboundEvent } from "../routing/inbound.js";
import type { TrackerSet } from "../trackers/resolve.js";
import type { WorkspaceProvider, WorkspaceRequest } from "../workspace/provider.js";
import type { WorkItem } from "../workitem/index.js";
import { hostOf, parseWorkItemRef, repositoryOf, workItemSlug } from "../workitem/index.js";
import { announcementText } from "./announce.js";
import { closeSession } from "./close.js";
import type { CloseOptions } from "./close.js";
import { KeyedQueue, Semaphore } from "./keyed-queue.js";
import { LinkedItemCheck, applyLink } from "./linkage.js";
import type { PullRequestLinks } from "./links.js";
import { renderBootPrompt, renderEventPrompt } from "./prompts.js";
import type { PromptInput, PromptTemplates } from "./prompts.js";
import { RECENT_DELIVERIES_MAX, isLive, tmuxTargetFor } from "./record.js";
import type { SessionRecord, SessionWorkspace } from "./record.js";
import { Reactions } from "./reactions.js";
import type { SessionRegistry } from "./registry.js";

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
  readonly runner: SessionRunner;
  readonly trackers: TrackerSet;
  readonly events: EventSink;
  readonly templates: PromptTemplates;
  /** Working directory of new sessions (routing.spawnWorkdir, resolved). */
  readonly spawnCwd: string;
  /** Environment every session gets on top of the tmux server's, minus THE_LOOP_WORK_ITEM. */
  readonly sessionEnv: (workItem: string) => Record<string, string>;
  readonly now?: () => Date;
  /** How long a resumed harness must stay up to count as resumed (default 1500 ms). */
  readonly resumeProbeMs?: number;
  /** Pull request → work item bindings; without it a PR's events follow only what they name themselves. */
  readonly links?: PullRequestLinks;
  /** Checkouts for sessions (routing.workspace); without it every session starts in spawnCwd. */
  readonly workspaces?: WorkspaceProvider;
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

  constructor(private readonly options: DispatcherOptions) {
    this.heavy = new Semaphore(options.routing.maxConcurrentDispatches);
    this.memory = new DeliveryLru(options.routing.dedupCacheSize);
    this.now = options.now ?? (() => new Date());
    this.reactions = new Reactions({ config: options.routing.reactions, trackers: options.trackers, events: options.events });
    this.linkCheck = new LinkedItemCheck({
      trackers: options.trackers,
      registry: options.registry,
      events: options.events,
      now: this.now,
    });
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
    if (arrival.action === "drop" && EVENT_GUARDS.has(arrival.reason)) return Promise.resolve(this.dropped(event, arrival));
    // Past the work-item guard, so the event names at least one work item.
    const keys = [...new Set(event.workItems.map((item) => item.ref))];
    this.memory.add(event.deliveryId);
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
      return route(event, this.options.policy, this.options.registry, memory);
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
    this.options.events.emit("routing.dropped", {
      reason: decision.reason,
      delivery_id: event.deliveryId,
      kind: event.kind,
      work_item: decision.workItem?.ref,
      actor: event.actor ?? undefined,
    });
    return SETTLED;
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
      this.memory.delete(event.deliveryId);
      this.reactions.react(event, "failed");
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
      if (action === "close") return await this.heavy.use(() => this.close(workItem, event));
      if (action === "deliver") {
        const current = this.options.registry.get(workItem.ref);
        if (!current || !isLive(current)) return this.settle(workItem, event, "session-vanished");
        return await this.deliver(current, event);
      }
      const outcome = await this.heavy.use(() => this.spawn(workItem, event));
      // Someone else (the CLI, another process) started it first: this event is input for that session.
      return "occupant" in outcome ? await this.deliver(outcome.occupant, event) : outcome;
    } catch (error) {
      this.memory.delete(event.deliveryId);
      this.options.events.emit("dispatch.failed", {
        work_item: workItem.ref,
        delivery_id: event.deliveryId,
        action,
        error: messageOf(error),
        will_retry: true,
      });
      this.reactions.react(event, "failed");
      return RETRY;
    }
  }

  private settle(workItem: WorkItem, event: InboundEvent, reason: string): HandleResult {
    this.options.events.emit("dispatch.dropped", { work_item: workItem.ref, delivery_id: event.deliveryId, reason });
    return SETTLED;
  }

  private adapter(name: string): HarnessAdapter {
    return harnessAdapter(name, this.options.routing);
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

  private async spawn(workItem: WorkItem, event: InboundEvent): Promise<HandleResult | { occupant: SessionRecord }> {
    const routing = this.options.routing;
    const harnessName = routing.defaultHarness;
    const target = tmuxTargetFor(workItemSlug(parseWorkItemRef(workItem.ref)));
    const at = this.now().toISOString();
    const sessionId = newHarnessSessionId();
    let adapter: HarnessAdapter;
    try {
      adapter = this.adapter(harnessName);
    } catch (error) {
      this.options.events.emit("session.spawn_failed", {
        work_item: workItem.ref,
        harness: harnessName,
        error: messageOf(error),
        delivery_id: event.deliveryId,
      });
      this.reactions.react(event, "failed");
      return SETTLED;
    }
    const claim = await this.options.registry.claim(workItem, () => ({
      version: 1,
      workItem: { ...workItem },
      harness: harnessName,
      harnessSessionId: sessionId,
      cwd: this.options.spawnCwd,
      status: "active",
      createdAt: at,
      lastEventAt: at,
      tmuxTarget: target,
      recentDeliveries: [event.deliveryId],
      url: workItem.url,
    }));
    if (!claim.claimed) return { occupant: claim.record };
    this.reactions.react(event, "started");

    // Only after the claim: of two processes spawning for one item, only the winner prepares.
    const prepared = await this.prepareWorkspace(workItem, event, harnessName, claim.record);
    if ("outcome" in prepared) return prepared.outcome;
    const cwd = prepared.cwd;

    const prompt = renderBootPrompt(this.options.templates, await this.promptInput(workItem, event));
    try {
      await this.options.runner.spawn({
        target,
        cwd,
        argv: adapter.fresh({ sessionId, prompt, workItem: workItem.ref }),
        env: this.options.sessionEnv(workItem.ref),
      });
    } catch (error) {
      await this.options.registry.close(workItem.ref, "spawn-failed", this.now());
      const remedy =
        error instanceof ProgramNotFoundError
          ? `; install it, or point routing.harnesses.${harnessName}.command at it (or choose another routing.defaultHarness)`
          : error instanceof TargetLiveError
          ? ` (a live tmux session of that name has no session record; end it with \`tmux${
              routing.tmux.socketName ? ` -L ${routing.tmux.socketName}` : ""
            } kill-session -t ${target}\`)`
          : "";
      this.options.events.emit("session.spawn_failed", {
        work_item: workItem.ref,
        harness: harnessName,
        error: `${messageOf(error)}${remedy}`,
        delivery_id: event.deliveryId,
      });
      this.memory.delete(event.deliveryId);
      this.reactions.react(event, "failed");
      // Neither comes right by trying again at once; the next event for the item tries afresh.
      return error instanceof TargetLiveError || error instanceof ProgramNotFoundError ? SETTLED : RETRY;
    }
    if (await this.endIfClosed(claim.record)) return this.settle(workItem, event, SESSION_CLOSED);
    this.options.events.emit("session.spawned", {
      work_item: workItem.ref,
      harness: harnessName,
      harness_session_id: sessionId,
      tmux_target: target,
      cwd,
      delivery_id: event.deliveryId,
    });
    this.reactions.react(event, "completed");
    await this.recordLink(workItem, event);
    if (routing.announce.enabled) await this.announce(workItem.ref, target, harnessName);
    return SETTLED;
  }

  /**
   * The session's working directory: its own checkout when a workspace provider gives one (the
   * record then names it, so a respawn and the close find it), else spawnCwd. An outcome instead
   * when there is nothing to start: the checkout failed (the claim is closed again and the event
   * comes back for another try), or the session was closed meanwhile (`the-loop sessions close`
   * during a long clone) — that close could not release a checkout it did not know of, so this
   * does, and no harness is started for a closed session.
   */
  private async prepareWorkspace(
    workItem: WorkItem,
    event: InboundEvent,
    harnessName: string,
    claimed: SessionRecord,
  ): Promise<{ readonly cwd: string } | { readonly outcome: HandleResult }> {
    const provider = this.options.workspaces;
    if (provider === undefined || !this.options.routing.workspace.enabled) return { cwd: this.options.spawnCwd };
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
      this.options.events.emit("session.spawn_failed", {
        work_item: workItem.ref,
        harness: harnessName,
        error: `its checkout could not be prepared: ${messageOf(error)}`,
        delivery_id: event.deliveryId,
      });
      this.memory.delete(event.deliveryId);
      this.reactions.react(event, "failed");
      return { outcome: RETRY };
    }
    if (recorded) return { cwd: workspace.checkout };
    // A session claimed anew by another process prepares this same checkout for itself: leave it be.
    if (!isLive(this.options.registry.get(workItem.ref))) await provider.release(workItem.ref, workspace);
    return { outcome: this.settle(workItem, event, SESSION_CLOSED) };
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
    const tmux = this.options.routing.tmux;
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
          announcementText({ ref, tmuxTarget: target, harness, socketName: this.options.routing.tmux.socketName }),
        );
      this.options.events.emit("session.announced", { work_item: ref, comment_id: comment.id });
    } catch (error) {
      this.options.events.emit("session.announce_failed", { work_item: ref, error: messageOf(error) });
    }
  }

  private async deliver(record: SessionRecord, event: InboundEvent): Promise<HandleResult> {
    const workItem = record.workItem as WorkItem;
    if (record.status === "paused") return this.settle(workItem, event, "session-paused");
    if (record.recentDeliveries.includes(event.deliveryId)) return this.settle(workItem, event, "already-processed");
    this.reactions.react(event, "started");
    const text = renderEventPrompt(this.options.templates, await this.promptInput(workItem, event, record));
    await this.startupGrace(record);
    try {
      await this.options.runner.deliver(record.tmuxTarget, text);
    } catch (error) {
      if (!(error instanceof SessionMissingError)) throw error;
      // A pane gone because another process closed the session (`the-loop sessions close`) is not
      // a dead harness: starting one again would run an agent for a closed session, in a
      // checkout that close may have removed.
      if (!sameLiveSession(this.options.registry.get(workItem.ref), record)) return this.settle(workItem, event, SESSION_CLOSED);
      await this.heavy.use(() => this.respawn(record, text));
      if (await this.endIfClosed(record)) return this.settle(workItem, event, SESSION_CLOSED);
    }
    await this.options.registry.update(workItem.ref, (current) => {
      const { awaitingInput: _answered, ...rest } = current;
      const recent = [...rest.recentDeliveries.filter((id) => id !== event.deliveryId), event.deliveryId];
      return { ...rest, lastEventAt: this.now().toISOString(), recentDeliveries: recent.slice(-RECENT_DELIVERIES_MAX) };
    });
    this.options.events.emit("dispatch.succeeded", {
      work_item: workItem.ref,
      delivery_id: event.deliveryId,
      tmux_target: record.tmuxTarget,
    });
    this.reactions.react(event, "completed");
    await this.recordLink(workItem, event);
    return SETTLED;
  }

  /**
   * A harness that has just started may not read its terminal yet (a TUI sets up bracketed paste
   * first); input pasted before that can be split into lines or lost. Only this work item waits.
   */
  private async startupGrace(record: SessionRecord): Promise<void> {
    const graceMs = this.options.routing.tmux.startupGraceSeconds * 1000;
    const readyAt = Math.max(Date.parse(record.createdAt) + graceMs, this.readyAt.get(record.tmuxTarget) ?? 0);
    const wait = readyAt - this.now().getTime();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(wait, graceMs)));
    this.readyAt.delete(record.tmuxTarget);
  }

  private markStarted(target: string): void {
    this.readyAt.set(target, this.now().getTime() + this.options.routing.tmux.startupGraceSeconds * 1000);
  }

  /** The pane died: start the harness again, resuming its conversation when it can; the event is the prompt. */
  private async respawn(record: SessionRecord, prompt: string): Promise<void> {
    const ref = record.workItem.ref;
    const adapter = this.adapter(record.harness);
    const spawnWith = async (argv: string[]): Promise<void> => {
      await this.options.runner.spawn({ target: record.tmuxTarget, cwd: record.cwd, argv, env: this.options.sessionEnv(ref) });
      this.markStarted(record.tmuxTarget);
    };
    const canResume =
      this.options.routing.tmux.resumeOnRespawn && adapter.resume && isResumableSessionId(record.harnessSessionId);
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
          return;
        }
        throw new Error("the resumed harness exited at once");
      } catch (error) {
        this.options.events.emit("session.resume_failed", {
          work_item: ref,
          tmux_target: record.tmuxTarget,
          error: messageOf(error),
        });
      }
    }
    const sessionId = newHarnessSessionId();
    await spawnWith(adapter.fresh({ sessionId, prompt, workItem: ref }));
    await this.options.registry.update(ref, (current) => ({ ...current, harnessSessionId: sessionId }));
    this.options.events.emit("session.respawned", {
      work_item: ref,
      tmux_target: record.tmuxTarget,
      harness_session_id: sessionId,
      resumed: false,
    });
  }

  private async close(workItem: WorkItem, event: InboundEvent): Promise<HandleResult> {
    const closed = await closeSession(this.closeOptions(), workItem.ref, "item-closed");
    // Closed by someone else since the decision: a dropped event gets no reaction.
    if (!closed) return this.settle(workItem, event, "no-session");
    this.reactions.react(event, "started");
    return SETTLED;
  }

  private closeOptions(): CloseOptions {
    return {
      registry: this.options.registry,
      runner: this.options.runner,
      tmux: this.options.routing.tmux,
      events: this.options.events,
      now: this.now,
      ...(this.options.workspaces ? { workspaces: this.options.workspaces } : {}),
    };
  }
}

/** The same session as `known` (not one claimed since it was closed), and still live. */
function sameLiveSession(record: SessionRecord | undefined, known: SessionRecord): boolean {
  return record !== undefined && isLive(record) && record.createdAt === known.createdAt;
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
