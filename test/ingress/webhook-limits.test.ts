import { randomUUID } from "node:crypto";
import { connect } from "node:net";
import { sign } from "@octokit/webhooks-methods";
import { describe, expect, it } from "vitest";
import { ghWebhookSchema } from "../../src/config/schema.js";
import type { GhWebhookConfig } from "../../src/config/schema.js";
import { MemoryEventSink } from "../../src/events/log.js";
import { WebhookReceiver } from "../../src/ingress/webhook/server.js";
import type { WebhookReceiverOptions } from "../../src/ingress/webhook/server.js";
import { waitFor } from "../support/wait.js";
import { RecordingHandler, commentPayload, receiversStoppedAfterEach } from "../support/webhook.js";

const SECRET = "s3cret-for-the-limits-test";
const ENV = { THE_LOOP_GH_WEBHOOK_SECRET: SECRET };

const started = receiversStoppedAfterEach();

async function startReceiver(overrides: Partial<GhWebhookConfig> = {}, options: Partial<WebhookReceiverOptions> = {}) {
  const handler = new RecordingHandler();
  const events = new MemoryEventSink();
  const config = ghWebhookSchema.parse({ enabled: true, port: 0, maxBodyBytes: 4_096, ...overrides });
  const receiver = new WebhookReceiver({ config, handler, events, env: ENV, stopGraceMs: 100, ...options });
  const address = await receiver.start();
  started.push(receiver);
  return { receiver, handler, events, port: address.port, url: `http://127.0.0.1:${address.port}${config.path}` };
}

async function post(url: string, event: string, body: string, deliveryId: string): Promise<{ status: number; json: unknown }> {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": event,
      "x-github-delivery": deliveryId,
      "x-hub-signature-256": await sign(SECRET, body),
    },
    body,
  });
  return { status: response.status, json: await response.json() };
}

/** Opens a raw connection, writes `text` and never finishes the request; resolves with what came back once the server closes it. */
function stalledRequest(port: number, text: string): { closed: Promise<string>; socket: ReturnType<typeof connect> } {
  const socket = connect(port, "127.0.0.1");
  let answer = "";
  const closed = new Promise<string>((resolve) => {
    socket.on("data", (chunk: Buffer) => (answer += chunk.toString("latin1")));
    socket.on("close", () => resolve(answer));
    socket.on("error", () => undefined);
  });
  // Nothing at all is written for an empty text: even an empty write counts as the start of a request.
  if (text !== "") socket.write(text);
  return { closed, socket };
}

