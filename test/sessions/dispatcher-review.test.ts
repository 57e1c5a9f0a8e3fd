import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_AUTO_EXECUTE_LABEL, configSchema } from "../../src/config/schema.js";
import type { CliConfig } from "../../src/config/schema.js";
import type { EventType } from "../../src/events/catalog.js";
import { MemoryEventSink } from "../../src/events/log.js";
import type { HandleResult } from "../../src/ingress/poller.js";
import type { InboundEvent, InboundKind, LinkSource } from "../../src/routing/inbound.js";
import { policyOf } from "../../src/routing/router.js";
import { closeSession } from "../../src/sessions/close.js";
import type { CloseOptions } from "../../src/sessions/close.js";
import { Dispatcher } from "../../src/sessions/dispatcher.js";
import type { DispatcherOptions } from "../../src/sessions/dispatcher.js";
import { PullRequestLinks } from "../../src/sessions/links.js";
import { BUILTIN_TEMPLATES } from "../../src/sessions/prompts.js";
import { tmuxTargetFor } from "../../src/sessions/record.js";
import type { SessionRecord, SessionWorkspace } from "../../src/sessions/record.js";
import { SessionRegistry } from "../../src/sessions/registry.js";
import { sessionEnvironment } from "../../src/sessions/session-env.js";
import { deriveStatePaths } from "../../src/state/layout.js";
import { openTrackers } from "../../src/trackers/resolve.js";
import type { TrackerSet } from "../../src/trackers/resolve.js";
import { WorkItemNotFoundError } from "../../src/trackers/tracker.js";
import type { ChangeBatch, ReactionTarget, Tracker, TrackerComment, WorkItemState } from "../../src/trackers/tracker.js";
import type { WorkspaceProvider, WorkspaceRequest } from "../../src/workspace/provider.js";
import { formatWorkItemRef, githubItemUrl, workItemOf, workItemSlug } from "../../src/workitem/index.js";
import type { GitHubRef, WorkItem, WorkItemRef } from "../../src/workitem/index.js";
import { FakeRunner } from "../support/fake-runner.js";
import { tempDir } from "../support/temp.js";

/**
 * Review of the dispatcher's GitHub side: which queue an event on a pull request waits in, what
 * happens when another process closes a session in the middle of a spawn or a delivery, and when
 * a checkout is released. The CLI's `sessions close` is played by calling closeSession directly,
 * which is all the command does.
 */

const ARM = DEFAULT_AUTO_EXECUTE_LABEL;
const T0 = new Date("2025-03-01T10:00:00.000Z");

function ghRef(number: number): GitHubRef {
  return { tracker: "github", host: "github.com", owner: "octo", repo: "app", number };
}

function ghItem(number: number, kind: "issue" | "pull_request" = "issue"): WorkItem {
  const ref = ghRef(number);
  return workItemOf(ref, { kind, url: githubItemUrl(ref, kind), id: `node-${number}` });
}

const PR = ghItem(5, "pull_request");
const ISSUE = ghItem(12);
const OTHER = ghItem(13);
const target = (item: WorkItem): string => tmuxTargetFor(workItemSlug(item.ref));

interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

/** Time for whatever could run now to run (record writes take file locks, so a few turns are not enough). */
async function settle(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 250));
}

function tracked<T>(promise: Promise<T>): { promise: Promise<T>; done: () => boolean } {
  let finished = false;
  void promise.then(
    () => (finished = true),
    () => (finished = true),
  );
  return { promise, done: () => finished };
}

/** The fake runner, plus deliveries that can be held, and a hook that runs just before one. */
class ReviewRunner extends FakeRunner {
  private readonly held = new Map<string, { entered: Deferred; release: Deferred }[]>();
  beforeDeliver: ((target: string) => Promise<void>) | undefined;

  holdDeliver(target: string): { entered: Promise<void>; release: () => void } {
    const gate = { entered: deferred(), release: deferred() };
    this.held.set(target, [...(this.held.get(target) ?? []), gate]);
    return { entered: gate.entered.promise, release: gate.release.resolve };
  }

  override async deliver(target: string, text: string): Promise<void> {
    const gate = this.held.get(target)?.shift();
    if (gate) {
      gate.entered.resolve();
      await gate.release.promise;
    }
    const hook = this.beforeDeliver;
    this.beforeDeliver = undefined;
    if (hook) await hook(target);
    return super.deliver(target, text);
  }
}

