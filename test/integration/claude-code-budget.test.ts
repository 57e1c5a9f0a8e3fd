import { describe, it } from "vitest";
import { BUDGET_TOKENS, PER_REQUEST, WORK_COMMAND, crossBudget, toldResumed } from "../support/budget-run.js";
import { CLAUDE_CODE_VERSION, claudeBinary, claudeEnv, claudeHome } from "../support/claude-code.js";
import { startModelStub, type ModelRequest, type ModelReply, type ModelStub } from "../support/model-stub.js";
import { agentSuite } from "../support/real-agent.js";

/**
 * A budget crossed by the real agent: Claude Code, pinned, works in a session against a scripted
 * Messages API whose every reply reports its usage (`message_start`'s and `message_delta`'s
 * `usage`). The-loop reads it off Claude Code's own transcript; the run is test/support/budget-run.ts.
 */

const agent = agentSuite<ModelStub>(claudeBinary, { installTimeoutMs: 300_000 });

/** Works on and on (a shell step after each reply) until it is told it was resumed; then it is done. */
function busyUntilResumed(request: ModelRequest): ModelReply {
  if (toldResumed(request.lastUserText)) return { text: "Resumed: re-reading the thread, then carrying on." };
  return { toolUse: { name: "Bash", input: { command: WORK_COMMAND, description: "Work a little" } } };
}

describe(`a routing.budget crossed by the real Claude Code CLI (${CLAUDE_CODE_VERSION})`, { timeout: 150_000 }, () => {
  it(`pauses the item at ${BUDGET_TOKENS} tokens with the figures, interrupts the turn with Escape, and resumes with --budget +N`, async () => {
    const home = await claudeHome();
    agent.stub = await startModelStub(busyUntilResumed, { usage: { input_tokens: PER_REQUEST.input, output_tokens: PER_REQUEST.output } });
    const models = agent.stub;
    await crossBudget(
      {
        harness: "claude",
        routing: {
          defaultHarness: "claude",
          harnesses: { claude: { command: [agent.binary], args: ["--allowedTools", "Bash(the-loop ask:*)", "Bash(sleep:*)"] } },
        },
        env: claudeEnv(home, models.url),
        agenticTexts: () => models.requests.filter((r) => r.agentic).map((r) => r.lastUserText),
        interrupted: /Interrupted/,
      },
      (p) => (agent.project = p),
    );
  });
});
