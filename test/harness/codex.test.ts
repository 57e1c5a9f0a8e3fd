import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { routingSchema } from "../../src/config/schema.js";
import { harnessAdapter, isResumableSessionId } from "../../src/harness/adapters.js";
import {
  CODEX_BLOCKED_PATTERN,
  CODEX_DEFAULT_ARGS,
  CODEX_MCP_ENV_VARS,
  codexMcpArgs,
  CODEX_READY_PATTERN,
  dayDirs,
  codexSessionsSince,
  learnCodexSessionId,
  parseRolloutMeta,
} from "../../src/harness/codex.js";
import { tempDir } from "../support/temp.js";

const ID = "01a234da-2a72-7552-a8a9-bd6c136355a5";
const input = { sessionId: "ignored", prompt: "Work on #1", workItem: "local:demo#1" };

function meta(id: string, cwd: string, timestamp: string): string {
  return `${JSON.stringify({ timestamp, type: "session_meta", payload: { id, cwd, timestamp, originator: "codex-tui", base_instructions: { text: "x".repeat(70_000) } } })}\n`;
}

describe("the codex adapter", () => {
  it("starts Codex unattended with the prompt after --, and the operator's args after the defaults", () => {
    const routing = routingSchema.parse({ harnesses: { codex: { command: ["/opt/codex"], args: ["-s", "workspace-write"] } } });
    const adapter = harnessAdapter("codex", routing);
    expect(adapter.fresh(input)).toEqual(["/opt/codex", ...CODEX_DEFAULT_ARGS, ...codexMcpArgs(), "-s", "workspace-write", "--", "Work on #1"]);
    expect(adapter.resume?.({ ...input, sessionId: ID })).toEqual([
      "/opt/codex",
      "resume",
      ...CODEX_DEFAULT_ARGS,
      ...codexMcpArgs(),
      "-s",
      "workspace-write",
      "--",
      ID,
      "Work on #1",
    ]);
    expect(adapter.promptInArgv).toEqual({ fresh: true, resume: true });
    expect(adapter.learnSessionId).toBeTypeOf("function");
  });

  it("runs `codex` from PATH by default, and a prompt that reads like an option or a subcommand stays the prompt", () => {
    const adapter = harnessAdapter("codex", routingSchema.parse({}));
    expect(adapter.fresh({ ...input, prompt: "resume --last" })).toEqual(["codex", ...CODEX_DEFAULT_ARGS, ...codexMcpArgs(), "--", "resume --last"]);
  });

  it("registers the-loop's MCP server for the run as -c overrides: its command, the session's variables by name, its four tools alone, approved up front", () => {
    expect(codexMcpArgs()).toEqual([
      "-c",
      'mcp_servers.the-loop.command="the-loop"',
      "-c",
      'mcp_servers.the-loop.args=["mcp"]',
      "-c",
      'mcp_servers.the-loop.env_vars=["THE_LOOP_SESSION_TOKEN","THE_LOOP_WORK_ITEM","THE_LOOP_SESSION_SOCKET","THE_LOOP_CLI_CONFIG"]',
      "-c",
      'mcp_servers.the-loop.enabled_tools=["ask","graph_complete","graph_status","why"]',
      "-c",
      'mcp_servers.the-loop.default_tools_approval_mode="approve"',
      "-c",
      "mcp_servers.the-loop.tool_timeout_sec=3660",
    ]);
    // Names only: no value of a session's variable (its credential above all) is in an argv.
    expect(CODEX_MCP_ENV_VARS.every((name) => /^THE_LOOP_[A-Z_]+$/.test(name))).toBe(true);
  });

  it("with routing.mcp.enabled false adds nothing of the server's", () => {
    const adapter = harnessAdapter("codex", routingSchema.parse({ mcp: { enabled: false } }));
    const argv = adapter.fresh(input);
    expect(argv).toEqual(["codex", ...CODEX_DEFAULT_ARGS, "--", "Work on #1"]);
    expect(argv.join(" ")).not.toContain("mcp_servers");
  });

  it("puts the operator's args after the server's, so their -c for one of its keys wins", () => {
    const routing = routingSchema.parse({ harnesses: { codex: { args: ["-c", "mcp_servers.the-loop.enabled=false"] } } });
    const argv = harnessAdapter("codex", routing).fresh(input);
    expect(argv.indexOf("mcp_servers.the-loop.enabled=false")).toBeGreaterThan(argv.indexOf('mcp_servers.the-loop.command="the-loop"'));
  });

  it("sets what an unattended pane needs, each as an override the operator's flags win over", () => {
    expect(CODEX_DEFAULT_ARGS).toEqual([
      "-c",
      'approval_policy="never"',
      "-c",
      'sandbox_mode="danger-full-access"',
      "-c",
      "allow_login_shell=false",
      "-c",
      "check_for_update_on_startup=false",
      "-c",
      "analytics.enabled=false",
      "-c",
      "features.plugins=false",
      "--no-daemon",
    ]);
  });

  it.each([
    { screen: "› Ask Codex to do anything\n\n  stub-model default · /w/a\n  ← for agents · ? for shortcuts", ready: true, blocked: false },
    { screen: "› go\n\n◦ Working (0s • esc to interrupt)\n\n› Ask Codex to do anything", ready: true, blocked: false },
    {
      screen:
        "  Trust this folder? Codex can read, edit, and run files here\n› 1. Trust and continue\n  2. Back to Agent Command Center\n  enter continue · esc back",
      ready: false,
      blocked: true,
    },
    { screen: "  >_ OpenAI Codex (v0.169.0)\n     /w/a", ready: false, blocked: false },
  ])("reads the screen %#", ({ screen, ready, blocked }) => {
    expect(CODEX_READY_PATTERN.test(screen)).toBe(ready);
    expect(CODEX_BLOCKED_PATTERN.test(screen)).toBe(blocked);
  });

  it("takes a Codex id as resumable", () => {
    expect(isResumableSessionId(ID)).toBe(true);
  });
});

