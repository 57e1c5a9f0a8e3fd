import { describe, expect, it } from "vitest";
import { HOOK_RPC_ERRORS, LIFECYCLE_POINTS, LifecycleHooks, MAX_BATCH_REQUESTS, handleRequest } from "../../src/sdk/hooks/index.js";
import type { JsonRpcResponse, PhaseChangedContext, SessionSpawnContext, WorkItemStartContext } from "../../src/sdk/hooks/index.js";

const workItem = {
  ref: "github:octo/repo#15",
  tracker: "github",
  host: "github.com",
  repository: "octo/repo",
  number: 15,
  kind: "issue",
  url: "https://github.com/octo/repo/issues/15",
  id: "I_15",
};

const startContext = { workItem, actor: "octocat", trigger: "comment", harness: "claude", deliveryId: "d-1", proceed: true, reason: "" };

class PassThrough extends LifecycleHooks {}

function request(method: unknown, params: unknown = startContext, id: unknown = 1): string {
  return JSON.stringify({ jsonrpc: "2.0", id, method, params });
}

type Answer = JsonRpcResponse & { error?: { code: number; message: string }; result?: unknown };

/** A request without an id: JSON-RPC's notification. */
function notification(method: unknown, params: unknown = startContext): string {
  return JSON.stringify({ jsonrpc: "2.0", method, params });
}

async function call(executor: LifecycleHooks, body: string | Uint8Array): Promise<Answer> {
  const text = await handleRequest(executor, body);
  if (text === undefined) throw new Error("handleRequest answered nothing where a response was expected");
  return JSON.parse(text) as Answer;
}

async function callBatch(executor: LifecycleHooks, elements: readonly string[]): Promise<Answer[]> {
  const text = await handleRequest(executor, `[${elements.join(",")}]`);
  if (text === undefined) throw new Error("handleRequest answered nothing where a batch response was expected");
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed)) throw new Error(`expected an array of responses, got ${text}`);
  return parsed as Answer[];
}

/** Records every point it is called at, so a test can tell a hook that ran from one that did not. */
class Recorder extends LifecycleHooks {
  readonly calls: string[] = [];

  override workItemStart(context: WorkItemStartContext): WorkItemStartContext {
    this.calls.push(`work_item_start:${context.actor}`);
    return context.actor === "mallory" ? { ...context, proceed: false, reason: "not on the allow list" } : context;
  }

  override phaseChanged(): undefined {
    this.calls.push("phase_changed");
    return undefined;
  }

  override workItemComplete(): never {
    this.calls.push("work_item_complete");
    throw new Error("the ledger is down");
  }
}

