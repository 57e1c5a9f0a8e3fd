import { describe, expect, it } from "vitest";
import { DEFAULT_CONTROL_KEYWORDS } from "../../src/config/schema.js";
import type { ControlCommand } from "../../src/config/schema.js";
import { HookChain } from "../../src/hooks/chain.js";
import type { HookExecutor } from "../../src/hooks/types.js";
import { isSelfAuthored } from "../../src/workitem/marker.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import type { Dispatcher } from "../../src/dispatch/dispatcher.js";
import { parseWorkItemRef } from "../../src/workitem/index.js";
import { Scripted } from "./hook-fixture.js";
import { ARM, ISSUE, PR, T0, ghEvent, githubSetup, localSetup, target } from "./fixture.js";

/**
 * The lifecycle points on the session side: where the dispatcher runs each chain and what it does
 * with the decisions. The executors are scripted in memory; the chain is the real one.
 */

const KEYWORD = DEFAULT_CONTROL_KEYWORDS;

async function setup(routing: Record<string, unknown> = {}) {
  const base = await localSetup({ routing: { control: { requireStartCommand: true }, ...routing } });
  const hooked = (...executors: HookExecutor[]): Dispatcher => base.dispatcher({ hooks: new HookChain(executors, base.events) });
  const say = async (ref: string, body: string, actor = "alice"): Promise<InboundEvent> => {
    await base.comment(ref, body, actor);
    return base.only();
  };
  const handled = async (d: Dispatcher, event: InboundEvent): Promise<void> => {
    expect(await d.handle(event)).toEqual({ settled: true });
  };
  const command = async (d: Dispatcher, ref: string, name: ControlCommand, actor = "alice"): Promise<InboundEvent> => {
    const event = await say(ref, KEYWORD[name], actor);
    await handled(d, event);
    await base.feed();
    return event;
  };
  /** An armed item (its opening event handled: armed, awaiting start). */
  const armed = async (d: Dispatcher, title = "Parser crashes") => {
    const item = await base.open(title);
    await handled(d, await base.only());
    return item;
  };
  const thread = async (ref: string) => (await base.trackers.local.getItemWithComments(parseWorkItemRef(ref))).comments;
  return { ...base, hooked, say, handled, command, armed, thread };
}

