import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { extractSection } from "../../src/docs/sections.js";
import { RESPONSE_SCHEMAS_SECTION, renderResponseSchemas } from "../../src/dashboard/schemas.js";
import { REPO_ROOT } from "../support/cli.js";
import { MemoryEventSink } from "../../src/events/log.js";
import { runAction } from "../../src/dashboard/actions.js";
import type { ActionPorts } from "../../src/dashboard/actions.js";
import { boardColumn, budgetView, eventQueryOf } from "../../src/dashboard/read.js";
import type { ItemFacts } from "../../src/dashboard/read.js";
import type { ControlRequest } from "../../src/control/types.js";

const facts = (more: Partial<ItemFacts>): ItemFacts => ({ session: undefined, graph: undefined, control: undefined, queued: false, ...more });

describe("the board's column", () => {
  it.each([
    [facts({ queued: true, session: { status: "active", awaitingInput: undefined } }), "queued"],
    [facts({ session: { status: "active", awaitingInput: undefined } }), "working"],
    [facts({ session: { status: "active", awaitingInput: { question: "which?", askedAt: "2026-01-01T00:00:00Z" } } }), "waiting"],
    [facts({ session: { status: "paused", awaitingInput: undefined } }), "waiting"],
    [facts({ session: { status: "active", awaitingInput: undefined }, graph: { status: "waiting", node: "review" } }), "waiting"],
    [facts({ session: { status: "active", awaitingInput: undefined }, graph: { status: "blocked", node: "write" } }), "blocked"],
    [facts({ session: { status: "active", awaitingInput: undefined }, graph: { status: "running", node: "write" } }), "working"],
    [facts({ session: { status: "closed", awaitingInput: undefined }, graph: { status: "done", node: "done" } }), "done"],
    [facts({ graph: { status: "canceled", node: "write" } }), "done"],
    [facts({ session: { status: "closed", awaitingInput: undefined } }), "done"],
    [facts({ control: { command: "start", clearedAt: undefined } }), "working"],
    [facts({ control: { command: "stop", clearedAt: undefined } }), "done"],
    [facts({ session: { status: "failed", awaitingInput: undefined }, graph: { status: "running", node: "write" } }), "blocked"],
    [facts({ session: { status: "failed", awaitingInput: undefined }, control: { command: "start", clearedAt: undefined } }), "working"],
  ] as const)("%o → %s", (given, column) => {
    expect(boardColumn(given)).toBe(column);
  });
});

describe("the event query (the CLI's filters)", () => {
  const now = new Date("2026-12-01T12:00:00Z");
  it("reads globs, the work item, the level, since and limit", () => {
    const query = eventQueryOf(new URLSearchParams("type=graph.*&type=session.*&work_item=local:Demo%231&level=warning&since=15m&limit=20"), now);
    expect(query).toEqual({
      filter: {
        types: ["graph.*", "session.*"],
        workItem: "local:demo#1",
        minLevel: "warning",
        since: new Date("2026-12-01T11:45:00Z"),
      },
      limit: 20,
    });
  });
  it("defaults to info and 200", () => {
    expect(eventQueryOf(new URLSearchParams(""), now)).toEqual({ filter: { minLevel: "info" }, limit: 200 });
  });
  it.each([
    ["work_item=nonsense", /work_item/],
    ["level=loud", /level: one of/],
    ["since=yesterday-ish", /since/],
    ["limit=0", /limit/],
    ["limit=99999", /limit/],
  ])("refuses %s", (text, problem) => {
    const query = eventQueryOf(new URLSearchParams(text), now);
    expect("problem" in query && query.problem).toMatch(problem);
  });
});

function ports(overrides: Partial<ActionPorts> = {}): ActionPorts & { readonly sink: MemoryEventSink; readonly controls: ControlRequest[] } {
  const sink = new MemoryEventSink();
  const controls: ControlRequest[] = [];
  return {
    sink,
    controls,
    control: async (request) => {
      controls.push(request);
      return { applied: true, effect: "paused" };
    },
    announce: async () => ({ posted: true, id: "c1" }),
    graphAnswer: async (request) => ({
      moved: true,
      ref: request.ref,
      graph: "g",
      node: "done",
      status: "done",
      reasonCode: null,
      reason: null,
    }),
    close: async () => "loop-1",
    answer: async () => ({ delivered: true }),
    unserved: () => undefined,
    events: sink,
    ...overrides,
  };
}

