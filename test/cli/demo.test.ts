import { execFile } from "node:child_process";
import { access, readFile, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { demoSummary } from "../../src/cli/commands/demo.js";
import type { EventRecord } from "../../src/events/reader.js";
import { runCli } from "../support/cli.js";
import { printedStopCommands } from "../support/demo-keep.js";
import { tempDir } from "../support/temp.js";

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );
const run = promisify(execFile);

function stateRootOf(output: string): string {
  const root = /^state root: (\S+)/m.exec(output)?.[1];
  if (!root) throw new Error(`the demo did not say where its state root is:\n${output}`);
  return root;
}

function socketOf(output: string): string {
  const socket = /tmux server -L (\S+)/.exec(output)?.[1];
  if (!socket) throw new Error(`the demo did not name its tmux server:\n${output}`);
  return socket;
}

/** The figures of the demo's closing account, as it printed them. */
function summaryOf(output: string): string[] {
  const summary = /^Done\. .*\n((?: {2}.*\n)+)/m.exec(output)?.[1];
  if (!summary) throw new Error(`the demo printed no summary:\n${output}`);
  return summary
    .trimEnd()
    .split("\n")
    .map((line) => line.trim());
}

/** The rows of the event table the demo printed (the lines between its header and the summary). */
function eventRowsOf(output: string): string[] {
  const table = /^TIME\s+LEVEL\s+SOURCE\s+EVENT.*\n([\s\S]*?)\n\nDone\./m.exec(output)?.[1];
  if (table === undefined) throw new Error(`the demo printed no event table:\n${output}`);
  return table.split("\n").filter((line) => line.trim() !== "");
}

async function tmuxServerRuns(socket: string): Promise<boolean> {
  return run("tmux", ["-L", socket, "list-sessions"]).then(
    () => true,
    () => false,
  );
}