describe("work_item_start", () => {
  it("refuses a start command: no session, the item disarmed in the hook's name, one marked comment, hooks.refused", async () => {
    const t = await setup();
    const policy = new Scripted("office-hours", { work_item_start: (c) => ({ ...c, proceed: false, reason: "outside 09:00-18:00 UTC" }) });
    const d = t.hooked(policy);
    const { ref, target: tmux } = await t.armed(d);

    const start = await t.command(d, ref, "start");

    expect(policy.at("work_item_start")).toEqual([
      {
        workItem: expect.objectContaining({ ref, tracker: "local", number: 1, kind: "issue" }),
        actor: "alice",
        trigger: "comment",
        harness: "fake",
        deliveryId: start.deliveryId,
        proceed: true,
        reason: "",
      },
    ]);
    expect(t.runner.spawnsOf(tmux)).toEqual([]);
    expect(t.registry.get(ref)).toBeUndefined();
    expect(t.control.get(ref)).toMatchObject({
      command: "stop",
      source: "hook",
      actor: "office-hours",
      effect: "refused",
      note: "outside 09:00-18:00 UTC",
      deliveryId: start.deliveryId,
    });
    const comments = (await t.thread(ref)).filter((comment) => isSelfAuthored(comment.body));
    expect(comments).toHaveLength(1);
    expect(comments[0]?.body).toContain("`office-hours`");
    expect(comments[0]?.body).toContain("outside 09:00-18:00 UTC");
    expect(comments[0]?.body).toContain(KEYWORD.start);
    expect(t.emitted("hooks.refused")).toEqual([
      {
        point: "work_item_start",
        hook: "office-hours",
        reason: "outside 09:00-18:00 UTC",
        work_item: ref,
        delivery_id: start.deliveryId,
        comment_posted: true,
      },
    ]);
    expect(t.emitted("control.rejected")).toMatchObject([{ work_item: ref, command: "start", reason: "hook-refused" }]);
    expect(t.emitted("control.command")).toEqual([]);

    // Disarmed: an ordinary comment does not start it, and the same start redelivered is not taken again.
    await t.handled(d, await t.say(ref, "any news?"));
    await t.handled(t.hooked(policy), start);
    expect(t.runner.spawnRequests).toEqual([]);
    expect(policy.at("work_item_start")).toHaveLength(1);
    expect(t.emitted("routing.dropped").map((drop) => drop.reason)).toEqual(["awaiting-start", "execution-stopped", "duplicate-delivery"]);
  });

  it("lets a new start command through once the hook proceeds", async () => {
    const t = await setup();
    let open = false;
    const policy = new Scripted("office-hours", { work_item_start: (c) => (open ? undefined : { ...c, proceed: false, reason: "closed" }) });
    const d = t.hooked(policy);
    const { ref, target: tmux } = await t.armed(d);
    await t.command(d, ref, "start");
    expect(t.runner.spawnsOf(tmux)).toEqual([]);

    open = true;
    await t.command(d, ref, "start");
    expect(t.runner.spawnsOf(tmux)).toHaveLength(1);
    expect(t.control.get(ref)).toMatchObject({ command: "start", source: "comment", effect: "started" });
    expect(t.emitted("hooks.refused")).toHaveLength(1);
  });

  it("refuses a label-alone spawn (requireStartCommand off): the event is settled, and later events do not retry it", async () => {
    const t = await setup({ control: { requireStartCommand: false } });
    const policy = new Scripted("freeze", { work_item_start: (c) => ({ ...c, proceed: false, reason: "release freeze" }) });
    const d = t.hooked(policy);
    const { ref, target: tmux } = await t.open("Frozen");
    const opened = await t.only();
    await t.handled(d, opened);

    expect(policy.at("work_item_start")).toMatchObject([{ trigger: "event", actor: "alice", deliveryId: opened.deliveryId }]);
    expect(t.runner.spawnsOf(tmux)).toEqual([]);
    expect(t.emitted("dispatch.dropped")).toMatchObject([{ work_item: ref, reason: "hook-refused" }]);
    expect(t.control.get(ref)).toMatchObject({ source: "hook", effect: "refused" });
    await t.feed();

    await t.handled(d, await t.say(ref, "please start"));
    expect(t.runner.spawnRequests).toEqual([]);
    expect(policy.at("work_item_start")).toHaveLength(1);
  });

  it("refuses a CLI start with the hook's name and reason, and the CLI's outcome says so", async () => {
    const t = await setup();
    const policy = new Scripted("policy", { work_item_start: (c) => ({ ...c, proceed: false, reason: "no budget left" }) });
    const d = t.hooked(policy);
    const { ref } = await t.armed(d);

    const outcome = await d.control({ ref, command: "start", source: "cli", actor: "operator", note: "the-loop sessions start" });

    expect(outcome).toEqual({
      applied: false,
      reason: "hook-refused",
      message: `the lifecycle hook "policy" refused to start ${ref}: no budget left`,
    });
    expect(policy.at("work_item_start")).toMatchObject([{ trigger: "cli", actor: "operator" }]);
    expect(t.control.get(ref)).toMatchObject({ source: "hook", actor: "policy", effect: "refused" });
    expect(t.registry.get(ref)).toBeUndefined();
  });

  it("refuses when a required hook fails, naming the hook and its error", async () => {
    const t = await setup();
    const gate = new Scripted(
      "compliance",
      {
        work_item_start: () => {
          throw new Error("connect ECONNREFUSED 127.0.0.1:9");
        },
      },
      true,
    );
    const d = t.hooked(gate);
    const { ref } = await t.armed(d);
    await t.command(d, ref, "start");

    expect(t.registry.get(ref)).toBeUndefined();
    expect(t.emitted("hooks.failed")).toMatchObject([{ point: "work_item_start", hook: "compliance", required: true }]);
    const [refused] = t.emitted("hooks.refused");
    expect(refused).toMatchObject({ hook: "compliance" });
    expect(String(refused?.reason)).toContain("ECONNREFUSED");
  });

  it("starts anyway when a hook that is not required fails", async () => {
    const t = await setup();
    const broken = new Scripted("telemetry", {
      work_item_start: () => {
        throw new Error("boom");
      },
    });
    const d = t.hooked(broken);
    const { ref, target: tmux } = await t.armed(d);
    await t.command(d, ref, "start");

    expect(t.runner.spawnsOf(tmux)).toHaveLength(1);
    expect(t.emitted("hooks.failed")).toMatchObject([{ point: "work_item_start", hook: "telemetry", error: "boom", required: false }]);
    expect(t.emitted("hooks.refused")).toEqual([]);
  });

  it("runs for a pending start retried at daemon start, and a refusal there ends the retries", async () => {
    const t = await setup();
    let refuse = false;
    const policy = new Scripted("policy", { work_item_start: (c) => (refuse ? { ...c, proceed: false, reason: "not now" } : undefined) });
    const d = t.hooked(policy);
    const { ref, target: tmux } = await t.armed(d);
    t.runner.failSpawn(tmux);
    await t.command(d, ref, "start");
    expect(t.control.get(ref)).toMatchObject({ effect: "start-pending" });

    refuse = true;
    expect(await t.hooked(policy).retryPendingStarts()).toBe(0);
    expect(policy.at("work_item_start").map((c) => c.trigger)).toEqual(["comment", "retry"]);
    expect(t.control.get(ref)).toMatchObject({ source: "hook", effect: "refused" });
    expect(await t.hooked(policy).retryPendingStarts()).toBe(0);
    expect(policy.at("work_item_start")).toHaveLength(2);
  });
});

