/**
 * Figure: webhook acknowledgements — signed 2 KB `issue_comment` deliveries posted on loopback to
 * the webhook receiver (signature check, JSON, dedupe, normalization, 202, then the event log's
 * append; the handler settles at once), with 200 concurrent keep-alive connections, as acks per
 * second, median and p99 latency, and errors; then the median latency at 10 concurrent, and the
 * server's CPU time per request. Budget: ≥ 10,000 acks/s, ≤ 0.5 ms median at 10 concurrent, and
 * CPU time per ack ≤ 1.5× the baseline's. The baseline is a bare node:http server that reads the
 * body, checks the HMAC and answers 202, measured the same way.
 *
 * The server runs in a child process and the load from this one, so neither takes the other's
 * CPU; baseline and receiver runs alternate and each figure is the median over the runs.
 * BENCH_RUNS sets the number of runs (default 3), BENCH_SECONDS each measured interval (default 3);
 * BENCH_QUICK=1 makes one run of 0.5 s. BENCH_SERVER_ARGS adds node options to the server's process
 * only (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it; NODE_OPTIONS refuses --cpu-prof).
 * BENCH_FROM=dist measures the built receiver (run `npm run build` first) instead of src/ through tsx;
 * BENCH_FROM=<folder> the receiver built in another checkout (its dist/ or src/).
 * BENCH_AGAINST=<folder> (dist, src or another checkout's dist/) adds a second receiver, "before",
 * measured in the same alternation, and prints the two side by side: an A/B of two builds on a
 * loaded machine, where the CPU time per ack is the figure to compare.
 */
import { spawn } from "node:child_process";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { createHmac, timingSafeEqual } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import { sign } from "@octokit/webhooks-methods";
import type * as SchemaModule from "../src/config/schema.js";
import type * as LogModule from "../src/events/log.js";
import type * as ServerModule from "../src/ingress/webhook/server.js";
import { QUICK, median, percentile, printFigure, printHeading, runsFromEnv, scaled } from "./lib.js";

const SECRET = "bench-webhook-secret-0123456789abcdef";
const BODY_BYTES = 2_048;
const BASELINE_NOTE = "bare node:http + HMAC";
const ACKS_BUDGET = 10_000;
const MEDIAN_BUDGET_MS = 0.5;
/** The receiver's server CPU time per ack, at most this many times the baseline's. */
const CPU_BUDGET_RATIO = 1.5;
const seconds = Number(process.env.BENCH_SECONDS) > 0 ? Number(process.env.BENCH_SECONDS) : scaled(3, 0.5);
const runs = runsFromEnv(3, 1);
/** Load before each measured interval, not counted: connections opened, the JIT warm. */
const WARMUP_MS = scaled(1_000, 200);

type ServerKind = "receiver" | "before" | "baseline";

/** The folder a receiver is imported from: dist, src, or a path to another checkout's dist/ or src/. */
function receiverFolder(setting: string | undefined): string {
  if (setting === undefined || setting === "" || setting === "src") return "../src";
  if (setting === "dist") return "../dist";
  return pathToFileURL(isAbsolute(setting) ? setting : resolve(setting)).href;
}

// What the daemon runs is dist/ (tsc's output); src/ through tsx is the default so the figure needs
// no build, and costs a little more per request (tsx's transform wraps closures to keep their names).
const RECEIVER_FROM = receiverFolder(process.env.BENCH_FROM);
const BEFORE_FROM = process.env.BENCH_AGAINST === undefined ? undefined : receiverFolder(process.env.BENCH_AGAINST);

/** A delivery of GitHub's shape, padded to exactly BODY_BYTES through the comment text. */
function deliveryBody(): string {
  const payload = (text: string): Record<string, unknown> => ({
    action: "created",
    issue: {
      id: 1,
      node_id: "I_kwDOBench1",
      number: 42,
      title: "Parser crashes on empty input",
      body: "Steps: run the parser on an empty file.",
      state: "open",
      labels: [{ name: "bug" }, { name: "the-loop: auto-execute" }],
      html_url: "https://github.com/octo/repo/issues/42",
      updated_at: "2025-01-01T00:00:00Z",
      user: { login: "alice" },
    },
    comment: {
      id: 9001,
      node_id: "IC_bench",
      body: text,
      user: { login: "alice" },
      html_url: "https://github.com/octo/repo/issues/42#issuecomment-9001",
      created_at: "2025-01-01T00:00:01Z",
    },
    repository: { id: 7, name: "repo", full_name: "octo/repo", html_url: "https://github.com/octo/repo", owner: { login: "octo" } },
    sender: { login: "alice" },
  });
  const bare = JSON.stringify(payload("")).length;
  return JSON.stringify(payload("Please handle the empty case too. ".repeat(80).slice(0, BODY_BYTES - bare)));
}

