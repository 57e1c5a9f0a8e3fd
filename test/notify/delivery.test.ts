import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { notifySinkSchema } from "../../src/config/notify-schema.js";
import { MemoryEventSink } from "../../src/events/log.js";
import { SinkQueue, backoffMs, judgeAnswer, sinkUrl } from "../../src/notify/delivery.js";
import type { Delivery, NotifyTransport, PostResult } from "../../src/notify/delivery.js";
import { httpTransport, retryAfterSeconds } from "../../src/notify/http.js";
import { forgetKnownSecrets, redactKnownSecrets } from "../../src/secrets.js";

afterEach(() => forgetKnownSecrets());

const URL_ENV = "TEST_NOTIFY_URL";
const SECRET_URL = "https://hooks.example.com/services/T0/B0/s3cr3t-path-token";
const sink = (fields: Record<string, unknown> = {}) => notifySinkSchema.parse({ name: "team", urlEnv: URL_ENV, ...fields });
const DELIVERY: Delivery = { moment: "gate-waiting", workItem: "local:demo#1", eventType: "graph.waiting", body: { text: "hi", content: "hi" } };
const RETRY = { initialDelayMs: 1_000, maxDelayMs: 8_000 };

describe("judgeAnswer", () => {
  it.each([
    [200, "sent"],
    [204, "sent"],
    [301, "give-up"],
    [400, "give-up"],
    [403, "give-up"],
    [404, "give-up"],
    [408, "retry"],
    [429, "retry"],
    [500, "retry"],
    [503, "retry"],
    [0, "give-up"],
  ])("HTTP %i → %s", (status, kind) => {
    expect(judgeAnswer({ status }, "team").kind).toBe(kind);
  });

  it("keeps a Retry-After, and names the sink, never a URL", () => {
    expect(judgeAnswer({ status: 429, retryAfterSeconds: 30 }, "team")).toEqual({ kind: "retry", error: "the sink team answered HTTP 429", afterMs: 30_000 });
    expect(judgeAnswer({ status: 302 }, "team")).toMatchObject({ error: "the sink team answered HTTP 302 (a redirect, which is not followed)" });
  });
});

describe("backoffMs", () => {
  it.each([
    [1, undefined, 1_000],
    [2, undefined, 2_000],
    [3, undefined, 4_000],
    [4, undefined, 8_000],
    [9, undefined, 8_000],
    [1, 5_000, 5_000],
    [1, 60_000, 8_000],
    [3, 100, 4_000],
  ])("after try %i (Retry-After %s ms) → %i ms", (attempt, after, wait) => {
    expect(backoffMs(attempt, RETRY, after)).toBe(wait);
  });
});

describe("retryAfterSeconds", () => {
  const now = Date.parse("2026-12-02T08:00:00Z");
  it.each([
    ["30", 30],
    [" 0 ", 0],
    ["Wed, 02 Dec 2026 08:00:10 GMT", 10],
    ["Wed, 02 Dec 2026 07:00:00 GMT", 0],
    ["soon", undefined],
    [undefined, undefined],
    [["7", "8"], 7],
  ])("%j → %s", (header, seconds) => {
    expect(retryAfterSeconds(header as string | string[] | undefined, now)).toBe(seconds);
  });
});

describe("sinkUrl", () => {
  it.each([
    [undefined, "is unset or empty"],
    ["  ", "is unset or empty"],
    ["not a url", "holds no URL"],
    ["http://hooks.example.com/x", "is not https://"],
    ["ftp://hooks.example.com/x", "is not https://"],
  ])("%j → a reason naming the variable, not the value", (value, reason) => {
    const answer = sinkUrl({ name: "team", urlEnv: URL_ENV }, value === undefined ? {} : { [URL_ENV]: value });
    expect(typeof answer).toBe("string");
    expect(answer).toContain(URL_ENV);
    expect(answer).toContain(reason);
    if (value !== undefined && value.trim() !== "") expect(answer).not.toContain(value);
  });

  it.each(["https://hooks.example.com/x", "http://127.0.0.1:8080/x", "http://localhost/x", "http://[::1]:9/x"])(
    "takes %s, and remembers it as a secret",
    (value) => {
      const answer = sinkUrl({ name: "team", urlEnv: URL_ENV }, { [URL_ENV]: value });
      expect(answer).toBeInstanceOf(URL);
      expect(redactKnownSecrets(`posting to ${value}`)).toBe("posting to [redacted]");
    },
  );
});

