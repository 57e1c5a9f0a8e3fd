import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EventLog } from "../../src/events/log.js";
import { HookRunRecorder } from "../../src/hooks/runs.js";
import { jsonOf, runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

/** A project with a budget policy written from agh's docs, a lifecycle veto, and its event log at a known path. */
async function project(): Promise<{ cwd: string; log: string; marker: string }> {
  const cwd = await tempDir();
  const configDir = join(cwd, ".the-loop");
  await mkdir(configDir);
  const marker = join(cwd, "called");
  // Denies the first generation only: the payload it reads is agh's flat one.
  await writeFile(
    join(configDir, "budget.sh"),
    `#!/bin/sh\npayload=$(cat)\necho called >> ${JSON.stringify(marker)}\ncase "$payload" in *'"generation":1'*) echo '{"denied":true,"deny_reason":"over budget"}' ;; esac\n`,
  );
  await chmod(join(configDir, "budget.sh"), 0o755);
  const log = join(cwd, "events.jsonl");
  await writeFile(
    join(configDir, "cli-config.yaml"),
    [
      `eventLog:`,
      `  path: ${JSON.stringify(log)}`,
      `hooks:`,
      `  - name: budget`,
      `    command: ["./budget.sh"]`,
      `    on: [loop.generation.pre]`,
      `  - name: veto`,
      `    command: ["sh", "-c", "cat >/dev/null; echo '{\\"proceed\\": false, \\"reason\\": \\"not today\\"}'"]`,
      `    on: [work_item_start]`,
      `    enabled: false`,
      ``,
    ].join("\n"),
  );
  return { cwd, log, marker };
}

/** The log a daemon would have written: a denial, a failure, and a busy minute of applied calls. */
function recordRuns(log: string): void {
  let at = Date.UTC(2026, 6, 27, 12, 0, 0);
  const events = new EventLog({ path: log, source: "daemon", now: () => new Date(at) });
  const recorder = new HookRunRecorder(events, { now: () => at, timers: false });
  const base = { point: "loop.generation.pre", workItem: "local:demo#1", loopRunId: "run-1" };
  recorder.record({ ...base, hook: "budget", durationMs: 12 }, "denied", { error: "over budget" });
  recorder.record({ ...base, hook: "other", durationMs: 5000, workItem: "local:demo#2" }, "failed", { error: "timed out after 5s" });
  for (let call = 0; call < 20; call += 1) recorder.record({ ...base, hook: "budget", durationMs: call }, "applied");
  at += 60_000;
  recorder.flush();
  events.emit("hooks.loop_dropped", { point: "loop.started", loop_run_id: "run-1", waiting: 64, work_item: "local:demo#1" });
}

interface Run {
  hook?: string;
  event: string;
  outcome: string;
  duration_ms: number;
  work_item?: string;
  error?: string;
  count?: number;
  median_ms?: number;
}

describe("the-loop hooks runs", () => {
  it("lists each recorded call with its outcome, duration and error, an aggregate and a dropped delivery among them", async () => {
    const { cwd, log } = await project();
    recordRuns(log);
    const all = jsonOf<Run[]>(await runCli(["hooks", "runs", "--json", "--limit", "0"], { cwd }));
    expect(all).toHaveLength(1 + 1 + 5 + 1 + 1);
    expect(all[0]).toMatchObject({
      hook: "budget",
      event: "loop.generation.pre",
      outcome: "denied",
      duration_ms: 12,
      error: "over budget",
      work_item: "local:demo#1",
    });
    expect(all.find((run) => run.count !== undefined)).toMatchObject({ hook: "budget", outcome: "applied", count: 15, duration_ms: 19, median_ms: 12 });
    expect(all.at(-1)).toMatchObject({ event: "loop.started", outcome: "dropped" });
    expect(all.at(-1)?.hook).toBeUndefined();

    const failed = jsonOf<Run[]>(await runCli(["hooks", "runs", "--outcome", "failed", "--json"], { cwd }));
    expect(failed.map((run) => run.hook)).toEqual(["other"]);
    const item = jsonOf<Run[]>(await runCli(["hooks", "runs", "--work-item", "local:demo#2", "--json"], { cwd }));
    expect(item.map((run) => run.hook)).toEqual(["other"]);
    const last = jsonOf<Run[]>(await runCli(["hooks", "runs", "--hook", "budget", "--last", "2", "--json"], { cwd }));
    expect(last.map((run) => run.outcome)).toEqual(["applied", "applied"]);

    const table = await runCli(["hooks", "runs", "--outcome", "denied"], { cwd });
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/budget\s+loop\.generation\.pre\s+local:demo#1\s+denied\s+12 ms\s+over budget/);
  });

  it("refuses an outcome agh does not name, and says when nothing is recorded", async () => {
    const { cwd } = await project();
    const wrong = await runCli(["hooks", "runs", "--outcome", "ok"], { cwd });
    expect(wrong.code).toBe(2);
    const empty = await runCli(["hooks", "runs"], { cwd });
    expect(empty.code).toBe(0);
    expect(empty.stderr).toContain("no hook calls recorded");
  });
});

describe("the-loop hooks info and hooks events", () => {
  it("shows a hook's declaration, its points and its last runs, and refuses an undeclared name", async () => {
    const { cwd, log } = await project();
    recordRuns(log);
    const info = jsonOf<{ name: string; points: string[]; timeoutSeconds: number; lastRuns: Run[] }>(
      await runCli(["hooks", "info", "budget", "--json"], { cwd }),
    );
    expect(info).toMatchObject({ name: "budget", kind: "command", points: ["loop.generation.pre"], timeoutSeconds: 5, required: false });
    expect(info.lastRuns.length).toBeGreaterThan(0);
    expect(info.lastRuns.every((run) => run.hook === "budget")).toBe(true);
    const text = await runCli(["hooks", "info", "budget"], { cwd });
    expect(text.stdout).toContain("timeout:   5 s");
    const missing = await runCli(["hooks", "info", "nope"], { cwd });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no hook named "nope"');
  });

  it("lists both families' points", async () => {
    const { cwd } = await project();
    const events = jsonOf<{ name: string; family: string; canDeny: boolean }[]>(await runCli(["hooks", "events", "--json"], { cwd }));
    expect(events.find((event) => event.name === "loop.gate.pre")).toMatchObject({ family: "loop", canDeny: true });
    expect(events.find((event) => event.name === "work_item_start")).toMatchObject({ family: "lifecycle", canDeny: true });
  });
});

describe("the-loop hooks test", () => {
  it("reproduces a denial on a sample payload without a daemon, and says what the daemon would do", async () => {
    const { cwd, log, marker } = await project();
    const result = await runCli(["hooks", "test", "budget", "--point", "loop.generation.pre", "--json"], { cwd });
    const report = jsonOf<{ outcome: string; answer: unknown; duration_ms: number; daemonWould: string[]; sampled: boolean }>(result);
    expect(report).toMatchObject({ outcome: "denied", answer: { denied: true, deny_reason: "over budget" }, sampled: true });
    expect(report.daemonWould[0]).toContain("deny loop.generation.pre");
    expect(report.daemonWould.join(" ")).toContain("hook_denied");
    // The hook ran (its side effect happened), and nothing was recorded.
    const { readFile } = await import("node:fs/promises");
    expect(await readFile(marker, "utf8")).toBe("called\n");
    await expect(readFile(log, "utf8")).rejects.toThrow();
  });

  it("reads a payload from stdin, and tests a disabled entry", async () => {
    const { cwd } = await project();
    const passed = await runCli(["hooks", "test", "budget", "--point", "loop.generation.pre", "--payload", "-"], { cwd, input: '{"generation":2}' });
    expect(passed.code).toBe(0);
    expect(passed.stdout).toContain("outcome:   applied");
    expect(passed.stdout).toContain("the daemon would: go on");
    const veto = jsonOf<{ outcome: string; daemonWould: string[] }>(await runCli(["hooks", "test", "veto", "--point", "work_item_start", "--json"], { cwd }));
    expect(veto.outcome).toBe("denied");
    expect(veto.daemonWould[0]).toBe("refuse: not today");
  });

  it("refuses an undeclared hook, a point it does not serve, and a payload that is not an object", async () => {
    const { cwd } = await project();
    const missing = await runCli(["hooks", "test", "nope", "--point", "work_item_start"], { cwd });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no hook named "nope"');
    const elsewhere = await runCli(["hooks", "test", "budget", "--point", "loop.gate.pre"], { cwd });
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain("its on names loop.generation.pre");
    const unknown = await runCli(["hooks", "test", "budget", "--point", "loop.nothing"], { cwd });
    expect(unknown.code).toBe(2);
    const list = await runCli(["hooks", "test", "budget", "--point", "loop.generation.pre", "--payload", "-"], { cwd, input: "[1]" });
    expect(list.code).toBe(2);
    expect(list.stderr).toContain("must be a JSON object");
  });
});
