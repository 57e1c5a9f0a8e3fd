import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_AUTO_EXECUTE_LABEL, configSchema } from "../../src/config/schema.js";
import type { CliConfig } from "../../src/config/schema.js";
import type { EventType } from "../../src/events/catalog.js";
import { MemoryEventSink } from "../../src/events/log.js";
import type { InboundEvent, InboundKind, LinkSource } from "../../src/routing/inbound.js";
import { policyOf } from "../../src/routing/router.js";
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
 * The dispatcher on pull-request events: bindings between a PR and the work item it belongs to,
 * the existence check of items guessed from a branch name, reactions, and workspaces. GitHub is
 * an in-memory tracker here; the registry and the binding store are the real files.
 */

const ARM = DEFAULT_AUTO_EXECUTE_LABEL;
const T0 = new Date("2025-03-01T10:00:00.000Z");

function ghRef(number: number, repo = "app"): GitHubRef {
  return { tracker: "github", host: "github.com", owner: "octo", repo, number };
}

function ghItem(number: number, kind: "issue" | "pull_request" = "issue", repo = "app"): WorkItem {
  const ref = ghRef(number, repo);
  return workItemOf(ref, { kind, url: githubItemUrl(ref, kind), id: `node-${repo}-${number}` });
}

const PR = ghItem(5, "pull_request");
const ISSUE = ghItem(12);
const OTHER = ghItem(13);
const target = (item: WorkItem): string => tmuxTargetFor(workItemSlug(item.ref));

type ReactImpl = (target: ReactionTarget, content: string) => Promise<void>;

/** A GitHub tracker in memory: the items it holds, every getItem and reaction it was asked for. */
class FakeGitHub implements Tracker {
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
  async react(reactionTarget: ReactionTarget, content: string): Promise<void> {
    this.reactions.push({ target: reactionTarget, content });
    if (this.reactImpl) await this.reactImpl(reactionTarget, content);
  }
}

/** Workspaces in memory: a checkout per work item under `root`, and every call in order. */
class FakeWorkspaces implements WorkspaceProvider {
  readonly prepared: { ref: string; request: WorkspaceRequest; claimedBefore: boolean }[] = [];
  readonly released: { ref: string; workspace: SessionWorkspace; terminatedBefore: number }[] = [];
  failWith: Error | undefined;
  none = false;

  constructor(
    private readonly root: string,
    private readonly registry: SessionRegistry,
    private readonly runner: FakeRunner,
  ) {}

