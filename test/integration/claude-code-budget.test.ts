import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { jsonOf } from "../support/cli.js";
import { CLAUDE_CODE_VERSION, claudeBinary, claudeEnv, claudeHome } from "../support/claude-code.js";
import { startModelStub, type ModelRequest, type ModelReply, type ModelStub } from "../support/model-stub.js";
import { endAgentProject } from "../support/real-agent.js";
import { testProject, type TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { ARM } from "../support/builders.js";

/**
 * A budget crossed by the real agent: Claude Code, pinned, works in a session against a scripted
 * Messages API whose every reply reports 600 input and 50 output tokens. The-loop reads them off
 * Claude Code's own transcript; at the limit (1,000 tokens) the item is paused, the agent's turn
 * interrupted, and the figures posted; `sessions resume --budget +N` raises it and goes on.
 */

const run = promisify(execFile);

let binary = "";
let project: TestProject | undefined;
let stub: ModelStub | undefined;

beforeAll(async () => {
  binary = await claudeBinary();
}, 300_000);

afterEach(async () => {
  if (project !== undefined) await endAgentProject(project);
  project = undefined;
  await stub?.close();
  stub = undefined;
});

/** Works on and on (a shell step after each reply) until it is told it was resumed; then it is done. */
function busyUntilResumed(request: ModelRequest): ModelReply {
  if (request.lastUserText.includes("was resumed")) return { text: "Resumed: re-reading the thread, then carrying on." };
  return { toolUse: { name: "Bash", input: { command: "sleep 3", description: "Work a little" } } };
}

interface SessionsJson {
  sessions: {
    tmuxTarget: string;
    status: string;
    control: { command: string; source: string; actor: string } | null;
    usage: { tokens: number | null; minutes: number; limits: { tokens?: number } } | null;
  }[];
}
interface ItemJson {
  comments: { author: string | null; body: string }[];
}

async function screenOf(p: TestProject, target: string): Promise<string> {
  const { stdout } = await run("tmux", ["-L", p.socketName, "capture-pane", "-p", "-t", `=${target}:`]).catch(() => ({ stdout: "" }));
  return stdout;
}

describe(`a routing.budget crossed by the real Claude Code CLI (${CLAUDE_CODE_VERSION})`, { timeout: 150_000 }, () => {
  it("pauses the item at the limit with the figures, interrupts the turn, and resumes with --budget +N", async () => {
    const home = await claudeHome();
    stub = await startModelStub(busyUntilResumed, { usage: { input_tokens: 600, output_tokens: 50 } });
    project = await testProject({
      routing: {
        defaultHarness: "claude",
        harnesses: { claude: { command: [binary], args: ["--allowedTools", "Bash(the-loop ask:*)", "Bash(sleep:*)"] } },
        budget: { tokens: 1000, warnAt: 0.5 },
      },
    });
    const p = project;
    expect((await p.cli(["start"], claudeEnv(home, stub.url))).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Spend tokens", "--as", "alice"])).code).toBe(0);
    expect((await p.cli(["item", "label", "#1", "--add", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned", 30_000);

    // 650 tokens after the first request: past warnAt (500) of 1,000.
    const warned = await p.waitForEvent("the warning", (r) => r.event === "session.budget_warned", 60_000);
    expect(warned).toMatchObject({ work_item: "local:demo#1", dimension: "tokens", limit: 1000, harness: "claude" });
    const exceeded = await p.waitForEvent("the limit", (r) => r.event === "session.budget_exceeded", 60_000);
    expect(exceeded).toMatchObject({ dimension: "tokens", limit: 1000, interrupted: true });
    expect(Number(exceeded.used)).toBeGreaterThanOrEqual(1300);
    expect(exceeded.used).toBe(exceeded.tokens);

    const listed = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"])).sessions[0];
    expect(listed).toMatchObject({ status: "paused", control: { command: "pause", source: "budget", actor: "the-loop" } });
    expect(listed?.usage?.tokens).toBeGreaterThanOrEqual(Number(exceeded.tokens));
    expect(listed?.usage?.limits.tokens).toBe(1000);
    const why = await p.cli(["why", "#1"]);
    expect(why.stdout).toMatch(new RegExp(`usage +${Number(listed?.usage?.tokens).toLocaleString("en-US")}/1,000 tok, \\d+ min`));
    const target = listed?.tmuxTarget ?? "";
    // The turn under way ended by Claude Code's own interrupt (Escape), not by the pause alone.
    await waitFor("the interrupted turn on the pane", async () => /Interrupted/.test(await screenOf(p, target)), { timeoutMs: 15_000 });

    const comments = async (): Promise<ItemJson["comments"]> => jsonOf<ItemJson>(await p.cli(["item", "show", "#1", "--json"])).comments;
    const pausedNote = (await comments()).find((c) => c.body.includes("reached its budget"));
    expect(pausedNote?.body).toContain(`${Number(exceeded.used).toLocaleString("en-US")} of 1,000 tokens`);
    expect(pausedNote?.body).toContain("--budget +N");
    expect(pausedNote?.body).toContain("<!-- the-loop:agent-comment -->");
    expect((await comments()).find((c) => c.body.includes("warning at 50%"))?.body).toContain("<!-- the-loop:agent-comment -->");

    // A resume without a raise would be paused again at once: refused, saying how.
    const bare = await p.cli(["sessions", "resume", "--work-item", "#1"]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain("--budget +N");

    const before = stub.requests.filter((r) => r.agentic).length;
    const resumed = await p.cli(["sessions", "resume", "--work-item", "#1", "--budget", "+5000"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain("raised local:demo#1's tokens limit by 5000, to 6000");
    expect((await p.events()).find((r) => r.event === "session.budget_raised")).toMatchObject({ dimension: "tokens", by: 5000, limit: 6000 });
    await waitFor(
      "the resumed agent's next request",
      async () => stub?.requests.slice(before).find((r) => r.agentic && r.lastUserText.includes("was resumed")),
      {
        timeoutMs: 30_000,
      },
    );
    const after = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"])).sessions[0];
    expect(after).toMatchObject({ status: "active", usage: { limits: { tokens: 6000 } } });
    // Not paused again: one budget_exceeded only.
    expect((await p.events()).filter((r) => r.event === "session.budget_exceeded")).toHaveLength(1);
  });
});
