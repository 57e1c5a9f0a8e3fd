import { randomUUID } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { harnessAdapter } from "../../src/harness/adapters.js";
import { routingSchema } from "../../src/config/schema.js";
import { jsonOf } from "../support/cli.js";
import { CLAUDE_CODE_VERSION, claudeBinary, claudeEnv, claudeHome, readClaudeConfig, runClaude } from "../support/claude-code.js";
import { startModelStub, type ModelReply, type ModelRequest, type ModelStub } from "../support/model-stub.js";
import { agentSuite, livePanePids, requestLine, screenOf, waitInSession } from "../support/real-agent.js";
import { testProject, type TestProject } from "../support/project.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";
import { ARM } from "../support/builders.js";

/**
 * The main job with the real agent: Claude Code, pinned, runs in the session the-loop spawns,
 * against a scripted Messages API on loopback. Nothing here stands in for the CLI itself. Its
 * process ended, the supervision brings it back with `claude --resume <id>`: the same conversation.
 */

const QUESTION = "Which database should the service use?";
const ANSWER = "Use PostgreSQL 16, please.";

const agent = agentSuite<ModelStub>(claudeBinary, { installTimeoutMs: 300_000 });

/** The agent's script: ask the operator once through `the-loop ask`, then acknowledge whatever comes. */
function askOnce(request: ModelRequest, agentic: readonly ModelRequest[]): ModelReply {
  if (agentic.length === 1) {
    return { toolUse: { name: "Bash", input: { command: `the-loop ask "${QUESTION}"`, description: "Ask the operator" } } };
  }
  return { text: request.lastUserText.includes(ANSWER) ? "Thanks — PostgreSQL it is." : "Waiting for the answer." };
}

/** Waits as waitFor does; a timeout says what the pane, the event log and the model saw. */
const inSession = <T>(p: TestProject, what: string, probe: () => Promise<T | undefined>): Promise<T> =>
  waitInSession(p, what, probe, { timeoutMs: 30_000, requests: () => (agent.stub?.requests ?? []).map((r) => requestLine(r)) });

interface ItemJson {
  comments: { author: string | null; body: string }[];
}
interface SessionsJson {
  sessions: { tmuxTarget: string; cwd: string }[];
}

/** A line of a conversation Claude Code saved: who spoke, and what. */
interface TranscriptLine {
  readonly type?: unknown;
  readonly message?: unknown;
}

/**
 * The conversation `conversationId` as Claude Code has saved it so far, in
 * `<home>/.claude/projects/<folder>/<id>.jsonl`: found by the file's name, in whichever folder
 * the CLI named after the session's. A resume reads it back, so it must hold what came before.
 */
async function savedConversation(home: string, conversationId: string): Promise<TranscriptLine[]> {
  const projects = join(home, ".claude", "projects");
  // Not there yet: the CLI makes the folder at its first write.
  const folders = await readdir(projects).catch(() => []);
  for (const folder of folders) {
    // Not in this folder: the file is in the session's.
    const text = await readFile(join(projects, folder, `${conversationId}.jsonl`), "utf8").catch(() => undefined);
    if (text === undefined) continue;
    return text.split("\n").flatMap((line): TranscriptLine[] => {
      try {
        return [JSON.parse(line) as TranscriptLine];
      } catch {
        // A line still being written (or the blank after the last): read on the next poll.
        return [];
      }
    });
  }
  return [];
}

/** Whether the saved conversation has a `type` line ("user", "assistant") whose message holds `text`. */
function said(lines: readonly TranscriptLine[], type: string, text: string): boolean {
  return lines.some((line) => line.type === type && JSON.stringify(line.message ?? "").includes(text));
}