describe("handleRequest: malformed requests", () => {
  const cases: ReadonlyArray<{ name: string; body: string | Uint8Array; code: number; id: unknown; message?: RegExp }> = [
    { name: "a body that is not JSON", body: "{", code: HOOK_RPC_ERRORS.parseError, id: null },
    { name: "an empty body", body: "", code: HOOK_RPC_ERRORS.parseError, id: null },
    { name: "bytes that are not UTF-8", body: new Uint8Array([0x7b, 0xff, 0x7d]), code: HOOK_RPC_ERRORS.parseError, id: null },
    { name: "an empty batch", body: "[]", code: HOOK_RPC_ERRORS.invalidRequest, id: null, message: /^Invalid Request/ },
    { name: "a number", body: "1", code: HOOK_RPC_ERRORS.invalidRequest, id: null, message: /^Invalid Request/ },
    { name: "null", body: "null", code: HOOK_RPC_ERRORS.invalidRequest, id: null },
    { name: "a string", body: '"work_item_start"', code: HOOK_RPC_ERRORS.invalidRequest, id: null },
    {
      name: "an id that is an object",
      body: JSON.stringify({ jsonrpc: "2.0", id: { n: 1 }, method: "work_item_start", params: {} }),
      code: HOOK_RPC_ERRORS.invalidRequest,
      id: null,
    },
    {
      name: "jsonrpc 1.0",
      body: JSON.stringify({ jsonrpc: "1.0", id: 7, method: "work_item_start", params: {} }),
      code: HOOK_RPC_ERRORS.invalidRequest,
      id: 7,
    },
    { name: "no jsonrpc member", body: JSON.stringify({ id: "a", method: "work_item_start", params: {} }), code: HOOK_RPC_ERRORS.invalidRequest, id: "a" },
    { name: "no method", body: JSON.stringify({ jsonrpc: "2.0", id: 3, params: {} }), code: HOOK_RPC_ERRORS.invalidRequest, id: 3 },
    { name: "a method that is not a string", body: request(5, {}, 4), code: HOOK_RPC_ERRORS.invalidRequest, id: 4 },
    { name: "an event type as method", body: request("hooks.refused", {}, 5), code: HOOK_RPC_ERRORS.methodNotFound, id: 5, message: /work_item_start/ },
    { name: "the executor's method name", body: request("workItemStart", {}, 6), code: HOOK_RPC_ERRORS.methodNotFound, id: 6 },
    { name: "an inherited property name", body: request("constructor", {}, 6), code: HOOK_RPC_ERRORS.methodNotFound, id: 6 },
    { name: "params absent", body: JSON.stringify({ jsonrpc: "2.0", id: 8, method: "work_item_start" }), code: HOOK_RPC_ERRORS.invalidParams, id: 8 },
    { name: "params an array", body: request("work_item_start", [startContext], 9), code: HOOK_RPC_ERRORS.invalidParams, id: 9 },
    { name: "params null", body: request("work_item_start", null, 10), code: HOOK_RPC_ERRORS.invalidParams, id: 10 },
    { name: "params a string", body: request("work_item_start", "{}", 11), code: HOOK_RPC_ERRORS.invalidParams, id: 11 },
  ];

  it.each(cases)("answers $name with $code", async ({ body, code, id, message }) => {
    let called = 0;
    class Counting extends LifecycleHooks {
      override workItemStart(): undefined {
        called += 1;
        return undefined;
      }
    }
    const response = await call(new Counting(), body);
    expect(response).toMatchObject({ jsonrpc: "2.0", id, error: { code } });
    expect(response).not.toHaveProperty("result");
    if (message) expect(response.error?.message).toMatch(message);
    expect(called).toBe(0);
  });

  it("names every point when the method is not one", async () => {
    const response = await call(new PassThrough(), request("poll.cycle_started"));
    for (const point of LIFECYCLE_POINTS) expect(response.error?.message).toContain(point.name);
  });
});

