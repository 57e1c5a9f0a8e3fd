import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { SELF_COMMENT_MARKER } from "../../src/workitem/marker.js";
import { BIN, cliEnv, jsonOf } from "../support/cli.js";
import { graphStatus, sessionEnvOf, specReviewProject } from "../support/graph.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";
import { ARM } from "../support/builders.js";

/**
 * `the-loop mcp` through the MCP SDK's own client, spawning the built CLI as an agent CLI would,
 * against a real daemon: it lists its four tools, and acts for its session's work item only. The
 * work-item variable is the agent's to change and a credential can be copied, so both are tried.
 */

let project: TestProject | undefined;
const clients: Client[] = [];
const scratch: string[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  await project?.cleanup();
  project = undefined;
  for (const dir of scratch.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** Only what the session was given of the-loop's: no config file, no state root. */
const sessionOnly = (env: Record<string, string>): Record<string, string> => ({
  THE_LOOP_WORK_ITEM: env.THE_LOOP_WORK_ITEM ?? "",
  THE_LOOP_SESSION_TOKEN: env.THE_LOOP_SESSION_TOKEN ?? "",
  THE_LOOP_SESSION_SOCKET: env.THE_LOOP_SESSION_SOCKET ?? "",
});

/** An MCP client connected to `the-loop mcp` started in `cwd` with `env` (over a clean, marked environment). */
async function connect(cwd: string, env: Record<string, string>): Promise<Client> {
  const full: Record<string, string> = {};
  for (const [key, value] of Object.entries(cliEnv({ cwd, env }))) if (value !== undefined) full[key] = value;
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, "mcp"], cwd, env: full, stderr: "pipe" });
  const client = new Client({ name: "the-loop-test", version: "1.0.0" });
  clients.push(client);
  await client.connect(transport);
  return client;
}

function textOf(result: unknown): string {
  const content = (result as CallToolResult).content;
  return content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ text: string; isError: boolean }> {
  const result = await client.callTool({ name, arguments: args });
  return { text: textOf(result), isError: result.isError === true };
}

interface ShownItem {
  comments: { author: string; body: string }[];
}

