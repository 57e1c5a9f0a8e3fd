import { describe, expect, it } from "vitest";
import { DEFAULT_CONTROL_KEYWORDS } from "../../src/config/schema.js";
import type { SpawnPolicy } from "../../src/config/schema.js";
import { SELF_COMMENT_MARKER, markSelfAuthored } from "../../src/workitem/marker.js";
import { INBOUND_KINDS } from "../../src/routing/inbound.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { isArmed, policyOf, route } from "../../src/routing/router.js";
import type { Decision, DeliveryMemory, DropReason, RegistryView, RoutingPolicy, SessionView } from "../../src/routing/router.js";
import type { SessionStatus } from "../../src/registry/record.js";
import type { WorkItem } from "../../src/workitem/index.js";

const LABEL = "the-loop: auto-execute";

const item = (n: number): WorkItem => ({
  ref: `local:demo#${n}`,
  tracker: "local",
  host: "local",
  repository: "demo",
  number: n,
  kind: "issue",
  url: `file:///tracker/demo/${n}.json`,
  id: `demo-${n}`,
});
const A = item(1);
const B = item(2);
/** A pull request linked to A, as a PR's event names them: the linked item first, the PR last. */
const P: WorkItem = { ...item(3), kind: "pull_request" };
const prClosed = (overrides: Partial<InboundEvent> = {}): Partial<InboundEvent> => ({
  kind: "closed",
  body: null,
  itemState: "closed",
  workItems: [A, P],
  pullRequest: { ref: P.ref, merged: true },
  linkedBy: { [A.ref]: "closing-reference" },
  contentKey: "closed-P-at-t1",
  ...overrides,
});

function event(overrides: Partial<InboundEvent> = {}): InboundEvent {
  return {
    source: "poll",
    deliveryId: "d-1",
    kind: "commented",
    trackerEvent: "local:commented",
    workItems: [A],
    actor: "alice",
    body: "please look at this",
    labels: [],
    itemState: "open",
    occurredAt: "2025-01-01T00:00:00.000Z",
    excerpt: {},
    ...overrides,
  };
}

/** CONTROL: the start gate off, so these tables pin the label path; router-control.test.ts covers the gate. */
export const CONTROL = { enabled: true, requireStartCommand: false, keywords: DEFAULT_CONTROL_KEYWORDS };

function policy(overrides: { users?: string[]; spawn?: SpawnPolicy; label?: string } = {}): RoutingPolicy {
  return policyOf({
    authorizedUsers: overrides.users ?? ["alice"],
    spawnOnUnmatched: overrides.spawn ?? "labeled",
    autoExecuteLabel: overrides.label ?? LABEL,
    control: CONTROL,
  });
}

const session = (status: SessionStatus, recentDeliveries: string[] = []): SessionView => ({ status, recentDeliveries });

function registry(sessions: Record<string, SessionView> = {}): RegistryView {
  return { sessionFor: (ref) => sessions[ref], controlFor: () => undefined };
}

function memory(ids: string[] = []): DeliveryMemory {
  const seen = new Set(ids);
  return { has: (id) => seen.has(id) };
}

interface Case {
  readonly name: string;
  readonly event?: Partial<InboundEvent>;
  readonly policy?: Parameters<typeof policy>[0];
  readonly sessions?: Record<string, SessionView>;
  readonly seen?: string[];
  readonly expected: Decision;
}

const dropped = (reason: DropReason, workItem?: WorkItem): Decision =>
  workItem === undefined ? { action: "drop", reason } : { action: "drop", reason, workItem };