describe("learning Codex's session id", () => {
  it("reads the session_meta line and nothing else", () => {
    expect(parseRolloutMeta(meta(ID, "/w/a", "2026-12-02T03:44:02.693Z").trimEnd())).toEqual({
      id: ID,
      cwd: "/w/a",
      timestamp: Date.parse("2026-12-02T03:44:02.693Z"),
    });
    expect(parseRolloutMeta('{"type":"response_item","payload":{}}')).toBeUndefined();
    expect(parseRolloutMeta('{"type":"session_meta","payl')).toBeUndefined();
    expect(parseRolloutMeta('{"type":"session_meta","payload":{"id":1,"cwd":"/w","timestamp":"x"}}')).toBeUndefined();
  });

  it("looks in the day folders of both ends, local and UTC", () => {
    const dirs = dayDirs("/h", new Date("2026-12-31T23:59:00Z"), new Date("2027-01-01T00:01:00Z"));
    expect(dirs).toContain("/h/sessions/2026/12/31");
    expect(dirs).toContain("/h/sessions/2027/01/01");
  });

  it("lists the conversations begun in the session's folder since its start, earliest first", async () => {
    const home = await tempDir();
    const day = join(home, "sessions", "2026", "12", "02");
    await mkdir(day, { recursive: true });
    const since = new Date("2026-12-02T03:44:00Z");
    await writeFile(join(day, "rollout-2026-12-02T03-00-00-old.jsonl"), meta("old", "/w/a", "2026-12-02T03:00:00Z"));
    await writeFile(join(day, "rollout-2026-12-02T03-44-05-other.jsonl"), meta("other-folder", "/w/b", "2026-12-02T03:44:01Z"));
    await writeFile(join(day, "rollout-2026-12-02T03-44-09-later.jsonl"), meta("later", "/w/a", "2026-12-02T03:44:09Z"));
    await writeFile(join(day, "rollout-2026-12-02T03-44-02-mine.jsonl"), meta(ID, "/w/a", "2026-12-02T03:44:02Z"));
    await writeFile(join(day, "rollout-half-written.jsonl"), '{"type":"session_meta","payload":{"id":"x"');
    await writeFile(join(day, "notes.txt"), "not a rollout");
    const found = await codexSessionsSince(home, new Set(["/w/a"]), since, new Date("2026-12-02T03:45:00Z"));
    expect(found.map((file) => file.id)).toEqual([ID, "later"]);
    expect(await codexSessionsSince(home, new Set(["/w/c"]), since, new Date("2026-12-02T03:45:00Z"))).toEqual([]);
  });

  it("tells apart two conversations begun in one folder at once by the work item their boot prompt names", async () => {
    const home = await tempDir();
    const cwd = await tempDir();
    const startedAt = new Date();
    const [dir = ""] = dayDirs(home, startedAt, startedAt);
    await mkdir(dir, { recursive: true });
    const at = (ms: number): string => new Date(startedAt.getTime() + ms).toISOString();
    const turn = (ref: string): string => `${JSON.stringify({ type: "response_item", payload: { role: "user", content: [{ text: `work on ${ref}: …` }] } })}\n`;
    await writeFile(join(dir, "rollout-a-first.jsonl"), meta("first", cwd, at(100)) + turn("local:demo#12"));
    await writeFile(join(dir, "rollout-b-second.jsonl"), meta("second", cwd, at(200)) + turn("local:demo#1"));
    const env = { CODEX_HOME: home };
    expect(await learnCodexSessionId({ cwd, env, startedAt, workItem: "local:demo#1", boundMs: 1_000 })).toBe("second");
    expect(await learnCodexSessionId({ cwd, env, startedAt, workItem: "local:demo#12", boundMs: 1_000 })).toBe("first");
    // Neither names it: two candidates, and no guess between them.
    expect(await learnCodexSessionId({ cwd, env, startedAt, workItem: "local:demo#3", boundMs: 200 })).toBeUndefined();
  });

  it("takes the one conversation begun there at the bound, when its file never names the work item", async () => {
    const home = await tempDir();
    const cwd = await tempDir();
    const startedAt = new Date();
    const [dir = ""] = dayDirs(home, startedAt, startedAt);
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, `rollout-x-${ID}.jsonl`), meta(ID, cwd, new Date(startedAt.getTime() + 50).toISOString()));
    expect(await learnCodexSessionId({ cwd, env: { CODEX_HOME: home }, startedAt, workItem: "local:demo#1", boundMs: 200 })).toBe(ID);
  });

  it("waits for the file Codex writes after its start, bounded", async () => {
    const home = await tempDir();
    const cwd = await tempDir();
    const startedAt = new Date();
    const [dir] = dayDirs(home, startedAt, startedAt);
    const learning = learnCodexSessionId({ cwd, env: { CODEX_HOME: home }, startedAt, workItem: "local:demo#1", boundMs: 5_000 });
    await mkdir(dir ?? "", { recursive: true });
    await writeFile(join(dir ?? "", `rollout-x-${ID}.jsonl`), meta(ID, cwd, new Date(startedAt.getTime() + 1).toISOString()) + "work on local:demo#1\n");
    expect(await learning).toBe(ID);
    expect(await learnCodexSessionId({ cwd: "/nowhere", env: { CODEX_HOME: home }, startedAt, boundMs: 200 })).toBeUndefined();
  });
});
