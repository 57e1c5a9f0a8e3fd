import { describe, expect, it } from "vitest";
import { jsonOf } from "../support/cli.js";
import { CLAUDE_CODE_VERSION, claudeBinary, claudeEnv, claudeHome } from "../support/claude-code.js";
import { startModelStub, type ModelReply, type ModelRequest, type ModelStub } from "../support/model-stub.js";
import { agentSuite, requestLine, screenOf, waitInSession } from "../support/real-agent.js";
import { testProject, type TestProject } from "../support/project.js";
import { ARM } from "../support/builders.js";

/**
 * The real Claude Code, pinned, reaching the-loop as an MCP server instead of its shell: the
 * session's start registers `the-loop mcp` and pre-approves its tools, the scripted model calls
 * `mcp__the-loop__ask`, and the question appears on the work item, marked. The operator allows no
 * tool at all: the MCP tool runs without a prompt because the-loop pre-approved it, and only it.
 */

const QUESTION = "Should the cache live in Redis or in memory?";
const ANSWER = "In memory for now, please.";
const ASK_TOOL = "mcp__the-loop__ask";

const agent = agentSuite<ModelStub>(claudeBinary, { installTimeoutMs: 300_000 });

/** The names of the tools a request offered the model. */
function toolNames(request: ModelRequest): string[] {
  return (request.body.tools ?? []).map((tool) => (typeof tool === "object" && tool !== null && "name" in tool ? String(tool.name) : ""));
}

/**
 * The agent's script: ask once through the-loop's MCP tool, then acknowledge. Claude Code connects
 * its MCP servers while its first turn starts, and offers `WaitForMcpServers` until they are in:
 * the script waits for the-loop's server with it, as the tool's description tells a model to.
 */
function askThroughMcp(request: ModelRequest, agentic: readonly ModelRequest[]): ModelReply {
  const offered = toolNames(request);
  const asked = agentic.slice(0, -1).some((earlier) => toolNames(earlier).includes(ASK_TOOL));
  if (!asked && offered.includes(ASK_TOOL)) return { toolUse: { name: ASK_TOOL, input: { question: QUESTION } } };
  if (!asked && offered.includes("WaitForMcpServers")) return { toolUse: { name: "WaitForMcpServers", input: { servers: ["the-loop"] } } };
  return { text: request.lastUserText.includes(ANSWER) ? "Thanks — in memory it is." : "Waiting for the answer." };
}

interface ItemJson {
  comments: { author: string | null; body: string }[];
}
interface SessionsJson {
  sessions: { tmuxTarget: string }[];
}

/** Waits as waitFor does; a timeout says what the pane, the event log and the model saw. */
const inSession = <T>(p: TestProject, what: string, probe: () => Promise<T | undefined>): Promise<T> =>
  waitInSession(p, what, probe, { timeoutMs: 45_000, requests: () => (agent.stub?.requests ?? []).map((r) => requestLine(r, toolNames(r), 200)) });

describe(`the real Claude Code CLI (${CLAUDE_CODE_VERSION}) with the-loop's MCP server`, { timeout: 120_000 }, () => {
  it("calls mcp__the-loop__ask with no tool of the operator's allowed, and the question appears on the work item; the answer comes back", async () => {
    const home = await claudeHome();
    agent.stub = await startModelStub(askThroughMcp);
    const p = await testProject({ routing: { defaultHarness: "claude", harnesses: { claude: { command: [agent.binary] } } } });
    agent.project = p;
    const started = await p.cli(["start"], claudeEnv(home, agent.stub.url));
    expect(started.code, started.stderr).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Pick a cache", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned", 30_000);

    const offered = await inSession(p, "a model request offering the-loop's tools", async () =>
      agent.stub?.requests.find((r) => r.agentic && toolNames(r).includes(ASK_TOOL)),
    );
    expect(toolNames(offered)).toEqual(expect.arrayContaining(["mcp__the-loop__graph_complete", "mcp__the-loop__graph_status", "mcp__the-loop__why"]));

    const asked = await inSession(p, "the question on the work item", async () =>
      jsonOf<ItemJson>(await p.cli(["item", "show", "#1", "--json"])).comments.find((c) => c.body.includes(QUESTION)),
    );
    expect(asked.body).toContain("<!-- the-loop:agent-comment -->");
    // The tool's answer reached the model as the tool's result: no prompt stood in between.
    const result = await inSession(p, "the tool's result in the next request", async () =>
      agent.stub?.requests.find((r) => r.agentic && r.lastUserText.includes("Posted your question on local:demo#1")),
    );
    expect(result.lastUserText).toMatch(/Now stop and wait/);

    expect((await p.cli(["item", "comment", "#1", ANSWER, "--as", "alice"])).code).toBe(0);
    await inSession(p, "the answer in the model's next request", async () => agent.stub?.requests.find((r) => r.agentic && r.lastUserText.includes(ANSWER)));
    const [session] = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"])).sessions;
    expect(await screenOf(p, session?.tmuxTarget ?? "")).not.toMatch(/Do you want to proceed|Enter to confirm/);
  });
});