const cases: Case[] = [
  // 2. delivery dedupe (memory)
  { name: "a delivery id in memory is a duplicate", seen: ["d-1"], sessions: { [A.ref]: session("active") }, expected: dropped("duplicate-delivery") },
  { name: "a duplicate with no work item: duplicate-delivery wins", event: { workItems: [] }, seen: ["d-1"], expected: dropped("duplicate-delivery") },
  {
    name: "a duplicate carrying the marker: duplicate-delivery wins",
    event: { body: markSelfAuthored("done") },
    seen: ["d-1"],
    expected: dropped("duplicate-delivery"),
  },
  {
    name: "another id in memory is no duplicate",
    seen: ["d-0"],
    sessions: { [A.ref]: session("active") },
    expected: { action: "deliver", workItem: A, status: "active" },
  },

  // 3. work item
  { name: "an event naming no work item is dropped", event: { workItems: [] }, expected: dropped("no-work-item") },
  { name: "no work item and an unauthorized actor: no-work-item wins", event: { workItems: [], actor: "mallory" }, expected: dropped("no-work-item") },
  { name: "no work item and a marked body: no-work-item wins", event: { workItems: [], body: markSelfAuthored("x") }, expected: dropped("no-work-item") },

  // 4. self-echo
  {
    name: "a marked body is dropped",
    event: { body: markSelfAuthored("Session started.") },
    sessions: { [A.ref]: session("active") },
    expected: dropped("self-echo", A),
  },
  {
    name: "a marked body from an unauthorized user is a self-echo, not unauthorized",
    event: { actor: "mallory", body: markSelfAuthored("x") },
    expected: dropped("self-echo", A),
  },
  { name: "the marker anywhere in the body counts", event: { body: `quoted: ${SELF_COMMENT_MARKER} and more` }, expected: dropped("self-echo", A) },
  {
    name: "a marked close is a self-echo, even with a live session",
    event: { kind: "closed", body: markSelfAuthored("closing") },
    sessions: { [A.ref]: session("active") },
    expected: dropped("self-echo", A),
  },
  {
    name: "a null body is not a self-echo",
    event: { body: null },
    sessions: { [A.ref]: session("active") },
    expected: { action: "deliver", workItem: A, status: "active" },
  },
  {
    name: "the-loop's own label change on the local tracker is a self-echo, not unauthorized",
    event: { actor: "the-loop", kind: "labeled", label: "loop:review", body: null },
    sessions: { [A.ref]: session("active") },
    expected: dropped("self-echo", A),
  },
  {
    name: "the-loop's own unmarked comment on the local tracker is a self-echo",
    event: { actor: "the-loop", body: "the-loop:start-execution" },
    expected: dropped("self-echo", A),
  },
  {
    name: "the login the-loop posts as on GitHub is not told apart by login: its label change is a person's",
    event: { actor: "the-loop", kind: "labeled", label: LABEL, body: null, workItems: [{ ...A, tracker: "github", ref: "github:octo/repo#1" }] },
    expected: dropped("unauthorized-actor", { ...A, tracker: "github", ref: "github:octo/repo#1" }),
  },

  // 5. authorization
  {
    name: "an actor outside the allowlist is dropped",
    event: { actor: "mallory" },
    sessions: { [A.ref]: session("active") },
    expected: dropped("unauthorized-actor", A),
  },
  { name: "logins match case-sensitively", event: { actor: "Alice" }, sessions: { [A.ref]: session("active") }, expected: dropped("unauthorized-actor", A) },
  { name: "a login is not trimmed", event: { actor: "alice " }, sessions: { [A.ref]: session("active") }, expected: dropped("unauthorized-actor", A) },
  {
    name: "an empty allowlist denies every named actor",
    event: { actor: "alice" },
    policy: { users: [] },
    sessions: { [A.ref]: session("active") },
    expected: dropped("unauthorized-actor", A),
  },
  {
    name: "an empty allowlist still lets an actor-less event through",
    event: { actor: null, kind: "labeled", labels: [LABEL] },
    policy: { users: [] },
    expected: { action: "spawn", workItem: A },
  },
  {
    name: "an actor-less event on a live session is delivered",
    event: { actor: null, kind: "updated" },
    sessions: { [A.ref]: session("active") },
    expected: { action: "deliver", workItem: A, status: "active" },
  },
  {
    name: "an unauthorized actor and an armed item: unauthorized wins over spawn",
    event: { actor: "mallory", kind: "opened", labels: [LABEL] },
    policy: { spawn: "always" },
    expected: dropped("unauthorized-actor", A),
  },
  {
    name: "an unauthorized actor on a closed item: unauthorized wins over item-closed",
    event: { actor: "mallory", itemState: "closed" },
    expected: dropped("unauthorized-actor", A),
  },
  {
    name: "an unauthorized actor and a record duplicate: unauthorized wins",
    event: { actor: "mallory" },
    sessions: { [A.ref]: session("active", ["d-1"]) },
    expected: dropped("unauthorized-actor", A),
  },
  {
    name: "an unauthorized actor on a second item's session is dropped with the first item",
    event: { actor: "mallory", workItems: [A, B] },
    sessions: { [B.ref]: session("active") },
    expected: dropped("unauthorized-actor", A),
  },

  // 5. a close bypasses authorization, but can only end a session
  {
    name: "closed by an unauthorized actor on a live session closes it",
    event: { kind: "closed", actor: "mallory", itemState: "closed" },
    sessions: { [A.ref]: session("active") },
    expected: { action: "close", workItem: A },
  },
  {
    name: "closed under an empty allowlist on a paused session closes it",
    event: { kind: "closed", actor: "alice", itemState: "closed" },
    policy: { users: [] },
    sessions: { [A.ref]: session("paused") },
    expected: { action: "close", workItem: A },
  },
  {
    name: "closed with no session is dropped, never spawned",
    event: { kind: "closed", itemState: "closed", labels: [LABEL] },
    policy: { spawn: "always" },
    expected: dropped("no-session", A),
  },
  {
    name: "closed by an unauthorized actor with no session",
    event: { kind: "closed", actor: "mallory", itemState: "closed" },
    policy: { spawn: "always" },
    expected: dropped("no-session", A),
  },
  {
    name: "closed while the record is already closed",
    event: { kind: "closed", itemState: "closed" },
    sessions: { [A.ref]: session("closed") },
    expected: dropped("no-session", A),
  },
  {
    name: "closed with the state still open (an early poll) and no session",
    event: { kind: "closed", itemState: "open" },
    policy: { spawn: "always" },
    expected: dropped("no-session", A),
  },
  {
    name: "a redelivered close on a live session is a duplicate",
    event: { kind: "closed", itemState: "closed" },
    sessions: { [A.ref]: session("active", ["d-1"]) },
    expected: dropped("duplicate-delivery", A),
  },
  {
    name: "a close matches the first live item in order",
    event: { kind: "closed", workItems: [A, B] },
    sessions: { [B.ref]: session("active") },
    expected: { action: "close", workItem: B },
  },

  // 7. session match
  {
    name: "a comment on a live session is delivered",
    sessions: { [A.ref]: session("active") },
    expected: { action: "deliver", workItem: A, status: "active" },
  },
  {
    name: "a paused session is delivered to, with its status",
    sessions: { [A.ref]: session("paused") },
    expected: { action: "deliver", workItem: A, status: "paused" },
  },
  { name: "a closed record is not a match", sessions: { [A.ref]: session("closed") }, policy: { spawn: "always" }, expected: { action: "spawn", workItem: A } },
  { name: "a closed record and policy never", sessions: { [A.ref]: session("closed") }, policy: { spawn: "never" }, expected: dropped("spawn-policy", A) },
  {
    name: "the first live item in order is the match",
    event: { workItems: [A, B] },
    sessions: { [A.ref]: session("paused"), [B.ref]: session("active") },
    expected: { action: "deliver", workItem: A, status: "paused" },
  },
  {
    name: "a closed first item falls through to a live second",
    event: { workItems: [A, B] },
    sessions: { [A.ref]: session("closed"), [B.ref]: session("active") },
    expected: { action: "deliver", workItem: B, status: "active" },
  },
  {
    name: "a delivery id on the matched record is a duplicate",
    sessions: { [A.ref]: session("active", ["d-0", "d-1"]) },
    expected: dropped("duplicate-delivery", A),
  },
  {
    name: "a delivery id on an unmatched (closed) record is no duplicate",
    sessions: { [A.ref]: session("closed", ["d-1"]) },
    policy: { spawn: "always" },
    expected: { action: "spawn", workItem: A },
  },
  {
    name: "a duplicate on the matched second item carries that item",
    event: { workItems: [A, B] },
    sessions: { [B.ref]: session("active", ["d-1"]) },
    expected: dropped("duplicate-delivery", B),
  },
  {
    name: "a live session is delivered to even when the item is closed",
    event: { kind: "commented", itemState: "closed" },
    sessions: { [A.ref]: session("active") },
    expected: { action: "deliver", workItem: A, status: "active" },
  },
  {
    name: "a live session is delivered to whatever the spawn policy",
    policy: { spawn: "never" },
    sessions: { [A.ref]: session("active") },
    expected: { action: "deliver", workItem: A, status: "active" },
  },
  {
    name: "removing the arming label is delivered to a live session",
    event: { kind: "unlabeled", label: LABEL, labels: [] },
    sessions: { [A.ref]: session("active") },
    expected: { action: "deliver", workItem: A, status: "active" },
  },

  // 7. a pull request's closing: it ends only the PR's own session, and is news for a linked item's
  {
    name: "a PR's closing reaches the linked item's live session as input, never closing it",
    event: prClosed(),
    sessions: { [A.ref]: session("active") },
    expected: { action: "deliver", workItem: A, status: "active" },
  },
  {
    name: "a PR closed without merging reaches the linked item's session the same way",
    event: prClosed({ pullRequest: { ref: P.ref, merged: false } }),
    sessions: { [A.ref]: session("active") },
    expected: { action: "deliver", workItem: A, status: "active" },
  },
  {
    name: "a PR's closing to a paused linked session carries the status (the dispatcher drops it)",
    event: prClosed(),
    sessions: { [A.ref]: session("paused") },
    expected: { action: "deliver", workItem: A, status: "paused" },
  },
  {
    name: "a PR merged by an unauthorized actor is still told to the linked session: a fact, not a request",
    event: prClosed({ actor: "mallory" }),
    sessions: { [A.ref]: session("active") },
    expected: { action: "deliver", workItem: A, status: "active" },
  },
  {
    name: "a PR's closing by no one the ingress can name is told too",
    event: prClosed({ actor: null }),
    sessions: { [A.ref]: session("active") },
    expected: { action: "deliver", workItem: A, status: "active" },
  },
  {
    name: "a PR's closing ends the PR's own session, even when a linked item has one",
    event: prClosed(),
    sessions: { [A.ref]: session("active"), [P.ref]: session("active") },
    expected: { action: "close", workItem: P },
  },
  {
    name: "a PR's closing ends its own paused session",
    event: prClosed(),
    sessions: { [P.ref]: session("paused") },
    expected: { action: "close", workItem: P },
  },
  {
    name: "a PR's closing with no session anywhere is dropped naming the PR, never spawned",
    event: prClosed({ labels: [LABEL] }),
    policy: { spawn: "always" },
    expected: dropped("no-session", P),
  },
  {
    name: "a PR's closing whose linked session is closed is dropped naming the PR",
    event: prClosed(),
    sessions: { [A.ref]: session("closed") },
    expected: dropped("no-session", P),
  },
  {
    name: "a PR's closing on the linked record by its delivery id is a duplicate",
    event: prClosed(),
    sessions: { [A.ref]: session("active", ["d-1"]) },
    expected: dropped("duplicate-delivery", A),
  },
  {
    name: "a PR's closing the other ingress path delivered (its content key on the record) is a duplicate",
    event: prClosed({ deliveryId: "poll-closed" }),
    sessions: { [A.ref]: session("active", ["gh-1", "closed-P-at-t1"]) },
    expected: dropped("duplicate-delivery", A),
  },
  {
    name: "a PR's closing remembered by its content key is a duplicate",
    event: prClosed({ deliveryId: "poll-closed" }),
    seen: ["closed-P-at-t1"],
    sessions: { [A.ref]: session("active") },
    expected: dropped("duplicate-delivery"),
  },
  {
    name: "a PR's closing after an explicit binding names only the bound item and the PR",
    event: prClosed({ workItems: [B, P], linkedBy: { [B.ref]: "explicit" } }),
    sessions: { [A.ref]: session("active"), [B.ref]: session("active") },
    expected: { action: "deliver", workItem: B, status: "active" },
  },
  {
    name: "an issue's closing still ends its session",
    event: { kind: "closed", body: null, itemState: "closed" },
    sessions: { [A.ref]: session("active") },
    expected: { action: "close", workItem: A },
  },

  // 8. spawn policy, no live session
  { name: "a comment on a closed item with no session", event: { itemState: "closed" }, policy: { spawn: "always" }, expected: dropped("item-closed", A) },
  { name: "an armed but closed item", event: { itemState: "closed", labels: [LABEL] }, policy: { spawn: "labeled" }, expected: dropped("item-closed", A) },
  {
    name: "a spawn starts the first item, not a later one",
    event: { workItems: [A, B] },
    policy: { spawn: "always" },
    expected: { action: "spawn", workItem: A },
  },
];

