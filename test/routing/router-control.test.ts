import { describe, expect, it } from "vitest";
import { DEFAULT_CONTROL_KEYWORDS } from "../../src/config/schema.js";
import type { SpawnPolicy } from "../../src/config/schema.js";
import type { ControlRecord } from "../../src/control/types.js";
import { markSelfAuthored } from "../../src/workitem/marker.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { armsSpawn, policyOf, route } from "../../src/routing/router.js";
import type { ControlView, Decision, RegistryView, SessionView } from "../../src/routing/router.js";
import type { WorkItem } from "../../src/workitem/index.js";

const LABEL = "the-loop: auto-execute";
const { start: START, stop: STOP, pause: PAUSE, resume: RESUME } = DEFAULT_CONTROL_KEYWORDS;

const item = (ref: string, number: number, kind: WorkItem["kind"] = "issue"): WorkItem => ({
  ref,
  tracker: "github",
  host: "github.com",
  repository: "octo/repo",
  number,
  kind,
  url: `https://github.com/octo/repo/issues/${number}`,
  id: String(number),
});
const ISSUE = item("github:octo/repo#1", 1);
const PR = item("github:octo/repo#2", 2, "pull_request");

function event(overrides: Partial<InboundEvent> = {}): InboundEvent {
  return {
    source: "gh-webhook",
    deliveryId: "d-1",
    kind: "commented",
    trackerEvent: "issue_comment",
    workItems: [ISSUE],
    actor: "alice",
    body: START,
    labels: [LABEL],
    itemState: "open",
    occurredAt: "2026-11-30T00:00:00.000Z",
    excerpt: {},
    ...overrides,
  };
}

interface PolicyInput {
  readonly spawn?: SpawnPolicy;
  readonly enabled?: boolean;
  readonly requireStartCommand?: boolean;
  readonly users?: string[];
}

function policy(input: PolicyInput = {}) {
  return policyOf({
    authorizedUsers: input.users ?? ["alice", "ghost"],
    spawnOnUnmatched: input.spawn ?? "labeled",
    autoExecuteLabel: LABEL,
    control: {
      enabled: input.enabled ?? true,
      requireStartCommand: input.requireStartCommand ?? true,
      keywords: DEFAULT_CONTROL_KEYWORDS,
    },
  });
}

const live = (status: SessionView["status"], recentDeliveries: string[] = []): SessionView => ({ status, recentDeliveries });
const record = (command: ControlRecord["command"], extra: Partial<ControlView> = {}): ControlView => ({
  command,
  source: "comment",
  actor: "alice",
  ...extra,
});

function view(sessions: Record<string, SessionView> = {}, controls: Record<string, ControlView> = {}): RegistryView {
  return { sessionFor: (ref) => sessions[ref], controlFor: (ref) => controls[ref] };
}

const decide = (e: Partial<InboundEvent>, p: PolicyInput = {}, v: RegistryView = view()): Decision => route(event(e), policy(p), v, { has: () => false });

const control = (command: ControlRecord["command"], session: "none" | "active" | "paused", armed = true, itemClosed = false, workItem = ISSUE): Decision => ({
  action: "control",
  workItem,
  command,
  session,
  armed,
  itemClosed,
});

