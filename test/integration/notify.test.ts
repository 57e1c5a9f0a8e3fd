import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { stringify } from "yaml";
import { afterEach, describe, expect, it } from "vitest";
import { ARM } from "../support/builders.js";
import { SPEC_REVIEW_GRAPH } from "../support/graph.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * Notifications through the real daemon on the local tracker (docs/notifications.md): a local
 * HTTP server is the sink; the item reaches the spec-review graph's gate, the notification
 * carries the item's link and the configured approve keyword, that very comment moves the item
 * on, and its end is notified too. A second sink that always answers 500 is retried and given up
 * without holding anything up. Then the sink URL is looked for everywhere the-loop writes: the
 * project (state root, event log, daemon output, the session's transcript and environment), the
 * home, and what `status`, `config show` and `events` print.
 */

const REF = "local:demo#1";
const APPROVE = "ship-it:approve";
const URL_ENV = "TEAM_NOTIFY_URL";
const BROKEN_ENV = "BROKEN_SINK_URL";

interface Received {
  readonly path: string;
  readonly body: Record<string, unknown>;
}

let project: TestProject | undefined;
let server: Server | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

/** A sink on loopback: `/ok/…` takes every POST, `/broken/…` answers 500. */
async function sinkServer(): Promise<{ base: string; received: Received[] }> {
  const received: Received[] = [];
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const path = request.url ?? "";
      received.push({ path, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown> });
      response.writeHead(path.startsWith("/broken/") ? 500 : 200).end("ok");
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

/** Every file under `dir` whose text holds `needle`. */
async function filesHolding(dir: string, needle: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const text = await readFile(path, "latin1").catch(() => "");
    if (text.includes(needle)) found.push(path);
  }
  return found;
}

describe("notifications through the daemon on the local tracker", () => {
  it("post the gate with its link and the configured approve keyword, which moves the item on; the sink URL is nowhere else", async () => {
    const sink = await sinkServer();
    // The secret part: long and random, so finding it anywhere is a leak and nothing else.
    const token = randomBytes(24).toString("hex");
    const sinkUrl = `${sink.base}/ok/${token}`;
    const brokenToken = randomBytes(24).toString("hex");
    const brokenUrl = `${sink.base}/broken/${brokenToken}`;

    project = await testProject({
      graph: { enabled: true, default: "spec-review", keywords: { approve: APPROVE } },
      graphs: [{ name: "spec-review", path: "spec-review.yaml" }],
      // The harness records its whole environment: the session must not be given the URL.
      routing: { spawnWorkdir: "work", tmux: { passEnv: ["FAKE_HARNESS_RECORD_ENV", "TEAM_*", "BROKEN_*"] } },
      notify: {
        sinks: [
          { name: "team", urlEnv: URL_ENV },
          { name: "broken", kind: "discord", urlEnv: BROKEN_ENV, moments: ["gate-waiting"], maxAttempts: 2 },
        ],
        retry: { initialDelaySeconds: 0.2, maxDelaySeconds: 1 },
      },
    });
    const p = project;
    await writeFile(join(p.root, "spec-review.yaml"), stringify(SPEC_REVIEW_GRAPH));
    await mkdir(join(p.dir, "work"), { recursive: true });

    const env = { [URL_ENV]: sinkUrl, [BROKEN_ENV]: brokenUrl, FAKE_HARNESS_RECORD_ENV: "1" };
    const started = await p.cli(["start", "--json"], env);
    expect(started.code, started.stderr).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");

    expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");

    // The agent's artifact and claim: the item moves to the human gate.
    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
    const claimed = await p.cli(["graph", "complete", "--json"], { THE_LOOP_WORK_ITEM: REF });
    expect(claimed.code, claimed.stderr).toBe(0);
    await p.waitForEvent("the gate", (r) => r.event === "graph.waiting" && r.work_item === REF);

    const sent = await p.waitForEvent("the gate's notification", (r) => r.event === "notify.sent" && r.moment === "gate-waiting");
    expect(sent).toMatchObject({ sink: "team", work_item: REF, event_type: "graph.waiting", attempts: 1, status: 200 });
    const gate = sink.received.find((entry) => entry.path === `/ok/${token}`);
    expect(gate).toBeDefined();
    const body = gate?.body as { text: string; content: string; allowed_mentions: unknown; the_loop: Record<string, unknown> };
    const link = pathToFileURL(join(p.root, "tracker", "demo", "items", "1.json")).href;
    expect(body.the_loop).toMatchObject({
      moment: "gate-waiting",
      work_item: REF,
      link,
      event: "graph.waiting",
      comment: APPROVE,
      alternative: "the-loop:request-changes",
    });
    for (const text of [body.text, body.content]) {
      expect(text).toContain(`\`${APPROVE}\``);
      expect(text).toContain(`Link: ${link}`);
      expect(text).not.toContain("the-loop:approve");
    }
    expect(body.allowed_mentions).toEqual({ parse: [] });
    // The item file the link names is the item.
    expect(JSON.parse(await readFile(new URL(link), "utf8"))).toMatchObject({ number: 1, title: "Write a spec" });

    // The broken sink is tried twice, given up, and held nothing up: the gate was notified meanwhile.
    const givenUp = await p.waitForEvent("the broken sink given up", (r) => r.event === "notify.failed" && r.sink === "broken" && r.will_retry === false);
    expect(givenUp).toMatchObject({ attempt: 2, moment: "gate-waiting", error: "the sink broken answered HTTP 500; 2 tries, none taken" });
    expect(sink.received.filter((entry) => entry.path.startsWith("/broken/"))).toHaveLength(2);
    expect(sink.received.find((entry) => entry.path.startsWith("/broken/"))?.body).toMatchObject({ allowed_mentions: { parse: [] } });

    // The comment the notification named moves the item on; its end is notified in turn.
    const approved = await p.cli(["item", "comment", "#1", APPROVE, "--as", "alice"]);
    expect(approved.code, approved.stderr).toBe(0);
    await p.waitForEvent("the run's end", (r) => r.event === "graph.completed" && r.work_item === REF);
    await p.waitForEvent("the end's notification", (r) => r.event === "notify.sent" && r.moment === "done");
    const done = sink.received.filter((entry) => entry.path === `/ok/${token}`).at(-1)?.body as { the_loop: Record<string, unknown> };
    expect(done.the_loop).toMatchObject({ moment: "done", work_item: REF, event: "graph.completed", comment: null });

    // status names the sink that gives notifications up, by its name and variable.
    const health = await p.cli(["status", "--json"], env);
    expect(health.code).toBe(3);
    const problems = (JSON.parse(health.stdout) as { problems: { code: string; message: string; fix: string }[] }).problems;
    expect(problems.filter((problem) => problem.code === "notify-sink-failing")).toEqual([
      expect.objectContaining({
        message: expect.stringContaining("the sink broken are not arriving") as unknown,
        fix: expect.stringContaining(BROKEN_ENV) as unknown,
      }),
    ]);

    // What a person or a script reads while the daemon runs.
    const outputs: string[] = [];
    for (const args of [["status"], ["status", "--json"], ["config", "show"], ["events", "--json"], ["sessions", "list", "--json"]]) {
      const result = await p.cli(args, env);
      outputs.push(`${args.join(" ")}\n${result.stdout}\n${result.stderr}`);
    }
    const boot = await waitFor("the session's environment", async () => (await p.transcript()).find((entry) => entry.type === "boot" && entry.environment));
    expect(Object.keys(boot.environment ?? {})).not.toContain(URL_ENV);
    expect(Object.keys(boot.environment ?? {})).not.toContain(BROKEN_ENV);

    const stopped = await p.cli(["stop", "--json"]);
    expect(stopped.code, stopped.stderr).toBe(0);
    for (const secret of [token, brokenToken]) {
      for (const output of outputs) expect(output).not.toContain(secret);
      expect(await filesHolding(p.dir, secret)).toEqual([]);
      expect(await filesHolding(p.home, secret)).toEqual([]);
    }
    // The scan reads what it should: the event log and the daemon's output are there, and name the sinks.
    expect(await filesHolding(p.root, '"sink":"broken"')).toContain(join(p.root, "logs", "events.jsonl"));
    expect((await readdir(join(p.root, "logs"))).sort()).toEqual(expect.arrayContaining(["daemon.out", "events.jsonl"]));
  });
});