// Every spawn policy against every kind that can start a session, armed or not (a closing and a
// CI failure never start one: router-feedback.test.ts has the CI failure's rows).
const spawnKinds = INBOUND_KINDS.filter((kind) => kind !== "closed" && kind !== "check_failed");
for (const spawn of ["never", "always", "labeled"] as const) {
  for (const kind of spawnKinds) {
    for (const armed of [false, true]) {
      const labels = armed ? ["bug", LABEL] : ["bug"];
      const spawns = spawn === "always" || (spawn === "labeled" && armed);
      cases.push({
        name: `${kind}, ${armed ? "armed" : "unarmed"}, policy ${spawn}, no session`,
        event: { kind, labels, ...(kind === "labeled" || kind === "unlabeled" ? { label: LABEL } : {}) },
        policy: { spawn },
        expected: spawns ? { action: "spawn", workItem: A } : dropped("spawn-policy", A),
      });
    }
  }
}

// The arming label, as the item carries it after the event.
for (const [labels, armed] of [
  [[LABEL], true],
  [["The-Loop: Auto-Execute"], true],
  [["  the-loop: auto-execute  "], true],
  [["THE-LOOP: AUTO-EXECUTE", "bug"], true],
  [["the-loop:auto-execute"], false],
  [["the-loop: auto-execute-later"], false],
  [[], false],
] as const) {
  cases.push({
    name: `labels ${JSON.stringify(labels)} ${armed ? "arm" : "do not arm"} the item`,
    event: { kind: "labeled", label: labels[0] ?? LABEL, labels: [...labels] },
    expected: armed ? { action: "spawn", workItem: A } : dropped("spawn-policy", A),
  });
}