describe("handleRequest: the executor's answer", () => {
  it("passes every point through with null when the executor overrides nothing", async () => {
    for (const point of LIFECYCLE_POINTS) {
      expect(await call(new PassThrough(), request(point.name, {}, point.name))).toEqual({ jsonrpc: "2.0", id: point.name, result: null });
    }
  });

  it("passes through the points an executor does not override, and answers the ones it does", async () => {
    class RefuseStarts extends LifecycleHooks {
      override workItemStart(context: WorkItemStartContext): WorkItemStartContext {
        return { ...context, proceed: false, reason: "frozen" };
      }
    }
    const executor = new RefuseStarts();
    expect((await call(executor, request("work_item_start"))).result).toEqual({ proceed: false, reason: "frozen" });
    expect((await call(executor, request("session_spawn", {}))).result).toBeNull();
    expect((await call(executor, request("work_item_complete", {}))).result).toBeNull();
  });

  it("treats a null return as pass-through", async () => {
    class ReturnsNull extends LifecycleHooks {
      override sessionSpawned(): null {
        return null;
      }
    }
    expect(await call(new ReturnsNull(), request("session_spawned", {}, 2))).toEqual({ jsonrpc: "2.0", id: 2, result: null });
  });

  it("sends back only the point's decisions: facts and unknown keys stay home", async () => {
    class Rewrites extends LifecycleHooks {
      override sessionSpawn(context: SessionSpawnContext): SessionSpawnContext {
        return {
          ...context,
          harness: "changed",
          workItem: { ...context.workItem, number: 99 },
          prompt: `[policy] ${context.prompt}`,
          extra: 1,
        } as SessionSpawnContext;
      }
    }
    const context = {
      workItem,
      actor: "a",
      harness: "claude",
      tmuxTarget: "t",
      cwd: "/w",
      harnessSessionId: "h",
      pullRequest: "",
      deliveryId: "d",
      proceed: true,
      reason: "",
      prompt: "go",
    };
    const response = await call(new Rewrites(), request("session_spawn", context));
    expect(response.result).toEqual({ proceed: true, reason: "", prompt: "[policy] go" });
  });

  it("sends back only the decisions the returned object has", async () => {
    class Partial extends LifecycleHooks {
      override workItemStart(): WorkItemStartContext {
        return { proceed: false } as WorkItemStartContext;
      }
    }
    expect((await call(new Partial(), request("work_item_start"))).result).toEqual({ proceed: false });
  });

  it("answers an empty object at a point with no decisions", async () => {
    class Observes extends LifecycleHooks {
      override inputReceived<C>(context: C): C {
        return context;
      }
    }
    expect((await call(new Observes(), request("input_received", { workItem, text: "hi" }))).result).toEqual({});
  });

  it("passes the decision values as returned, leaving their types to the client", async () => {
    class WrongType extends LifecycleHooks {
      override phaseChanged(context: PhaseChangedContext): PhaseChangedContext {
        return { ...context, notify: "no" as unknown as boolean };
      }
    }
    expect((await call(new WrongType(), request("phase_changed", { notify: true }))).result).toEqual({ notify: "no" });
  });

  it("awaits an async method and keeps `this`", async () => {
    class Async extends LifecycleHooks {
      private readonly suffix = "(checked)";
      override async waitingForInput<C extends { question: string }>(context: C): Promise<C> {
        await new Promise((resolve) => setTimeout(resolve, 5));
        return { ...context, question: `${context.question} ${this.suffix}`, summary: "one line" };
      }
    }
    const response = await call(new Async(), request("waiting_for_input", { workItem, asker: "agent", node: "", question: "Ship it?", summary: "" }));
    expect(response.result).toEqual({ question: "Ship it? (checked)", summary: "one line" });
  });

  it.each([
    { name: "an array", value: [], type: "an array" },
    { name: "a string", value: "proceed", type: "a string" },
    { name: "a number", value: 0, type: "a number" },
    { name: "a boolean", value: false, type: "a boolean" },
    { name: "a Map", value: new Map([["proceed", false]]), type: "a Map" },
  ])("answers -32603 when the executor returns $name", async ({ value, type }) => {
    class Returns extends LifecycleHooks {
      override workItemStart(): WorkItemStartContext {
        return value as unknown as WorkItemStartContext;
      }
    }
    const response = await call(new Returns(), request("work_item_start", startContext, 12));
    expect(response).toEqual({
      jsonrpc: "2.0",
      id: 12,
      error: { code: HOOK_RPC_ERRORS.internalError, message: `the executor returned ${type}, not a context` },
    });
  });

  it("answers -32603 when a decision has no JSON form", async () => {
    class BigIntReason extends LifecycleHooks {
      override workItemStart(context: WorkItemStartContext): WorkItemStartContext {
        return { ...context, reason: 1n as unknown as string };
      }
    }
    const response = await call(new BigIntReason(), request("work_item_start", startContext, 13));
    expect(response).toMatchObject({ id: 13, error: { code: HOOK_RPC_ERRORS.internalError } });
  });
});

describe("handleRequest: a hook that raises", () => {
  it.each([
    {
      name: "synchronously",
      method: (): never => {
        throw new Error("compliance service said no");
      },
    },
    {
      name: "asynchronously",
      method: async (): Promise<never> => {
        throw new Error("compliance service said no");
      },
    },
  ])("answers -32000 with the message when it raises $name", async ({ method }) => {
    class Raises extends LifecycleHooks {
      override workItemStart = method;
    }
    expect(await call(new Raises(), request("work_item_start", startContext, "r"))).toEqual({
      jsonrpc: "2.0",
      id: "r",
      error: { code: HOOK_RPC_ERRORS.hookRaised, message: "the hook raised: compliance service said no" },
    });
  });

  it("describes a thrown value that is not an Error", async () => {
    class ThrowsString extends LifecycleHooks {
      override workItemStart(): never {
        throw "plain text";
      }
    }
    expect((await call(new ThrowsString(), request("work_item_start"))).error?.message).toBe("the hook raised: plain text");
  });

  it("survives a thrown value that cannot be turned into text", async () => {
    class ThrowsOpaque extends LifecycleHooks {
      override workItemStart(): never {
        throw Object.create(null) as unknown;
      }
    }
    expect((await call(new ThrowsOpaque(), request("work_item_start"))).error?.code).toBe(HOOK_RPC_ERRORS.hookRaised);
  });

  it("truncates the message to 1000 characters", async () => {
    class Verbose extends LifecycleHooks {
      override workItemStart(): never {
        throw new Error("x".repeat(5000));
      }
    }
    const message = (await call(new Verbose(), request("work_item_start"))).error?.message ?? "";
    expect(message.startsWith("the hook raised: xxx")).toBe(true);
    expect(message.length).toBe(1000);
  });
});

