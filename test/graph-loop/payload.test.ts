import { describe, expect, it } from "vitest";
import { applyClaimResult, applyGateAnswer, startRun } from "../../src/graph-run/advance.js";
import type { Transition } from "../../src/graph-run/advance.js";
import { LoopClock, loopContext, nextLoopTimestamp, workspaceOf } from "../../src/graph-loop/payload.js";
import { deniedMove, planLoopMove } from "../../src/graph-loop/plan.js";
import type { LoopMoveInput, RunEffect } from "../../src/graph-loop/plan.js";
import { graphStateSchema } from "../../src/graph-run/state.js";
import type { GraphState } from "../../src/graph-run/state.js";
import { LOOP_CONTEXT_FIELDS, LOOP_POINTS } from "../../src/sdk/hooks/loop-catalog.js";
import { AGENT, ALICE, DAEMON, GRAPH, MISSING, PASS, REF, T0, applied, at, started, stateAt } from "../graph/fixture.js";

const SESSION = { agentName: "claude", sessionId: "0f3c" };
const everything = (): boolean => true;

function moveInput(fields: Partial<LoopMoveInput> & Pick<LoopMoveInput, "transition">): LoopMoveInput {
  return { graph: GRAPH, before: undefined, actor: DAEMON, session: SESSION, now: () => T0, handled: everything, ...fields };
}

const names = (effects: readonly RunEffect[]): string[] =>
  effects.map((effect) => (effect.kind === "loop" ? effect.name : effect.kind === "event" ? `event:${effect.name}` : effect.kind));
const loopNames = (effects: readonly RunEffect[]): string[] => names(effects).filter((name) => name.startsWith("loop"));
const payloadOf = (effects: readonly RunEffect[], name: string): Readonly<Record<string, unknown>> => {
  const found = effects.find((effect) => effect.kind === "loop" && effect.name === name);
  if (found?.kind !== "loop") throw new Error(`no ${name} in ${names(effects).join(", ")}`);
  return found.payload;
};

describe("nextLoopTimestamp", () => {
  it.each([
    ["no earlier event: now", undefined, "2025-03-01T10:00:00.000Z", "2025-03-01T10:00:00.000Z"],
    ["an earlier event before now: now", "2025-03-01T09:59:00.000Z", "2025-03-01T10:00:00.000Z", "2025-03-01T10:00:00.000Z"],
    ["the same millisecond: one later", "2025-03-01T10:00:00.000Z", "2025-03-01T10:00:00.000Z", "2025-03-01T10:00:00.001Z"],
    ["a clock stepped back: one after the last", "2025-03-01T10:05:00.000Z", "2025-03-01T10:00:00.000Z", "2025-03-01T10:05:00.001Z"],
    ["a last stamp that does not parse: now", "yesterday", "2025-03-01T10:00:00.000Z", "2025-03-01T10:00:00.000Z"],
  ])("%s", (_name, last, now, expected) => {
    expect(nextLoopTimestamp(last, new Date(now))).toBe(expected);
  });

  it("a clock's stamps only increase, and the state keeps the last", () => {
    const clock = new LoopClock(undefined, () => T0);
    const stamps = [clock.stamp(), clock.stamp(), clock.stamp()];
    expect(stamps).toEqual(["2025-03-01T10:00:00.000Z", "2025-03-01T10:00:00.001Z", "2025-03-01T10:00:00.002Z"]);
    expect(clock.kept(started()).lastLoopAt).toBe(stamps[2]);
  });
});

describe("workspaceOf", () => {
  it.each([
    ["github:octo/repo#7", "octo/repo"],
    ["local:demo#1", "demo"],
  ])("%s → %s", (ref, workspace) => expect(workspaceOf(ref)).toBe(workspace));
});

describe("a session's usage in the payload (details.the_loop.usage)", () => {
  const transition = applied(startRun(GRAPH, { ref: REF, loopRunId: "run-1", at: T0, actor: DAEMON }));
  it.each([
    [
      "read: the figures, in the payload's snake case",
      { tokens: 1500, input: 1000, cached: 200, output: 300, minutes: 7, limits: { tokens: 10_000 }, readAt: "2025-03-01T09:59:00.000Z" },
      { tokens: 1500, input: 1000, cached: 200, output: 300, minutes: 7, limits: { tokens: 10_000 }, read_at: "2025-03-01T09:59:00.000Z" },
    ],
    [
      "unreadable: null with why, never 0",
      { tokens: null, unreadable: "the aider harness writes no transcript", minutes: 2, limits: {}, raised: { tokens: 0, minutes: 30 } },
      { tokens: null, unreadable: "the aider harness writes no transcript", minutes: 2, limits: {}, raised: { tokens: 0, minutes: 30 } },
    ],
  ])("%s", (_name, usage, sent) => {
    const plan = planLoopMove(moveInput({ transition, session: { ...SESSION, usage } }));
    for (const name of ["loop.started", "loop.generation.pre"]) {
      const payload = name === "loop.started" ? payloadOf(plan.effects, name) : plan.asks.find((ask) => ask.name === name)?.payload;
      expect((payload?.["details"] as { the_loop: Record<string, unknown> }).the_loop["usage"]).toEqual(sent);
    }
  });

  it("says none without a session, or without its usage", () => {
    for (const session of [undefined, SESSION]) {
      const plan = planLoopMove(moveInput({ transition, session }));
      const details = payloadOf(plan.effects, "loop.started")["details"] as { the_loop?: Record<string, unknown> } | undefined;
      expect(details?.the_loop?.["usage"]).toBeUndefined();
    }
  });
});

