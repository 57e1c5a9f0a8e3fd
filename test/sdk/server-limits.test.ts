import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { HOOK_RPC_ERRORS, HookServer, LifecycleHooks, handleRequest } from "../../src/sdk/hooks/index.js";
import type { WorkItemStartContext } from "../../src/sdk/hooks/index.js";

/** Review findings on the SDK's server half: each test failed before its fix. */

const servers: HookServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

class PassThrough extends LifecycleHooks {}

async function started(options: ConstructorParameters<typeof HookServer>[1]): Promise<URL> {
  const server = new HookServer(new PassThrough(), options);
  servers.push(server);
  return new URL(await server.listen());
}

/**
 * Opens a connection, writes `head`, then one byte of `drip` every 50 ms; resolves when the
 * server lets go (or after 5 s) to the milliseconds that took and the status line it answered.
 */
function trickle(url: URL, head: string, drip: string): Promise<{ ms: number; status: string }> {
  return new Promise((resolve) => {
    const began = Date.now();
    let answer = "";
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(head);
      const dripping = setInterval(() => socket.write(drip), 50);
      const giveUp = setTimeout(() => socket.destroy(), 5_000);
      socket.on("close", () => {
        clearInterval(dripping);
        clearTimeout(giveUp);
        resolve({ ms: Date.now() - began, status: answer.split("\r\n")[0] ?? "" });
      });
    });
    socket.on("data", (data: Buffer) => {
      answer += data.toString("latin1");
    });
    socket.on("error", () => undefined);
  });
}

describe("HookServer bounds a slow client by requestTimeoutMs", () => {
  it("cuts a body trickled slower than requestTimeoutMs allows", async () => {
    const url = await started({ requestTimeoutMs: 300 });
    const cut = await trickle(url, "POST / HTTP/1.1\r\nhost: hooks\r\ncontent-length: 100000\r\n\r\n{", " ");
    expect(cut.ms).toBeLessThan(2_500);
    expect(cut.status).toBe("HTTP/1.1 408 Request Timeout");
  });

  it("cuts headers trickled slower than requestTimeoutMs allows", async () => {
    const url = await started({ requestTimeoutMs: 300 });
    const cut = await trickle(url, "POST / HTTP/1.1\r\nhost: hooks\r\nx-slow: ", "a");
    expect(cut.ms).toBeLessThan(2_500);
    expect(cut.status).toBe("HTTP/1.1 408 Request Timeout");
  });
});

describe("HookServer refuses a token no request could present", () => {
  it.each([
    ["a trailing newline", "s3cret\n"],
    ["a space", "two words"],
    ["a tab", "tab\there"],
  ])("with %s", (_title, token) => {
    expect(() => new HookServer(new PassThrough(), { token })).toThrow(/token must not contain whitespace/);
  });

  it("given as undefined, from a variable that is not set, rather than serving with no check", () => {
    const unset: NodeJS.ProcessEnv = {};
    expect(() => new HookServer(new PassThrough(), { token: unset["COMPLIANCE_TOKEN"] })).toThrow(/token is undefined/);
    expect(() => new HookServer(new PassThrough(), { token: 42 as unknown as string })).toThrow(/token must be a string/);
    expect(() => new HookServer(new PassThrough(), {})).not.toThrow();
  });

  it("still takes a token of any other printable characters", async () => {
    const token = "aZ0-._~+/=!#$%&'*^`|";
    const url = await started({ token });
    const response = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "phase_changed", params: {} }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ jsonrpc: "2.0", id: 1, result: null });
  });
});

describe("handleRequest keeps the request's id once it has read it", () => {
  it("when reading the executor's answer throws", async () => {
    class Getter extends LifecycleHooks {
      override workItemStart(): WorkItemStartContext {
        return Object.defineProperty({}, "proceed", {
          enumerable: true,
          get: () => {
            throw new Error("getter broke");
          },
        }) as WorkItemStartContext;
      }
    }
    const text = await handleRequest(new Getter(), JSON.stringify({ jsonrpc: "2.0", id: 5, method: "work_item_start", params: {} }));
    expect(text && JSON.parse(text)).toEqual({
      jsonrpc: "2.0",
      id: 5,
      error: { code: HOOK_RPC_ERRORS.internalError, message: "Internal error: getter broke" },
    });
  });

  it("when the executor's method cannot even be looked up", async () => {
    class Trap extends LifecycleHooks {}
    Object.defineProperty(Trap.prototype, "workItemStart", {
      get: () => {
        throw new Error("no such thing");
      },
    });
    const text = await handleRequest(new Trap(), JSON.stringify({ jsonrpc: "2.0", id: "x", method: "work_item_start", params: {} }));
    expect(text && JSON.parse(text)).toMatchObject({ jsonrpc: "2.0", id: "x", error: { code: HOOK_RPC_ERRORS.internalError } });
  });
});