describe("the start gate (a labelled item with no session)", () => {
  const comment = { body: "please have a look" };
  it.each<[string, Partial<InboundEvent>, PolicyInput, RegistryView, Decision]>([
    ["a comment on an armed item waits for the start", comment, {}, view(), { action: "drop", reason: "awaiting-start", workItem: ISSUE }],
    [
      "an item opened already labelled is armed, not started",
      { kind: "opened", body: "do the thing" },
      {},
      view(),
      { action: "drop", reason: "awaiting-start", workItem: ISSUE },
    ],
    [
      "the label event itself only arms",
      { kind: "labeled", label: LABEL, body: null },
      {},
      view(),
      { action: "drop", reason: "awaiting-start", workItem: ISSUE },
    ],
    [
      "spawnOnUnmatched always still needs the start",
      { ...comment, labels: [] },
      { spawn: "always" },
      view(),
      { action: "drop", reason: "awaiting-start", workItem: ISSUE },
    ],
    [
      "an honoured start lets the next event spawn (a failed spawn retried)",
      comment,
      {},
      view({}, { [ISSUE.ref]: record("start") }),
      { action: "spawn", workItem: ISSUE },
    ],
    ["a resume recorded counts as a start", comment, {}, view({}, { [ISSUE.ref]: record("resume") }), { action: "spawn", workItem: ISSUE }],
    [
      "a cleared start no longer counts",
      comment,
      {},
      view({}, { [ISSUE.ref]: record("start", { clearedAt: "2026-11-30T00:00:00.000Z" }) }),
      { action: "drop", reason: "awaiting-start", workItem: ISSUE },
    ],
    [
      "a start by someone no longer authorized starts nothing",
      comment,
      {},
      view({}, { [ISSUE.ref]: record("start", { actor: "carol" }) }),
      { action: "drop", reason: "awaiting-start", workItem: ISSUE },
    ],
    [
      "a start from the CLI stands whoever gave it",
      comment,
      {},
      view({}, { [ISSUE.ref]: record("start", { source: "cli", actor: "operator" }) }),
      { action: "spawn", workItem: ISSUE },
    ],
    [
      "a stopped item does not re-spawn",
      comment,
      {},
      view({}, { [ISSUE.ref]: record("stop") }),
      { action: "drop", reason: "execution-stopped", workItem: ISSUE },
    ],
    [
      "a paused item with no session does not spawn",
      comment,
      {},
      view({}, { [ISSUE.ref]: record("pause") }),
      { action: "drop", reason: "execution-stopped", workItem: ISSUE },
    ],
    ["requireStartCommand false: the label alone spawns", comment, { requireStartCommand: false }, view(), { action: "spawn", workItem: ISSUE }],
    [
      "requireStartCommand false: a stop still holds",
      comment,
      { requireStartCommand: false },
      view({}, { [ISSUE.ref]: record("stop") }),
      { action: "drop", reason: "execution-stopped", workItem: ISSUE },
    ],
    ["control off: the label alone spawns", comment, { enabled: false }, view(), { action: "spawn", workItem: ISSUE }],
    [
      "an unarmed item is refused by the spawn policy first",
      { ...comment, labels: [] },
      {},
      view({}, { [ISSUE.ref]: record("start") }),
      { action: "drop", reason: "spawn-policy", workItem: ISSUE },
    ],
    [
      "never spawns under never, start recorded or not",
      comment,
      { spawn: "never" },
      view({}, { [ISSUE.ref]: record("start") }),
      { action: "drop", reason: "spawn-policy", workItem: ISSUE },
    ],
    [
      "a closed item never spawns",
      { ...comment, itemState: "closed" },
      {},
      view({}, { [ISSUE.ref]: record("start") }),
      { action: "drop", reason: "item-closed", workItem: ISSUE },
    ],
  ])("%s", (_name, e, p, v, expected) => {
    expect(decide(e, p, v)).toEqual(expected);
  });
});

