import { join } from "node:path";
import { expect } from "vitest";
import { configSchema } from "../../src/config/schema.js";
import { ARM } from "../support/builders.js";
import type { CliConfig } from "../../src/config/schema.js";
import { ControlStore } from "../../src/control/store.js";
import type { EventType } from "../../src/events/catalog.js";
import { inboundFromChange } from "../../src/ingress/local-source.js";
import { MemoryEventSink } from "../../src/events/log.js";
import type { InboundEvent, InboundKind, LinkSource } from "../../src/routing/inbound.js";
import { policyOf } from "../../src/routing/router.js";
import { closeSession } from "../../src/sessions/close.js";
import type { CloseOptions, DamagedClose } from "../../src/sessions/close.js";
import { Dispatcher } from "../../src/dispatch/dispatcher.js";
import type { DispatcherOptions } from "../../src/dispatch/dispatcher.js";
import type { Ownership } from "../../src/fleet/ownership.js";
import { PullRequestLinks } from "../../src/registry/pr-links.js";
import { BUILTIN_TEMPLATES } from "../../src/sessions/prompts.js";
import { tmuxTargetFor } from "../../src/registry/record.js";
import type { SessionRecord, SessionWorkspace } from "../../src/registry/record.js";
import { SessionRegistry } from "../../src/registry/registry.js";
import { sessionEnvironment } from "../../src/sessions/session-env.js";
import { deriveStatePaths } from "../../src/state/layout.js";
import { openTrackers } from "../../src/trackers/resolve.js";
import type { TrackerSet } from "../../src/trackers/resolve.js";
import { WorkItemNotFoundError } from "../../src/trackers/tracker.js";
import type { ChangeBatch, ReactionTarget, SelfLogin, Tracker, TrackerComment, WorkItemState } from "../../src/trackers/tracker.js";
import type { WorkspaceProvider, WorkspaceRequest } from "../../src/workspace/provider.js";
import { formatWorkItemRef, githubItemUrl, parseWorkItemRef, workItemOf, workItemSlug } from "../../src/workitem/index.js";
import type { GitHubRef, WorkItem, WorkItemRef } from "../../src/workitem/index.js";
import { FakeRunner } from "../support/fake-runner.js";
import { tempDir } from "../support/temp.js";

/**
 * What the dispatcher tests build on: a Dispatcher over the real session registry and local
 * tracker in a temp dir, the routing config as the config loader builds it, and tmux replaced by
 * a fake runner; for its GitHub side, a GitHub tracker, workspaces and events in memory.
 */

export { ARM };
export const T0 = new Date("2025-03-01T10:00:00.000Z");

/** A promise's state right now, without waiting for it. */
export function tracked<T>(promise: Promise<T>): { readonly promise: Promise<T>; done: () => boolean } {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  return { promise, done: () => settled };
}

/** Whether `event`'s turn has begun carrying out its decision: the routing.routed line it starts with. */
export function routed(events: MemoryEventSink, event: InboundEvent): boolean {
  return events.events.some((line) => line.type === "routing.routed" && line.fields["delivery_id"] === event.deliveryId);
}

/**
 * The closing of OTHER, which has no session, handled to its end: it goes through the same steps
 * as any event's turn up to routing.routed (the link check, the decision, the gate answer) and
 * then drops. Handed in after an event the test expects to be held in its queue, it is the
 * positive marker that the held event would have begun by now had it not been held: a test
 * asserts `routed(...)` false only after it, not after a wait.
 */
export async function overtake(d: Dispatcher): Promise<void> {
  expect(await d.handle(ghEvent({ on: OTHER, kind: "closed" }))).toEqual({ settled: true });
}

export interface DispatcherSetupInput<R extends FakeRunner> {
  /** Settings under `routing`, over alice as the one authorized user and the fake harness. */
  readonly routing?: Record<string, unknown>;
  /** Settings under `routing.tmux`, over no startup grace. */
  readonly tmux?: Record<string, unknown>;
  readonly runner: R;
  /** Takes the `github:` refs; without it, the trackers are the ones openTrackers makes. */
  readonly github?: Tracker;
  readonly now?: () => Date;
}