class FakeGitHub implements Tracker {
  readonly kind = "github" as const;
  readonly items = new Map<string, WorkItemState>();
  readonly reactions: { target: ReactionTarget; content: string }[] = [];

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
    const state = this.items.get(key);
    if (!state) throw new WorkItemNotFoundError(key);
    return state;
  }
  async postComment(ref: WorkItemRef, body: string): Promise<TrackerComment> {
    return { id: "c-announce", author: "the-loop", body, createdAt: T0.toISOString(), url: `${formatWorkItemRef(ref)}#c`, kind: "comment" };
  }
  async addLabel(): Promise<void> {}
  async removeLabel(): Promise<void> {}
  async react(reactionTarget: ReactionTarget, content: string): Promise<void> {
    this.reactions.push({ target: reactionTarget, content });
  }
}

/** Checkouts in memory; a prepare can be held, and every release is recorded. */
class FakeWorkspaces implements WorkspaceProvider {
  readonly prepared: string[] = [];
  readonly released: { ref: string; workspace: SessionWorkspace }[] = [];
  private gate: { entered: Deferred; release: Deferred } | undefined;

  constructor(private readonly root: string) {}

  holdPrepare(): { entered: Promise<void>; release: () => void } {
    const gate = { entered: deferred(), release: deferred() };
    this.gate = gate;
    return { entered: gate.entered.promise, release: gate.release.resolve };
  }

  async prepare(workItem: WorkItem, request: WorkspaceRequest): Promise<SessionWorkspace | undefined> {
    this.prepared.push(workItem.ref);
    const gate = this.gate;
    this.gate = undefined;
    if (gate) {
      gate.entered.resolve();
      await gate.release.promise;
    }
    return { checkout: join(this.root, workItemSlug(workItem.ref)), strategy: "worktree", ...(request.branch ? { branch: request.branch } : {}) };
  }

  async release(ref: string, workspace: SessionWorkspace): Promise<void> {
    this.released.push({ ref, workspace });
  }
}

interface EventInput {
  readonly on?: WorkItem;
  readonly linked?: readonly (readonly [WorkItem, LinkSource])[];
  readonly kind?: InboundKind;
  readonly commentId?: string;
  readonly headBranch?: string;
}

let deliveries = 0;

function ghEvent(input: EventInput = {}): InboundEvent {
  const entity = input.on ?? PR;
  const linked = input.linked ?? [];
  const kind = input.kind ?? (input.commentId ? "commented" : "opened");
  const isPr = entity.kind === "pull_request";
  deliveries += 1;
  return {
    source: "gh-webhook",
    deliveryId: `review-${deliveries}`,
    kind,
    trackerEvent: isPr ? "pull_request" : "issues",
    workItems: [...linked.map(([item]) => item), entity],
    actor: "alice",
    body: input.commentId ? "Please look at the failing test." : null,
    labels: [ARM],
    itemState: kind === "closed" ? "closed" : "open",
    title: `Title of ${entity.ref}`,
    ...(input.commentId ? { commentId: input.commentId, commentKind: "comment" as const } : {}),
    ...(isPr
      ? { pullRequest: { ref: entity.ref, ...(input.headBranch ? { headBranch: input.headBranch, headInRepository: true } : {}) } }
      : {}),
    ...(linked.length > 0 ? { linkedBy: Object.fromEntries(linked.map(([item, source]) => [item.ref, source])) } : {}),
    occurredAt: T0.toISOString(),
    excerpt: {},
  };
}

async function setup(routingOverrides: Record<string, unknown> = {}) {
  const dir = await tempDir();
  const config: CliConfig = configSchema.parse({
    routing: {
      authorizedUsers: ["alice"],
      defaultHarness: "fake",
      harnesses: { fake: { command: ["fake", "{prompt}"] } },
      announce: { enabled: false },
      tmux: { startupGraceSeconds: 0, harnessKillGraceSeconds: 0 },
      ...routingOverrides,
    },
  });
  const routing = config.routing;
  const paths = deriveStatePaths(config, dir);
  const events = new MemoryEventSink();
  const local = openTrackers(paths, events).local;
  const github = new FakeGitHub();
  for (const item of [PR, ISSUE, OTHER]) github.add(item);
  const trackers: TrackerSet = { local, forRef: (ref) => (ref.startsWith("github:") ? github : local) };
  const registry = new SessionRegistry({ dir: paths.registryDir, lock: { timeoutMs: 5_000 } });
  const links = new PullRequestLinks(paths.linksDir);
  const runner = new ReviewRunner();
  const workspaces = new FakeWorkspaces(join(dir, "workspaces"));
  const dispatcher = (options: Partial<DispatcherOptions> = {}): Dispatcher =>
    new Dispatcher({
      routing,
      policy: policyOf(routing),
      registry,
      runner,
      trackers,
      events,
      templates: BUILTIN_TEMPLATES,
      spawnCwd: join(dir, "work"),
      sessionEnv: (workItem) => sessionEnvironment({ workItem, binDir: paths.binDir, basePath: "/usr/bin" }),
      now: () => T0,
      resumeProbeMs: 10,
      links,
      workspaces,
      ...options,
    });
  /** What `the-loop sessions close` does, from another process. */
  const cliClose = (item: WorkItem): Promise<SessionRecord | undefined> => {
    const options: CloseOptions = { registry, runner, tmux: routing.tmux, events, now: () => T0, workspaces };
    return closeSession(options, item.ref, "cli");
  };
  const record = (item: WorkItem): SessionRecord => {
    const current = registry.get(item.ref);
    if (!current) throw new Error(`no session record for ${item.ref}`);
    return current;
  };
  const emitted = (type: EventType): Record<string, unknown>[] =>
    events.events.filter((event) => event.type === type).map((event) => event.fields);
  const live = async (d: Dispatcher, item: WorkItem): Promise<void> => {
    expect(await d.handle(ghEvent({ on: item }))).toEqual({ settled: true });
    expect(runner.stateOf(target(item))).toBe("live");
  };
  return { dir, events, github, registry, links, runner, workspaces, dispatcher, cliClose, record, emitted, live };
}