describe("loopContext", () => {
  it("carries the context keys that have a value, in the catalog's order, in agh's words; the others omitted, never null", () => {
    const state = stateAt({ origin: { kind: "comment", ref: "delivery-1" } });
    const context = loopContext("loop.started", {
      timestamp: "2025-03-01T10:00:00.000Z",
      graph: GRAPH,
      state,
      session: undefined,
      subject: { node: "design", actor: ALICE },
    });
    expect(Object.keys(context)).toEqual(LOOP_CONTEXT_FIELDS.filter((key) => Object.hasOwn(context, key)));
    expect(context).toEqual({
      event: "loop.started",
      timestamp: "2025-03-01T10:00:00.000Z",
      loop_run_id: "run-1",
      workspace_id: "octo/repo",
      loop_name: "tiny",
      generation: 1,
      node_id: "design",
      resolved_network_participation: { version: "network-participation/v1", mode: "local", source: "built_in_local" },
      actor_kind: "human",
      actor_id: "alice",
      origin_kind: "web",
      origin_ref: "delivery-1",
    });
    expect(Object.values(context)).not.toContain(null);
  });

  it.each([
    ["an agent node", "design", 1, "design#1", "worker"],
    ["a human gate, second attempt", "design-approval", 2, "design-approval#2", "coordinator"],
    ["a terminal node", "complete", 1, "complete#1", "coordinator"],
  ])("a task at %s: task_id, run_id, run_kind", (_name, node, attempt, taskId, kind) => {
    const context = loopContext("loop.node.terminal", {
      timestamp: "2025-03-01T10:00:00.000Z",
      graph: GRAPH,
      state: started(),
      session: SESSION,
      subject: { node, actor: AGENT, task: { node, attempt } },
    });
    expect(context).toMatchObject({
      task_id: taskId,
      run_id: `run-1/${taskId}`,
      run_kind: kind,
      agent_name: "claude",
      session_id: "0f3c",
      actor_kind: "agent_session",
    });
  });
});

