import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { CODEX_KEY_ENV, CODEX_VERSION, codexBinary, codexEnv, codexHome } from "../support/codex.js";
import { GEMINI_CLI_VERSION, geminiBinary, geminiEnv, geminiHome } from "../support/gemini.js";
import { startGeminiStub, type GeminiStub } from "../support/gemini-stub.js";
import { testProject, type TestProject } from "../support/project.js";
import { startRefusingProxy, type RefusingProxy } from "../support/refusing-proxy.js";
import { startResponsesStub, type ResponsesStub } from "../support/responses-stub.js";
import { waitFor } from "../support/wait.js";

/**
 * One daemon, two real agent CLIs at once (docs/agents.md, "Choosing an agent per work item"): the
 * item an operator started with `--agent codex` runs the pinned Codex against its scripted
 * Responses API, and the item whose label maps to Gemini runs the pinned Gemini CLI against its
 * scripted Gemini API — each in its own sandboxed session, each model seeing its own item only.
 */

const CODEX_TITLE = "Tidy the release notes";
const GEMINI_TITLE = "Rename the config loader";

let project: TestProject | undefined;
let responses: ResponsesStub | undefined;
let gemini: GeminiStub | undefined;
let proxy: RefusingProxy | undefined;
let codex = "";
let geminiCli = "";

beforeAll(async () => {
  [codex, geminiCli] = await Promise.all([codexBinary(), geminiBinary()]);
}, 600_000);

afterEach(async () => {
  if (project !== undefined) {
    // Closing each item ends its harness by its process group, as the-loop's close does (Gemini CLI outlives a bare tmux kill).
    for (const ref of ["#1", "#2"]) await project.cli(["item", "close", ref, "--as", "alice"]);
    for (const ref of ["local:demo#1", "local:demo#2"]) {
      await project.waitForEvent(`the close of ${ref}`, (r) => r.event === "session.closed" && r.work_item === ref, 30_000);
    }
    await project.cleanup();
  }
  project = undefined;
  await Promise.all([responses?.close(), gemini?.close(), proxy?.close()]);
  responses = gemini = proxy = undefined;
});

interface SessionsJson {
  sessions: { workItem: { ref: string }; harness: string }[];
}

describe(`Codex ${CODEX_VERSION} and Gemini CLI ${GEMINI_CLI_VERSION} on one daemon`, { timeout: 240_000 }, () => {
  it("runs Codex for the item started with --agent codex and Gemini for the item its label maps to, at the same time", async () => {
    responses = await startResponsesStub(() => ({ text: "On it." }));
    gemini = await startGeminiStub(() => ({ text: "On it." }));
    proxy = await startRefusingProxy();
    const [codexDir, geminiDir] = await Promise.all([codexHome(responses.url), geminiHome()]);
    project = await testProject({
      routing: {
        defaultHarness: "claude",
        harnesses: { codex: { command: [codex] }, gemini: { command: [geminiCli] } },
        harnessByLabel: { "agent: gemini": "gemini" },
        control: { requireStartCommand: true },
        tmux: { passEnv: [CODEX_KEY_ENV] },
      },
    });
    const p = project;
    // Gemini's home and model API, Codex's home, key and the refusing proxy for both.
    const env = { ...geminiEnv(geminiDir, gemini), ...codexEnv(codexDir, proxy.url) };
    const started = await p.cli(["start"], env);
    expect(started.code, started.stderr).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", CODEX_TITLE, "--label", ARM, "--as", "alice"])).code).toBe(0);
    expect((await p.cli(["item", "new", GEMINI_TITLE, "--label", ARM, "--label", "agent: gemini", "--as", "alice"])).code).toBe(0);

    // A CLI start spawns from the operator's shell, with its environment, as the daemon would with its own.
    const cli = await p.cli(["sessions", "start", "--work-item", "#1", "--agent", "codex"], env);
    expect(cli.code, cli.stderr).toBe(0);
    expect((await p.cli(["item", "comment", "#2", "the-loop:start-execution", "--as", "alice"])).code).toBe(0);

    const atCodex = await waitFor("Codex's first model request", () => responses?.requests.find((r) => r.agentic), { timeoutMs: 90_000 });
    const atGemini = await waitFor("Gemini's first model request", () => gemini?.requests.find((r) => r.agentic), { timeoutMs: 90_000 });
    expect(atCodex.lastUserText).toContain(CODEX_TITLE);
    expect(atGemini.lastUserText).toContain(GEMINI_TITLE);
    // Each model hears of its own item only.
    expect(responses.requests.some((r) => r.lastUserText.includes(GEMINI_TITLE))).toBe(false);
    expect(gemini.requests.some((r) => r.lastUserText.includes(CODEX_TITLE))).toBe(false);

    const { sessions } = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"]));
    expect(Object.fromEntries(sessions.map((session) => [session.workItem.ref, session.harness]))).toEqual({
      "local:demo#1": "codex",
      "local:demo#2": "gemini",
    });
    const sandboxed = (await p.events()).filter((r) => r.event === "session.sandboxed").map((r) => r.work_item);
    expect(sandboxed.sort()).toEqual(["local:demo#1", "local:demo#2"]);
  });
});