describe("handleRequest: the id", () => {
  it.each([
    { name: "an integer", id: 42, expected: 42 },
    { name: "zero", id: 0, expected: 0 },
    { name: "a string", id: "req-1", expected: "req-1" },
    { name: "null", id: null, expected: null },
  ])("echoes $name", async ({ id, expected }) => {
    expect((await call(new PassThrough(), request("work_item_start", startContext, id))).id).toBe(expected);
  });

  it("answers an explicit null id: null is an id, not its absence", async () => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: null, method: "work_item_start", params: startContext });
    expect(await call(new PassThrough(), body)).toEqual({ jsonrpc: "2.0", id: null, result: null });
  });

  it("reads a body given as bytes", async () => {
    const body = new TextEncoder().encode(request("work_item_start", { ...startContext, actor: "ünïcødé" }, 77));
    expect(await call(new PassThrough(), body)).toEqual({ jsonrpc: "2.0", id: 77, result: null });
  });
});

describe("handleRequest: notifications", () => {
  it("runs a notification's hook and answers nothing", async () => {
    const executor = new Recorder();
    expect(await handleRequest(executor, notification("work_item_start", { ...startContext, actor: "mallory" }))).toBeUndefined();
    expect(executor.calls).toEqual(["work_item_start:mallory"]);
  });

  it("answers nothing even when the notification's hook raises", async () => {
    const executor = new Recorder();
    expect(await handleRequest(executor, notification("work_item_complete", {}))).toBeUndefined();
    expect(executor.calls).toEqual(["work_item_complete"]);
  });

  it.each([
    { name: "names no point", body: notification("poll.cycle_started") },
    { name: "has params that are not an object", body: notification("work_item_start", []) },
    { name: "has no params", body: JSON.stringify({ jsonrpc: "2.0", method: "work_item_start" }) },
  ])("answers nothing to a notification that $name, and runs no hook", async ({ body }) => {
    const executor = new Recorder();
    expect(await handleRequest(executor, body)).toBeUndefined();
    expect(executor.calls).toEqual([]);
  });

  it.each([
    { name: "jsonrpc 1.0", body: JSON.stringify({ jsonrpc: "1.0", method: "work_item_start", params: startContext }) },
    { name: "no jsonrpc member", body: JSON.stringify({ method: "work_item_start", params: startContext }) },
    { name: "a method that is not a string", body: notification(5) },
  ])("answers a request without an id that is not well formed ($name) with id null", async ({ body }) => {
    const executor = new Recorder();
    expect(await call(executor, body)).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: HOOK_RPC_ERRORS.invalidRequest } });
    expect(executor.calls).toEqual([]);
  });
});