describe("planLoopMove", () => {
  const begin = (): Transition => applied(startRun(GRAPH, { ref: REF, loopRunId: "run-1", at: T0, actor: DAEMON }));

  it("a new run: loop.started journalled first, loop.generation.pre asked, the snapshot and origin frozen in the state", () => {
    const plan = planLoopMove(moveInput({ transition: begin(), origin: { kind: "cli", ref: "d-1" } }));
    expect(loopNames(plan.effects)).toEqual(["loop.started"]);
    expect(names(plan.effects)[0]).toBe("loop.started");
    expect(plan.asks.map((ask) => ask.name)).toEqual(["loop.generation.pre"]);
    expect(plan.asks[0]?.payload).toMatchObject({ generation: 1, node_id: "design", status: "running", origin_kind: "cli" });
    for (const key of ["task_id", "denied", "deny_reason", "reason_code", "parent_loop_run_id"]) expect(plan.asks[0]?.payload).not.toHaveProperty(key);
    expect(plan.state.networkParticipation).toEqual({ version: "network-participation/v1", mode: "local", source: "built_in_local" });
    expect(plan.state.origin).toEqual({ kind: "cli", ref: "d-1" });
    expect(Date.parse(plan.state.lastLoopAt ?? "")).toBe(Date.parse(String(plan.asks[0]?.payload["timestamp"])));
    expect(graphStateSchema.safeParse(plan.state).success).toBe(true);
  });

  it("a passed claim into a gate: loop.node.terminal first, its progress and attempt counted; nothing asked", () => {
    const before = { ...started(), lastLoopAt: "2025-03-01T10:00:00.005Z" };
    const transition = applied(applyClaimResult(GRAPH, before, { node: "design", generation: 1, results: [PASS], actor: AGENT, at: at(1) }));
    const plan = planLoopMove(
      moveInput({ before, transition, actor: AGENT, now: () => at(1), left: { node: "design", taskStatus: "passed", error: null, details: null } }),
    );
    expect(plan.asks).toEqual([]);
    expect(names(plan.effects)[0]).toBe("loop.node.terminal");
    expect(payloadOf(plan.effects, "loop.node.terminal")).toMatchObject({
      task_id: "design#1",
      task_status: "completed",
      run_status: "completed",
      node_id: "design",
      details: { the_loop: { node_kind: "agent", run_status: "waiting" } },
    });
    expect(payloadOf(plan.effects, "loop.node.terminal")).not.toHaveProperty("error");
    expect(plan.state.tasks).toEqual({ design: 1 });
    expect(plan.state.lastProgressAt).toBe(at(1).toISOString());
  });

  it("a failed claim that stays: the attempt ended all the same", () => {
    const before = started();
    const transition = applied(applyClaimResult(GRAPH, before, { node: "design", generation: 1, results: [MISSING], actor: AGENT, at: at(1) }));
    const plan = planLoopMove(moveInput({ before, transition, left: { node: "design", taskStatus: "failed", error: MISSING.message, details: null } }));
    expect(loopNames(plan.effects)).toEqual(["loop.node.terminal"]);
    expect(payloadOf(plan.effects, "loop.node.terminal")).toMatchObject({
      task_status: "failed",
      error: MISSING.message,
      run_status: "failed",
      details: { the_loop: { run_status: "running" } },
    });
  });

  it("changes requested at a gate: gate.pre asked, then generation.pre for the next; gate.post and generation.post after the move's effects", () => {
    const before = stateAt({ node: "design-approval", status: "waiting", reasonCode: "awaiting-review", reason: "waiting" });
    const transition = applied(applyGateAnswer(GRAPH, before, { decision: "changes-requested", actor: ALICE, at: at(2) }));
    const plan = planLoopMove(
      moveInput({
        before,
        transition,
        actor: ALICE,
        gate: { gateId: "design-approval", decision: "changes-requested" },
        left: { node: "design-approval", taskStatus: "failed", error: "changes requested", details: null },
      }),
    );
    expect(plan.asks.map((ask) => ask.name)).toEqual(["loop.gate.pre", "loop.generation.pre"]);
    expect(plan.asks[0]?.payload).toMatchObject({
      gate_id: "design-approval",
      decision: "request_changes",
      status: "running",
      generation: 1,
      task_id: "design-approval#1",
      run_kind: "coordinator",
    });
    expect(plan.asks[1]?.payload).toMatchObject({ generation: 2, node_id: "design" });
    expect(loopNames(plan.effects)).toEqual(["loop.node.terminal", "loop.gate.post", "loop.generation.post"]);
    expect(payloadOf(plan.effects, "loop.generation.post")).toMatchObject({ generation: 1, status: "running", reason_code: "changes_requested" });
    // Stamped in the order they happen, however they are delivered.
    const stamps = [
      plan.asks[0]?.payload["timestamp"],
      ...["loop.node.terminal", "loop.gate.post", "loop.generation.post"].map((name) => payloadOf(plan.effects, name)["timestamp"]),
      plan.asks[1]?.payload["timestamp"],
    ].map((stamp) => Date.parse(String(stamp)));
    expect([...stamps].sort((a, b) => a - b)).toEqual(stamps);
    expect(new Set(stamps).size).toBe(stamps.length);
  });

  it("an approval into the terminal node: one gate.pre (the gate's), and generation.post before the run's end", () => {
    const before = stateAt({ node: "review", status: "waiting", reasonCode: "awaiting-review", reason: "waiting" });
    const transition = applied(applyGateAnswer(GRAPH, before, { decision: "approved", actor: ALICE, at: at(2) }));
    const plan = planLoopMove(moveInput({ before, transition, actor: ALICE, gate: { gateId: "review", decision: "approved" } }));
    expect(plan.asks.map((ask) => ask.name)).toEqual(["loop.gate.pre"]);
    expect(plan.asks[0]?.payload).toMatchObject({ gate_id: "review", status: "done" });
    const order = names(plan.effects);
    expect(order.slice(-3)).toEqual(["loop.gate.post", "loop.generation.post", "run-ended"]);
    expect(payloadOf(plan.effects, "loop.generation.post")).toMatchObject({ status: "done" });
  });

  it("builds nothing for events no hook runs at, and still counts the attempt", () => {
    const before = started();
    const transition = applied(applyClaimResult(GRAPH, before, { node: "design", generation: 1, results: [PASS], actor: AGENT, at: at(1) }));
    const plan = planLoopMove(
      moveInput({ before, transition, handled: () => false, left: { node: "design", taskStatus: "passed", error: null, details: null } }),
    );
    expect(plan.effects).toEqual(transition.effects);
    expect(plan.state.tasks).toEqual({ design: 1 });
    expect(plan.state.lastLoopAt).toBeUndefined();
  });

  it("every payload carries only keys its event declares, every one that always has a value, and no null", () => {
    const before = stateAt({ node: "review", status: "waiting", reasonCode: "awaiting-review", reason: "waiting" });
    const transition = applied(applyGateAnswer(GRAPH, before, { decision: "approved", actor: ALICE, at: at(2) }));
    const plan = planLoopMove(
      moveInput({
        before,
        transition,
        actor: ALICE,
        gate: { gateId: "review", decision: "approved" },
        left: { node: "review", taskStatus: "passed", error: null, details: null },
      }),
    );
    const payloads = [...plan.asks.map((ask) => ask.payload), ...plan.effects.flatMap((effect) => (effect.kind === "loop" ? [effect.payload] : []))];
    for (const payload of payloads) {
      const point = LOOP_POINTS.find((candidate) => candidate.name === payload["event"]);
      const facts = Object.entries(point?.facts ?? {}) as [string, { optional?: boolean }][];
      for (const key of Object.keys(payload))
        expect(
          facts.map(([name]) => name),
          key,
        ).toContain(key);
      for (const [name, spec] of facts) if (spec.optional !== true) expect(payload, `${String(payload["event"])} ${name}`).toHaveProperty(name);
      expect(Object.values(payload)).not.toContain(null);
    }
  });
});

