import { describe, expect, it } from "vitest";
import { LifecycleHooks, LoopHooks } from "../../src/sdk/hooks/base.js";
import { HOOK_RPC_ERRORS, handleRequest } from "../../src/sdk/hooks/protocol.js";
import { HookServer } from "../../src/sdk/hooks/server.js";
import type { LoopDenyAnswer, LoopGatePrePayload, LoopAnnotateAnswer, LoopTerminalPayload } from "../../src/sdk/hooks/loop-catalog.js";
import type { WorkItemStartContext } from "../../src/sdk/hooks/catalog.js";
import { gatePre } from "../hooks/support/loop-fixtures.js";

class Both extends LoopHooks {
  override workItemStart(context: WorkItemStartContext): WorkItemStartContext {
    return { ...context, proceed: false, reason: "closed" };
  }

  override loopGatePre(payload: LoopGatePrePayload): LoopDenyAnswer {
    // An agh-style answer: the payload back, with `deny`.
    return { ...payload, deny: true, deny_reason: `no ${payload.decision ?? "step"}` };
  }

  override loopTerminal(_payload: LoopTerminalPayload): LoopAnnotateAnswer {
    return { labels: { outcome: "seen" } };
  }
}

class LifecycleOnly extends LifecycleHooks {}

const request = (method: string, params: unknown, id: number = 1): string => JSON.stringify({ jsonrpc: "2.0", method, params, id });

describe("handleRequest serves both families", () => {
  it.each<[string, string, unknown, unknown]>([
    ["a .pre loop event: only the decisions travel back", "loop.gate.pre", gatePre(), { deny_reason: "no approve", deny: true }],
    ["an observe-only loop event: its labels", "loop.terminal", {}, { labels: { outcome: "seen" } }],
    ["a loop event the class does not override: null", "loop.started", {}, null],
    ["a lifecycle point on the same class", "work_item_start", { proceed: true, reason: "" }, { proceed: false, reason: "closed" }],
  ])("%s", async (_label, method, params, result) => {
    expect(JSON.parse((await handleRequest(new Both(), request(method, params))) ?? "null")).toEqual({ jsonrpc: "2.0", id: 1, result });
  });

  it("answers -32601 for a loop event when the class extends LifecycleHooks only", async () => {
    const answer = JSON.parse((await handleRequest(new LifecycleOnly(), request("loop.gate.pre", gatePre()))) ?? "null") as {
      error: { code: number; message: string };
    };
    expect(answer.error).toEqual({
      code: HOOK_RPC_ERRORS.methodNotFound,
      message: "Method not found: the executor has no loopGatePre method; a class handling loop.gate.pre extends LoopHooks",
    });
  });

  it("answers -32601 for a wildcard, naming the points of both families", async () => {
    const answer = JSON.parse((await handleRequest(new Both(), request("loop.*", {}))) ?? "null") as { error: { code: number; message: string } };
    expect(answer.error.code).toBe(HOOK_RPC_ERRORS.methodNotFound);
    expect(answer.error.message).toMatch(
      /^Method not found: "loop\.\*" is not a hook point; the points are work_item_start, .*, loop\.started, .*loop\.terminal$/,
    );
  });

  it("HookServer hosts a LoopHooks class over HTTP", async () => {
    const server = new HookServer(new Both());
    const url = await server.listen();
    try {
      const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: request("loop.terminal", {}, 9) });
      expect(await response.json()).toEqual({ jsonrpc: "2.0", id: 9, result: { labels: { outcome: "seen" } } });
    } finally {
      await server.close();
    }
  });
});