// ---------------------------------------------------------------------------------------------
// The server side, in a child process.

async function serve(kind: ServerKind): Promise<void> {
  let port: number;
  let stop: () => Promise<void>;
  if (kind !== "baseline") {
    const from = kind === "before" && BEFORE_FROM !== undefined ? BEFORE_FROM : RECEIVER_FROM;
    const { ghWebhookSchema } = (await import(`${from}/config/schema.js`)) as typeof SchemaModule;
    const { EventLog } = (await import(`${from}/events/log.js`)) as typeof LogModule;
    const { WebhookReceiver } = (await import(`${from}/ingress/webhook/server.js`)) as typeof ServerModule;
    const dir = mkdtempSync(join(tmpdir(), "the-loop-bench-webhook-"));
    // The event log is on, as in the daemon: its append is part of every acknowledgement.
    const events = new EventLog({ path: join(dir, "events.jsonl"), source: "daemon" });
    const settled = Promise.resolve({ settled: true });
    const receiver = new WebhookReceiver({
      config: ghWebhookSchema.parse({ enabled: true, port: 0 }),
      handler: { handle: () => settled },
      events,
      env: { THE_LOOP_GH_WEBHOOK_SECRET: SECRET },
    });
    port = (await receiver.start()).port;
    stop = async () => {
      await receiver.stop();
      rmSync(dir, { recursive: true, force: true });
    };
  } else {
    const expectedLength = Buffer.byteLength("sha256=") + 64;
    const server = createServer({ keepAlive: true }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const given = Buffer.from(String(req.headers["x-hub-signature-256"] ?? ""));
        const wanted = Buffer.from(`sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}`);
        const ok = given.length === expectedLength && given.length === wanted.length && timingSafeEqual(given, wanted);
        res.writeHead(ok ? 202 : 401, { "content-type": "application/json", "content-length": "2" });
        res.end("{}");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
    stop = () => new Promise<void>((resolve) => server.close(() => resolve()));
  }
  process.stdout.write(`${JSON.stringify({ port })}\n`);
  const cpuFrom = process.cpuUsage();
  // The parent closes stdin when it is done.
  process.stdin.resume();
  await new Promise<void>((resolve) => process.stdin.on("end", resolve));
  const cpu = process.cpuUsage(cpuFrom);
  process.stdout.write(`${JSON.stringify({ cpuMicros: cpu.user + cpu.system })}\n`);
  await stop();
}

// ---------------------------------------------------------------------------------------------
// The load side.

interface Server {
  readonly port: number;
  readonly child: ChildProcessWithoutNullStreams;
  readonly lines: AsyncIterator<string>;
}

async function startServer(kind: ServerKind): Promise<Server> {
  const script = fileURLToPath(import.meta.url);
  const extra = (process.env.BENCH_SERVER_ARGS ?? "").split(" ").filter((arg) => arg !== "");
  const child = spawn(process.execPath, [...extra, "--import", "tsx", script, "--serve", kind], { stdio: ["pipe", "pipe", "pipe"] });
  child.stderr.setEncoding("utf8").on("data", (text: string) => process.stderr.write(text));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done === true) throw new Error(`the ${kind} server exited before listening`);
  return { port: (JSON.parse(first.value) as { port: number }).port, child, lines };
}

/** Stops the server; returns the CPU time it spent serving, in microseconds. */
async function stopServer(server: Server): Promise<number> {
  const exited = new Promise((resolve) => server.child.once("exit", resolve));
  server.child.stdin.end();
  const line = await server.lines.next();
  await exited;
  return line.done === true ? NaN : (JSON.parse(line.value) as { cpuMicros: number }).cpuMicros;
}

interface Load {
  /** Requests answered, warm-up included: what the server's CPU time was spent on. */
  readonly answered: number;
  readonly acks: number;
  readonly perSecond: number;
  readonly medianMs: number;
  readonly p99Ms: number;
  readonly errors: number;
}

