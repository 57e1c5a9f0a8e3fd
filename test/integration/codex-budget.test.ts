import { afterEach, beforeAll, describe, it } from "vitest";
import { BUDGET_TOKENS, PER_REQUEST, WORK_COMMAND, crossBudget, toldResumed } from "../support/budget-run.js";
import { CODEX_KEY_ENV, CODEX_VERSION, codexBinary, codexEnv, codexHome } from "../support/codex.js";
import { endAgentProject } from "../support/real-agent.js";
import type { TestProject } from "../support/project.js";
import { startRefusingProxy, type RefusingProxy } from "../support/refusing-proxy.js";
import { startResponsesStub, type ResponsesReply, type ResponsesRequest, type ResponsesStub } from "../support/responses-stub.js";

/**
 * A budget crossed by the real Codex CLI, pinned, against a scripted Responses API whose every
 * `response.completed` reports its usage. The-loop reads Codex's running total off its rollout
 * file (`token_count` events); the run is test/support/budget-run.ts.
 */

let binary = "";
let project: TestProject | undefined;
let stub: ResponsesStub | undefined;
let proxy: RefusingProxy | undefined;

beforeAll(async () => {
  binary = await codexBinary();
}, 600_000);

afterEach(async () => {
  // Codex writes into its home until it has exited; the scratch home goes after it.
  if (project !== undefined) await endAgentProject(project);
  project = undefined;
  await stub?.close();
  stub = undefined;
  await proxy?.close();
  proxy = undefined;
});

/** Works on and on (a shell step after each reply) until it is told it was resumed; then it is done. */
function busyUntilResumed(request: ResponsesRequest): ResponsesReply {
  if (toldResumed(request.lastUserText)) return { text: "Resumed: re-reading the thread, then carrying on." };
  return { call: { name: "exec_command", args: { cmd: WORK_COMMAND } } };
}

describe(`a routing.budget crossed by the real Codex CLI (${CODEX_VERSION})`, { timeout: 180_000 }, () => {
  it(`pauses the item at ${BUDGET_TOKENS} tokens with the figures, interrupts the turn with Escape, and resumes with --budget +N`, async () => {
    stub = await startResponsesStub(busyUntilResumed, { usage: { input_tokens: PER_REQUEST.input, output_tokens: PER_REQUEST.output } });
    proxy = await startRefusingProxy();
    const models = stub;
    const home = await codexHome(models.url);
    await crossBudget(
      {
        harness: "codex",
        routing: { defaultHarness: "codex", harnesses: { codex: { command: [binary] } }, tmux: { passEnv: [CODEX_KEY_ENV] } },
        env: codexEnv(home, proxy.url),
        agenticTexts: () => models.requests.filter((r) => r.agentic).map((r) => r.lastUserText),
        interrupted: /Conversation interrupted/,
      },
      (p) => (project = p),
    );
  });
});
