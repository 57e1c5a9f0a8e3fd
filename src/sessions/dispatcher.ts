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
import type { WorkItem } from "../workitem/index.js";
import { parseWorkItemRef, workItemSlug } from "../workitem/index.js";
import { announcementText } from "./announce.js";
import { closeSession } from "./close.js";
import type { CloseOptions } from "./close.js";
import { KeyedQueue, Semaphore } from "./keyed-queue.js";
import { renderBootPrompt, renderEventPrompt } from "./prompts.js";
import type { PromptInput, PromptTemplates } from "./prompts.js";
import { RECENT_DELIVERIES_MAX, isLive, tmuxTargetFor } from "./record.js";
import type { SessionRecord } from "./record.js";
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

export class Dispatcher implements EventHandler {
  private readonly queue = new KeyedQueue();
  private readonly heavy: Semaphore;
  private readonly memory: DeliveryLru;
  private readonly now: () => Date;
  /** When each freshly (re)started harness may first receive input, by tmux target. */
  private readonly readyAt = new Map<string, number>();
  private accepting = true;

  constructor(private readonly options: DispatcherOptions) {
    this.heavy = new Semaphore(options.routing.maxConcurrentDispatches);
    this.memory = new DeliveryLru(options.routing.dedupCacheSize);
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Routes the event and queues it on its work item; resolves once it has been carried out. The
   * guards that depend only on the event (filter, dedupe, marker, authorization) drop it here, at
   * once. What depends on the item's session (spawn, deliver, close, or a spawn-policy drop) is
   * decided again when the event's turn comes: an event queued behind a spawn or a close must see
   * the session as that earlier event left it, not as it was when both arrived.
   */
  handle(event: InboundEvent): Promise<HandleResult> {
    if (!this.accepting) return Promise.resolve(RETRY);
    const arrival = this.decide(event, this.memory);
    if (arrival === undefined) return Promise.resolve(RETRY);
    if (arrival.action === "drop" && EVENT_GUARDS.has(arrival.reason)) return Promise.resolve(this.dropped(event, arrival));
    // Past the work-item guard, so there is a first work item: the event's queue.
    const key = event.workItems[0]?.ref ?? "";
    this.memory.add(event.deliveryId);
    this.options.events.emit("dispatch.queued", { work_item: key, delivery_id: event.deliveryId, action: arrival.action });
    return this.queue.run(key, () => this.perform(event));
  }

  /** Stops taking events and waits for the queued ones; returns how many were still queued. */
  async drain(): Promise<number> {
    this.accepting = false;
    const queued = this.queue.size;
    await this.queue.idle();
    return queued;
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

  private async perform(event: InboundEvent): Promise<HandleResult> {
    // This delivery id is in the in-memory LRU since it was queued; only the record's memory counts now.
    const decision = this.decide(event, NOTHING_SEEN);
    if (decision === undefined) {
      this.memory.delete(event.deliveryId);
      return RETRY;
    }
    if (decision.action === "drop") return this.dropped(event, decision);
    const { workItem, action } = decision;
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

    const prompt = renderBootPrompt(this.options.templates, await this.promptInput(workItem, event));
    try {
      await this.options.runner.spawn({
        target,
        cwd: this.options.spawnCwd,
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
      // Neither comes right by trying again at once; the next event for the item tries afresh.
      return error instanceof TargetLiveError || error instanceof ProgramNotFoundError ? SETTLED : RETRY;
    }
    this.options.events.emit("session.spawned", {
      work_item: workItem.ref,
      harness: harnessName,
      harness_session_id: sessionId,
      tmux_target: target,
      cwd: this.options.spawnCwd,
      delivery_id: event.deliveryId,
    });
    if (routing.announce.enabled) await this.announce(workItem.ref, target, harnessName);
    return SETTLED;
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
    const text = renderEventPrompt(this.options.templates, await this.promptInput(workItem, event, record));
    await this.startupGrace(record);
    try {
      await this.options.runner.deliver(record.tmuxTarget, text);
    } catch (error) {
      if (!(error instanceof SessionMissingError)) throw error;
      await this.heavy.use(() => this.respawn(record, text));
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
    if (!closed) return this.settle(workItem, event, "no-session");
    return SETTLED;
  }

  private closeOptions(): CloseOptions {
    return {
      registry: this.options.registry,
      runner: this.options.runner,
      tmux: this.options.routing.tmux,
      events: this.options.events,
      now: this.now,
    };
  }
}
