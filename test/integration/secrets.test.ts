import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { secretSpellings } from "../../src/secrets.js";
import { ScriptedServer, reply } from "../hooks/support/rpc-server.js";
import { jsonOf } from "../support/cli.js";
import type { CliResult } from "../support/cli.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";

/**
 * A remote hook's bearer token, echoed back by the hook — raw, JSON-escaped, URL-encoded, in
 * base64 — in its error and in its refusal's reason, through the real CLI and the real daemon on
 * the local tracker: no spelling of it is anywhere under the state root (the event log, the
 * control records, the tracker's journal and snapshots, the daemon's output), in anything the CLI
 * printed, or in a comment on a work item.
 */

/** Every character an encoding changes: `+`, `/`, `=`, a quote, a backslash. */
const TOKEN = 'hOOk+t0ken/with="quote\\and=';

/** The encodings a value commonly takes on its way back, spelled here independently of src/secrets.ts. */
const ENCODINGS: Record<string, string> = {
  raw: TOKEN,
  "JSON-escaped": JSON.stringify(TOKEN).slice(1, -1),
  "JSON-escaped twice": JSON.stringify(JSON.stringify(TOKEN).slice(1, -1)).slice(1, -1),
  "URL-encoded": encodeURIComponent(TOKEN),
  "form-encoded": new URLSearchParams({ t: TOKEN }).toString().slice(2),
  base64: Buffer.from(TOKEN).toString("base64"),
};

/** What the hook says back, quoting the token it was sent in every encoding. */
function echo(token: string): string {
  return [
    `raw ${token}`,
    `json ${JSON.stringify({ token })}`,
    `nested ${JSON.stringify(JSON.stringify({ token }))}`,
    `url ?token=${encodeURIComponent(token)}`,
    `form ${new URLSearchParams({ token }).toString()}`,
    `b64 ${Buffer.from(token).toString("base64")}`,
    `basic ${Buffer.from(`x:${token}`).toString("base64")}`,
  ].join(" | ");
}

let project: TestProject | undefined;
let server: ScriptedServer | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
  await server?.close();
  server = undefined;
});

/** Every file under `dir`, as text. */
async function filesUnder(dir: string): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    found.set(path, await readFile(path, "utf8"));
  }
  return found;
}

/** Where any spelling of the token was found: `where: encoding`. */
function leaks(where: string, text: string): string[] {
  const spellings = { ...ENCODINGS, ...Object.fromEntries(secretSpellings(TOKEN).map((spelling) => [`spelling ${spelling}`, spelling])) };
  return Object.entries(spellings)
    .filter(([, spelling]) => text.includes(spelling))
    .map(([encoding]) => `${where}: ${encoding}`);
}

interface ShownItem {
  comments: { author: string; body: string }[];
}

describe("a hook's token echoed back", () => {
  it("is redacted in every encoding, in every file under the state root, every CLI output and every comment", async () => {
    server = await ScriptedServer.start();
    server.respond = (request, response) => {
      const token = String(request.headers.authorization ?? "").replace(/^Bearer /, "");
      const params = request.json?.params ?? {};
      const ref = (params["workItem"] as { ref?: string } | undefined)?.ref ?? "";
      const id = request.json?.id ?? null;
      if (request.json?.method === "waiting_for_input") {
        return reply(response, { jsonrpc: "2.0", id, result: { ...params, question: `Which port? ${echo(token)}` } });
      }
      if (ref === "local:demo#2") {
        return reply(response, { jsonrpc: "2.0", id, result: { ...params, proceed: false, reason: `refused: ${echo(token)}` } });
      }
      return reply(response, { jsonrpc: "2.0", id, error: { code: -32000, message: `denied: ${echo(token)}` } });
    };
    const p = (project = await testProject({
      hooks: [{ name: "gate", url: server.url, tokenEnv: "GATE_TOKEN", required: true, on: ["work_item_start", "waiting_for_input"] }],
    }));
    const env = { GATE_TOKEN: TOKEN };
    const outputs: [string, CliResult][] = [];
    const cli = async (args: string[]): Promise<CliResult> => {
      const result = await p.cli(args, env);
      outputs.push([args.join(" "), result]);
      return result;
    };

    for (const title of ["Failing hook", "Refusing hook"]) {
      expect((await cli(["item", "new", title, "--as", "alice", "--label", "the-loop: auto-execute"])).code).toBe(0);
    }
    // #1: the required hook fails, its error quoting the token; the CLI's start is refused.
    const failed = await cli(["sessions", "start", "--work-item", "#1"]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('the lifecycle hook "gate" refused to start local:demo#1: required hook "gate" failed');
    expect(failed.stderr).toContain("[redacted]");
    // #2: the hook refuses, its reason quoting the token; the refusal printed as JSON.
    const refused = await cli(["sessions", "start", "--work-item", "#2", "--json"]);
    expect(refused.code).toBe(1);
    expect(jsonOf<{ applied: boolean; message: string }>(refused)).toMatchObject({
      applied: false,
      message: expect.stringContaining("refused: raw [redacted]"),
    });

    // #3: the daemon's own start of a labelled item, refused by the failing hook.
    expect((await cli(["start"])).code).toBe(0);
    expect((await cli(["item", "new", "Daemon start", "--as", "alice", "--label", "the-loop: auto-execute"])).code).toBe(0);
    await p.waitForEvent("the daemon's refusal", (record) => record.event === "hooks.refused" && record.work_item === "local:demo#3");
    expect((await cli(["stop"])).code).toBe(0);

    // #4: the hook rewrites an agent's question, quoting the token.
    expect((await cli(["item", "new", "Question", "--as", "alice"])).code).toBe(0);
    expect((await cli(["ask", "Which port?", "--work-item", "#4"])).code).toBe(0);

    // The hook was sent the token, and echoed it back.
    expect(server.requests.map((request) => request.headers.authorization)).toContain(`Bearer ${TOKEN}`);
    const events = await p.events();
    expect(
      events
        .filter((record) => record.event === "hooks.refused")
        .map((record) => record.work_item)
        .sort(),
    ).toEqual(["local:demo#1", "local:demo#2", "local:demo#3"]);
    expect(events.filter((record) => record.event === "hooks.failed").length).toBeGreaterThanOrEqual(2);

    const comments: string[] = [];
    for (const number of [1, 2, 3, 4]) {
      const shown = await cli(["item", "show", `#${number}`, "--json"]);
      comments.push(...jsonOf<ShownItem>(shown).comments.map((comment) => comment.body));
    }
    expect(comments.filter((body) => body.includes("the lifecycle hook `gate` refused"))).toHaveLength(3);
    expect(comments.filter((body) => body.includes("[redacted]"))).toHaveLength(4);
    // Read by a process that never held the token: what the files say, not what a redacting CLI shows.
    await cli(["events"]);
    await cli(["sessions", "list", "--json"]);

    const found: string[] = [];
    const files = await filesUnder(p.root);
    expect([...files.keys()].some((path) => path.endsWith("journal.jsonl"))).toBe(true);
    for (const [path, text] of files) found.push(...leaks(path, text));
    for (const [args, result] of outputs)
      found.push(...leaks(`the-loop ${args} (stdout)`, result.stdout), ...leaks(`the-loop ${args} (stderr)`, result.stderr));
    for (const body of comments) found.push(...leaks("a comment", body));
    expect(found).toEqual([]);
  });
});