describe("control keywords", () => {
  it.each<[string, Partial<InboundEvent>, PolicyInput, RegistryView, Decision]>([
    ["start on an armed item with no session", {}, {}, view(), control("start", "none")],
    ["start on an unarmed item (the dispatcher refuses it)", { labels: [] }, {}, view(), control("start", "none", false)],
    ["start on a closed item", { itemState: "closed" }, {}, view(), control("start", "none", true, true)],
    ["start under always with no label", { labels: [] }, { spawn: "always" }, view(), control("start", "none", true)],
    ["pause on an active session", { body: PAUSE }, {}, view({ [ISSUE.ref]: live("active") }), control("pause", "active")],
    ["resume on a paused session", { body: RESUME }, {}, view({ [ISSUE.ref]: live("paused") }), control("resume", "paused")],
    ["stop on a paused session", { body: STOP }, {}, view({ [ISSUE.ref]: live("paused") }), control("stop", "paused")],
    ["stop with no session", { body: STOP, labels: [] }, {}, view(), control("stop", "none", false)],
    ["a keyword in a review", { kind: "reviewed", body: `LGTM\n\n${PAUSE}` }, {}, view({ [ISSUE.ref]: live("active") }), control("pause", "active")],
    ["a keyword in a review comment", { kind: "review_commented", body: `(${STOP})` }, {}, view({ [ISSUE.ref]: live("active") }), control("stop", "active")],
    ["the same keyword twice is one command", { body: `${START}\n${START.toUpperCase()}` }, {}, view(), control("start", "none")],
    [
      "a start choosing a graph carries the choice",
      { body: `${START} graph=adhoc` },
      {},
      view(),
      { action: "control", workItem: ISSUE, command: "start", graph: "adhoc", session: "none", armed: true, itemClosed: false },
    ],
    ["a graph argument on the next line is none", { body: `${START}\ngraph=adhoc` }, {}, view(), control("start", "none")],
    [
      "a PR comment acts on the linked item whose session is live",
      { workItems: [ISSUE, PR], body: PAUSE },
      {},
      view({ [ISSUE.ref]: live("active") }),
      control("pause", "active"),
    ],
    ["a PR comment with no live session acts on the most authoritative item", { workItems: [ISSUE, PR] }, {}, view(), control("start", "none")],
    [
      "a PR comment acts on the PR's own session when only it has one",
      { workItems: [ISSUE, PR], body: STOP },
      {},
      view({ [PR.ref]: live("active") }),
      control("stop", "active", true, false, PR),
    ],
  ])("%s", (_name, e, p, v, expected) => {
    expect(decide(e, p, v)).toEqual(expected);
  });

  it("two different keywords are ambiguous: nothing executed, nothing forwarded", () => {
    expect(decide({ body: `${START} or maybe ${STOP}` }, {}, view({ [ISSUE.ref]: live("active") }))).toEqual({
      action: "drop",
      reason: "control-ambiguous",
      workItem: ISSUE,
      commands: ["start", "stop"],
    });
  });

  it.each<[string, Partial<InboundEvent>]>([
    ["the item's own body (opened)", { kind: "opened", body: START }],
    ["an edited item (updated)", { kind: "updated", body: START }],
    ["a label event", { kind: "labeled", body: START }],
  ])("a keyword in %s is not a command", (_name, e) => {
    expect(decide(e, {}, view({ [ISSUE.ref]: live("active") }))).toMatchObject({ action: "deliver" });
  });

  it("with control off a keyword comment reaches the session as it is", () => {
    expect(decide({ body: STOP }, { enabled: false }, view({ [ISSUE.ref]: live("active") }))).toEqual({
      action: "deliver",
      workItem: ISSUE,
      status: "active",
    });
  });

  it.each<[string, Partial<InboundEvent>, PolicyInput, string]>([
    ["an unauthorized author", { actor: "mallory" }, {}, "unauthorized-actor"],
    ["an actor-less comment", { actor: null }, {}, "unauthorized-actor"],
    ["a person the tracker cannot name, even if `ghost` is listed", { actor: "ghost" }, {}, "unauthorized-actor"],
    ["an empty allowlist (fails closed)", {}, { users: [] }, "unauthorized-actor"],
    ["the-loop's own comment", { body: markSelfAuthored(START) }, {}, "self-echo"],
    ["an unauthorized ambiguous comment", { actor: "mallory", body: `${START} ${STOP}` }, {}, "unauthorized-actor"],
    ["a marked ambiguous comment", { body: markSelfAuthored(`${START} ${STOP}`) }, {}, "self-echo"],
  ])("%s is dropped before any command: %s", (_name, e, p, reason) => {
    expect(decide(e, p, view({ [ISSUE.ref]: live("active") }))).toMatchObject({ action: "drop", reason });
  });

  it("a command redelivered after a restart does not act twice", () => {
    expect(decide({ body: PAUSE }, {}, view({ [ISSUE.ref]: live("active", ["d-1"]) }))).toEqual({
      action: "drop",
      reason: "duplicate-delivery",
      workItem: ISSUE,
    });
    expect(decide({}, {}, view({}, { [ISSUE.ref]: record("stop", { deliveryId: "d-1" }) }))).toEqual({
      action: "drop",
      reason: "duplicate-delivery",
      workItem: ISSUE,
    });
  });

  it("an actor-less ambiguous comment is unauthorized, not a recorded ambiguity (the named-actor guard comes first)", () => {
    expect(decide({ actor: null, body: `${START} ${STOP}` }, {}, view({ [ISSUE.ref]: live("active") }))).toEqual({
      action: "drop",
      reason: "unauthorized-actor",
      workItem: ISSUE,
    });
    expect(decide({ actor: "ghost", body: `${PAUSE} ${RESUME}` })).toMatchObject({ action: "drop", reason: "unauthorized-actor" });
  });

  it("a start redelivered after a restart does not start a stopped item again", () => {
    // The start (d-1) spawned the session, whose record remembers it; a stop (d-2) closed it.
    const stopped = view({ [ISSUE.ref]: live("closed", ["d-1"]) }, { [ISSUE.ref]: record("stop", { deliveryId: "d-2" }) });
    expect(decide({ deliveryId: "d-1" }, {}, stopped)).toEqual({ action: "drop", reason: "duplicate-delivery", workItem: ISSUE });
    // A new start is a command like any other.
    expect(decide({ deliveryId: "d-3" }, {}, stopped)).toEqual(control("start", "none"));
  });

  it("a close event closes a paused session", () => {
    expect(decide({ kind: "closed", body: null, actor: null }, {}, view({ [ISSUE.ref]: live("paused") }))).toEqual({
      action: "close",
      workItem: ISSUE,
    });
  });

  it("a paused session is live: an event for it is a delivery the dispatcher drops, never a second spawn", () => {
    expect(decide({ body: "more work" }, {}, view({ [ISSUE.ref]: live("paused") }))).toEqual({
      action: "deliver",
      workItem: ISSUE,
      status: "paused",
    });
  });
});

describe("armsSpawn", () => {
  it.each<[SpawnPolicy, string[], boolean]>([
    ["labeled", [LABEL], true],
    ["labeled", ["THE-LOOP: AUTO-EXECUTE"], true],
    ["labeled", [], false],
    ["always", [], true],
    ["never", [LABEL], false],
  ])("%s with %j → %s", (spawnOnUnmatched, labels, armed) => {
    expect(armsSpawn(labels, { spawnOnUnmatched, autoExecuteLabel: LABEL })).toBe(armed);
  });
});