describe("session_spawn", () => {
  it("replaces the launch text with the hook's prompt", async () => {
    const t = await setup();
    const prefix = new Scripted("prefix", { session_spawn: (c) => ({ ...c, prompt: `[ACME policy] ${String(c.prompt)}` }) });
    const d = t.hooked(prefix);
    const { ref, target: tmux } = await t.armed(d);
    await t.command(d, ref, "start");

    const [call] = prefix.at("session_spawn");
    expect(call).toMatchObject({ harness: "fake", tmuxTarget: tmux, pullRequest: "", proceed: true, reason: "" });
    expect(String(call?.prompt)).toContain(`to work on ${ref}`);
    const launched = t.runner.spawnsOf(tmux)[0]?.argv[1] ?? "";
    expect(launched.startsWith("[ACME policy] ")).toBe(true);
    expect(launched).toContain(`to work on ${ref}`);
    expect(t.emitted("hooks.decided")).toEqual([{ point: "session_spawn", hook: "prefix", changed: ["prompt"], work_item: ref }]);
  });

  it("prevents the launch: the claim is closed, its checkout released, the item disarmed and the refusal commented", async () => {
    const g = await githubSetup({ control: { requireStartCommand: false } });
    const veto = new Scripted("veto", { session_spawn: (c) => ({ ...c, proceed: false, reason: "harness not approved" }) });
    const d = g.dispatcher({ hooks: new HookChain([veto], g.events), workspaces: g.workspaces });

    const event = ghEvent({ on: ISSUE });
    expect(await d.handle(event)).toEqual({ settled: true });

    expect(veto.at("session_spawn")).toMatchObject([{ cwd: expect.stringContaining("workspaces") }]);
    expect(g.runner.spawnsOf(target(ISSUE))).toEqual([]);
    expect(g.record(ISSUE)).toMatchObject({ status: "closed", closeReason: "hook-refused" });
    expect(g.workspaces.released.map((released) => released.ref)).toEqual([ISSUE.ref]);
    expect(g.control.get(ISSUE.ref)).toMatchObject({ source: "hook", actor: "veto", effect: "refused" });
    expect(g.emitted("hooks.refused")).toMatchObject([{ point: "session_spawn", hook: "veto", reason: "harness not approved", comment_posted: true }]);
    expect(g.emitted("session.spawned")).toEqual([]);

    // The next event neither spawns nor asks the hook again: the item is disarmed.
    expect(await d.handle(ghEvent({ on: ISSUE, commentId: "c-2", kind: "commented" }))).toEqual({ settled: true });
    expect(veto.at("session_spawn")).toHaveLength(1);
    expect(g.runner.spawnRequests).toEqual([]);
  });

  it("hands a pull request's event to its work item's live session when the PR's own launch is refused", async () => {
    const g = await githubSetup({ control: { requireStartCommand: false } });
    const other = g.dispatcher();
    const veto = new Scripted("no-pr-sessions", {
      // While the PR's launch is being decided, the issue it is linked to gets a session elsewhere.
      session_spawn: async (c) => {
        expect(await other.handle(ghEvent({ on: ISSUE }))).toEqual({ settled: true });
        return { ...c, proceed: false, reason: "PRs are worked from their issue" };
      },
    });
    const d = g.dispatcher({ hooks: new HookChain([veto], g.events) });

    const event = ghEvent({ on: PR, linked: [[ISSUE, "closing-reference"]], commentId: "c-9", kind: "commented" });
    // The issue has no session when the event is routed, so the PR's own session is what starts.
    expect(await d.handle({ ...event, workItems: [PR, ISSUE] })).toEqual({ settled: true });

    expect(veto.at("session_spawn")).toMatchObject([{ workItem: expect.objectContaining({ ref: PR.ref, kind: "pull_request" }), pullRequest: PR.ref }]);
    expect(g.runner.spawnsOf(target(PR))).toEqual([]);
    expect(g.runner.delivered.map((delivery) => delivery.target)).toEqual([target(ISSUE)]);
    expect(g.emitted("dispatch.succeeded")).toMatchObject([{ work_item: ISSUE.ref, delivery_id: event.deliveryId }]);
  });

  it("launches with the original prompt when the hook raises", async () => {
    const t = await setup();
    const broken = new Scripted("broken", {
      session_spawn: () => {
        throw new TypeError("cannot read properties of undefined");
      },
    });
    const d = t.hooked(broken);
    const { ref, target: tmux } = await t.armed(d);
    await t.command(d, ref, "start");

    expect(t.runner.spawnsOf(tmux)[0]?.argv[1]).toContain(`to work on ${ref}`);
    expect(t.emitted("hooks.failed")).toMatchObject([{ point: "session_spawn", hook: "broken" }]);
  });
});