/** A transport that answers from a script, one answer per try. */
function scripted(answers: (PostResult | Error)[]): NotifyTransport & { urls: string[]; bodies: string[] } {
  const urls: string[] = [];
  const bodies: string[] = [];
  return {
    urls,
    bodies,
    post(url, body) {
      urls.push(url.href);
      bodies.push(body);
      const next = answers.shift() ?? { status: 200 };
      return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
    },
  };
}

function queueWith(transport: NotifyTransport, options: { sinkFields?: Record<string, unknown>; queueLimit?: number; env?: NodeJS.ProcessEnv } = {}) {
  const events = new MemoryEventSink();
  const waits: number[] = [];
  const queue = new SinkQueue({
    sink: sink(options.sinkFields),
    retry: RETRY,
    queueLimit: options.queueLimit ?? 10,
    transport,
    events,
    env: options.env ?? { [URL_ENV]: SECRET_URL },
    sleep: (ms) => {
      waits.push(ms);
      return Promise.resolve();
    },
  });
  return { queue, events, waits };
}

const kinds = (events: MemoryEventSink) =>
  events.events.map((event) => `${event.type}:${String(event.fields.attempt ?? event.fields.attempts)}:${String(event.fields.will_retry ?? "")}`);

describe("SinkQueue", () => {
  it("posts the body as JSON and says so once taken", async () => {
    const transport = scripted([{ status: 200 }]);
    const { queue, events } = queueWith(transport);
    queue.offer(DELIVERY);
    await queue.idle();
    expect(transport.urls).toEqual([SECRET_URL]);
    expect(JSON.parse(transport.bodies[0] ?? "")).toEqual(DELIVERY.body);
    expect(events.events).toEqual([
      {
        type: "notify.sent",
        fields: { sink: "team", moment: "gate-waiting", work_item: "local:demo#1", event_type: "graph.waiting", attempts: 1, status: 200 },
      },
    ]);
  });

  it("tries again after a backoff that doubles, on errors, 429 and 5xx, until taken", async () => {
    const transport = scripted([new Error("ECONNREFUSED"), { status: 503 }, { status: 429, retryAfterSeconds: 6 }, { status: 201 }]);
    const { queue, events, waits } = queueWith(transport);
    queue.offer(DELIVERY);
    await queue.idle();
    expect(waits).toEqual([1_000, 2_000, 6_000]);
    expect(kinds(events)).toEqual(["notify.failed:1:true", "notify.failed:2:true", "notify.failed:3:true", "notify.sent:4:"]);
    expect(events.events[0]?.fields.error).toBe("the sink team could not be reached: ECONNREFUSED");
  });

  it("gives up after maxAttempts, and at once on a refusal", async () => {
    const failing = scripted([{ status: 500 }, { status: 500 }, { status: 500 }]);
    const first = queueWith(failing, { sinkFields: { maxAttempts: 3 } });
    first.queue.offer(DELIVERY);
    await first.queue.idle();
    expect(kinds(first.events)).toEqual(["notify.failed:1:true", "notify.failed:2:true", "notify.failed:3:false"]);
    expect(first.events.events[2]?.fields.error).toBe("the sink team answered HTTP 500; 3 tries, none taken");

    const refused = queueWith(scripted([{ status: 404 }]));
    refused.queue.offer(DELIVERY);
    await refused.queue.idle();
    expect(kinds(refused.events)).toEqual(["notify.failed:1:false"]);
    expect(refused.waits).toEqual([]);
  });

  it("sends nothing while the URL variable is unset, and says which variable", async () => {
    const transport = scripted([]);
    const { queue, events } = queueWith(transport, { env: {} });
    queue.offer(DELIVERY);
    await queue.idle();
    expect(transport.urls).toEqual([]);
    expect(kinds(events)).toEqual(["notify.failed:1:false"]);
    expect(events.events[0]?.fields.error).toContain(`${URL_ENV} (the URL of the sink team) is unset`);
  });

  it("keeps order, and past queueLimit gives up the oldest waiting", async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const posted: string[] = [];
    const transport: NotifyTransport = {
      async post(_url, body) {
        posted.push((JSON.parse(body) as { text: string }).text);
        await gate;
        return { status: 200 };
      },
    };
    const { queue, events } = queueWith(transport, { queueLimit: 2 });
    for (const text of ["a", "b", "c", "d"]) queue.offer({ ...DELIVERY, body: { text } });
    // "a" is being posted; of b, c, d two may wait: b is given up.
    expect(kinds(events)).toEqual(["notify.failed:0:false"]);
    expect(events.events[0]?.fields.error).toContain("queue was full");
    release();
    await queue.idle();
    expect(posted).toEqual(["a", "c", "d"]);
  });

  it("at close, gives what waits its grace, then gives up the rest without waiting out a backoff", async () => {
    const never: NotifyTransport = {
      post: (_url, _body, _timeout, signal) =>
        new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(new Error("the daemon stopped")))),
    };
    const { queue, events } = queueWith(never);
    queue.offer(DELIVERY);
    queue.offer({ ...DELIVERY, workItem: "local:demo#2" });
    const started = Date.now();
    await queue.close(50);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(events.events.map((event) => [event.fields.work_item, event.fields.will_retry])).toEqual([
      ["local:demo#1", false],
      ["local:demo#2", false],
    ]);
    queue.offer({ ...DELIVERY, workItem: "local:demo#3" });
    expect(events.events.at(-1)?.fields).toMatchObject({ work_item: "local:demo#3", will_retry: false });
  });

  it("never writes the URL into an event, whatever the transport's error says", async () => {
    const { queue, events } = queueWith(scripted([new Error(`connect failed to ${SECRET_URL}`), { status: 200 }]));
    queue.offer(DELIVERY);
    await queue.idle();
    expect(JSON.stringify(events.events)).not.toContain("s3cr3t-path-token");
  });
});

