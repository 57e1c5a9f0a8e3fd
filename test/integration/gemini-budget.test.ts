import { describe, it } from "vitest";
import { BUDGET_TOKENS, PER_REQUEST, WORK_COMMAND, crossBudget, toldResumed } from "../support/budget-run.js";
import { GEMINI_CLI_VERSION, geminiBinary, geminiEnv, geminiHome } from "../support/gemini.js";
import { startGeminiStub, type GeminiReply, type GeminiRequest, type GeminiStub } from "../support/gemini-stub.js";
import { agentSuite } from "../support/real-agent.js";

/**
 * A budget crossed by the real Gemini CLI, pinned, against a scripted Gemini API whose every
 * reply reports its `usageMetadata`. The-loop reads it off Gemini's own chat file (each `gemini`
 * message's `tokens`); the run is test/support/budget-run.ts.
 */

const agent = agentSuite<GeminiStub>(geminiBinary, { installTimeoutMs: 300_000, terminateFirst: true });

/** Works on and on (a shell step after each reply) until it is told it was resumed; then it is done. */
function busyUntilResumed(request: GeminiRequest): GeminiReply {
  if (toldResumed(request.lastUserText)) return { text: "Resumed: re-reading the thread, then carrying on." };
  return { functionCall: { name: "run_shell_command", args: { command: WORK_COMMAND, description: "Work a little" } } };
}

describe(`a routing.budget crossed by the real Gemini CLI (${GEMINI_CLI_VERSION})`, { timeout: 180_000 }, () => {
  it(`pauses the item at ${BUDGET_TOKENS} tokens with the figures, interrupts the turn with Escape, and resumes with --budget +N`, async () => {
    agent.stub = await startGeminiStub(busyUntilResumed, { usage: { promptTokenCount: PER_REQUEST.input, candidatesTokenCount: PER_REQUEST.output } });
    const models = agent.stub;
    const home = await geminiHome();
    await crossBudget(
      {
        harness: "gemini",
        routing: { defaultHarness: "gemini", harnesses: { gemini: { command: [agent.binary] } } },
        env: geminiEnv(home, models),
        agenticTexts: () => models.requests.filter((r) => r.agentic).map((r) => r.lastUserText),
        interrupted: /Request cancelled/,
      },
      (p) => (agent.project = p),
    );
  });
});