describe("session_spawned", () => {
  it("runs after the record is written, and announce: false suppresses the announcement", async () => {
    const t = await setup();
    let recorded: unknown;
    const quiet = new Scripted("quiet", {
      session_spawned: (c) => {
        recorded = t.registry.get((c.workItem as { ref: string }).ref)?.harnessStartedAt;
        return { ...c, announce: false };
      },
    });
    const d = t.hooked(quiet);
    const { ref, target: tmux } = await t.armed(d);
    const start = await t.command(d, ref, "start");

    expect(recorded).toBeDefined();
    expect(quiet.at("session_spawned")).toEqual([
      {
        workItem: expect.objectContaining({ ref }),
        harness: "fake",
        tmuxTarget: tmux,
        cwd: t.spawnCwd,
        harnessSessionId: t.record(ref).harnessSessionId,
        deliveryId: start.deliveryId,
        announce: true,
      },
    ]);
    expect(t.emitted("session.announced")).toEqual([]);
    expect((await t.thread(ref)).some((comment) => comment.body.includes("tmux attach"))).toBe(false);
  });

  it("announces as before when the hook passes", async () => {
    const t = await setup();
    const observer = new Scripted("observer", { session_spawned: () => undefined });
    const d = t.hooked(observer);
    const { ref } = await t.armed(d);
    await t.command(d, ref, "start");
    expect(observer.at("session_spawned")).toHaveLength(1);
    expect(t.emitted("session.announced")).toHaveLength(1);
  });
});