async function claudeProject(home: string, model: ModelStub, routing: Record<string, unknown> = {}): Promise<TestProject> {
  const p = await testProject({
    routing: {
      defaultHarness: "claude",
      harnesses: { claude: { command: [agent.binary], args: ["--allowedTools", "Bash(the-loop ask:*)"] } },
      ...routing,
    },
  });
  // The suite's end stops it even when its start fails below.
  agent.project = p;
  const started = await p.cli(["start"], claudeEnv(home, model.url));
  expect(started.code, started.stderr).toBe(0);
  await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
  expect((await p.cli(["item", "new", "Choose a database", "--as", "alice"])).code).toBe(0);
  expect((await p.cli(["item", "label", "#1", "--add", ARM, "--as", "alice"])).code).toBe(0);
  await p.waitForEvent("the spawn", (r) => r.event === "session.spawned", 30_000);
  return p;
}

describe(`the real Claude Code CLI (${CLAUDE_CODE_VERSION}) as the harness`, { timeout: 120_000 }, () => {
  it("starts unattended in a folder it has never seen, asks through the-loop, and hears the answer", async () => {
    const home = await claudeHome({ operatorSetting: "kept", projects: { "/srv/elsewhere": { allowedTools: ["Edit"] } } });
    const stub = await startModelStub(askOnce);
    agent.stub = stub;
    const p = await claudeProject(home, stub);
    // In its sandbox (docs/security.md): the flow below runs there, through the session's own socket.
    expect((await p.events()).find((r) => r.event === "session.sandboxed")).toMatchObject({ work_item: "local:demo#1" });

    const first = await inSession(p, "the agent's first model request", async () => stub.requests.find((r) => r.agentic));
    expect(first.lastUserText).toContain("Choose a database");

    const asked = await inSession(p, "the question on the work item", async () =>
      jsonOf<ItemJson>(await p.cli(["item", "show", "#1", "--json"])).comments.find((c) => c.body.includes(QUESTION)),
    );
    expect(asked.body).toContain("<!-- the-loop:agent-comment -->");

    const [session] = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"])).sessions;
    expect(session).toBeDefined();
    const target = session?.tmuxTarget ?? "";
    const screen = await screenOf(p, target);
    expect(screen).not.toMatch(/trust this folder|Enter to confirm/);

    expect((await p.cli(["item", "comment", "#1", ANSWER, "--as", "alice"])).code).toBe(0);
    const answered = await inSession(p, "the answer in the model's next request", async () =>
      stub.requests.find((r) => r.agentic && r.lastUserText.includes(ANSWER)),
    );
    expect(answered.lastUserText).toContain("alice");
    await p.waitForEvent("the delivery", (r) => r.event === "dispatch.succeeded");

    // The operator's own settings stay; the session's folder is trusted, and only it.
    const config = await readClaudeConfig(home);
    expect(config.operatorSetting).toBe("kept");
    expect(config.hasCompletedOnboarding).toBe(true);
    const projects = config.projects as Record<string, Record<string, unknown>>;
    expect(projects["/srv/elsewhere"]).toEqual({ allowedTools: ["Edit"] });
    expect(projects[session?.cwd ?? ""]).toMatchObject({ hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true });
    expect((await p.events()).filter((r) => r.event === "workspace.trusted")).toHaveLength(1);
  });

  it("comes back by itself when its process dies, resuming the conversation: the model sees what came before", async () => {
    const home = await claudeHome();
    const stub = await startModelStub(askOnce);
    agent.stub = stub;
    const p = await claudeProject(home, stub);
    await inSession(p, "the question on the work item", async () =>
      jsonOf<ItemJson>(await p.cli(["item", "show", "#1", "--json"])).comments.find((c) => c.body.includes(QUESTION)),
    );
    expect((await p.cli(["item", "comment", "#1", ANSWER, "--as", "alice"])).code).toBe(0);
    await inSession(p, "the answer in the model's next request", async () => stub.requests.find((r) => r.agentic && r.lastUserText.includes(ANSWER)));
    const [session] = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"])).sessions;
    const target = session?.tmuxTarget ?? "";
    const spawned = await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    // What the model was shown may not be saved yet, and a resume reads only the saved file: the
    // kill waits until the question and the answer are on disk.
    expect(spawned.harness_session_id).toEqual(expect.any(String));
    const conversationId = String(spawned.harness_session_id);
    await inSession(p, "the question and the answer in Claude Code's saved conversation", async () => {
      const lines = await savedConversation(home, conversationId);
      return said(lines, "assistant", QUESTION) && said(lines, "user", ANSWER);
    });

    // Its pane's process group is ended, as a crash or an OOM kill would: nobody comments.
    const [pid] = await livePanePids(p.socketName, target);
    const before = stub.requests.length;
    process.kill(-(pid ?? 0), "SIGTERM");
    const respawned = await p.waitForEvent("the supervision's restart", (r) => r.event === "session.respawned", 30_000);
    expect(respawned).toMatchObject({ resumed: true, restart: 1, harness_session_id: spawned.harness_session_id });
    const resumed = await inSession(p, "the resumed agent's model request", async () =>
      stub.requests.slice(before).find((r) => r.agentic && r.lastUserText.includes("the-loop started you again on local:demo#1")),
    );
    // The same conversation: the question it asked and the answer it got are in the request.
    const conversation = JSON.stringify(resumed.body.messages ?? []);
    expect(conversation).toContain(QUESTION);
    expect(conversation).toContain(ANSWER);
    expect(await livePanePids(p.socketName, target)).toHaveLength(1);
  });

  it("without the pre-seed it stops on the trust dialog, and input waits instead of answering it", async () => {
    const home = await claudeHome();
    const stub = await startModelStub(askOnce);
    agent.stub = stub;
    const p = await claudeProject(home, stub, { harnessTrust: { enabled: false }, tmux: { readyTimeoutSeconds: 2 } });
    const [session] = jsonOf<SessionsJson>(await p.cli(["sessions", "list", "--json"])).sessions;
    const target = session?.tmuxTarget ?? "";
    await waitFor("the trust dialog", async () => /trust this folder/.test(await screenOf(p, target)), { timeoutMs: 30_000 });

    expect((await p.cli(["item", "comment", "#1", ANSWER, "--as", "alice"])).code).toBe(0);
    const held = await p.waitForEvent("the held input", (r) => r.event === "session.not_ready");
    expect(held.blocked).toBe(true);
    expect(String(held.screen)).toContain("Enter to confirm");
    // The dialog is still there: the comment's Enter did not pick "Yes, I trust this folder".
    expect(await screenOf(p, target)).toMatch(/trust this folder/);
    expect(stub.requests.filter((r) => r.agentic)).toHaveLength(0);
  });
});