describe("the webhook receiver: timeouts and hostile input", () => {
  it("cuts off a body that never completes instead of holding it (and its memory) for minutes", async () => {
    const h = await startReceiver({}, { requestTimeoutMs: 300 });
    // Declares 2 000 bytes, sends 10, then stalls: without a request timeout node:http waits five minutes.
    const stalled = stalledRequest(
      h.port,
      "POST /gh-webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: issues\r\nContent-Length: 2000\r\n\r\n0123456789",
    );
    try {
      const answer = await waitFor("the stalled request to be cut off", () => Promise.race([stalled.closed, Promise.resolve(undefined)]), {
        timeoutMs: 5_000,
      });
      expect(answer.startsWith("HTTP/1.1 408")).toBe(true);
      expect(h.handler.received).toEqual([]);
      await waitFor("the timeout's rejection event", async () =>
        h.events.events.find((e) => e.type === "webhook.rejected" && e.fields.reason === "timeout" && e.fields.status === 408),
      );
    } finally {
      stalled.socket.destroy();
    }
  });

  it("cuts off headers that never complete", async () => {
    const h = await startReceiver({}, { requestTimeoutMs: 300 });
    const stalled = stalledRequest(h.port, "POST /gh-webhook HTTP/1.1\r\nHost: x\r\nX-GitHub-Ev");
    try {
      await waitFor("the stalled headers to be cut off", () => Promise.race([stalled.closed, Promise.resolve(undefined)]), { timeoutMs: 5_000 });
    } finally {
      stalled.socket.destroy();
    }
    // The receiver goes on serving.
    expect((await post(h.url, "issue_comment", JSON.stringify(commentPayload("after")), randomUUID())).status).toBe(202);
  });

  it("closes a connection that never sends a byte (each one holds a file descriptor of the daemon's)", async () => {
    const h = await startReceiver({}, { requestTimeoutMs: 300 });
    const silent = stalledRequest(h.port, "");
    try {
      await waitFor("the silent connection to be closed", () => Promise.race([silent.closed, Promise.resolve(undefined)]), { timeoutMs: 5_000 });
    } finally {
      silent.socket.destroy();
    }
  });

  it("hands one delivery over once when two requests carry its id at the same moment", async () => {
    const h = await startReceiver();
    for (let round = 0; round < 10; round++) {
      const id = randomUUID();
      const body = JSON.stringify(commentPayload(`round ${round}`));
      const answers = await Promise.all([
        post(h.url, "issue_comment", body, id),
        post(h.url, "issue_comment", body, id),
        post(h.url, "issue_comment", body, id),
      ]);
      expect(answers.map((a) => a.status)).toEqual([202, 202, 202]);
      expect(answers.filter((a) => JSON.stringify(a.json) === '{"status":"accepted"}')).toHaveLength(1);
      expect(answers.filter((a) => JSON.stringify(a.json) === '{"status":"duplicate"}')).toHaveLength(2);
    }
    await waitFor("every first delivery", () => (h.handler.received.length >= 10 ? true : undefined));
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.handler.received).toHaveLength(10);
    expect(new Set(h.handler.received.map((e) => e.deliveryId)).size).toBe(10);
  });

  it("does not let a refused (badly signed) request spend a delivery id", async () => {
    const h = await startReceiver();
    const id = randomUUID();
    const body = JSON.stringify(commentPayload("forged"));
    const forged = await fetch(h.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "issue_comment",
        "x-github-delivery": id,
        "x-hub-signature-256": `sha256=${"a".repeat(64)}`,
      },
      body,
    });
    expect(forged.status).toBe(401);
    // GitHub's own delivery with that id still goes through.
    expect((await post(h.url, "issue_comment", JSON.stringify(commentPayload("real")), id)).json).toEqual({ status: "accepted" });
    await waitFor("the real delivery", () => (h.handler.received.length === 1 ? true : undefined));
    expect(h.handler.received[0]?.body).toBe("real");
  });

  it("survives payloads with prototype keys, deep nesting, huge numbers and wrong types, and goes on serving", async () => {
    const h = await startReceiver({ maxBodyBytes: 2 * 1024 * 1024 });
    const bodies = [
      '{"__proto__":{"action":"created","issue":{"number":1}},"constructor":{"prototype":{"x":1}}}',
      `{"action":"created","issue":${"[".repeat(500_000)}${"]".repeat(500_000)}}`,
      '{"action":"created","issue":{"number":1e400,"state":"open"},"comment":{"id":1e400},"repository":{"full_name":"octo/repo"}}',
      '{"action":["created"],"issue":"7","comment":7,"repository":{"full_name":["octo","repo"]}}',
      "[1,2,3]",
      '"a string"',
      "12345678901234567890123456789",
      "true",
    ];
    // Each is refused as not what GitHub sends (400), none acted on.
    for (const body of bodies) {
      const answer = await post(h.url, "issue_comment", body, randomUUID());
      expect(answer.status).toBe(400);
      expect(answer.json).toEqual({ status: "rejected", reason: "invalid-payload" });
    }
    // Nothing leaked onto the shared prototype.
    expect(({} as Record<string, unknown>).action).toBeUndefined();
    expect((await post(h.url, "issue_comment", JSON.stringify(commentPayload("still here")), randomUUID())).json).toEqual({ status: "accepted" });
    await waitFor("the good delivery", () => (h.handler.received.length === 1 ? true : undefined));
    expect(h.handler.received[0]?.body).toBe("still here");
  });
});