describe("httpTransport, against a server on loopback", () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
  });

  async function serve(handler: (request: IncomingMessage, response: ServerResponse, body: string) => void): Promise<URL> {
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => handler(request, response, Buffer.concat(chunks).toString("utf8")));
    });
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook/s3cr3t`);
  }

  it("POSTs the JSON body and answers the status", async () => {
    const seen: { method?: string; type?: string; body?: string } = {};
    const url = await serve((request, response, body) => {
      Object.assign(seen, { method: request.method, type: request.headers["content-type"], body });
      response.end("ok");
    });
    expect(await httpTransport.post(url, '{"text":"hi"}', 5_000, new AbortController().signal)).toEqual({ status: 200 });
    expect(seen).toEqual({ method: "POST", type: "application/json", body: '{"text":"hi"}' });
  });

  it("follows no redirect, and reads a Retry-After", async () => {
    let hits = 0;
    const url = await serve((_request, response) => {
      hits++;
      if (hits === 1) response.writeHead(307, { location: "http://127.0.0.1:9/elsewhere" }).end();
      else response.writeHead(429, { "retry-after": "12" }).end();
    });
    expect(await httpTransport.post(url, "{}", 5_000, new AbortController().signal)).toEqual({ status: 307 });
    expect(await httpTransport.post(url, "{}", 5_000, new AbortController().signal)).toEqual({ status: 429, retryAfterSeconds: 12 });
    expect(hits).toBe(2);
  });

  it("fails a request that gets no answer in time, or is aborted, naming neither URL nor host", async () => {
    const url = await serve(() => undefined);
    await expect(httpTransport.post(url, "{}", 100, new AbortController().signal)).rejects.toThrow(/^no answer within 0.1 s$/);
    const stop = new AbortController();
    const pending = httpTransport.post(url, "{}", 5_000, stop.signal);
    stop.abort();
    await expect(pending).rejects.toThrow("the daemon stopped");
  });

  it("says a refused connection by its code alone", async () => {
    const url = await serve(() => undefined);
    await new Promise((resolve) => server?.close(resolve));
    server = undefined;
    const error = await httpTransport.post(url, "{}", 5_000, new AbortController().signal).catch((caught: unknown) => caught as Error);
    expect((error as Error).message).toBe("ECONNREFUSED");
  });
});
