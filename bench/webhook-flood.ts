/**
 * Figure: the webhook receiver's memory under a flood of large unauthenticated bodies (issue 15)
 * — 80 concurrent 25 MB POSTs with a bogus signature on loopback (half with a Content-Length,
 * half chunked), as the receiving process's RSS before, at its peak and a few seconds after,
 * how each was answered (401 once read and refused, 503 when the shared body budget had no room),
 * and /healthz's slowest answer meanwhile. Budget: peak RSS under 300 MB.
 *
 * The receiver runs in a child process (daemon-like: default config, the event log on) and the
 * load from this one. Nothing is asserted on time or memory; the script fails only when a bogus
 * body is not refused or /healthz stops answering. BENCH_QUICK=1 sends 16 bodies.
 */
import { fork } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { printFigure, printHeading } from "./lib.js";

const MB = 1024 * 1024;
const QUICK = process.env.BENCH_QUICK === "1";
const COUNT = QUICK ? 16 : 80;
const BODY_BYTES = 25 * MB;
const SETTLE_MS = QUICK ? 2_000 : 5_000;
const RSS_BUDGET_MB = 300;

interface FromChild {
  readonly port?: number;
  readonly rss?: number;
}

async function serve(): Promise<void> {
  const { ghWebhookSchema } = await import("../src/config/schema.js");
  const { EventLog } = await import("../src/events/log.js");
  const { WebhookReceiver } = await import("../src/ingress/webhook/server.js");
  const dir = mkdtempSync(join(tmpdir(), "the-loop-bench-flood-"));
  const receiver = new WebhookReceiver({
    config: ghWebhookSchema.parse({ enabled: true, port: 0 }),
    handler: { handle: () => Promise.resolve({ settled: true }) },
    events: new EventLog({ path: join(dir, "events.jsonl"), source: "daemon" }),
    env: { THE_LOOP_GH_WEBHOOK_SECRET: "bench-flood-secret" },
    stopGraceMs: 100,
  });
  const address = await receiver.start();
  process.on("message", () => process.send?.({ rss: process.memoryUsage().rss }));
  process.on("disconnect", () => {
    void receiver.stop().finally(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
  });
  process.send?.({ port: address.port });
}

function rssOf(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    const answer = (message: FromChild): void => {
      if (message.rss === undefined) return;
      child.off("message", answer);
      resolve(message.rss);
    };
    child.on("message", answer);
    child.send("rss");
  });
}

function bogusPost(port: number, body: Buffer, declared: boolean): Promise<string> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "x-github-event": "issue_comment",
      "x-github-delivery": randomUUID(),
      "x-hub-signature-256": `sha256=${"0".repeat(64)}`,
    };
    if (declared) headers["content-length"] = String(body.length);
    const req = request({ host: "127.0.0.1", port, path: "/gh-webhook", method: "POST", agent: false, headers }, (res) => {
      res.resume();
      res.on("end", () => resolve(String(res.statusCode)));
      res.on("error", () => resolve("error"));
    });
    req.on("error", (error: Error & { code?: string }) => resolve(error.code ?? "error"));
    // Written in 1 MB pieces, as a streaming client would.
    for (let at = 0; at < body.length; at += MB) req.write(body.subarray(at, at + MB));
    req.end();
  });
}

async function measure(): Promise<number> {
  const child = fork(fileURLToPath(import.meta.url), ["--serve"], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once("message", (message: FromChild) => (message.port === undefined ? reject(new Error("no port")) : resolve(message.port)));
      child.once("exit", (code) => reject(new Error(`the receiver exited ${String(code)}`)));
    });
    const before = await rssOf(child);
    const body = Buffer.alloc(BODY_BYTES, "a");
    let peak = before;
    let slowestHealth = 0;
    let healthFailures = 0;
    let flooding = true;
    const watch = (async () => {
      while (flooding) {
        const started = performance.now();
        const ok = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
          (response) => response.status === 200,
          () => false,
        );
        slowestHealth = Math.max(slowestHealth, performance.now() - started);
        if (!ok) healthFailures++;
        peak = Math.max(peak, await rssOf(child));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: COUNT }, (_, i) => bogusPost(port, body, i % 2 === 0)));
    const elapsed = performance.now() - started;
    flooding = false;
    await watch;
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const after = await rssOf(child);
    const tally = new Map<string, number>();
    for (const answer of answers) tally.set(answer, (tally.get(answer) ?? 0) + 1);
    printHeading(`webhook flood: ${COUNT} concurrent ${BODY_BYTES / MB} MB bogus-signed POSTs on loopback`);
    printFigure({ label: "receiver RSS before", value: before / MB, unit: "MB" });
    printFigure({ label: "receiver RSS peak", value: peak / MB, unit: "MB", budget: RSS_BUDGET_MB });
    printFigure({ label: `receiver RSS ${SETTLE_MS / 1000} s after`, value: after / MB, unit: "MB" });
    printFigure({ label: "flood wall time", value: elapsed, unit: "ms" });
    printFigure({ label: "slowest /healthz during the flood", value: slowestHealth, unit: "ms", note: `${healthFailures} failed` });
    console.log(`  answers: ${[...tally].map(([status, n]) => `${status} x${n}`).join(", ")}`);
    const refused = answers.every((answer) => answer === "401" || answer === "503");
    if (!refused) console.error("a bogus-signed body was not refused with 401 or 503");
    if (healthFailures > 0) console.error("/healthz failed during the flood");
    return refused && healthFailures === 0 ? 0 : 1;
  } finally {
    child.disconnect();
  }
}

if (process.argv.includes("--serve")) {
  await serve();
} else {
  process.exitCode = await measure();
}