describe("the argv the-loop builds, read by the real CLI's own parser", () => {
  it.each([
    { name: "a plain prompt", prompt: "Summarise the work item." },
    { name: "a prompt that starts like front matter", prompt: "--- title: fix it\nDo the thing." },
    { name: "a prompt that starts like an option", prompt: "-p --model x" },
  ])("$name reaches the model whole, past a variadic --allowedTools", async ({ prompt }) => {
    const home = await claudeHome();
    const stub = await startModelStub(() => ({ text: "parsed" }));
    agent.stub = stub;
    const cwd = await tempDir();
    const routing = routingSchema.parse({ harnesses: { claude: { command: [agent.binary], args: ["-p", "--allowedTools", "Bash(the-loop ask:*)"] } } });
    const [, ...argv] = harnessAdapter("claude", routing).fresh({ sessionId: randomUUID(), prompt, workItem: "local:demo#1" });
    const result = await runClaude(agent.binary, argv, claudeEnv(home, stub.url), cwd);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("parsed");
    expect(stub.requests.find((r) => r.agentic)?.lastUserText).toContain(prompt);
  });

  it("without the --, the same variadic option swallows the prompt", async () => {
    const home = await claudeHome();
    const stub = await startModelStub(() => ({ text: "parsed" }));
    agent.stub = stub;
    const result = await runClaude(
      agent.binary,
      ["--session-id", randomUUID(), "-p", "--allowedTools", "Bash(the-loop ask:*)", "Summarise."],
      claudeEnv(home, stub.url),
      await tempDir(),
    );
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/Input must be provided/);
  });
});