describe("an action from the dashboard", () => {
  it("is refused when the dashboard is read-only, and nothing is done", async () => {
    const p = ports();
    const result = await runAction(p, undefined, "local:demo#1", "pause", {});
    expect(result).toMatchObject({ ok: false, status: 403, body: { error: expect.stringMatching(/read-only: set dashboard.operator/) } });
    expect(p.controls).toEqual([]);
    expect(p.sink.events).toEqual([]);
  });

  it("gives a control command with source dashboard and the operator as actor, then records it", async () => {
    const p = ports();
    const result = await runAction(p, "alice", "local:demo#1", "pause", {});
    expect(result).toMatchObject({ ok: true, status: 200, body: { command: "pause", effect: "paused", comment: { posted: true } } });
    expect(p.controls).toEqual([expect.objectContaining({ ref: "local:demo#1", command: "pause", source: "dashboard", actor: "alice" })]);
    expect(p.sink.events).toEqual([
      expect.objectContaining({ type: "dashboard.action", fields: { work_item: "local:demo#1", action: "pause", actor: "alice", ok: true } }),
    ]);
  });

  it("acts where the CLI command would: on the work item a pull request is bound to, saying so", async () => {
    const PR = "github:github.com/o/r#9";
    const ISSUE = "github:github.com/o/r#7";
    const p = ports({ actedOn: (ref) => (ref === PR ? ISSUE : ref) });
    const result = await runAction(p, "alice", PR, "pause", {});
    expect(result).toMatchObject({ ok: true, body: { workItem: ISSUE, boundFrom: PR, note: expect.stringContaining(`${PR} is bound to ${ISSUE}`) } });
    expect(p.controls).toEqual([expect.objectContaining({ ref: ISSUE, command: "pause", source: "dashboard" })]);
    // An item bound to nothing acts on itself, with no note.
    const own = await runAction(p, "alice", ISSUE, "resume", {});
    expect(own.body).not.toHaveProperty("boundFrom");
    expect(p.controls.at(-1)?.ref).toBe(ISSUE);
  });

  it("refuses a request for changes without a reason, and an unserved item", async () => {
    expect(await runAction(ports(), "alice", "local:demo#1", "request-changes", {})).toMatchObject({ ok: false, status: 400 });
    const unserved = ports({ unserved: () => "not served" });
    expect(await runAction(unserved, "alice", "local:other#1", "approve", {})).toMatchObject({ ok: false, status: 404, body: { error: "not served" } });
  });

  it("answers 409 when the gate did not move, with the daemon's reason", async () => {
    const p = ports({
      graphAnswer: async (request) => ({
        moved: false,
        ref: request.ref,
        graph: "g",
        node: "write",
        status: "running",
        reasonCode: "not-waiting",
        reason: "nothing waits",
      }),
    });
    const result = await runAction(p, "alice", "local:demo#1", "approve", {});
    expect(result).toMatchObject({ ok: false, status: 409, body: { error: "nothing waits", reason_code: "not-waiting" } });
    expect(p.sink.events.at(-1)).toMatchObject({ fields: { ok: false, error: "nothing waits" } });
  });
});

describe("docs/dashboard.md", () => {
  it("shows each response's JSON Schema as src/dashboard/schemas.ts declares it", async () => {
    const doc = await readFile(join(REPO_ROOT, "docs", "dashboard.md"), "utf8");
    expect(extractSection(doc, RESPONSE_SCHEMAS_SECTION), "stale generated section: run `npm run generate`").toBe(renderResponseSchemas());
  });
});

describe("an item's budget bar", () => {
  const record = {
    version: 1 as const,
    ref: "local:demo#1",
    session: "2026-12-01T10:00:00.000Z",
    harness: "claude",
    usage: { readable: true as const, readAt: "2026-12-01T10:05:00.000Z", files: 1, input: 900, cached: 100, output: 100, total: 1_000 },
    minutes: 5,
    raise: { tokens: 500, minutes: 0 },
    warnedAt: {},
  };
  it("shows what was used of the limits in force, the raises added", () => {
    expect(budgetView(record, { tokens: 2_000, warnAt: 0.8 })).toEqual({
      tokens: { used: 1_000, limit: 2_500 },
      minutes: { used: 5, limit: null },
      warnAt: 0.8,
      exceeded: null,
    });
  });
  it("is null without a record, and says unreadable usage and the limit that paused it", () => {
    expect(budgetView(undefined, { warnAt: 1 })).toBeNull();
    const paused = {
      ...record,
      usage: { readable: false as const, readAt: "2026-12-01T10:05:00.000Z", reason: "no transcript" },
      exceeded: { dimension: "minutes" as const, used: 31, limit: 30, at: "2026-12-01T10:31:00.000Z" },
    };
    expect(budgetView(paused, { minutes: 30, warnAt: 1 })).toMatchObject({
      tokens: { used: null, limit: null },
      minutes: { used: 5, limit: 30 },
      exceeded: { dimension: "minutes", used: 31, limit: 30 },
    });
  });
});