describe("input_received", () => {
  it("sees a comment before it is delivered, a control command before it runs, and an answer as an answer", async () => {
    const t = await setup();
    const seen: string[] = [];
    const observer = new Scripted("observer", {
      input_received: (c) => {
        seen.push(`${String(c.inputKind)}:${String(c.command)}:${String(c.text)}`);
        // Observation only: a context with changes is read for no decision.
        return { ...c, text: "rewritten", proceed: false };
      },
    });
    const d = t.hooked(observer);
    const { ref, target: tmux } = await t.armed(d);
    const start = await t.command(d, ref, "start");
    const comment = await t.say(ref, "Use the v2 parser.");
    await t.handled(d, comment);
    await t.registry.update(ref, (record) => ({ ...record, awaitingInput: { question: "Which branch?", askedAt: T0.toISOString() } }));
    await t.handled(d, await t.say(ref, "main, please"));
    await d.control({ ref, command: "pause", source: "cli", actor: "operator" });

    expect(seen).toEqual([`command:start:${KEYWORD.start}`, "comment::Use the v2 parser.", "answer::main, please", `command:pause:${KEYWORD.pause}`]);
    expect(observer.at("input_received")[0]).toMatchObject({ actor: "alice", inputSource: "poll", deliveryId: start.deliveryId });
    expect(observer.at("input_received")[3]).toMatchObject({ actor: "operator", inputSource: "cli" });
    // What was delivered is the person's text, whatever the hook answered.
    expect(
      t.runner.delivered
        .filter((delivery) => delivery.target === tmux)
        .map((delivery) => delivery.text)
        .join("\n"),
    ).toContain("Use the v2 parser.");
    expect(t.emitted("hooks.ignored").length).toBeGreaterThan(0);
    expect(t.emitted("hooks.decided")).toEqual([]);
  });
});

describe("input_received, for a comment that starts a session", () => {
  it("sees it before it becomes the boot prompt, after work_item_start", async () => {
    const t = await setup({ control: { requireStartCommand: false } });
    const order: string[] = [];
    const observer = new Scripted("observer", {
      work_item_start: () => void order.push("work_item_start"),
      input_received: (c) => void order.push(`input_received:${String(c.inputKind)}:${String(c.text)}`),
      session_spawn: () => void order.push("session_spawn"),
    });
    const d = t.hooked(observer);
    const { ref } = await t.open("Unlabelled", []);
    await t.handled(d, await t.only());
    await t.trackers.local.addLabels(parseWorkItemRef(ref), [ARM], "alice");
    await t.feed();
    const comment = await t.say(ref, "Start with the parser.");
    await t.handled(d, comment);

    expect(order).toEqual(["work_item_start", "input_received:comment:Start with the parser.", "session_spawn"]);
  });
});

describe("work_item_complete", () => {
  it("runs when the item's closure closes its session", async () => {
    const t = await setup();
    const observer = new Scripted("observer", { work_item_complete: (c) => ({ ...c, announce: false }) });
    const d = t.hooked(observer);
    const { ref, target: tmux } = await t.armed(d);
    await t.command(d, ref, "start");
    await t.trackers.local.setState(parseWorkItemRef(ref), "closed", "bob");
    await t.handled(d, await t.only());

    expect(t.record(ref)).toMatchObject({ status: "closed", closeReason: "item-closed" });
    expect(observer.at("work_item_complete")).toEqual([
      { workItem: expect.objectContaining({ ref }), actor: "bob", harness: "fake", tmuxTarget: tmux, announce: true },
    ]);
    expect(t.emitted("hooks.decided")).toMatchObject([{ point: "work_item_complete", changed: ["announce"] }]);
  });
});

describe("with no hooks declared", () => {
  it("asks no point and behaves as before: the label arms, the start spawns and announces", async () => {
    const t = await setup();
    const d = t.dispatcher();
    const { ref, target: tmux } = await t.armed(d, "Plain");
    await t.command(d, ref, "start");
    expect(t.runner.spawnsOf(tmux)).toHaveLength(1);
    expect(t.emitted("session.announced")).toHaveLength(1);
    expect(t.events.events.filter((event) => event.type.startsWith("hooks."))).toEqual([]);
  });
});
