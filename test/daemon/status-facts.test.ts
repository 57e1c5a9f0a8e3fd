import { mkdir, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import type { AddressInfo, Server } from "node:net";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { configSchema } from "../../src/config/schema.js";
import { ControlStore } from "../../src/control/store.js";
import { probeTcp, readEventTail, statusReport } from "../../src/daemon/status/facts.js";
import { openGraphStates } from "../../src/graph-run/store.js";
import { deriveStatePaths } from "../../src/state/layout.js";
import { tempDir } from "../support/temp.js";

/** What `the-loop status` gathers, from real files in a temporary state root and real sockets. */

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function listening(): Promise<number> {
  const server = createServer((socket) => socket.end());
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

/** A port nothing listens on: taken, then given back. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A gh that is not installed: no token from it, on any machine. */
const NO_GH = "/nonexistent/the-loop-test/gh";

const line = (record: Record<string, unknown>): string => `${JSON.stringify({ source: "daemon", level: "info", ...record })}\n`;

describe("readEventTail", () => {
  it("keeps the wanted events of the log's end, leaving out the cut first line and lines that are not events", async () => {
    const dir = await tempDir();
    const log = join(dir, "events.jsonl");
    const filler = line({ ts: "t0", event: "poll.cycle", pid: 1, note: "x".repeat(200) });
    const text = [
      filler,
      line({ ts: "t1", event: "item.created", pid: 1 }),
      'not json but mentions "poll.cycle"\n',
      line({ ts: "t2", event: "poll.provider_error", pid: 1, poll_source: "local:*", error: "e" }),
      line({ ts: "t3", event: "session.spawn_failed", pid: 2, work_item: "local:demo#1", error: "boom" }),
      '{"ts":"t4","event":"poll.cycle"', // torn: its writer is mid-append
    ].join("");
    await writeFile(log, text);
    const all = readEventTail(log, 1 << 20).map((event) => event.ts);
    expect(all).toEqual(["t0", "t2", "t3"]);
    // A tail that begins inside the first line does not take its end for an event.
    expect(readEventTail(log, text.length - 10).map((event) => event.ts)).toEqual(["t2", "t3"]);
  });

  it("answers none when there is no log", async () => {
    expect(readEventTail(join(await tempDir(), "missing.jsonl"), 1024)).toEqual([]);
  });
});

describe("probeTcp", () => {
  it("answers nothing wrong when a server accepts, and why when none does", async () => {
    expect(await probeTcp(new URL(`http://127.0.0.1:${await listening()}/rpc`), 2_000)).toBeUndefined();
    expect(await probeTcp(new URL(`http://127.0.0.1:${await closedPort()}/rpc`), 2_000)).toBe("ECONNREFUSED");
  });
});

describe("statusReport", () => {
  async function stateRoot(config: Record<string, unknown> = {}) {
    const dir = await tempDir();
    const parsed = configSchema.parse({ state: { root: ".the-loop" }, ...config });
    return { dir, config: parsed, paths: deriveStatePaths(parsed, dir) };
  }

  it("finds nothing wrong in an empty state root with nothing enabled", async () => {
    const { dir, config, paths } = await stateRoot();
    const report = await statusReport(config, paths, { configDir: dir, env: {} });
    expect(report).toMatchObject({ healthy: true, problems: [], exitCode: 0 });
  });

  it("names each damaged record, graph state and journal, and a start pending after repeated spawn failures", async () => {
    const { dir, config, paths } = await stateRoot();
    const control = new ControlStore({ dir: paths.controlDir });
    await mkdir(paths.controlDir, { recursive: true });
    await writeFile(control.pathFor("local:demo#2"), "{");
    const pending = {
      version: 1,
      ref: "local:demo#1",
      command: "start",
      source: "cli",
      actor: "alice",
      requestedAt: "2025-01-01T10:00:00.000Z",
      effect: "start-pending",
    };
    await writeFile(control.pathFor("local:demo#1"), JSON.stringify(pending));
    const graphFile = openGraphStates(paths).locate("local:demo#3");
    await mkdir(dirname(graphFile), { recursive: true });
    await writeFile(graphFile, JSON.stringify({ ref: "local:demo#3" }));
    const journal = join(paths.trackerDir, "demo", "journal.jsonl");
    await mkdir(dirname(journal), { recursive: true });
    await writeFile(journal, "not a change\n");
    await mkdir(dirname(paths.eventLog), { recursive: true });
    const failed = (ts: string): string =>
      line({ ts, event: "session.spawn_failed", level: "error", pid: 9, work_item: "local:demo#1", harness: "h", error: "no such harness" });
    await writeFile(paths.eventLog, failed("2025-01-01T10:00:01.000Z") + failed("2025-01-01T10:01:00.000Z"));

    const report = await statusReport(config, paths, { configDir: dir, env: {} });
    expect(report.healthy).toBe(false);
    expect(report.exitCode).toBe(3);
    const byCode = report.problems.map((p) => [p.code, p.message]);
    expect(byCode).toEqual([
      ["damaged-file", expect.stringContaining(`control record ${control.pathFor("local:demo#2")} is damaged`)],
      ["damaged-file", expect.stringContaining(`graph state record ${graphFile} is damaged`)],
      ["damaged-file", expect.stringContaining(`local tracker journal ${journal} is damaged: line 1 is not JSON`)],
      ["start-pending", expect.stringContaining("local:demo#1")],
    ]);
    expect(report.problems[2]?.fix).toContain("the-loop item repair --project demo");
    expect(report.problems[3]?.message).toContain("failed to spawn 2 times");
  });

  it("looks the GitHub token up as the daemon does: the variables, then gh", async () => {
    const { dir, config, paths } = await stateRoot({
      polling: { sources: [{ provider: "github", repos: ["octo/repo"] }] },
      webhooks: { ghWebhook: { enabled: true } },
      integrations: { github: { ghBinary: NO_GH } },
    });
    const without = await statusReport(config, paths, { configDir: dir, env: {} });
    const missing = without.problems.find((p) => p.code === "github-token-missing");
    // Polling is off: only the receiver needs the token.
    expect(missing?.message).toContain("no GitHub token for the webhook receiver");
    expect(missing?.fix).toContain("GH_TOKEN");
    const withToken = await statusReport(config, paths, { configDir: dir, env: { GITHUB_TOKEN: "secret-value" } });
    expect(withToken.problems.map((p) => p.code)).not.toContain("github-token-missing");
    expect(JSON.stringify(withToken)).not.toContain("secret-value");
  });

  it("connects to each required remote hook's server, and only those", async () => {
    const up = await listening();
    const down = await closedPort();
    const { dir, config, paths } = await stateRoot({
      hooks: [
        { name: "up", url: `http://127.0.0.1:${up}/rpc`, required: true },
        { name: "down", url: `http://127.0.0.1:${down}/rpc`, required: true },
        { name: "optional", url: `http://127.0.0.1:${down}/rpc` },
        { name: "off", url: `http://127.0.0.1:${down}/rpc`, required: true, enabled: false },
      ],
    });
    const report = await statusReport(config, paths, { configDir: dir, env: {} });
    expect(report.problems).toEqual([
      expect.objectContaining({ code: "hook-server-down", message: `the required hook "down" does not answer at http://127.0.0.1:${down}: ECONNREFUSED` }),
    ]);
  });
});
