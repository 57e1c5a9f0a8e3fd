import { execFile } from "node:child_process";
import { access, readFile, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

const exists = (path: string): Promise<boolean> => access(path).then(() => true, () => false);
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
    expect(result.stdout).toContain("✅ got it");
    // mallory's stop keyword is dropped like any unauthorized comment: the session closes with the item.
    expect(result.stdout).toMatch(/routing\.dropped\s+local:demo#1\s+reason=unauthorized-actor/);
    expect(result.stdout).toMatch(/session\.closed\s+local:demo#1\s+reason=item-closed/);
    // The session list as \`the-loop sessions list\` prints it: status and the item's last control command.
    expect(result.stdout).toMatch(/^work item\s+status\s+control\s+harness\s+tmux\s+last event$/m);
    expect(result.stdout).toMatch(/^local:demo#1\s+closed\s+start \(cleared\)\s+demo-agent\s+loop-[0-9a-f]{8}-local-demo-1-\S+\s+\d{4}-\d\d-\d\dT/m);
    expect(result.stdout).toContain("<!-- the-loop:agent-comment -->");
    expect(await exists(dirname(stateRootOf(result.stdout)))).toBe(false);
    expect(await tmuxServerRuns(socketOf(result.stdout))).toBe(false);
    expect(await exists(join(cwd, ".the-loop"))).toBe(false);
  });

  it("keeps the project with --keep: its config, the session record and the event log", async () => {
    const cwd = await tempDir();
    const result = await runCli(["demo", "--keep"], { cwd });
    expect(result.code, result.stderr + result.stdout).toBe(0);
    const root = stateRootOf(result.stdout);
    try {
      const log = (await readFile(join(root, "logs", "events.jsonl"), "utf8")).trim().split("\n");
      const records = log.map((line) => JSON.parse(line) as { event: string; reason?: string; command?: string; actor?: string });
      const types = records.map((record) => record.event);
      for (const type of ["daemon.started", "control.command", "session.spawned", "session.awaiting_input", "dispatch.succeeded", "session.closed", "daemon.stopped"]) {
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
      expect(result.stdout).toContain(`The project is kept at ${dirname(root)}`);
    } finally {
      await rm(dirname(root), { recursive: true, force: true });
    }
  });
});