describe("the-loop demo", () => {
  it("runs the daemon path end to end — arm, start, ask, answer, drop, close — and cleans up", async () => {
    const cwd = await tempDir();
    const result = await runCli(["demo"], { cwd });
    expect(result.code, result.stderr + result.stdout).toBe(0);
    for (let step = 1; step <= 10; step++) expect(result.stdout).toContain(`[${step}/10]`);
    expect(result.stdout).not.toContain("[11/");
    // The start gate stays on: the label arms the item, and only alice's start comment spawns it.
    expect(result.stdout).toContain("that arms it, and still nothing starts");
    expect(result.stdout).toMatch(/routing\.dropped\s+local:demo#1\s+reason=awaiting-start/);
    expect(result.stdout).toContain("alice comments the-loop:start-execution: the-loop spawns a session");
    expect(result.stdout).toMatch(/control\.command\s+local:demo#1\s+.*command=start/);
    expect(result.stdout).toMatch(/control\.command\s+local:demo#1\s+.*effect=started/);
    // The answer is read back from the agent's own screen, its words and all.
    expect(result.stdout).toMatch(
      /│ ✅ got it: New event on local:demo#1 \(commented by alice\):\n.*│ +│ comment: Plain JSON is fine; keep it dependency-free\./,
    );
    // mallory's stop keyword is dropped like any unauthorized comment: the session closes with the item.
    expect(result.stdout).toMatch(/routing\.dropped\s+local:demo#1\s+reason=unauthorized-actor/);
    expect(result.stdout).toMatch(/session\.closed\s+local:demo#1\s+reason=item-closed/);
    // The session list as \`the-loop sessions list\` prints it: status and the item's last control command.
    expect(result.stdout).toMatch(/^work item\s+status\s+control\s+harness\s+usage\s+tmux\s+last event$/m);
    expect(result.stdout).toMatch(/^local:demo#1\s+closed\s+start \(cleared\)\s+demo-agent\s+-\s+loop-[0-9a-f]{8}-local-demo-1-\S+\s+\d{4}-\d\d-\d\dT/m);
    // the-loop's own comments are shown as its own, without the machine marker they carry.
    expect(result.stdout).toMatch(/^ {2}the-loop {2}\S+Z {2}\S+ {2}the-loop's own$/m);
    expect(result.stdout).not.toContain("<!-- the-loop:agent-comment -->");
    expect(summaryOf(result.stdout).slice(0, 4)).toEqual([
      "1 session spawned, 1 closed with its work item",
      "1 question asked with `the-loop ask`, 1 answer delivered into the session",
      "1 event held at the start gate, 1 unauthorized comment dropped",
      "5 comments on the work item: 2 by alice, 2 by the-loop, 1 by mallory",
    ]);
    expect(result.stdout).toContain("5 comments:");
    // The event count is the table's: what the summary counts is what the demo showed.
    expect(summaryOf(result.stdout)[4]).toMatch(new RegExp(`^${eventRowsOf(result.stdout).length} of \\d+ events in the table above`));
    expect(result.stdout).toContain("`the-loop sessions close --work-item REF` ends one");
    expect(await exists(dirname(stateRootOf(result.stdout)))).toBe(false);
    expect(await tmuxServerRuns(socketOf(result.stdout))).toBe(false);
    expect(await exists(join(cwd, ".the-loop"))).toBe(false);
  });

  it("keeps the project with --keep: its config, the session record and the event log; the daemon and its dashboard run on until the printed commands stop them", async () => {
    const cwd = await tempDir();
    const result = await runCli(["demo", "--keep"], { cwd });
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const root = stateRootOf(result.stdout);
    const socket = socketOf(result.stdout);
    const configFile = join(root, "cli-config.yaml");
    try {
      // The dashboard: its one-time login, then the kept item, live, on the board.
      expect(result.stdout).toContain(`  state root: ${root}`);
      expect(result.stdout).toMatch(/^ {2}local:demo#2 "Document the \/healthz endpoint": its session is live/m);
      const login = /dashboard login \(works once, before \S+\): (http:\/\/127\.0\.0\.1:\d+\/login\?token=\S+)$/m.exec(result.stdout)?.[1];
      expect(login, result.stdout).toBeDefined();
      const loggedIn = await fetch(login ?? "", { redirect: "manual" });
      expect(loggedIn.status).toBeGreaterThanOrEqual(300);
      const cookie = (loggedIn.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
      const origin = new URL(login ?? "").origin;
      const items = (await (await fetch(`${origin}/api/v1/items`, { headers: { cookie } })).json()) as { items: { ref: string; column: string }[] };
      expect(items.items).toContainEqual(expect.objectContaining({ ref: "local:demo#2", column: expect.stringMatching(/^(working|waiting)$/) }));
      const me = (await (await fetch(`${origin}/api/v1/me`, { headers: { cookie } })).json()) as { operator: string | null };
      expect(me.operator).toBe("alice");
      // It waits at its review gate: the agent's claim moved it there, on the adhoc graph.
      expect(result.stdout).toMatch(/^ {4}the agent claimed its work \(the-loop graph complete\): it waits at its review gate for a person$/m);
      const gate = await runCli(["--config", configFile, "graph", "status", "local:demo#2", "--json"], { cwd });
      expect(gate.code, gate.stderr).toBe(0);
      expect(JSON.parse(gate.stdout)).toMatchObject({ graph: "adhoc", node: "review", status: "waiting" });
      // The printed commands stop it all.
      const stops = printedStopCommands(result.stdout);
      expect(stops).toEqual([`the-loop --config ${configFile} stop`, `tmux -L ${socket} kill-server`, `rm -rf ${dirname(root)}`]);
      const stopped = await runCli(["--config", configFile, "stop"], { cwd });
      expect(stopped.code, stopped.stderr).toBe(0);
      await run("tmux", ["-L", socket, "kill-server"]);
      expect(await tmuxServerRuns(socket)).toBe(false);
      const status = await runCli(["--config", configFile, "status", "--json"], { cwd });
      expect(status.code).toBe(1);
      await expect(fetch(`${origin}/api/v1/me`, { headers: { cookie } })).rejects.toThrow();

      const log = (await readFile(join(root, "logs", "events.jsonl"), "utf8")).trim().split("\n");
      const everything = log.map((line) => JSON.parse(line) as { event: string; reason?: string; command?: string; actor?: string });
      // The demo's flow ends with its daemon stopping; the kept daemon's events come after.
      const kept = everything.findIndex((record) => record.event === "daemon.stopped") + 1;
      expect(kept).toBeGreaterThan(0);
      const records = everything.slice(0, kept);
      expect(everything.slice(kept)).toContainEqual(expect.objectContaining({ event: "session.spawned", work_item: "local:demo#2" }));
      const types = records.map((record) => record.event);
      const debug = (records as { level?: string }[]).filter((record) => record.level === "debug").length;
      expect(summaryOf(result.stdout)[4]).toBe(
        `${records.length - debug} of ${records.length} events in the table above (the other ${debug} are debug: \`--level debug\`)`,
      );
      for (const type of [
        "daemon.started",
        "control.command",
        "session.spawned",
        "session.awaiting_input",
        "dispatch.succeeded",
        "session.closed",
        "daemon.stopped",
      ]) {
        expect(types).toContain(type);
      }
      expect(types.filter((type) => type === "session.spawned")).toHaveLength(1);
      // Armed before started: the label's event was held at the gate, and the spawn came after alice's start.
      const held = records.findIndex((record) => record.event === "routing.dropped" && record.reason === "awaiting-start");
      const started = records.findIndex((record) => record.event === "control.command" && record.command === "start" && record.actor === "alice");
      expect(held).toBeGreaterThanOrEqual(0);
      expect(started).toBeGreaterThan(held);
      expect(types.indexOf("session.spawned")).toBeGreaterThan(held);
      // Nothing mallory wrote became a command.
      expect(records.filter((record) => record.event === "control.command" && record.actor === "mallory")).toEqual([]);
      expect(await exists(join(root, "cli-config.yaml"))).toBe(true);
    } finally {
      // Whatever the test reached: nothing of the demo's is left running.
      // A daemon already stopped has nothing left to stop.
      await runCli(["--config", configFile, "stop"], { cwd }).catch(() => undefined);
      // A server already gone has nothing left to kill.
      await run("tmux", ["-L", socket, "kill-server"]).catch(() => undefined);
      await rm(dirname(root), { recursive: true, force: true });
    }
    // The kept phase also waits for its agent's question, the answer and the claim: more than the default bound on a loaded machine.
  }, 60_000);
});

describe("the demo's closing account", () => {
  const record = (event: string, fields: Record<string, unknown> = {}): EventRecord => ({
    ts: "2026-01-01T00:00:00.000Z",
    source: "daemon",
    level: "info",
    event,
    work_item: "local:demo#1",
    ...fields,
  });

  it.each([
    {
      name: "counts only what happened to the demo's item",
      records: [record("session.spawned"), record("session.spawned", { work_item: "local:demo#2" }), record("session.closed", { reason: "item-closed" })],
      line: 0,
      expected: "1 session spawned, 1 closed with its work item",
    },
    {
      name: "calls a delivery an answer only once a question was asked",
      records: [record("dispatch.succeeded"), record("session.awaiting_input"), record("dispatch.succeeded")],
      line: 1,
      expected: "1 question asked with `the-loop ask`, 1 answer delivered into the session",
    },
    {
      name: "says so when nothing was asked",
      records: [record("dispatch.succeeded")],
      line: 1,
      expected: "0 questions asked with `the-loop ask`, 0 answers delivered into the session",
    },
    {
      name: "tells the start gate's holds from unauthorized drops",
      records: [
        record("routing.dropped", { reason: "awaiting-start" }),
        record("routing.dropped", { reason: "unauthorized-actor" }),
        record("routing.dropped", { reason: "unauthorized-actor" }),
      ],
      line: 2,
      expected: "1 event held at the start gate, 2 unauthorized comments dropped",
    },
  ])("$name", ({ records, line, expected }) => {
    expect(demoSummary(records, "local:demo#1", [], records.length)[line]).toBe(expected);
  });

  it("names the comments' authors and the events the table left out", () => {
    const records = [record("poll.cycle", { level: "debug" }), record("item.commented"), record("item.commented")];
    const summary = demoSummary(records, "local:demo#1", [{ author: "alice" }, { author: null }, { author: "alice" }], 2);
    expect(summary[3]).toBe("3 comments on the work item: 2 by alice, 1 by (unknown)");
    expect(summary[4]).toBe("2 of 3 events in the table above (the other 1 is debug: `--level debug`)");
    expect(demoSummary(records, "local:demo#1", [], 3)[4]).toBe("3 of 3 events in the table above");
    expect(demoSummary(records, "local:demo#1", [], 3)[3]).toBe("0 comments on the work item");
  });
});