describe("handleRequest: batches", () => {
  it("answers each request of a batch with its own id, in the batch's order", async () => {
    const executor = new Recorder();
    const answers = await callBatch(executor, [
      request("work_item_start", { ...startContext, actor: "mallory" }, 1),
      request("phase_changed", {}, "two"),
      request("work_item_start", { ...startContext, actor: "ann" }, 3),
    ]);
    expect(answers).toEqual([
      { jsonrpc: "2.0", id: 1, result: { proceed: false, reason: "not on the allow list" } },
      { jsonrpc: "2.0", id: "two", result: null },
      { jsonrpc: "2.0", id: 3, result: { proceed: true, reason: "" } },
    ]);
    expect(executor.calls).toEqual(["work_item_start:mallory", "phase_changed", "work_item_start:ann"]);
  });

  it("answers each invalid element with its own error, keeping its id when it has a valid one, and still runs the rest", async () => {
    const executor = new Recorder();
    const answers = await callBatch(executor, [
      request("poll.cycle_started", {}, 1),
      "1",
      JSON.stringify({ foo: "boo" }),
      JSON.stringify({ jsonrpc: "2.0", id: { n: 1 }, method: "phase_changed", params: {} }),
      JSON.stringify({ jsonrpc: "1.0", id: "old", method: "phase_changed", params: {} }),
      request("work_item_start", "{}", 4),
      request("work_item_complete", {}, 5),
      `[${request("phase_changed", {}, 6)}]`,
      request("phase_changed", {}, 7),
    ]);
    expect(answers.map((answer) => [answer.id, answer.error?.code])).toEqual([
      [1, HOOK_RPC_ERRORS.methodNotFound],
      [null, HOOK_RPC_ERRORS.invalidRequest],
      [null, HOOK_RPC_ERRORS.invalidRequest],
      [null, HOOK_RPC_ERRORS.invalidRequest],
      ["old", HOOK_RPC_ERRORS.invalidRequest],
      [4, HOOK_RPC_ERRORS.invalidParams],
      [5, HOOK_RPC_ERRORS.hookRaised],
      [null, HOOK_RPC_ERRORS.invalidRequest],
      [7, undefined],
    ]);
    expect(answers[8]).toEqual({ jsonrpc: "2.0", id: 7, result: null });
    expect(executor.calls).toEqual(["work_item_complete", "phase_changed"]);
  });

  it("leaves a batch's notifications out of its answer, but runs them", async () => {
    const executor = new Recorder();
    const answers = await callBatch(executor, [notification("phase_changed", {}), request("phase_changed", {}, 9), notification("work_item_complete", {})]);
    expect(answers).toEqual([{ jsonrpc: "2.0", id: 9, result: null }]);
    expect(executor.calls).toEqual(["phase_changed", "phase_changed", "work_item_complete"]);
  });

  it("answers nothing to a batch made only of notifications, and runs them all", async () => {
    const executor = new Recorder();
    const body = `[${notification("work_item_start", { ...startContext, actor: "ann" })},${notification("phase_changed", {})}]`;
    expect(await handleRequest(executor, body)).toBeUndefined();
    expect(executor.calls).toEqual(["work_item_start:ann", "phase_changed"]);
  });

  it("runs a batch's requests one after another, never two hooks at once", async () => {
    const events: string[] = [];
    class Slow extends LifecycleHooks {
      override async phaseChanged(context: PhaseChangedContext): Promise<undefined> {
        const label = String((context as unknown as { label: unknown }).label);
        events.push(`enter ${label}`);
        await new Promise((resolve) => setTimeout(resolve, label === "first" ? 30 : 1));
        events.push(`leave ${label}`);
        return undefined;
      }
    }
    await callBatch(new Slow(), [request("phase_changed", { label: "first" }, 1), request("phase_changed", { label: "second" }, 2)]);
    expect(events).toEqual(["enter first", "leave first", "enter second", "leave second"]);
  });

  it("keeps one element's decision that has no JSON form from spoiling the others' answers", async () => {
    class BigIntReason extends LifecycleHooks {
      override workItemStart(context: WorkItemStartContext): WorkItemStartContext {
        return { ...context, reason: 1n as unknown as string };
      }
    }
    const answers = await callBatch(new BigIntReason(), [
      request("phase_changed", {}, 1),
      request("work_item_start", startContext, 2),
      request("phase_changed", {}, 3),
    ]);
    expect(answers).toEqual([
      { jsonrpc: "2.0", id: 1, result: null },
      { jsonrpc: "2.0", id: 2, error: { code: HOOK_RPC_ERRORS.internalError, message: expect.stringMatching(/not JSON/) as unknown } },
      { jsonrpc: "2.0", id: 3, result: null },
    ]);
  });

  it(`answers a batch of ${MAX_BATCH_REQUESTS} requests`, async () => {
    const executor = new Recorder();
    const answers = await callBatch(
      executor,
      Array.from({ length: MAX_BATCH_REQUESTS }, (_, index) => request("phase_changed", {}, index)),
    );
    expect(answers.map((answer) => answer.id)).toEqual(Array.from({ length: MAX_BATCH_REQUESTS }, (_, index) => index));
    expect(executor.calls).toHaveLength(MAX_BATCH_REQUESTS);
  });

  it(`refuses a batch over ${MAX_BATCH_REQUESTS} requests with one error, running none of it`, async () => {
    const executor = new Recorder();
    const elements = Array.from({ length: MAX_BATCH_REQUESTS + 1 }, (_, index) => request("phase_changed", {}, index));
    const answer = await call(executor, `[${elements.join(",")}]`);
    expect(answer).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: {
        code: HOOK_RPC_ERRORS.invalidRequest,
        message: `Invalid Request: a batch holds at most ${MAX_BATCH_REQUESTS} requests; this one holds ${MAX_BATCH_REQUESTS + 1}`,
      },
    });
    expect(executor.calls).toEqual([]);
  });
});
