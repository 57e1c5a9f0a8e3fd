import { describe, it } from "vitest";
import { BUDGET_TOKENS, PER_REQUEST, WORK_COMMAND, crossBudget, toldResumed } from "../support/budget-run.js";
import { CODEX_KEY_ENV, CODEX_VERSION, codexBinary, codexEnv, codexHome } from "../support/codex.js";
import { agentSuite } from "../support/real-agent.js";
import { startRefusingProxy } from "../support/refusing-proxy.js";
import { startResponsesStub, type ResponsesReply, type ResponsesRequest, type ResponsesStub } from "../support/responses-stub.js";

/**
 * A budget crossed by the real Codex CLI, pinned, against a scripted Responses API whose every
 * `response.completed` reports its usage. The-loop reads Codex's running total off its rollout
 * file (`token_count` events); the run is test/support/budget-run.ts.
 */

const agent = agentSuite<ResponsesStub>(codexBinary, { installTimeoutMs: 600_000 });

/** Works on and on (a shell step after each reply) until it is told it was resumed; then it is done. */
function busyUntilResumed(request: ResponsesRequest): ResponsesReply {
  if (toldResumed(request.lastUserText)) return { text: "Resumed: re-reading the thread, then carrying on." };
  return { call: { name: "exec_command", args: { cmd: WORK_COMMAND } } };
}

describe(`a routing.budget crossed by the real Codex CLI (${CODEX_VERSION})`, { timeout: 180_000 }, () => {
  it(`pauses the item at ${BUDGET_TOKENS} tokens with the figures, interrupts the turn with Escape, and resumes with --budget +N`, async () => {
    agent.stub = await startResponsesStub(busyUntilResumed, { usage: { input_tokens: PER_REQUEST.input, output_tokens: PER_REQUEST.output } });
    agent.proxy = await startRefusingProxy();
    const models = agent.stub;
    const home = await codexHome(models.url);
    await crossBudget(
      {
        harness: "codex",
        routing: { defaultHarness: "codex", harnesses: { codex: { command: [agent.binary] } }, tmux: { passEnv: [CODEX_KEY_ENV] } },
        env: codexEnv(home, agent.proxy.url),
        agenticTexts: () => models.requests.filter((r) => r.agentic).map((r) => r.lastUserText),
        interrupted: /Conversation interrupted/,
      },
      (p) => (agent.project = p),
    );
  });
});