/**
 * The load: one request in flight per keep-alive connection, written and read on raw sockets.
 * node:http's client costs several times what the server does per request, so with it this
 * process (not the server) would set the figure; a prebuilt request and a minimal response
 * parser keep the load side well ahead of either server.
 */
async function load(port: number, concurrency: number, durationMs: number, warmupMs: number): Promise<Load> {
  const body = deliveryBody();
  const signature = await sign(SECRET, body);
  const head =
    `POST /gh-webhook HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nX-GitHub-Event: issue_comment\r\nX-Hub-Signature-256: ${signature}\r\n` +
    `X-GitHub-Delivery: bench-${process.pid}-`;
  const tail = `\r\n\r\n${body}`;
  let sequence = 0;
  let answered = 0;
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const measureFrom = started + warmupMs;
  const deadline = measureFrom + durationMs;

  const connection = (): Promise<void> =>
    new Promise((resolve) => {
      const socket = connect({ host: "127.0.0.1", port, noDelay: true });
      socket.setEncoding("latin1");
      let buffer = "";
      let sent = 0;
      const next = (): void => {
        sent = performance.now();
        if (sent >= deadline) {
          socket.end();
          return;
        }
        socket.write(`${head}${sequence++}${tail}`);
      };
      socket.on("connect", next);
      socket.on("data", (chunk: string) => {
        buffer += chunk;
        for (;;) {
          const headerEnd = buffer.indexOf("\r\n\r\n");
          if (headerEnd === -1) return;
          const lengthAt = buffer.toLowerCase().indexOf("content-length:");
          const length = lengthAt === -1 || lengthAt > headerEnd ? 0 : parseInt(buffer.slice(lengthAt + 15, headerEnd), 10);
          const end = headerEnd + 4 + length;
          if (buffer.length < end) return;
          const status = buffer.slice(9, 12);
          buffer = buffer.slice(end);
          answered++;
          if (sent >= measureFrom) {
            latencies.push(performance.now() - sent);
            if (status !== "202") errors++;
          }
          next();
        }
      });
      socket.on("error", () => {
        errors++;
        resolve();
      });
      socket.on("close", () => resolve());
    });

  await Promise.all(Array.from({ length: concurrency }, connection));
  return {
    answered,
    acks: latencies.length - errors,
    perSecond: ((latencies.length - errors) * 1000) / durationMs,
    medianMs: median(latencies),
    p99Ms: percentile(latencies, 99),
    errors,
  };
}

interface Figures {
  readonly perSecond: number;
  readonly wideMedianMs: number;
  readonly wideP99Ms: number;
  readonly narrowMedianMs: number;
  readonly narrowP99Ms: number;
  readonly cpuPerAckUs: number;
  readonly errors: number;
}

async function measure(kind: ServerKind): Promise<Figures> {
  const server = await startServer(kind);
  let wide: Load;
  let narrow: Load;
  try {
    wide = await load(server.port, 200, seconds * 1000, WARMUP_MS);
    narrow = await load(server.port, 10, Math.max(scaled(2, 0.5), seconds / 2) * 1000, WARMUP_MS / 2);
  } catch (error) {
    await stopServer(server);
    throw error;
  }
  const cpuMicros = await stopServer(server);
  return {
    perSecond: wide.perSecond,
    wideMedianMs: wide.medianMs,
    wideP99Ms: wide.p99Ms,
    narrowMedianMs: narrow.medianMs,
    narrowP99Ms: narrow.p99Ms,
    cpuPerAckUs: cpuMicros / (wide.answered + narrow.answered),
    errors: wide.errors + narrow.errors,
  };
}

/** The median of each figure over the runs (errors are summed). */
function medianOf(runs: readonly Figures[]): Figures {
  const of = (pick: (figures: Figures) => number): number => median(runs.map(pick));
  return {
    perSecond: of((f) => f.perSecond),
    wideMedianMs: of((f) => f.wideMedianMs),
    wideP99Ms: of((f) => f.wideP99Ms),
    narrowMedianMs: of((f) => f.narrowMedianMs),
    narrowP99Ms: of((f) => f.narrowP99Ms),
    cpuPerAckUs: of((f) => f.cpuPerAckUs),
    errors: runs.reduce((sum, f) => sum + f.errors, 0),
  };
}