/** The parts of a dispatcher, and `dispatcher()` to make one over them, with options on top. */
export async function dispatcherSetup<R extends FakeRunner>(input: DispatcherSetupInput<R>) {
  const dir = await tempDir();
  const config: CliConfig = configSchema.parse({
    routing: {
      authorizedUsers: ["alice"],
      defaultHarness: "fake",
      harnesses: { fake: { command: ["fake", "{prompt}"] } },
      tmux: { startupGraceSeconds: 0, ...input.tmux },
      // Label-alone spawning: control tests pass their own \`control\` block.
      control: { requireStartCommand: false },
      ...input.routing,
    },
  });
  const routing = config.routing;
  const paths = deriveStatePaths(config, dir);
  const events = new MemoryEventSink();
  const opened = openTrackers(paths, events);
  const github = input.github;
  const trackers: TrackerSet = github ? { local: opened.local, forRef: (ref) => (ref.startsWith("github:") ? github : opened.local) } : opened;
  const registry = new SessionRegistry({ dir: paths.registryDir, lock: { timeoutMs: 5_000 } });
  const control = new ControlStore({ dir: paths.controlDir, lock: { timeoutMs: 5_000 } });
  const runner = input.runner;
  const spawnCwd = join(dir, "work");
  const now = input.now ?? (() => T0);

  /** `ownership`: the daemon's leases on a shared database (the file store's sole owner when omitted). */
  const dispatcher = (options: Partial<DispatcherOptions> = {}, ownership?: Ownership): Dispatcher =>
    new Dispatcher(
      {
        routing,
        policy: policyOf(routing),
        registry,
        control,
        runner,
        trackers,
        events,
        templates: BUILTIN_TEMPLATES,
        spawnCwd,
        sessionEnv: (workItem) => sessionEnvironment({ workItem, binDir: paths.binDir, basePath: "/usr/bin" }),
        now,
        resumeProbeMs: 10,
        ...options,
      },
      ownership,
    );
  const record = (ref: string): SessionRecord => {
    const current = registry.get(ref);
    if (!current) throw new Error(`no session record for ${ref}`);
    return current;
  };
  const emitted = (type: EventType): Record<string, unknown>[] => events.events.filter((event) => event.type === type).map((event) => event.fields);
  return { dir, routing, paths, events, trackers, registry, control, runner, spawnCwd, dispatcher, record, emitted };
}

// ---- the GitHub side ----------------------------------------------------------------------

export function ghRef(number: number, repo = "app"): GitHubRef {
  return { tracker: "github", host: "github.com", owner: "octo", repo, number };
}

export function ghItem(number: number, kind: "issue" | "pull_request" = "issue", repo = "app"): WorkItem {
  const ref = ghRef(number, repo);
  return workItemOf(ref, { kind, url: githubItemUrl(ref, kind), id: `node-${repo}-${number}` });
}

export const PR = ghItem(5, "pull_request");
export const ISSUE = ghItem(12);
export const OTHER = ghItem(13);
export const target = (item: WorkItem): string => tmuxTargetFor(workItemSlug(item.ref));

type ReactImpl = (target: ReactionTarget, content: string) => Promise<void>;

/** A GitHub tracker in memory: the items it holds, every getItem and reaction it was asked for. */
export class FakeGitHubTracker implements Tracker {
  readonly kind = "github" as const;
  readonly items = new Map<string, WorkItemState>();
  readonly lookups: string[] = [];
  readonly reactions: { target: ReactionTarget; content: string }[] = [];
  lookupError: Error | undefined;
  reactImpl: ReactImpl | undefined;

  add(item: WorkItem): void {
    this.items.set(item.ref, {
      item,
      title: `Title of ${item.ref}`,
      body: "",
      author: "alice",
      state: "open",
      labels: [],
      createdAt: T0.toISOString(),
      updatedAt: T0.toISOString(),
      closedAt: null,
    });
  }

  async listArmedItems(): Promise<WorkItemState[]> {
    return [];
  }
  async changesSince(): Promise<ChangeBatch> {
    return { changes: [], cursor: "" };
  }
  async getItem(ref: WorkItemRef): Promise<WorkItemState> {
    const key = formatWorkItemRef(ref);
    this.lookups.push(key);
    if (this.lookupError) throw this.lookupError;
    const state = this.items.get(key);
    if (!state) throw new WorkItemNotFoundError(key);
    return state;
  }
  async postComment(ref: WorkItemRef, body: string): Promise<TrackerComment> {
    return { id: "c-announce", author: "the-loop", body, createdAt: T0.toISOString(), url: `${formatWorkItemRef(ref)}#c`, kind: "comment" };
  }
  async addLabel(): Promise<void> {}
  async removeLabel(): Promise<void> {}
  async selfLogin(): Promise<SelfLogin> {
    return { kind: "known", login: "the-loop" };
  }
  async react(reactionTarget: ReactionTarget, content: string): Promise<void> {
    this.reactions.push({ target: reactionTarget, content });
    if (this.reactImpl) await this.reactImpl(reactionTarget, content);
  }
}

interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

/** A step the test holds: `entered` resolves when it is reached, `release` lets it go on. */
export interface Hold {
  readonly entered: Promise<void>;
  release(): void;
}

function hold(): { gate: { entered: Deferred; release: Deferred }; handle: Hold } {
  const gate = { entered: deferred(), release: deferred() };
  return { gate, handle: { entered: gate.entered.promise, release: gate.release.resolve } };
}

/** The fake runner, plus deliveries that can be held, and a hook that runs just before one. */
export class HoldingRunner extends FakeRunner {
  private readonly held = new Map<string, { entered: Deferred; release: Deferred }[]>();
  beforeDeliver: ((target: string) => Promise<void>) | undefined;

  holdDeliver(target: string): Hold {
    const { gate, handle } = hold();
    this.held.set(target, [...(this.held.get(target) ?? []), gate]);
    return handle;
  }

  override async pasteText(target: string, text: string): Promise<void> {
    const gate = this.held.get(target)?.shift();
    if (gate) {
      gate.entered.resolve();
      await gate.release.promise;
    }
    const hook = this.beforeDeliver;
    this.beforeDeliver = undefined;
    if (hook) await hook(target);
    return super.pasteText(target, text);
  }
}

/** Workspaces in memory: a checkout per work item under `root`, a prepare that can be held, and every call in order. */
export class FakeWorkspaces implements WorkspaceProvider {
  readonly prepared: { ref: string; request: WorkspaceRequest; claimedBefore: boolean }[] = [];
  readonly released: { ref: string; workspace: SessionWorkspace; terminatedBefore: number }[] = [];
  failWith: Error | undefined;
  none = false;
  private gate: { entered: Deferred; release: Deferred } | undefined;

  constructor(
    private readonly root: string,
    private readonly registry: SessionRegistry,
    private readonly runner: FakeRunner,
  ) {}

  /** The next prepare waits until the returned hold is released. */
  holdPrepare(): Hold {
    const { gate, handle } = hold();
    this.gate = gate;
    return handle;
  }

  async prepare(workItem: WorkItem, request: WorkspaceRequest): Promise<SessionWorkspace | undefined> {
    this.prepared.push({ ref: workItem.ref, request, claimedBefore: this.registry.get(workItem.ref)?.status === "active" });
    const gate = this.gate;
    this.gate = undefined;
    if (gate) {
      gate.entered.resolve();
      await gate.release.promise;
    }
    if (this.failWith) throw this.failWith;
    if (this.none) return undefined;
    return {
      checkout: join(this.root, workItemSlug(workItem.ref)),
      strategy: "worktree",
      ...(request.branch !== undefined && request.headInRepository !== false ? { branch: request.branch } : {}),
    };
  }

  async release(ref: string, workspace: SessionWorkspace): Promise<void> {
    this.released.push({ ref, workspace, terminatedBefore: this.runner.terminated.length });
  }
}

export interface EventInput {
  /** The entity: a PR event by default. */
  readonly on?: WorkItem;
  /** Items the event names through the PR, in front of it, with how they were found. */
  readonly linked?: readonly (readonly [WorkItem, LinkSource])[];
  readonly kind?: InboundKind;
  readonly actor?: string;
  readonly labels?: readonly string[];
  readonly commentId?: string;
  readonly commentKind?: "comment" | "review" | "review_comment";
  readonly headBranch?: string;
  readonly headInRepository?: boolean;
  readonly state?: "open" | "closed";
}

let deliveries = 0;

/** An event as the GitHub ingress would normalize it. */
export function ghEvent(input: EventInput = {}): InboundEvent {
  const entity = input.on ?? PR;
  const linked = input.linked ?? [];
  const kind = input.kind ?? (input.commentId ? "commented" : "opened");
  const isPr = entity.kind === "pull_request";
  deliveries += 1;
  return {
    source: "gh-webhook",
    deliveryId: `gh-${deliveries}`,
    kind,
    trackerEvent: isPr ? "pull_request" : "issues",
    workItems: [...linked.map(([item]) => item), entity],
    actor: input.actor ?? "alice",
    body: input.commentId ? "Please look at the failing test." : null,
    labels: [...(input.labels ?? [ARM])],
    itemState: input.state ?? (kind === "closed" ? "closed" : "open"),
    title: `Title of ${entity.ref}`,
    ...(input.commentId ? { commentId: input.commentId, commentKind: input.commentKind ?? "comment" } : {}),
    ...(isPr
      ? {
          pullRequest: {
            ref: entity.ref,
            ...(input.headBranch !== undefined ? { headBranch: input.headBranch } : {}),
            ...(input.headInRepository !== undefined ? { headInRepository: input.headInRepository } : {}),
          },
        }
      : {}),
    ...(linked.length > 0 ? { linkedBy: Object.fromEntries(linked.map(([item, source]) => [item.ref, source])) } : {}),
    occurredAt: T0.toISOString(),
    excerpt: {},
  };
}