describe("Dispatcher review: the queue an event on a pull request waits in", () => {
  it("keeps a PR event delivered into the PR's own session ahead of the PR's close that arrived after it", async () => {
    const t = await setup();
    const d = t.dispatcher();
    await t.live(d, PR);

    // Names ISSUE first (no session), so it reaches the PR's own session.
    const gate = t.runner.holdDeliver(target(PR));
    const comment = tracked(d.handle(ghEvent({ linked: [[ISSUE, "closing-reference"]], commentId: "c-1" })));
    const closed = tracked(d.handle(ghEvent({ kind: "closed" })));
    await gate.entered;
    await settle();
    // The close waits for the comment that arrived before it.
    expect(closed.done()).toBe(false);
    expect(t.record(PR).status).toBe("active");

    gate.release();
    expect(await comment.promise).toEqual({ settled: true });
    expect(await closed.promise).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(PR))).toHaveLength(1);
    expect(t.emitted("session.respawned")).toEqual([]);
    expect(t.runner.spawnsOf(target(PR))).toHaveLength(1);
    expect(t.record(PR).status).toBe("closed");
  });

  it("never starts a session for the PR while an event of the same PR is starting one for its linked issue", async () => {
    const t = await setup();
    const d = t.dispatcher({ workspaces: undefined });
    const spawn = t.runner.holdSpawn(target(ISSUE));
    // Same poll cycle: the PR's own event names issue-12 through its branch; a conversation
    // comment on the PR carries no branch, so it names the PR alone.
    const opened = tracked(d.handle(ghEvent({ linked: [[ISSUE, "branch"]], headBranch: "issue-12" })));
    const comment = tracked(d.handle(ghEvent({ commentId: "c-1" })));
    await spawn.entered;
    await settle();
    expect(t.runner.spawnsOf(target(PR))).toEqual([]);

    spawn.release();
    expect(await opened.promise).toEqual({ settled: true });
    expect(await comment.promise).toEqual({ settled: true });
    expect(t.runner.spawnsOf(target(PR))).toEqual([]);
    expect(t.registry.get(PR.ref)).toBeUndefined();
    expect(t.runner.inputsOf(target(ISSUE))).toHaveLength(1);
    expect(t.emitted("session.spawned")).toMatchObject([{ work_item: ISSUE.ref }]);
  });

  it("delivers an event that a binding sends elsewhere in the queue of the session it reaches", async () => {
    const t = await setup();
    const d = t.dispatcher({ workspaces: undefined });
    await t.live(d, PR);
    await t.live(d, ISSUE);
    // Two comments on the PR, queued on the PR while its session takes the first.
    const holdPr = t.runner.holdDeliver(target(PR));
    const first = tracked(d.handle(ghEvent({ commentId: "c-1" })));
    await holdPr.entered;
    const second = tracked(d.handle(ghEvent({ commentId: "c-2" })));
    // Before the second's turn the PR is bound to ISSUE, whose session is busy with its own event.
    await t.links.bind(PR.ref, ISSUE, "explicit", T0);
    const holdIssue = t.runner.holdDeliver(target(ISSUE));
    const own = tracked(d.handle(ghEvent({ on: ISSUE, commentId: "c-own" })));
    await holdIssue.entered;

    holdPr.release();
    expect(await first.promise).toEqual({ settled: true });
    await settle();
    // The second comment now goes to ISSUE's session: it waits for the delivery already there.
    expect(second.done()).toBe(false);
    holdIssue.release();
    expect(await own.promise).toEqual({ settled: true });
    expect(await second.promise).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(ISSUE))).toHaveLength(2);
    expect(t.runner.inputsOf(target(PR))).toHaveLength(1);
    expect(t.runner.log.filter((line) => line.startsWith("deliver"))).toEqual([
      `deliver ${target(PR)}`,
      `deliver ${target(ISSUE)}`,
      `deliver ${target(ISSUE)}`,
    ]);
  });

  it("settles a batch of events naming overlapping items in any order, each session taking its events in arrival order", async () => {
    const t = await setup();
    const d = t.dispatcher({ workspaces: undefined });
    const PR2 = ghItem(6, "pull_request");
    t.github.add(PR2);
    await t.live(d, PR);
    await t.live(d, PR2);
    // PR names ISSUE, PR2 names OTHER then ISSUE; neither issue has a session, so each PR's own takes its events.
    const onPr = (commentId: string): InboundEvent => ghEvent({ linked: [[ISSUE, "closing-reference"]], commentId });
    const onPr2 = (commentId: string): InboundEvent => ({
      ...ghEvent({ on: PR2, linked: [[OTHER, "closing-reference"], [ISSUE, "closing-reference"]], commentId }),
      excerpt: { comment: commentId },
    });
    const batch = [
      { ...onPr("a1"), excerpt: { comment: "a1" } },
      onPr2("b1"),
      { ...ghEvent({ commentId: "a2" }), excerpt: { comment: "a2" } },
      onPr2("b2"),
      { ...onPr("a3"), excerpt: { comment: "a3" } },
      onPr2("b3"),
    ];
    const results = await Promise.all(batch.map((event) => d.handle(event)));
    expect(results).toEqual(batch.map(() => ({ settled: true })));
    const order = (item: WorkItem): string[] =>
      t.runner.inputsOf(target(item)).map((text) => ["a1", "a2", "a3", "b1", "b2", "b3"].find((id) => text.includes(id)) ?? "?");
    expect(order(PR)).toEqual(["a1", "a2", "a3"]);
    expect(order(PR2)).toEqual(["b1", "b2", "b3"]);
  });

  it("reports the events still queued, not the queues they wait in, when draining", async () => {
    const t = await setup();
    const d = t.dispatcher({ workspaces: undefined });
    const spawn = t.runner.holdSpawn(target(ISSUE));
    const opened = tracked(d.handle(ghEvent({ linked: [[ISSUE, "closing-reference"], [OTHER, "closing-reference"]] })));
    await spawn.entered;
    const drained = tracked(d.drain());
    spawn.release();
    expect(await opened.promise).toEqual({ settled: true });
    expect(await drained.promise).toBe(1);
  });
});