async function main(): Promise<void> {
  // Alternated, so a neighbour that loads the machine for a while weighs on each alike.
  const baselineRuns: Figures[] = [];
  const beforeRuns: Figures[] = [];
  const receiverRuns: Figures[] = [];
  for (let run = 0; run < runs; run++) {
    baselineRuns.push(await measure("baseline"));
    if (BEFORE_FROM !== undefined) beforeRuns.push(await measure("before"));
    receiverRuns.push(await measure("receiver"));
  }
  const baseline = medianOf(baselineRuns);
  const receiver = medianOf(receiverRuns);
  printHeading(
    `Webhook acknowledgements (signed ${BODY_BYTES} B deliveries on loopback; median of ${runs} alternated runs of ${seconds} s; server in its own process)`,
  );
  printFigure({ label: `${BASELINE_NOTE}: acks/s, 200 concurrent`, value: baseline.perSecond, unit: "/s", note: `errors ${baseline.errors}` });
  if (BEFORE_FROM !== undefined) printBefore(medianOf(beforeRuns), baseline, beforeRuns, receiverRuns);
  printFigure({
    label: "receiver: acks/s, 200 concurrent",
    value: receiver.perSecond,
    unit: "/s",
    baseline: baseline.perSecond,
    note: `${QUICK ? "" : `budget ≥ ${ACKS_BUDGET}${receiver.perSecond < ACKS_BUDGET ? " (UNDER)" : ""}, `}errors ${receiver.errors}`,
  });
  printFigure({
    label: "receiver: median latency, 200 concurrent",
    value: receiver.wideMedianMs,
    unit: "ms",
    baseline: baseline.wideMedianMs,
    note: `p99 ${receiver.wideP99Ms.toFixed(2)} ms`,
  });
  printFigure({
    label: "receiver: median latency, 10 concurrent",
    value: receiver.narrowMedianMs,
    unit: "ms",
    baseline: baseline.narrowMedianMs,
    budget: MEDIAN_BUDGET_MS,
    note: `p99 ${receiver.narrowP99Ms.toFixed(2)} ms`,
  });
  // Throughput depends on what else the machine runs; the server's CPU time per request much less.
  printFigure({
    label: "receiver: server CPU time per ack",
    value: receiver.cpuPerAckUs,
    unit: "µs",
    baseline: baseline.cpuPerAckUs,
    note: `${QUICK ? "" : `budget ≤ ${CPU_BUDGET_RATIO}×${receiver.cpuPerAckUs > baseline.cpuPerAckUs * CPU_BUDGET_RATIO ? " (OVER)" : ""}, `}baseline ${baseline.cpuPerAckUs.toFixed(0)} µs; one core at this cost: ${Math.round(1e6 / receiver.cpuPerAckUs).toLocaleString("en-US")}/s`,
  });
  console.log(
    `  (baseline: ${BASELINE_NOTE}, ${Math.round(baseline.perSecond).toLocaleString("en-US")}/s, median ${baseline.narrowMedianMs.toFixed(2)} ms at 10 concurrent)`,
  );
  if (receiver.errors > 0 || beforeRuns.some((f) => f.errors > 0)) process.exitCode = 1;
}

/** The other build's figures, and each run's ratio of the two builds' CPU time per ack. */
function printBefore(before: Figures, baseline: Figures, beforeRuns: readonly Figures[], afterRuns: readonly Figures[]): void {
  printFigure({ label: "before: acks/s, 200 concurrent", value: before.perSecond, unit: "/s", baseline: baseline.perSecond, note: `errors ${before.errors}` });
  printFigure({ label: "before: median latency, 10 concurrent", value: before.narrowMedianMs, unit: "ms", baseline: baseline.narrowMedianMs });
  printFigure({ label: "before: server CPU time per ack", value: before.cpuPerAckUs, unit: "µs", baseline: baseline.cpuPerAckUs });
  const ratios = afterRuns.map((after, run) => after.cpuPerAckUs / (beforeRuns[run]?.cpuPerAckUs ?? NaN));
  console.log(`  (CPU per ack, after ÷ before, run by run: ${ratios.map((ratio) => ratio.toFixed(2)).join(" ")}; median ${median(ratios).toFixed(2)})`);
}

const SERVER_KINDS: readonly string[] = ["receiver", "before", "baseline"] satisfies ServerKind[];
if (process.argv[2] === "--serve") await serve(SERVER_KINDS.includes(process.argv[3] ?? "") ? (process.argv[3] as ServerKind) : "receiver");
else await main();