describe("route", () => {
  it.each(cases)("$name", ({ event: overrides, policy: policyOverrides, sessions, seen, expected }) => {
    expect(route(event(overrides), policy(policyOverrides), registry(sessions), memory(seen))).toEqual(expected);
  });

  it("decides the same way every time and does not touch its inputs", () => {
    const input = event({ workItems: [A, B], labels: [LABEL] });
    const frozen = Object.freeze({ ...input, workItems: Object.freeze([...input.workItems]), labels: Object.freeze([...input.labels]) });
    const sessions = { [B.ref]: session("active", ["d-0"]) };
    const first = route(frozen, policy(), registry(sessions), memory());
    expect(route(frozen, policy(), registry(sessions), memory())).toEqual(first);
    expect(sessions[B.ref]).toEqual(session("active", ["d-0"]));
  });

  it("asks the registry only until the first live match", () => {
    const asked: string[] = [];
    const view: RegistryView = {
      sessionFor: (ref) => {
        asked.push(ref);
        return ref === A.ref ? session("active") : undefined;
      },
      controlFor: () => undefined,
    };
    route(event({ workItems: [A, B] }), policy(), view, memory());
    expect(asked).toEqual([A.ref]);
  });
});

/**
 * The order, pairwise: for every two guards that both fail on one event, the earlier one decides.
 * Each guard is a change to a passing baseline (an authorized comment on a live session).
 */