  async prepare(workItem: WorkItem, request: WorkspaceRequest): Promise<SessionWorkspace | undefined> {
    this.prepared.push({ ref: workItem.ref, request, claimedBefore: this.registry.get(workItem.ref)?.status === "active" });
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

interface EventInput {
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
function ghEvent(input: EventInput = {}): InboundEvent {
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

async function setup(routingOverrides: Record<string, unknown> = {}, tmux: Record<string, unknown> = {}) {
  const dir = await tempDir();
  const config: CliConfig = configSchema.parse({
    routing: {
      authorizedUsers: ["alice"],
      defaultHarness: "fake",
      harnesses: { fake: { command: ["fake", "{prompt}"] } },
      announce: { enabled: false },
      tmux: { startupGraceSeconds: 0, ...tmux },
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
  const runner = new FakeRunner();
  const workspaces = new FakeWorkspaces(join(dir, "workspaces"), registry, runner);
  const spawnCwd = join(dir, "work");

  const dispatcher = (options: Partial<DispatcherOptions> = {}): Dispatcher =>
    new Dispatcher({
      routing,
      policy: policyOf(routing),
      registry,
      runner,
      trackers,
      events,
      templates: BUILTIN_TEMPLATES,
      spawnCwd,
      sessionEnv: (workItem) => sessionEnvironment({ workItem, binDir: paths.binDir, basePath: "/usr/bin" }),
      now: () => T0,
      resumeProbeMs: 10,
      links,
      ...options,
    });
  const record = (item: WorkItem): SessionRecord => {
    const current = registry.get(item.ref);
    if (!current) throw new Error(`no session record for ${item.ref}`);
    return current;
  };
  const emitted = (type: EventType): Record<string, unknown>[] =>
    events.events.filter((event) => event.type === type).map((event) => event.fields);
  /** Starts a session for `item` from an event on the item itself. */
  const live = async (d: Dispatcher, item: WorkItem): Promise<void> => {
    expect(await d.handle(ghEvent({ on: item }))).toEqual({ settled: true });
    expect(runner.stateOf(target(item))).toBe("live");
  };
  return { dir, paths, events, github, trackers, registry, links, runner, workspaces, spawnCwd, dispatcher, record, emitted, live };
}

describe("Dispatcher: pull request bindings", () => {
  it("sends a PR's events to the explicitly bound item's session, over a closing reference to another item", async () => {
    const t = await setup();
    const d = t.dispatcher();
    await t.live(d, ISSUE);
    await t.live(d, OTHER);
    expect(await t.links.bind(PR.ref, ISSUE, "explicit", T0)).toBe(true);
    t.events.events.length = 0;

    const event = ghEvent({ linked: [[OTHER, "closing-reference"]], commentId: "c-1" });
    expect(await d.handle(event)).toEqual({ settled: true });

    expect(t.runner.inputsOf(target(ISSUE))).toHaveLength(1);
    expect(t.runner.inputsOf(target(OTHER))).toEqual([]);
    // Queued on the bound item, so it keeps its place among that item's own events.
    expect(t.emitted("dispatch.queued")).toEqual([{ work_item: ISSUE.ref, delivery_id: event.deliveryId, action: "deliver" }]);
    expect(t.emitted("dispatch.succeeded")).toMatchObject([{ work_item: ISSUE.ref }]);
    expect(t.record(ISSUE).pullRequests).toEqual([{ ref: PR.ref, source: "explicit", linkedAt: T0.toISOString() }]);
    expect(t.links.get(PR.ref)).toMatchObject({ workItem: ISSUE, source: "explicit" });
    // The binding was there already: nothing new to announce.
    expect(t.emitted("session.pr_linked")).toEqual([]);
  });

  it("records an inferred binding once, and later events that no longer name the item follow it", async () => {
    const t = await setup();
    const d = t.dispatcher();
    await t.live(d, ISSUE);

    for (const commentId of ["c-1", "c-2"]) {
      expect(await d.handle(ghEvent({ linked: [[ISSUE, "closing-reference"]], commentId }))).toEqual({ settled: true });
    }
    expect(t.emitted("session.pr_linked")).toEqual([{ work_item: ISSUE.ref, pull_request: PR.ref, linked_by: "closing-reference" }]);
    expect(t.links.get(PR.ref)).toEqual({ pullRequest: PR.ref, workItem: ISSUE, source: "closing-reference", linkedAt: T0.toISOString() });
    expect(t.record(ISSUE).pullRequests).toEqual([{ ref: PR.ref, source: "closing-reference", linkedAt: T0.toISOString() }]);

    // A review comment names only the PR; the stored binding brings it to the issue's session.
    const review = ghEvent({ commentId: "r-1", commentKind: "review_comment", kind: "review_commented" });
    expect(await d.handle(review)).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(ISSUE))).toHaveLength(3);
    expect(t.runner.stateOf(target(PR))).toBe("absent");
    expect(t.emitted("dispatch.queued").at(-1)).toMatchObject({ work_item: ISSUE.ref, delivery_id: review.deliveryId });
  });

  it("binds the PR to the item a spawn was for", async () => {
    const t = await setup();
    const d = t.dispatcher();
    expect(await d.handle(ghEvent({ linked: [[ISSUE, "closing-reference"]] }))).toEqual({ settled: true });
    expect(t.runner.stateOf(target(ISSUE))).toBe("live");
    expect(t.record(ISSUE).pullRequests).toEqual([{ ref: PR.ref, source: "closing-reference", linkedAt: T0.toISOString() }]);
    expect(t.emitted("session.pr_linked")).toEqual([{ work_item: ISSUE.ref, pull_request: PR.ref, linked_by: "closing-reference" }]);
  });

  it("binds nothing when the PR's own session takes the event", async () => {
    const t = await setup();
    const d = t.dispatcher();
    await t.live(d, PR);
    expect(await d.handle(ghEvent({ linked: [[ISSUE, "closing-reference"]], commentId: "c-1" }))).toEqual({ settled: true });
    expect(t.runner.inputsOf(target(PR))).toHaveLength(1);
    expect(t.links.get(PR.ref)).toBeUndefined();
    expect(t.emitted("session.pr_linked")).toEqual([]);
  });

  it("never lets an inference replace an explicit binding", async () => {
    const t = await setup();
    const d = t.dispatcher();
    await t.live(d, OTHER);
    await t.links.bind(PR.ref, ISSUE, "explicit", T0);
    // The bound item has no session, the inferred one has: the event still goes the explicit way (a spawn for ISSUE).
    expect(await d.handle(ghEvent({ linked: [[OTHER, "closing-reference"]] }))).toEqual({ settled: true });
    expect(t.runner.stateOf(target(ISSUE))).toBe("live");
    expect(t.runner.inputsOf(target(OTHER))).toEqual([]);
    expect(t.links.get(PR.ref)).toMatchObject({ workItem: { ref: ISSUE.ref }, source: "explicit" });
  });

  it("drops an item guessed from the branch that does not exist, and the event falls back to the PR", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const ghost = ghItem(99);
    const first = ghEvent({ linked: [[ghost, "branch"]] });
    expect(await d.handle(first)).toEqual({ settled: true });

    expect(t.emitted("routing.linkage_dropped")).toEqual([{ pull_request: PR.ref, work_item: ghost.ref, reason: "not-found" }]);
    expect(t.runner.stateOf(target(PR))).toBe("live");
    expect(t.runner.stateOf(target(ghost))).toBe("absent");
    expect(t.emitted("routing.routed")).toMatchObject([{ work_item: PR.ref, decision: "spawn" }]);
    expect(t.links.get(PR.ref)).toBeUndefined();

    // The next event on the PR asks the tracker no more: the outcome is remembered.
    expect(await d.handle(ghEvent({ linked: [[ghost, "branch"]], commentId: "c-1" }))).toEqual({ settled: true });
    expect(t.github.lookups).toEqual([ghost.ref]);
    expect(t.runner.inputsOf(target(PR))).toHaveLength(1);
    expect(t.emitted("routing.linkage_dropped")).toHaveLength(2);
  });

  it("keeps an item guessed from the branch once the tracker confirms it, asking once", async () => {
    const t = await setup();
    const d = t.dispatcher();
    expect(await d.handle(ghEvent({ linked: [[ISSUE, "branch"]], headBranch: "issue-12" }))).toEqual({ settled: true });
    expect(t.runner.stateOf(target(ISSUE))).toBe("live");
    expect(t.links.get(PR.ref)).toMatchObject({ workItem: { ref: ISSUE.ref }, source: "branch" });
    expect(t.record(ISSUE).pullRequests).toMatchObject([{ ref: PR.ref, source: "branch" }]);
    // The item has a live session now, and a stored binding: neither needs the tracker again.
    expect(await d.handle(ghEvent({ linked: [[ISSUE, "branch"]], commentId: "c-1" }))).toEqual({ settled: true });
    expect(t.github.lookups).toEqual([ISSUE.ref]);
    expect(t.emitted("routing.linkage_dropped")).toEqual([]);
  });

  it("keeps a guessed item when the tracker cannot be asked: the check is best-effort", async () => {
    const t = await setup();
    const d = t.dispatcher();
    t.github.lookupError = new Error("GitHub API answered 502");
    expect(await d.handle(ghEvent({ linked: [[ISSUE, "branch"]] }))).toEqual({ settled: true });
    expect(t.runner.stateOf(target(ISSUE))).toBe("live");
    expect(t.emitted("routing.linkage_dropped")).toEqual([]);
  });

  it("reports a damaged binding file and routes the event as if it were absent", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const path = t.links.pathFor(PR.ref);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, "{ not json");
    const event = ghEvent({ linked: [[ISSUE, "closing-reference"]] });
    expect(await d.handle(event)).toEqual({ settled: true });
    expect(t.runner.stateOf(target(ISSUE))).toBe("live");
    expect(t.emitted("dispatch.failed")).toEqual([
      expect.objectContaining({ work_item: PR.ref, delivery_id: event.deliveryId, action: "link", will_retry: false }),
    ]);
    expect(String(t.emitted("dispatch.failed")[0]?.error)).toContain("is damaged");
    // Binding the delivery repaired the file.
    expect(t.links.get(PR.ref)).toMatchObject({ workItem: { ref: ISSUE.ref } });
  });

  it("ends only the PR's own session when the PR closes, never the session of the item it was for", async () => {
    const t = await setup();
    const d = t.dispatcher();
    await t.live(d, ISSUE);
    await t.links.bind(PR.ref, ISSUE, "explicit", T0);
    const closed = ghEvent({ linked: [[ISSUE, "closing-reference"]], kind: "closed" });
    expect(await d.handle(closed)).toEqual({ settled: true });
    expect(t.record(ISSUE).status).toBe("active");
    expect(t.emitted("routing.dropped")).toMatchObject([{ reason: "no-session", work_item: PR.ref }]);

    const both = await setup();
    const b = both.dispatcher();
    await both.live(b, ISSUE);
    await both.live(b, PR);
    expect(await b.handle(ghEvent({ linked: [[ISSUE, "closing-reference"]], kind: "closed" }))).toEqual({ settled: true });
    expect(both.record(PR).status).toBe("closed");
    expect(both.record(ISSUE).status).toBe("active");
  });

  it("leaves PR events alone without a binding store", async () => {
    const t = await setup();
    const d = t.dispatcher({ links: undefined });
    await t.live(d, ISSUE);
    expect(await d.handle(ghEvent({ linked: [[ISSUE, "closing-reference"]], commentId: "c-1" }))).toEqual({ settled: true });
    expect(t.record(ISSUE).pullRequests).toMatchObject([{ ref: PR.ref, source: "closing-reference" }]);
    expect(t.emitted("session.pr_linked")).toHaveLength(1);
  });
});

describe("Dispatcher: reactions", () => {
  it("reacts started then completed on the comment a delivered event came from", async () => {
    const t = await setup();
    const d = t.dispatcher();
    await t.live(d, PR);
    await d.drain();
    t.github.reactions.length = 0;
    t.events.events.length = 0;

    const d2 = t.dispatcher();
    const event = ghEvent({ commentId: "c-1" });
    expect(await d2.handle(event)).toEqual({ settled: true });
    await d2.drain();
    const onComment = { workItem: ghRef(5), commentId: "c-1", commentKind: "comment" };
    expect(t.github.reactions).toEqual([
      { target: onComment, content: "eyes" },
      { target: onComment, content: "hooray" },
    ]);
    expect(t.emitted("reaction.added")).toEqual([
      { work_item: PR.ref, content: "eyes", target: "comment:c-1", delivery_id: event.deliveryId },
      { work_item: PR.ref, content: "hooray", target: "comment:c-1", delivery_id: event.deliveryId },
    ]);
  });

  it("reacts on the item itself when the event carries no comment (a spawn)", async () => {
    const t = await setup();
    const d = t.dispatcher();
    await t.live(d, PR);
    await d.drain();
    expect(t.github.reactions).toEqual([
      { target: { workItem: ghRef(5) }, content: "eyes" },
      { target: { workItem: ghRef(5) }, content: "hooray" },
    ]);
    expect(t.emitted("reaction.added").map((fields) => fields.target)).toEqual(["item", "item"]);
  });

  it("reacts on the PR's review comment even when the event goes to a linked item's session", async () => {
    const t = await setup();
    const d = t.dispatcher();
    await t.live(d, ISSUE);
    await d.drain();
    t.github.reactions.length = 0;
    const d2 = t.dispatcher();
    const event = ghEvent({ linked: [[ISSUE, "closing-reference"]], commentId: "77", commentKind: "review_comment", kind: "review_commented" });
    expect(await d2.handle(event)).toEqual({ settled: true });
    await d2.drain();
    expect(t.github.reactions.map((reaction) => reaction.target)).toEqual([
      { workItem: ghRef(5), commentId: "77", commentKind: "review_comment" },
      { workItem: ghRef(5), commentId: "77", commentKind: "review_comment" },
    ]);
  });

  it("reacts failed when the delivery fails", async () => {
    const t = await setup();
    const d = t.dispatcher();
    await t.live(d, PR);
    await d.drain();
    t.github.reactions.length = 0;
    const d2 = t.dispatcher();
    t.runner.failDeliver(target(PR), new Error("tmux paste-buffer failed"));
    expect(await d2.handle(ghEvent({ commentId: "c-1" }))).toEqual({ settled: false });
    await d2.drain();
    expect(t.emitted("dispatch.failed")).toHaveLength(1);
    expect(t.github.reactions.map((reaction) => reaction.content)).toEqual(["eyes", "confused"]);
  });

  it("reacts failed when the spawn fails", async () => {
    const t = await setup();
    const d = t.dispatcher();
    t.runner.failSpawn(target(PR));
    expect(await d.handle(ghEvent())).toEqual({ settled: false });
    await d.drain();
    expect(t.github.reactions.map((reaction) => reaction.content)).toEqual(["eyes", "confused"]);
  });

  it("does not react to an event it drops", async () => {
    const t = await setup();
    const d = t.dispatcher();
    expect(await d.handle(ghEvent({ actor: "mallory", commentId: "c-1" }))).toEqual({ settled: true });
    expect(await d.handle(ghEvent({ labels: [] }))).toEqual({ settled: true });
    await d.drain();
    expect(t.emitted("routing.dropped").map((fields) => fields.reason)).toEqual(["unauthorized-actor", "spawn-policy"]);
    expect(t.github.reactions).toEqual([]);
    expect(t.emitted("reaction.added")).toEqual([]);
  });

  it("does not react when reactions are disabled, and skips a moment whose content is empty", async () => {
    const off = await setup({ reactions: { enabled: false } });
    const d = off.dispatcher();
    await off.live(d, PR);
    await d.drain();
    expect(off.github.reactions).toEqual([]);

    const quiet = await setup({ reactions: { started: "" } });
    const q = quiet.dispatcher();
    await quiet.live(q, PR);
    await q.drain();
    expect(quiet.github.reactions.map((reaction) => reaction.content)).toEqual(["hooray"]);
  });

  it("never lets a failing reaction break a delivery, and does not wait for a slow one", async () => {
    const t = await setup();
    const d = t.dispatcher();
    await t.live(d, PR);
    await d.drain();
    t.events.events.length = 0;

    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve));
    t.github.reactImpl = (_target, content) =>
      content === "eyes" ? slow.then(() => Promise.reject(new Error("GitHub API answered 403: Resource not accessible"))) : Promise.reject(new Error("boom"));
    const d2 = t.dispatcher();
    const event = ghEvent({ commentId: "c-1" });
    expect(await d2.handle(event)).toEqual({ settled: true });
    expect(t.emitted("dispatch.succeeded")).toHaveLength(1);
    release();
    await d2.drain();
    expect(t.emitted("reaction.failed")).toEqual(
      expect.arrayContaining([
        { work_item: PR.ref, content: "eyes", target: "comment:c-1", error: "GitHub API answered 403: Resource not accessible", delivery_id: event.deliveryId },
        { work_item: PR.ref, content: "hooray", target: "comment:c-1", error: "boom", delivery_id: event.deliveryId },
      ]),
    );

    // A react that throws before returning a promise is caught as well.
    t.github.reactImpl = () => {
      throw new Error("synchronous failure");
    };
    const d3 = t.dispatcher();
    expect(await d3.handle(ghEvent({ commentId: "c-2" }))).toEqual({ settled: true });
    await d3.drain();
    expect(t.emitted("dispatch.succeeded")).toHaveLength(2);
  });

  it("sends none through a tracker that cannot react", async () => {
    const t = await setup();
    const item = await t.trackers.local.openItem({ project: "demo", title: "Local", labels: [ARM], actor: "alice" });
    const d = t.dispatcher();
    const event: InboundEvent = { ...ghEvent(), workItems: [item.item], trackerEvent: "local:opened" };
    const { pullRequest: _pr, ...withoutPr } = event;
    expect(await d.handle(withoutPr)).toEqual({ settled: true });
    await d.drain();
    expect(t.emitted("session.spawned")).toHaveLength(1);
    expect(t.emitted("reaction.added")).toEqual([]);
    expect(t.emitted("reaction.failed")).toEqual([]);
  });
});