/**
 * A dispatcher for GitHub events: PR, ISSUE and OTHER on the in-memory tracker, the real binding
 * store, no announcements. `dispatcher()` has the binding store and no workspaces unless given.
 */
export async function githubSetup(routingOverrides: Record<string, unknown> = {}, tmux: Record<string, unknown> = {}) {
  const github = new FakeGitHubTracker();
  for (const item of [PR, ISSUE, OTHER]) github.add(item);
  const base = await dispatcherSetup({
    routing: { announce: { enabled: false }, ...routingOverrides },
    tmux: { harnessKillGraceSeconds: 0, ...tmux },
    runner: new HoldingRunner(),
    github,
  });
  const { dir, paths, routing, registry, control, runner, events } = base;
  const links = new PullRequestLinks(paths.linksDir);
  const workspaces = new FakeWorkspaces(join(dir, "workspaces"), registry, runner);

  const dispatcher = (options: Partial<DispatcherOptions> = {}): Dispatcher => base.dispatcher({ links, ...options });
  const record = (item: WorkItem): SessionRecord => base.record(item.ref);
  /** What `the-loop sessions close` does, from another process. */
  const cliClose = (item: WorkItem): Promise<SessionRecord | DamagedClose | undefined> => {
    const options: CloseOptions = { registry, runner, tmux: routing.tmux, events, now: () => T0, workspaces, control };
    return closeSession(options, item.ref, "cli");
  };
  /** Starts a session for `item` from an event on the item itself. */
  const live = async (d: Dispatcher, item: WorkItem): Promise<void> => {
    expect(await d.handle(ghEvent({ on: item }))).toEqual({ settled: true });
    expect(runner.stateOf(target(item))).toBe("live");
  };
  return { ...base, github, links, workspaces, dispatcher, record, cliClose, live };
}

/**
 * A dispatcher over real parts — the session registry and the local tracker in a temp dir, the
 * routing config as the config loader builds it — with only tmux replaced by the fake runner, a
 * clock the test moves (`tick`), and events taken from the local tracker's change feed as the
 * poller would hand them out. The harness can resume, so respawns can be told apart.
 */
export async function localSetup(overrides: { readonly routing?: Record<string, unknown>; readonly tmux?: Record<string, unknown> } = {}) {
  let clock = T0;
  const tick = (seconds = 60): Date => (clock = new Date(clock.getTime() + seconds * 1000));
  const base = await dispatcherSetup({
    routing: {
      harnesses: { fake: { command: ["fake", "{prompt}"], resumeCommand: ["fake", "--resume", "{session_id}", "{prompt}"] } },
      ...overrides.routing,
    },
    tmux: overrides.tmux,
    runner: new FakeRunner(),
    now: () => clock,
  });
  const { trackers } = base;

  // The feed starts empty, so every change made from here on is news.
  let cursor = (await trackers.local.changesSince({}, undefined)).cursor;
  /** What the poller would hand out next. */
  const feed = async (): Promise<InboundEvent[]> => {
    const batch = await trackers.local.changesSince({}, cursor);
    cursor = batch.cursor;
    return batch.changes.map(inboundFromChange);
  };
  const only = async (): Promise<InboundEvent> => {
    const batch = await feed();
    expect(batch).toHaveLength(1);
    return batch[0] as InboundEvent;
  };
  const open = async (title: string, labels: string[] = [ARM], actor = "alice"): Promise<{ ref: string; target: string; url: string }> => {
    const item = await trackers.local.openItem({ project: "demo", title, labels, actor, body: `Details of ${title}.` });
    return { ref: item.item.ref, target: tmuxTargetFor(workItemSlug(item.item.ref)), url: item.item.url };
  };
  const comment = async (ref: string, body: string, actor = "alice"): Promise<void> => {
    await trackers.local.addComment(parseWorkItemRef(ref), body, actor);
  };
  return { ...base, tick, now: () => clock, feed, only, open, comment };
}