describe("guard order", () => {
  interface Failure {
    readonly guard: string;
    readonly event?: Partial<InboundEvent>;
    readonly policy?: Parameters<typeof policy>[0];
    readonly sessions?: Record<string, SessionView>;
    readonly seen?: string[];
    readonly reason: Extract<Decision, { action: "drop" }>["reason"];
  }
  const live = { [A.ref]: session("active") };
  const failures: Failure[] = [
    { guard: "memory dedupe", seen: ["d-1"], reason: "duplicate-delivery" },
    { guard: "work item", event: { workItems: [] }, reason: "no-work-item" },
    { guard: "self-echo", event: { body: markSelfAuthored("x") }, reason: "self-echo" },
    { guard: "authorization", event: { actor: "mallory" }, reason: "unauthorized-actor" },
    { guard: "record dedupe", sessions: { [A.ref]: session("active", ["d-1"]) }, reason: "duplicate-delivery" },
  ];
  const pairs = failures.flatMap((earlier, i) => failures.slice(i + 1).map((later) => [earlier, later] as const));

  it.each(pairs.map(([earlier, later]) => ({ name: `${earlier.guard} before ${later.guard}`, earlier, later })))("$name", ({ earlier, later }) => {
    const combined = route(
      event({ ...later.event, ...earlier.event }),
      policy({ ...later.policy, ...earlier.policy }),
      registry(earlier.sessions ?? later.sessions ?? live),
      memory([...(earlier.seen ?? []), ...(later.seen ?? [])]),
    );
    expect(combined).toMatchObject({ action: "drop", reason: earlier.reason });
  });

  it.each(failures)("$guard alone drops with $reason", (failure) => {
    const decision = route(event(failure.event), policy(failure.policy), registry(failure.sessions ?? live), memory(failure.seen));
    expect(decision).toMatchObject({ action: "drop", reason: failure.reason });
  });

  it("the baseline passes every guard", () => {
    expect(route(event(), policy(), registry(live), memory())).toEqual({ action: "deliver", workItem: A, status: "active" });
  });
});