describe("deniedMove", () => {
  const waitingAtReview = (): GraphState => stateAt({ node: "review", phase: "review", status: "waiting", reasonCode: "awaiting-review", reason: "waiting" });

  it("loop.gate.pre denied: blocked where it stood, nothing of the move applied, the denial kept and commented", () => {
    const before = waitingAtReview();
    const transition = applied(applyGateAnswer(GRAPH, before, { decision: "approved", actor: ALICE, at: at(2) }));
    const input = moveInput({ before, transition, actor: ALICE, gate: { gateId: "review", decision: "approved" } });
    const plan = planLoopMove(input);
    const ask = plan.asks[0];
    if (ask === undefined) throw new Error("no ask");
    const denied = deniedMove({ ...input, plan, at: ask, denial: { hook: "freeze", reason: "the release is frozen" } });
    expect(denied.state).toMatchObject({
      node: "review",
      phase: "review",
      status: "blocked",
      reasonCode: "hook_denied",
      denial: { hook: "freeze", point: "loop.gate.pre", reason: "the release is frozen" },
    });
    expect(denied.state.reason).toContain('"freeze"');
    expect(names(denied.effects)).toEqual(["event:graph.blocked", "loop.gate.post", "loop-denial", "loop.terminal"]);
    expect(payloadOf(denied.effects, "loop.gate.post")).toMatchObject({
      status: "blocked",
      reason_code: "hook_denied",
      denied: true,
      deny_reason: "the release is frozen",
    });
    // blocked is terminal in agh's words: the run ends, and loop.terminal says how.
    expect(payloadOf(denied.effects, "loop.terminal")).toMatchObject({
      status: "blocked",
      cause: "contract",
      reason_code: "hook_denied",
      details: { deny_reason: "the release is frozen", the_loop: { hook: "freeze", point: "loop.gate.pre" } },
    });
    expect(Date.parse(String(payloadOf(denied.effects, "loop.gate.post")["timestamp"]))).toBeGreaterThan(Date.parse(String(ask.payload["timestamp"])));
    expect(graphStateSchema.safeParse(denied.state).success).toBe(true);
  });

  it("loop.generation.pre denied at a new run: failed with hook_denied, no assignment, and no generation.post", () => {
    const transition = applied(startRun(GRAPH, { ref: REF, loopRunId: "run-1", at: T0, actor: DAEMON }));
    const input = moveInput({ transition });
    const plan = planLoopMove(input);
    const ask = plan.asks[0];
    if (ask === undefined) throw new Error("no ask");
    const denied = deniedMove({ ...input, plan, at: ask, denial: { hook: "budget", reason: "" } });
    expect(denied.state).toMatchObject({ status: "failed", reasonCode: "hook_denied", denial: { hook: "budget", point: "loop.generation.pre", reason: "" } });
    const order = names(denied.effects);
    expect(order).not.toContain("deliver-assignment");
    expect(order[0]).toBe("loop.started");
    expect(order).not.toContain("loop.generation.post");
    expect(order.slice(-3)).toEqual(["event:graph.failed", "loop-denial", "run-ended"]);
    expect(graphStateSchema.safeParse(denied.state).success).toBe(true);
  });
});
