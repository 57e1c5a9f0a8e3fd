import { randomUUID } from "node:crypto";
import { request } from "node:http";
import { connect } from "node:net";
import type { IncomingHttpHeaders } from "node:http";
import { sign } from "@octokit/webhooks-methods";
import { describe, expect, it } from "vitest";
import { ghWebhookSchema } from "../../src/config/schema.js";
import type { GhWebhookConfig } from "../../src/config/schema.js";
import { MemoryEventSink } from "../../src/events/log.js";
import { WebhookReceiver } from "../../src/ingress/webhook/server.js";
import type { WebhookReceiverOptions } from "../../src/ingress/webhook/server.js";
import { WebhookSecretError } from "../../src/ingress/webhook/secret.js";
import { waitFor } from "../support/wait.js";
import { RecordingHandler, receiversStoppedAfterEach } from "../support/webhook.js";

const SECRET = "s3cret-for-the-receiver-test";
const ENV = { THE_LOOP_GH_WEBHOOK_SECRET: SECRET };

const repository = { full_name: "octo/repo", html_url: "https://github.com/octo/repo" };
function commentPayload(body = "please fix it", number = 7): Record<string, unknown> {
  return {
    action: "created",
    issue: { number, title: "Bug", body: "", state: "open", labels: [], html_url: `https://github.com/octo/repo/issues/${number}` },
    comment: { id: 100 + number, body, user: { login: "alice" }, html_url: "https://github.com/octo/repo/issues/7#c", created_at: "2025-01-01T00:00:00Z" },
    repository,
    sender: { login: "alice" },
  };
}

interface Harness {
  readonly receiver: WebhookReceiver;
  readonly handler: RecordingHandler;
  readonly events: MemoryEventSink;
  readonly url: string;
  readonly base: string;
}

const started = receiversStoppedAfterEach();

function configOf(overrides: Partial<GhWebhookConfig> = {}): GhWebhookConfig {
  return ghWebhookSchema.parse({ enabled: true, port: 0, maxBodyBytes: 4_096, ...overrides });
}

async function startReceiver(
  overrides: Partial<GhWebhookConfig> = {},
  options: Partial<WebhookReceiverOptions> & { handler?: RecordingHandler } = {},
): Promise<Harness> {
  const handler = options.handler ?? new RecordingHandler();
  const events = new MemoryEventSink();
  const config = configOf(overrides);
  const receiver = new WebhookReceiver({ config, handler, events, env: ENV, ...options });
  const address = await receiver.start();
  started.push(receiver);
  const base = `http://127.0.0.1:${address.port}`;
  return { receiver, handler, events, url: `${base}${config.path}`, base };
}

interface Sent {
  readonly event: string;
  readonly payload?: unknown;
  readonly body?: string;
  readonly deliveryId?: string;
  readonly signature?: string | null;
  readonly secret?: string;
  readonly headers?: Record<string, string>;
}

async function post(url: string, sent: Sent): Promise<{ status: number; json: Record<string, unknown>; deliveryId: string }> {
  const body = sent.body ?? JSON.stringify(sent.payload);
  const deliveryId = sent.deliveryId ?? randomUUID();
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "x-github-event": sent.event,
    "x-github-delivery": deliveryId,
    ...sent.headers,
  };
  if (sent.signature !== null) headers["x-hub-signature-256"] = sent.signature ?? (await sign(sent.secret ?? SECRET, body));
  const response = await fetch(url, { method: "POST", headers, body });
  const text = await response.text();
  return { status: response.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {}, deliveryId };
}

/** A raw request, for what fetch will not send: an over-long body, chunked or declared. */
function rawRequest(
  url: string,
  options: { method?: string; headers?: Record<string, string>; chunks?: Buffer[] },
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? "POST", headers: options.headers, agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on("error", reject);
    });
    req.on("error", reject);
    for (const chunk of options.chunks ?? []) req.write(chunk);
    req.end();
  });
}

function rejections(events: MemoryEventSink): Record<string, unknown>[] {
  return events.events.filter((e) => e.type === "webhook.rejected").map((e) => e.fields);
}