describe("Dispatcher review: bindings", () => {
  it("does not list a PR on a session when an explicit binding made meanwhile sends its events elsewhere", async () => {
    const t = await setup();
    const d = t.dispatcher({ workspaces: undefined });
    await t.live(d, ISSUE);
    // While the PR's comment goes into ISSUE's session (its closing reference), someone runs
    // `the-loop sessions link-pr --work-item #13 --pull-request 5`.
    t.runner.beforeDeliver = async () => {
      expect(await t.links.bind(PR.ref, OTHER, "explicit", T0)).toBe(true);
    };
    expect(await d.handle(ghEvent({ linked: [[ISSUE, "closing-reference"]], commentId: "c-1" }))).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(ISSUE))).toHaveLength(1);
    expect(t.links.get(PR.ref)).toMatchObject({ workItem: { ref: OTHER.ref }, source: "explicit" });
    expect(t.record(ISSUE).pullRequests).toBeUndefined();
    expect(t.emitted("session.pr_linked")).toEqual([]);
  });
});

describe("Dispatcher review: a session closed by another process mid-way", () => {
  it("does not start the harness again for a session closed while an event was on its way in", async () => {
    const t = await setup();
    const d = t.dispatcher({ workspaces: undefined });
    await t.live(d, PR);
    t.runner.beforeDeliver = async () => {
      expect(await t.cliClose(PR)).toBeDefined();
    };
    const result: HandleResult = await d.handle(ghEvent({ commentId: "c-1" }));
    expect(result).toEqual({ settled: true });
    expect(t.runner.spawnsOf(target(PR))).toHaveLength(1);
    expect(t.runner.stateOf(target(PR))).not.toBe("live");
    expect(t.emitted("session.respawned")).toEqual([]);
    expect(t.emitted("dispatch.succeeded")).toEqual([]);
    expect(t.emitted("dispatch.dropped")).toMatchObject([{ work_item: PR.ref, reason: "session-closed" }]);
    expect(t.record(PR).status).toBe("closed");
  });

  it("releases a checkout prepared for a session that was closed before it was recorded, and starts no harness", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const prepare = t.workspaces.holdPrepare();
    const opened = tracked(d.handle(ghEvent()));
    await prepare.entered;
    expect(await t.cliClose(PR)).toBeDefined();
    // The close saw no checkout yet: it released nothing.
    expect(t.workspaces.released).toEqual([]);

    prepare.release();
    expect(await opened.promise).toEqual({ settled: true });
    expect(t.runner.spawnRequests).toEqual([]);
    expect(t.record(PR)).toMatchObject({ status: "closed", closeReason: "cli" });
    expect(t.workspaces.released).toMatchObject([{ ref: PR.ref, workspace: { checkout: join(t.dir, "workspaces", workItemSlug(PR.ref)) } }]);
    expect(t.emitted("session.spawned")).toEqual([]);
    expect(t.emitted("dispatch.dropped")).toMatchObject([{ work_item: PR.ref, reason: "session-closed" }]);
  });

  it("ends a harness whose session was closed while it was being started", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const spawn = t.runner.holdSpawn(target(PR));
    const opened = tracked(d.handle(ghEvent()));
    await spawn.entered;
    expect(await t.cliClose(PR)).toBeDefined();
    // The close found the checkout on the record and released it; no harness was there to end yet.
    expect(t.workspaces.released).toHaveLength(1);

    spawn.release();
    expect(await opened.promise).toEqual({ settled: true });
    expect(t.runner.stateOf(target(PR))).not.toBe("live");
    expect(t.runner.terminated.map((entry) => entry.target)).toContain(target(PR));
    expect(t.record(PR).status).toBe("closed");
    expect(t.emitted("session.spawned")).toEqual([]);
    expect(t.emitted("dispatch.dropped")).toMatchObject([{ work_item: PR.ref, reason: "session-closed" }]);
  });
});