describe("isArmed", () => {
  it.each([
    [[LABEL], LABEL, true],
    [["The-Loop: Auto-Execute"], LABEL, true],
    [[` ${LABEL}\t`], LABEL, true],
    [[LABEL], `  ${LABEL.toUpperCase()} `, true],
    [["bug", "go"], "GO", true],
    [["bug"], LABEL, false],
    [[], LABEL, false],
    [["the-loop: auto"], LABEL, false],
    [[""], "   ", false],
  ] as const)("%j with %j → %s", (labels, label, expected) => {
    expect(isArmed(labels, label)).toBe(expected);
  });
});

describe("policyOf", () => {
  it("builds sets from the config", () => {
    const built = policyOf({ authorizedUsers: ["a", "b", "a"], spawnOnUnmatched: "always", autoExecuteLabel: "go", control: CONTROL });
    expect(built).toMatchObject({
      authorizedUsers: new Set(["a", "b"]),
      spawnOnUnmatched: "always",
      autoExecuteLabel: "go",
    });
  });

  it("does not alias the config's list", () => {
    const users = ["a"];
    const built = policyOf({ authorizedUsers: users, spawnOnUnmatched: "never", autoExecuteLabel: "go", control: CONTROL });
    users.push("b");
    expect(built.authorizedUsers.has("b")).toBe(false);
  });
});