describe("the-loop mcp (the SDK's client, a real daemon)", () => {
  it("lists its tools, asks on its own item (marked), and refuses another item's variable or a borrowed credential", async () => {
    // Unsandboxed, so the test can act from outside with the session's own variables as they are.
    project = await specReviewProject({ sandbox: { mode: "none", bind: [] }, budget: { minutes: 240 } });
    const p = project;
    expect((await p.cli(["start"], { FAKE_HARNESS_RECORD_ENV: "1" })).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    for (const title of ["First", "Second"]) {
      expect((await p.cli(["item", "new", title, "--label", ARM, "--as", "alice"])).code).toBe(0);
    }
    const one = await sessionEnvOf(p, "local:demo#1");
    const two = await sessionEnvOf(p, "local:demo#2");
    for (const ref of ["local:demo#1", "local:demo#2"]) {
      await p.waitForEvent(`${ref}'s socket`, (r) => r.event === "session.socket_opened" && r.work_item === ref);
    }
    await waitFor("both runs", async () => (await graphStatus(p, "#2")).node === "write");
    const elsewhere = await mkdtemp(join(tmpdir(), "the-loop-mcp-"));
    scratch.push(elsewhere);

    const mcp = await connect(elsewhere, sessionOnly(one));
    const listed = await mcp.listTools();
    expect(listed.tools.map((tool) => tool.name).sort()).toEqual(["ask", "graph_complete", "graph_status", "why"]);
    for (const tool of listed.tools) expect(tool.inputSchema.type).toBe("object");

    const asked = await call(mcp, "ask", { question: "Which format should the spec use?" });
    expect(asked, asked.text).toMatchObject({ isError: false });
    expect(asked.text).toMatch(/Posted your question on local:demo#1/);
    const first = jsonOf<ShownItem>(await p.cli(["item", "show", "#1", "--json"]));
    const question = first.comments.find((comment) => comment.body.includes("Which format should the spec use?"));
    expect(question?.body).toContain(SELF_COMMENT_MARKER);

    // Its own run and story; a bad argument is a tool error saying what to send.
    const status = await call(mcp, "graph_status");
    expect(status.isError, status.text).toBe(false);
    // With its usage against routing.budget: the fake harness records no tokens, so they are null with why, never 0.
    const usage = { tokens: null, unreadable: expect.stringMatching(/^the fake harness writes no transcript/), limits: { minutes: 240 } };
    expect(JSON.parse(status.text)).toMatchObject({ ref: "local:demo#1", node: "write", usage });
    const why = await call(mcp, "why");
    expect(why.isError, why.text).toBe(false);
    expect(why.text).toMatch(/^local:demo#1: /);
    expect(why.text).toMatch(/next: /);
    expect(why.text).toMatch(/^usage: \? tok, \d+\/240 min \(tokens: the fake harness writes no transcript/m);
    // The operator's graph status and why show the same figures, from the same records.
    expect(await graphStatus(p, "#1")).toMatchObject({ usage });
    expect(jsonOf<{ usage: unknown }>(await p.cli(["why", "#1", "--json"])).usage).toMatchObject(usage);
    const human = await p.cli(["graph", "status", "#1"]);
    expect(human.stdout).toMatch(/^ {2}usage: \? tok, \d+\/240 min \(tokens: the fake harness/m);
    const extra = await call(mcp, "ask", { question: "x", workItem: "local:demo#2" });
    expect(extra).toMatchObject({ isError: true });
    expect(extra.text).toMatch(/leave out workItem/);
    const early = await call(mcp, "graph_complete");
    expect(early.isError).toBe(true);
    expect(early.text).toMatch(/did not move/);
    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
    const claimed = await call(mcp, "graph_complete");
    expect(claimed, claimed.text).toMatchObject({ isError: false });
    expect(claimed.text).toMatch(/now at node review/);

    // The work-item variable changed to #2, on #1's socket and on the daemon's: refused.
    const renamed = await connect(elsewhere, { ...sessionOnly(one), THE_LOOP_WORK_ITEM: "local:demo#2" });
    const viaSocket = await call(renamed, "ask", { question: "Asked for #2 with #1's credential" });
    expect(viaSocket.isError).toBe(true);
    expect(viaSocket.text).toMatch(/serves the session of local:demo#1 only/);
    const direct = await connect(p.dir, { THE_LOOP_WORK_ITEM: "local:demo#2", THE_LOOP_SESSION_TOKEN: one.THE_LOOP_SESSION_TOKEN ?? "" });
    for (const tool of ["ask", "graph_status", "why"]) {
      const refused = await call(direct, tool, tool === "ask" ? { question: "Asked for #2 with #1's credential" } : {});
      expect(refused.isError, `${tool}: ${refused.text}`).toBe(true);
      expect(refused.text).toMatch(/session credential is not valid for local:demo#2/);
    }

    // #2's credential borrowed: on #1's socket, and presented for #1 on the daemon's.
    const borrowed = await connect(elsewhere, { ...sessionOnly(two), THE_LOOP_SESSION_SOCKET: one.THE_LOOP_SESSION_SOCKET ?? "" });
    const onSocket = await call(borrowed, "ask", { question: "Asked on #1's socket with #2's credential" });
    expect(onSocket.isError).toBe(true);
    expect(onSocket.text).toMatch(/serves the session of local:demo#1 only/);
    const forOne = await connect(p.dir, { THE_LOOP_WORK_ITEM: "local:demo#1", THE_LOOP_SESSION_TOKEN: two.THE_LOOP_SESSION_TOKEN ?? "" });
    const claimedForOne = await call(forOne, "ask", { question: "Asked for #1 with #2's credential" });
    expect(claimedForOne.isError).toBe(true);
    expect(claimedForOne.text).toMatch(/session credential is not valid for local:demo#1/);

    const after = [
      ...jsonOf<ShownItem>(await p.cli(["item", "show", "#1", "--json"])).comments,
      ...jsonOf<ShownItem>(await p.cli(["item", "show", "#2", "--json"])).comments,
    ];
    expect(after.filter((comment) => comment.body.includes("credential"))).toEqual([]);
    expect((await graphStatus(p, "#2")).node).toBe("write");
  });

  it("outside a session it still lists its tools, and each call says it acts for a session only", async () => {
    const elsewhere = await mkdtemp(join(tmpdir(), "the-loop-mcp-"));
    scratch.push(elsewhere);
    const mcp = await connect(elsewhere, {});
    expect((await mcp.listTools()).tools).toHaveLength(4);
    const refused = await call(mcp, "why");
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/acts for an agent session the-loop started, and THE_LOOP_SESSION_TOKEN is not set/);
  });
});