describe("Dispatcher review: checkouts of failed spawns", () => {
  it("releases the checkout a failed spawn left for its retry once the item closes", async () => {
    const t = await setup();
    const d = t.dispatcher();
    t.runner.failSpawn(target(PR));
    expect(await d.handle(ghEvent())).toEqual({ settled: false });
    const workspace = t.record(PR).workspace;
    expect(workspace).toBeDefined();
    expect(t.workspaces.released).toEqual([]);

    expect(await d.handle(ghEvent({ kind: "closed" }))).toEqual({ settled: true });
    expect(t.workspaces.released).toEqual([{ ref: PR.ref, workspace }]);
    expect(t.record(PR).workspace).toBeUndefined();
    expect(t.record(PR).status).toBe("closed");
  });

  it("leaves the checkout of a failed spawn alone while the item stays open, for the retry to reuse", async () => {
    const t = await setup();
    const d = t.dispatcher();
    t.runner.failSpawn(target(PR));
    const event = ghEvent();
    expect(await d.handle(event)).toEqual({ settled: false });
    expect(await d.handle(event)).toEqual({ settled: true });
    expect(t.workspaces.released).toEqual([]);
    expect(t.workspaces.prepared).toEqual([PR.ref, PR.ref]);
    expect(t.record(PR).status).toBe("active");
  });
});

describe("Dispatcher review: reactions", () => {
  it("does not react to a close that found no session left to close", async () => {
    const t = await setup({ maxConcurrentDispatches: 1 });
    const d = t.dispatcher({ workspaces: undefined });
    await t.live(d, PR);
    await d.drain();
    t.github.reactions.length = 0;

    const d2 = t.dispatcher({ workspaces: undefined });
    // The only slot of the pool is taken by another item's spawn, so the close waits for it.
    const spawn = t.runner.holdSpawn(target(OTHER));
    const other = tracked(d2.handle(ghEvent({ on: OTHER })));
    await spawn.entered;
    const closed = tracked(d2.handle(ghEvent({ kind: "closed" })));
    await settle();
    // Meanwhile the CLI closes the session.
    expect(await t.cliClose(PR)).toBeDefined();
    spawn.release();
    expect(await other.promise).toEqual({ settled: true });
    expect(await closed.promise).toEqual({ settled: true });
    await d2.drain();
    expect(t.emitted("dispatch.dropped")).toMatchObject([{ work_item: PR.ref, reason: "no-session" }]);
    expect(t.github.reactions.filter((reaction) => reaction.target.workItem.number === 5)).toEqual([]);
  });
});