describe("the webhook receiver", () => {
  it("acknowledges a signed delivery with 202 and hands the normalized event over", async () => {
    const h = await startReceiver();
    const sent = await post(h.url, { event: "issue_comment", payload: commentPayload() });
    expect(sent.status).toBe(202);
    expect(sent.json).toEqual({ status: "accepted" });
    await waitFor("the handler", () => (h.handler.received.length === 1 ? true : undefined));
    expect(h.handler.received[0]).toMatchObject({
      source: "gh-webhook",
      deliveryId: sent.deliveryId,
      kind: "commented",
      actor: "alice",
      body: "please fix it",
      workItems: [expect.objectContaining({ ref: "github:octo/repo#7" })],
    });
    const received = h.events.events.find((e) => e.type === "webhook.received");
    expect(received?.fields).toMatchObject({ delivery_id: sent.deliveryId, github_event: "issue_comment", action: "created", verified: true });
    expect(h.events.events.map((e) => e.type)).toContain("webhook.listening");
  });

  it("answers before the handler is called, and never inside the response path", async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const handler = new RecordingHandler(async () => {
      await gate;
      return { settled: true };
    });
    const h = await startReceiver({}, { handler });
    const sent = await post(h.url, { event: "issue_comment", payload: commentPayload() });
    expect(sent.status).toBe(202);
    release();
  });

  it("hands deliveries over in arrival order", async () => {
    const h = await startReceiver();
    const ids: string[] = [];
    for (let i = 1; i <= 20; i++) {
      const sent = await post(h.url, { event: "issue_comment", payload: commentPayload(`comment ${i}`) });
      ids.push(sent.deliveryId);
    }
    await waitFor("every delivery", () => (h.handler.received.length === 20 ? true : undefined));
    expect(h.handler.received.map((e) => e.deliveryId)).toEqual(ids);
  });

  it("answers deliveries pipelined on one connection, each once, in order", async () => {
    const h = await startReceiver();
    const port = Number(new URL(h.base).port);
    const raw = async (body: string, signature: string, id: string): Promise<string> =>
      `POST /gh-webhook HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-GitHub-Event: issue_comment\r\nX-GitHub-Delivery: ${id}\r\nX-Hub-Signature-256: ${signature}\r\n\r\n${body}`;
    const first = JSON.stringify(commentPayload("first"));
    const third = JSON.stringify(commentPayload("third"));
    const requests = [
      await raw(first, await sign(SECRET, first), "pipelined-1"),
      await raw(first, `sha256=${"0".repeat(64)}`, "pipelined-2"),
      await raw(third, await sign(SECRET, third), "pipelined-3"),
    ];
    const socket = connect(port, "127.0.0.1");
    let received = "";
    socket.setEncoding("latin1").on("data", (chunk: string) => (received += chunk));
    // All three in one write: the receiver reads them in one pass.
    socket.write(requests.join(""));
    const answers = await waitFor("three answers", () => {
      const parts = received.split("HTTP/1.1 ").slice(1);
      return parts.length === 3 && received.endsWith("}") ? parts : undefined;
    });
    socket.destroy();
    expect(answers.map((answer) => answer.slice(0, 3))).toEqual(["202", "401", "202"]);
    expect(answers.map((answer) => answer.slice(answer.indexOf("{")))).toEqual([
      '{"status":"accepted"}',
      '{"status":"rejected","reason":"invalid-signature"}',
      '{"status":"accepted"}',
    ]);
    await waitFor("both deliveries", () => (h.handler.received.length === 2 ? true : undefined));
    expect(h.handler.received.map((e) => e.body)).toEqual(["first", "third"]);
  });

  it.each<[string, string | null, string]>([
    ["missing", null, "missing-signature"],
    ["wrong", `sha256=${"0".repeat(64)}`, "invalid-signature"],
    ["signed with another secret", "other", "invalid-signature"],
    ["garbage", "not-a-signature", "invalid-signature"],
  ])("refuses a %s signature with 401 and hands nothing over", async (_name, signature, reason) => {
    const h = await startReceiver();
    const payload = commentPayload();
    const sent =
      signature === "other"
        ? await post(h.url, { event: "issue_comment", payload, secret: "another-secret" })
        : await post(h.url, { event: "issue_comment", payload, signature });
    expect(sent.status).toBe(401);
    expect(sent.json).toEqual({ status: "rejected", reason });
    expect(rejections(h.events)).toEqual([{ reason, status: 401, delivery_id: sent.deliveryId, github_event: "issue_comment" }]);
    // A later good delivery is handed over; the refused one never was.
    await post(h.url, { event: "issue_comment", payload: commentPayload("good") });
    await waitFor("the good delivery", () => (h.handler.received.length === 1 ? true : undefined));
    expect(h.handler.received.map((e) => e.body)).toEqual(["good"]);
  });

  it("refuses a body over the cap by its Content-Length, before reading it", async () => {
    const h = await startReceiver({ maxBodyBytes: 1_024 });
    const body = Buffer.alloc(10_000, "a");
    const answer = await rawRequest(h.url, {
      headers: { "content-type": "application/json", "content-length": String(body.length), "x-github-event": "issues", "x-github-delivery": "big-1" },
      chunks: [body],
    });
    expect(answer.status).toBe(413);
    // Closed rather than kept alive: the rest of the body is read and thrown away, never held.
    expect(answer.headers.connection).toBe("close");
    await waitFor("the rejection", () => (rejections(h.events).length === 1 ? true : undefined));
    expect(rejections(h.events)).toEqual([{ reason: "body-too-large", status: 413, delivery_id: "big-1", github_event: "issues" }]);
    expect(h.handler.received).toEqual([]);
  });

  it("refuses a chunked body once it grows over the cap", async () => {
    const h = await startReceiver({ maxBodyBytes: 1_024 });
    const chunk = Buffer.alloc(600, "a");
    const answer = await rawRequest(h.url, {
      headers: { "content-type": "application/json", "transfer-encoding": "chunked", "x-github-event": "issues", "x-github-delivery": "big-2" },
      chunks: [chunk, chunk, chunk],
    });
    expect(answer.status).toBe(413);
    expect(answer.headers.connection).toBe("close");
    await waitFor("the rejection", () => (rejections(h.events).length === 1 ? true : undefined));
    expect(rejections(h.events)[0]).toMatchObject({ reason: "body-too-large", status: 413, delivery_id: "big-2" });
    expect(h.handler.received).toEqual([]);
    // The receiver goes on serving.
    expect((await post(h.url, { event: "issue_comment", payload: commentPayload() })).status).toBe(202);
  });

  it("accepts a body exactly at the cap", async () => {
    const h = await startReceiver({ maxBodyBytes: 1_024 });
    const payload = commentPayload("");
    const bare = JSON.stringify(payload).length;
    const body = JSON.stringify(commentPayload("x".repeat(1_024 - bare)));
    expect(Buffer.byteLength(body)).toBe(1_024);
    expect((await post(h.url, { event: "issue_comment", body })).status).toBe(202);
  });

  it.each<[string, string, Record<string, string>]>([
    ["not JSON", "{nope", {}],
    ["empty", "", {}],
    ["JSON null", "null", {}],
  ])("refuses a body that is %s with 400", async (_name, body, headers) => {
    const h = await startReceiver();
    const sent = await post(h.url, { event: "issues", body, headers, signature: body === "" ? `sha256=${"0".repeat(64)}` : undefined });
    if (body === "") {
      // An empty body cannot carry a valid signature.
      expect(sent.status).toBe(401);
      return;
    }
    expect(sent.status).toBe(400);
    expect(rejections(h.events)).toEqual([{ reason: "invalid-payload", status: 400, delivery_id: sent.deliveryId, github_event: "issues" }]);
  });

  it("refuses a delivery without an event name with 400", async () => {
    const h = await startReceiver();
    const body = JSON.stringify(commentPayload());
    const response = await fetch(h.url, {
      method: "POST",
      headers: { "content-type": "application/json", "x-hub-signature-256": await sign(SECRET, body), "x-github-delivery": "no-event" },
      body,
    });
    expect(response.status).toBe(400);
    expect(rejections(h.events)).toEqual([{ reason: "invalid-payload", status: 400, delivery_id: "no-event" }]);
  });

  it("reads a form-encoded delivery's payload field", async () => {
    const h = await startReceiver();
    const body = new URLSearchParams({ payload: JSON.stringify(commentPayload("from a form")) }).toString();
    const sent = await post(h.url, { event: "issue_comment", body, headers: { "content-type": "application/x-www-form-urlencoded" } });
    expect(sent.status).toBe(202);
    await waitFor("the handler", () => (h.handler.received.length === 1 ? true : undefined));
    expect(h.handler.received[0]?.body).toBe("from a form");
  });

  it("acknowledges a redelivered id without handing it over twice", async () => {
    const h = await startReceiver();
    const first = await post(h.url, { event: "issue_comment", payload: commentPayload() });
    const again = await post(h.url, { event: "issue_comment", payload: commentPayload(), deliveryId: first.deliveryId });
    expect(again.status).toBe(202);
    expect(again.json).toEqual({ status: "duplicate" });
    expect(rejections(h.events)).toEqual([{ reason: "duplicate-delivery", status: 202, delivery_id: first.deliveryId, github_event: "issue_comment" }]);
    await waitFor("the first delivery", () => (h.handler.received.length === 1 ? true : undefined));
    await post(h.url, { event: "issue_comment", payload: commentPayload("later") });
    await waitFor("a later delivery", () => (h.handler.received.length === 2 ? true : undefined));
    expect(h.handler.received.map((e) => e.deliveryId).filter((id) => id === first.deliveryId)).toHaveLength(1);
  });

  it("lets a delivery whose handling failed be redelivered", async () => {
    let calls = 0;
    const handler = new RecordingHandler(() => {
      calls++;
      return calls === 1 ? Promise.reject(new Error("tmux is gone")) : Promise.resolve({ settled: true });
    });
    const h = await startReceiver({}, { handler });
    const first = await post(h.url, { event: "issue_comment", payload: commentPayload() });
    await waitFor("the failure", () => h.events.events.find((e) => e.type === "dispatch.failed"));
    expect(h.events.events.find((e) => e.type === "dispatch.failed")?.fields).toMatchObject({
      delivery_id: first.deliveryId,
      action: "handle",
      error: "tmux is gone",
      will_retry: false,
    });
    const again = await post(h.url, { event: "issue_comment", payload: commentPayload(), deliveryId: first.deliveryId });
    expect(again.json).toEqual({ status: "accepted" });
    await waitFor("the redelivery", () => (h.handler.received.length === 2 ? true : undefined));
  });

  it("survives a handler that throws instead of rejecting", async () => {
    const handler = new RecordingHandler(() => {
      throw new Error("synchronous failure");
    });
    const h = await startReceiver({}, { handler });
    expect((await post(h.url, { event: "issue_comment", payload: commentPayload() })).status).toBe(202);
    await waitFor("the failure", () => h.events.events.find((e) => e.type === "dispatch.failed"));
    expect((await fetch(`${h.base}/healthz`)).status).toBe(200);
  });

  it("ignores events it does not act on with 202", async () => {
    const h = await startReceiver({ events: ["issues"] });
    const disabled = await post(h.url, { event: "issue_comment", payload: commentPayload() });
    const ping = await post(h.url, { event: "ping", payload: { zen: "Design for failure.", hook_id: 1 } });
    const push = await post(h.url, { event: "push", payload: { ref: "refs/heads/main" } });
    const edited = await post(h.url, { event: "issues", payload: { ...commentPayload(), action: "assigned" } });
    const malformed = await post(h.url, { event: "issues", payload: { action: "opened" } });
    for (const sent of [disabled, ping, push, edited]) {
      expect(sent.status).toBe(202);
      expect(sent.json).toEqual({ status: "ignored" });
    }
    // An event it acts on whose payload is not what GitHub sends is refused, not ignored.
    expect([malformed.status, malformed.json]).toEqual([400, { status: "rejected", reason: "invalid-payload" }]);
    const ignored = h.events.events.filter((e) => e.type === "webhook.ignored").map((e) => [e.fields.github_event, e.fields.reason]);
    expect(ignored).toEqual([
      ["issue_comment", "disabled-event"],
      ["ping", "ping"],
      ["push", "unsupported-event"],
      ["issues", "unsupported-action:assigned"],
    ]);
    expect(h.handler.received).toEqual([]);
    expect(rejections(h.events)).toEqual([
      { reason: "invalid-payload", status: 400, delivery_id: malformed.deliveryId, github_event: "issues", detail: expect.stringMatching(/^repository: /) },
    ]);
  });

  it("answers health checks, 404 elsewhere and 405 for other methods on its path", async () => {
    const h = await startReceiver();
    for (const path of ["/healthz", "/health"]) {
      const response = await fetch(`${h.base}${path}`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ status: "ok" });
    }
    expect((await fetch(`${h.base}/healthz?probe=1`)).status).toBe(200);
    expect((await fetch(`${h.base}/elsewhere`)).status).toBe(404);
    const get = await fetch(h.url);
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    expect((await fetch(`${h.base}/other`, { method: "POST", body: "{}" })).status).toBe(404);
    expect((await fetch(h.url, { method: "PUT", body: "{}" })).status).toBe(405);
    expect(rejections(h.events).map((r) => [r.reason, r.status])).toEqual([
      ["not-found", 404],
      ["method-not-allowed", 405],
      ["not-found", 404],
      ["method-not-allowed", 405],
    ]);
    expect(h.events.events.filter((e) => e.type === "webhook.rejected" && JSON.stringify(e).includes(SECRET))).toEqual([]);
  });

  it("refuses to start without the secret, naming the variable and the alternative", async () => {
    const events = new MemoryEventSink();
    const receiver = new WebhookReceiver({ config: configOf(), handler: new RecordingHandler(), events, env: {} });
    const failure = await receiver.start().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(WebhookSecretError);
    expect((failure as WebhookSecretError).exitCode).toBe(2);
    expect((failure as Error).message).toContain("THE_LOOP_GH_WEBHOOK_SECRET");
    expect((failure as Error).message).toContain("insecureAllowUnsigned");
    expect(receiver.address).toBeUndefined();
    expect(events.events).toEqual([]);
    const empty = new WebhookReceiver({ config: configOf({ secretEnv: "MY_SECRET" }), handler: new RecordingHandler(), events, env: { MY_SECRET: "" } });
    await expect(empty.start()).rejects.toThrow(/MY_SECRET/);
  });

  it("in insecure mode warns at every start and takes unsigned deliveries", async () => {
    const events = new MemoryEventSink();
    const handler = new RecordingHandler();
    const receiver = new WebhookReceiver({ config: configOf({ insecureAllowUnsigned: true }), handler, events, env: {} });
    for (let round = 0; round < 2; round++) {
      const address = await receiver.start();
      started.push(receiver);
      const sent = await post(`http://127.0.0.1:${address.port}/gh-webhook`, { event: "issue_comment", payload: commentPayload(), signature: null });
      expect(sent.status).toBe(202);
      await receiver.stop();
    }
    expect(events.events.filter((e) => e.type === "webhook.insecure")).toEqual([
      { type: "webhook.insecure", fields: { secret_env: "THE_LOOP_GH_WEBHOOK_SECRET" } },
      { type: "webhook.insecure", fields: { secret_env: "THE_LOOP_GH_WEBHOOK_SECRET" } },
    ]);
    expect(events.events.filter((e) => e.type === "webhook.listening").map((e) => e.fields.verified)).toEqual([false, false]);
    expect(events.events.filter((e) => e.type === "webhook.received").map((e) => e.fields.verified)).toEqual([false, false]);
    expect(handler.received).toHaveLength(2);
  });

  it("with a secret set, insecureAllowUnsigned still checks signatures", async () => {
    const h = await startReceiver({ insecureAllowUnsigned: true });
    expect((await post(h.url, { event: "issue_comment", payload: commentPayload(), signature: null })).status).toBe(401);
    expect(h.events.events.some((e) => e.type === "webhook.insecure")).toBe(false);
  });

  it("hands every acknowledged delivery over before stop() resolves", async () => {
    const h = await startReceiver();
    const sends = Array.from({ length: 10 }, (_, i) => post(h.url, { event: "issue_comment", payload: commentPayload(`n${i}`) }));
    const answers = await Promise.all(sends);
    await h.receiver.stop();
    expect(answers.every((a) => a.status === 202)).toBe(true);
    expect(h.handler.received).toHaveLength(10);
    expect(h.receiver.address).toBeUndefined();
    await expect(fetch(`${h.base}/healthz`)).rejects.toThrow();
  });

  it("reports an address that cannot be bound", async () => {
    const h = await startReceiver();
    const port = h.receiver.address?.port ?? 0;
    const second = new WebhookReceiver({ config: configOf({ port }), handler: new RecordingHandler(), events: new MemoryEventSink(), env: ENV });
    await expect(second.start()).rejects.toThrow(/in use/);
  });

  it("never puts the secret or the signature in a response or an event", async () => {
    const h = await startReceiver();
    const body = JSON.stringify(commentPayload());
    const signature = await sign(SECRET, body);
    await post(h.url, { event: "issue_comment", body, signature });
    await post(h.url, { event: "issue_comment", body, signature: `${signature.slice(0, -2)}00` });
    const text = JSON.stringify(h.events.events);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain(signature.slice(7));
  });
});
