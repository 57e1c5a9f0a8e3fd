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
  it("runs the daemon path end to end — spawn, ask, answer, drop, close — and cleans up", async () => {
    const cwd = await tempDir();
    const result = await runCli(["demo"], { cwd });
    expect(result.code, result.stderr + result.stdout).toBe(0);
    for (let step = 1; step <= 9; step++) expect(result.stdout).toContain(`[${step}/9]`);
    expect(result.stdout).toContain("the-loop spawns a session");
    expect(result.stdout).toContain("✅ got it");
    expect(result.stdout).toMatch(/routing\.dropped\s+local:demo#1\s+reason=unauthorized-actor/);
    expect(result.stdout).toMatch(/session\.closed\s+local:demo#1\s+reason=item-closed/);
    expect(result.stdout).toMatch(/local:demo#1\s+closed\s+demo-agent\s+loop-local-demo-1-/);
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
      const types = log.map((line) => (JSON.parse(line) as { event: string }).event);
      for (const type of ["daemon.started", "session.spawned", "session.awaiting_input", "dispatch.succeeded", "session.closed", "daemon.stopped"]) {
        expect(types).toContain(type);
      }
      expect(types.filter((type) => type === "session.spawned")).toHaveLength(1);
      expect(await exists(join(root, "cli-config.yaml"))).toBe(true);
      expect(result.stdout).toContain(`The project is kept at ${dirname(root)}`);
    } finally {
      await rm(dirname(root), { recursive: true, force: true });
    }
  });
});
