import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_SOCKET_PATH, sessionSocketPath } from "../../src/daemon/socket/path.js";
import type { RpcCaller, RpcHandler } from "../../src/daemon/socket/protocol.js";
import { callSocket } from "../../src/daemon/socket/rpc.js";
import { SessionSockets, sessionSocketHandlers } from "../../src/daemon/socket/session-sockets.js";
import type { EventSink } from "../../src/events/log.js";

const REF = "local:demo#1";
const TOKEN = "t".repeat(43);
const seen: { method: string; params: unknown; caller: RpcCaller }[] = [];
const recording =
  (method: string): RpcHandler =>
  async (params, caller) => {
    seen.push({ method, params, caller });
    return { method };
  };
const MAIN: Record<string, RpcHandler> = {
  "session.ask": recording("session.ask"),
  "graph.complete": recording("graph.complete"),
  "graph.force": recording("graph.force"),
};

afterEach(() => {
  seen.length = 0;
});

describe("sessionSocketHandlers: a session's socket acts for its own item only", () => {
  const handlers = sessionSocketHandlers(REF, MAIN, "/etc/the-loop/cli-config.yaml");

  it.each([
    ["no credential", {}, /carries that session's credential/],
    ["another item's credential", { session: { workItem: "local:demo#2", token: TOKEN } }, /serves the session of local:demo#1 only.*local:demo#2/],
    ["a credential naming no ref", { session: { workItem: "not a ref", token: TOKEN } }, /./],
  ])("refuses %s before the method runs", async (_, caller, message) => {
    await expect(handlers["session.ask"]!({ question: "q" }, caller as RpcCaller)).rejects.toThrow(message);
    expect(seen).toEqual([]);
  });

  it("passes the session's own ask on, with its credential", async () => {
    const caller = { session: { workItem: "local:demo#1", token: TOKEN } };
    await expect(handlers["session.ask"]!({ question: "q" }, caller)).resolves.toEqual({ method: "session.ask" });
    expect(seen).toEqual([{ method: "session.ask", params: { question: "q" }, caller }]);
  });

  it("claims under the daemon's config file, whatever the command named", async () => {
    const caller = { session: { workItem: REF, token: TOKEN } };
    await handlers["graph.complete"]!({ ref: REF, node: null, configFile: "/elsewhere.yaml" }, caller);
    expect(seen[0]?.params).toEqual({ ref: REF, node: null, configFile: "/etc/the-loop/cli-config.yaml" });
  });

  it("refuses graph force by name, even with the session's credential", async () => {
    await expect(handlers["graph.force"]!({ ref: REF, to: "review", reason: "r" }, { session: { workItem: REF, token: TOKEN } })).rejects.toThrow(
      /operator command/,
    );
    expect(seen).toEqual([]);
  });

  it("offers no other method", () => {
    expect(Object.keys(handlers).sort()).toEqual(["graph.complete", "graph.force", "session.ask"]);
  });

  it("shows the session's own run when the daemon gives it the graph states, with the credential only", async () => {
    const withStatus = sessionSocketHandlers(REF, MAIN, null, async (ref) => (ref === REF ? { node: "write" } : undefined));
    await expect(withStatus["graph.status"]!({}, { session: { workItem: REF, token: TOKEN } })).resolves.toEqual({ node: "write" });
    await expect(withStatus["graph.status"]!({}, {})).rejects.toThrow(/credential/);
    await expect(withStatus["graph.status"]!({}, { session: { workItem: "local:demo#2", token: TOKEN } })).rejects.toThrow(/only/);
  });
});

describe("sessionSocketPath", () => {
  it("is one per work item and per state root, beside the daemon's socket", () => {
    const a = sessionSocketPath("/tmp/p1/.the-loop", REF, { runtimeDir: undefined, uid: undefined });
    expect(a).toMatch(/^\/tmp\/p1\/\.the-loop\/sockets\/[0-9a-f]{16}\/sock$/);
    expect(sessionSocketPath("/tmp/p1/.the-loop", "local:demo#2", { runtimeDir: undefined, uid: undefined })).not.toBe(a);
    expect(sessionSocketPath("/tmp/p2/.the-loop", REF, { runtimeDir: undefined, uid: undefined })?.slice(-22)).not.toBe(a?.slice(-22));
  });

  it("has none where the path would not fit a socket address", () => {
    const root = `/tmp/${"d".repeat(MAX_SOCKET_PATH - 30)}`;
    expect(Buffer.byteLength(join(root, "daemon.sock"))).toBeLessThanOrEqual(MAX_SOCKET_PATH);
    expect(sessionSocketPath(root, REF, { runtimeDir: undefined, uid: undefined })).toBeUndefined();
  });
});

describe("SessionSockets: a socket for each live session", () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  it("opens one for each live item, answers on it, and closes it once the item is no longer live", async () => {
    const root = await mkdtemp(join(tmpdir(), "tl-ss-"));
    dirs.push(root);
    let live = [REF];
    const emitted: [string, unknown][] = [];
    const events = { emit: (event: string, fields: unknown) => void emitted.push([event, fields]) } as unknown as EventSink;
    const sockets = new SessionSockets({ stateRoot: root, handlers: MAIN, configFile: null, liveItems: () => live, events, warn: () => undefined });
    try {
      await sockets.reconcile();
      expect(sockets.served()).toEqual([REF]);
      const path = sessionSocketPath(root, REF, { runtimeDir: undefined, uid: undefined })!;
      await expect(callSocket(path, "session.ask", { question: "q" }, 5_000, { session: { workItem: REF, token: TOKEN } })).resolves.toEqual({
        method: "session.ask",
      });
      live = [];
      await sockets.reconcile();
      expect(sockets.served()).toEqual([]);
      await expect(callSocket(path, "session.ask", { question: "q" }, 5_000, { session: { workItem: REF, token: TOKEN } })).rejects.toThrow(/nothing listens/);
      expect(emitted).toEqual([
        ["session.socket_opened", { work_item: REF }],
        ["session.socket_closed", { work_item: REF }],
      ]);
    } finally {
      await sockets.close();
    }
  });

  it("spaces its listings by what they cost, however often the registry moves", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    let clock = 0;
    let listings = 0;
    let stamp = 0;
    const events = { emit: () => undefined } as unknown as EventSink;
    const sockets = new SessionSockets({
      stateRoot: "/nonexistent",
      handlers: MAIN,
      configFile: null,
      // Each listing costs 100 ms of the clock; the registry moves at every look.
      liveItems: () => {
        listings += 1;
        clock += 100;
        return [];
      },
      changeStamp: () => (stamp += 1),
      events,
      warn: () => undefined,
      now: () => clock,
    });
    try {
      sockets.watch(10);
      for (let tick = 0; tick < 400; tick += 1) {
        clock += 10;
        await vi.advanceTimersByTimeAsync(10);
      }
      // 4 s of clock, listings at most every 100 / 0.05 = 2,000 ms: 2 or 3 of them, not 400.
      expect(listings).toBeGreaterThanOrEqual(2);
      expect(listings).toBeLessThanOrEqual(3);
    } finally {
      await sockets.close();
      vi.useRealTimers();
    }
  });
});