describe("Dispatcher: workspaces", () => {
  it("prepares the checkout after the claim, runs the session in it and records it", async () => {
    const t = await setup();
    const d = t.dispatcher({ workspaces: t.workspaces });
    const event = ghEvent({ linked: [[ISSUE, "closing-reference"]], headBranch: "fix-parser", headInRepository: true });
    expect(await d.handle(event)).toEqual({ settled: true });

    expect(t.workspaces.prepared).toEqual([
      { ref: ISSUE.ref, request: { branch: "fix-parser", headInRepository: true }, claimedBefore: true },
    ]);
    const checkout = join(t.dir, "workspaces", workItemSlug(ISSUE.ref));
    expect(t.runner.spawnsOf(target(ISSUE))[0]?.cwd).toBe(checkout);
    expect(t.record(ISSUE)).toMatchObject({ cwd: checkout, workspace: { checkout, strategy: "worktree", branch: "fix-parser" } });
    expect(t.emitted("session.spawned")).toMatchObject([{ work_item: ISSUE.ref, cwd: checkout }]);
  });

  it("asks for the default branch for an item without a pull request, or one in another repository", async () => {
    const t = await setup();
    const d = t.dispatcher({ workspaces: t.workspaces });
    await t.live(d, ISSUE);
    const elsewhere = ghItem(3, "issue", "docs");
    t.github.add(elsewhere);
    expect(await d.handle(ghEvent({ linked: [[elsewhere, "explicit"]], headBranch: "fix-parser" }))).toEqual({ settled: true });
    expect(t.workspaces.prepared.map((call) => [call.ref, call.request])).toEqual([
      [ISSUE.ref, {}],
      [elsewhere.ref, {}],
    ]);
  });

  it("starts in spawnCwd when the provider gives the item no checkout, or workspaces are off", async () => {
    const t = await setup();
    t.workspaces.none = true;
    await t.live(t.dispatcher({ workspaces: t.workspaces }), PR);
    expect(t.record(PR).cwd).toBe(t.spawnCwd);
    expect(t.record(PR).workspace).toBeUndefined();

    const off = await setup({ workspace: { enabled: false } });
    await off.live(off.dispatcher({ workspaces: off.workspaces }), PR);
    expect(off.workspaces.prepared).toEqual([]);
    expect(off.record(PR).cwd).toBe(off.spawnCwd);
  });

  it("closes the claim and asks for a retry when the checkout fails; the retry spawns", async () => {
    const t = await setup();
    const d = t.dispatcher({ workspaces: t.workspaces });
    t.workspaces.failWith = new Error("git fetch timed out after 600s");
    const event = ghEvent({ headBranch: "fix-parser" });
    expect(await d.handle(event)).toEqual({ settled: false });

    expect(t.record(PR)).toMatchObject({ status: "closed", closeReason: "spawn-failed" });
    expect(t.runner.spawnRequests).toEqual([]);
    expect(t.emitted("session.spawn_failed")).toEqual([
      { work_item: PR.ref, harness: "fake", error: "its checkout could not be prepared: git fetch timed out after 600s", delivery_id: event.deliveryId },
    ]);

    t.workspaces.failWith = undefined;
    expect(await d.handle(event)).toEqual({ settled: true });
    expect(t.record(PR)).toMatchObject({ status: "active", workspace: { branch: "fix-parser" } });
    expect(t.runner.stateOf(target(PR))).toBe("live");
  });

  it("releases the checkout when the session closes, after the harness is ended", async () => {
    const t = await setup();
    const d = t.dispatcher({ workspaces: t.workspaces });
    await t.live(d, PR);
    const workspace = t.record(PR).workspace;
    expect(workspace).toBeDefined();

    expect(await d.handle(ghEvent({ kind: "closed" }))).toEqual({ settled: true });
    expect(t.record(PR).status).toBe("closed");
    expect(t.workspaces.released).toEqual([{ ref: PR.ref, workspace, terminatedBefore: 1 }]);
    expect(t.emitted("session.closed")).toHaveLength(1);
  });

  it("keeps the checkout of a harness left running on close", async () => {
    const t = await setup({}, { killHarnessOnClose: false });
    const d = t.dispatcher({ workspaces: t.workspaces });
    await t.live(d, PR);
    expect(await d.handle(ghEvent({ kind: "closed" }))).toEqual({ settled: true });
    expect(t.workspaces.released).toEqual([]);
    expect(t.emitted("workspace.kept")).toEqual([{ work_item: PR.ref, checkout: t.record(PR).workspace?.checkout }]);
  });
});
