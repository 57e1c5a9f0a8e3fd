import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import { parseAnswer } from "../../src/hooks/answer.js";
import { HookChain } from "../../src/hooks/chain.js";
import { parseHookDeclaration } from "../../src/hooks/declaration.js";
import type { RemoteHookEntry } from "../../src/hooks/declaration.js";
import { createRemoteExecutor } from "../../src/hooks/remote.js";
import { LIFECYCLE_POINTS, LIFECYCLE_POINT_NAMES } from "../../src/sdk/hooks/catalog.js";
import { TEST_POINT, failureOf, hookEvents, spawnContext, startContext } from "./support/fixtures.js";
import { ScriptedServer, reply } from "./support/rpc-server.js";

/**
 * A hook's answer crosses from another process (a remote's reply, a command's stdout) and is
 * parsed there, not cast: a key the point does not decide is let through for the chain to ignore
 * and record in hooks.ignored, never a rejection; a known decision of the wrong type is that
 * hook's failure, in words naming the decision. A command's answers: test/hooks/subprocess.test.ts.
 */

describe("parseAnswer: an answer against its point's decisions", () => {
  it.each<[string, Record<string, unknown>, Record<string, unknown>]>([
    ["decisions of their kinds", { label: "x", enabled: false, limit: 4, tags: ["a"] }, { label: "x", enabled: false, limit: 4, tags: ["a"] }],
    ["unknown keys and facts, untouched", { subject: "changed", extra: { deep: [1] }, label: "y" }, { subject: "changed", extra: { deep: [1] }, label: "y" }],
    ["an empty answer", {}, {}],
    ["a decision set to undefined (absent once serialized)", { label: undefined }, { label: undefined }],
  ])("reads %s", (_, answer, expected) => {
    expect(parseAnswer(TEST_POINT, answer)).toEqual(expected);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ["a string for a boolean", { enabled: "yes" }, 'decision "enabled" must be a boolean, not a string'],
    ["a fraction for an integer", { limit: 1.5 }, 'decision "limit" must be an integer, not a number (1.5)'],
    ["a list with a number", { tags: ["a", 2] }, 'decision "tags" must be a list of strings, not an array'],
    ["null for a decision that is not nullable", { label: null }, 'decision "label" must be a string, not null'],
    ["two wrong keys: the first in the answer's order", { tags: 1, enabled: 0 }, 'decision "tags" must be a list of strings, not a number'],
  ])("refuses %s, naming the decision", (_, answer, message) => {
    expect(() => parseAnswer(TEST_POINT, { unknown: 1, ...answer })).toThrow(message);
  });
});

describe("remote answers", () => {
  let server: ScriptedServer;

  beforeEach(async () => {
    server = await ScriptedServer.start();
  });
  afterEach(async () => {
    await server.close();
  });

  function chain(): { chain: HookChain; sink: MemoryEventSink } {
    const [entry] = parseHookDeclaration([{ name: "remote", url: server.url }], { configDir: "/etc/the-loop", points: LIFECYCLE_POINT_NAMES });
    const sink = new MemoryEventSink();
    return { chain: new HookChain([createRemoteExecutor(entry as RemoteHookEntry, { points: LIFECYCLE_POINTS })], sink), sink };
  }

  it("ignores and records unknown keys in the result and the envelope, and applies the decisions", async () => {
    server.respond = (request, response) =>
      reply(response, {
        jsonrpc: "2.0",
        id: request.json?.id ?? null,
        result: { proceed: false, reason: "no", colour: "blue", nested: { a: 1 } },
        extension: true,
      });
    const { chain: hooks, sink } = chain();
    const outcome = await hooks.run("work_item_start", startContext());
    expect(outcome.refusal).toEqual({ hook: "remote", reason: "no" });
    expect(hookEvents(sink)).toContainEqual(["hooks.ignored", { point: "work_item_start", hook: "remote", fields: ["colour", "nested"] }]);
    expect(hookEvents(sink).some(([type]) => type === "hooks.failed")).toBe(false);
  });

  it("fails the hook for a wrong-typed decision, with a message naming it, and applies nothing", async () => {
    server.result({ proceed: "no", reason: "typed wrong" });
    const { chain: hooks, sink } = chain();
    const outcome = await hooks.run("work_item_start", startContext());
    expect(outcome.refusal).toBeUndefined();
    expect(outcome.changed).toEqual([]);
    expect(hookEvents(sink)).toContainEqual([
      "hooks.failed",
      { point: "work_item_start", hook: "remote", error: 'decision "proceed" must be a boolean, not a string', required: false },
    ]);
  });

  it.each<[string, unknown, string]>([
    [
      "an error without a code",
      { jsonrpc: "2.0", id: 1, error: { message: "m" } },
      "malformed reply: error must be an object with a numeric code and a message",
    ],
    ["a result that is a list", { jsonrpc: "2.0", id: 1, result: [1] }, "malformed reply: result is an array, not an object or null"],
    ["another protocol version", { jsonrpc: "1.0", id: 1, result: null }, 'malformed reply: not a JSON-RPC 2.0 response ("jsonrpc" is not "2.0")'],
  ])("refuses %s with a clear message", async (_, body, message) => {
    server.respond = (_request, response) => reply(response, body);
    const [entry] = parseHookDeclaration([{ name: "remote", url: server.url }], { configDir: "/etc/the-loop", points: LIFECYCLE_POINT_NAMES });
    const remote = createRemoteExecutor(entry as RemoteHookEntry, { points: LIFECYCLE_POINTS });
    const spawn = LIFECYCLE_POINTS.find((point) => point.name === "session_spawn");
    expect(await failureOf(remote.invoke(spawn ?? TEST_POINT, spawnContext()))).toBe(message);
    await remote.close?.();
  });
});
