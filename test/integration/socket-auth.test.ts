import { readFile, readdir, writeFile } from "node:fs/promises";
import { createConnection } from "node:net";
import type { Socket } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { daemonSocketPath } from "../../src/daemon/socket/rpc.js";
import { workItemSlug } from "../../src/workitem/index.js";
import { jsonOf } from "../support/cli.js";
import { graphStatus, sessionVariables, specReviewProject, twoSessions } from "../support/graph.js";
import type { ClaimJson } from "../support/graph.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * The daemon's socket on the real daemon: what a line, a crowd of idle connections, a session
 * presenting its credential, and requests forging an actor or naming an unserved ref can do.
 * None of the attacks changes any state or stops the daemon; a session's own `graph complete`
 * and `ask`, run with the environment the daemon gave it, work for its own item.
 */

let project: TestProject | undefined;
afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

interface Reply {
  ok: boolean;
  error?: string;
  result?: unknown;
}

/** One raw line to the daemon's socket, and its one answer line. */
function raw(p: TestProject, line: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(daemonSocketPath(p.root));
    let received = "";
    socket.setEncoding("utf8");
    socket.on("connect", () => socket.write(`${line}\n`));
    socket.on("data", (chunk: string) => (received += chunk));
    socket.on("close", () => {
      try {
        resolve(JSON.parse(received.split("\n", 1)[0] ?? "") as Reply);
      } catch (error) {
        reject(new Error(`no answer line (${String(error)}): ${JSON.stringify(received)}`));
      }
    });
    socket.on("error", reject);
  });
}

function connect(path: string): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const socket = createConnection(path);
    socket.once("connect", () => resolve(socket));
    socket.once("error", () => resolve(undefined));
  });
}

/** Every file the state keeps, with its content: what must not change. */
async function stateSnapshot(p: TestProject): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const dir of ["graphs", "tracker", "control", "sessions"]) {
    const base = join(p.root, dir);
    const entries = await readdir(base, { recursive: true, withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      // The poller's cursors move on every cycle: not state a request could change.
      if (!entry.isFile() || entry.name.endsWith(".lock") || entry.name.startsWith(".") || entry.name.startsWith("poll-")) continue;
      const path = join(entry.parentPath, entry.name);
      out[path] = await readFile(path, "utf8").catch(() => "");
    }
  }
  return out;
}

const inSession = (env: Record<string, string>): Record<string, string> => sessionVariables(env, { socket: false });

describe("the daemon socket authenticates and bounds its callers (real daemon)", () => {
  it("survives bad lines and 1,000 idle connections, keeps a session to its own item as its agent, and refuses forged actors, a session's force and unserved refs", async () => {
    project = await specReviewProject();
    const p = project;
    const { one, two } = await twoSessions(p);
    const token = one.THE_LOOP_SESSION_TOKEN ?? "";
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(two.THE_LOOP_SESSION_TOKEN).not.toBe(token);
    // The record keeps the credential's hash, never the credential.
    const record = JSON.parse(await readFile(join(p.root, "sessions", `${workItemSlug("local:demo#1")}.json`), "utf8")) as Record<string, unknown>;
    expect(record.credentialSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(record)).not.toContain(token);

    const before = await stateSnapshot(p);

    // Lines that are not requests: each answered with an error, the daemon goes on.
    for (const line of ["null", "[]", '"x"', '{"method":1}']) {
      expect(await raw(p, line)).toMatchObject({ ok: false, error: expect.any(String) });
    }

    // 1,000 idle connections: past the cap they are answered and closed, and a request is answered after.
    const path = daemonSocketPath(p.root);
    const sockets: Socket[] = [];
    try {
      for (let batch = 0; batch < 10; batch++) {
        const opened = await Promise.all(Array.from({ length: 100 }, () => connect(path)));
        for (const socket of opened) {
          if (socket === undefined) continue;
          socket.on("error", () => undefined);
          socket.resume();
          sockets.push(socket);
        }
      }
      expect(sockets.length).toBeGreaterThan(500);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
    await waitFor("the daemon answers again", async () => {
      const reply = await raw(p, '{"method":"graph.force","params":{}}').catch(() => undefined);
      return reply?.error?.includes("params") === true;
    });

    const session1 = { workItem: "local:demo#1", token };
    // A claim by #1's session for #2, through the CLI and raw: refused, #2 does not move.
    const other = await p.cli(["graph", "complete", "local:demo#2", "--json"], inSession(one));
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/own work item only/);
    expect(
      await raw(p, JSON.stringify({ method: "graph.complete", params: { ref: "local:demo#2", node: null, configFile: null }, session: session1 })),
    ).toMatchObject({
      ok: false,
      error: expect.stringMatching(/own work item only/),
    });
    // A credential that is not the session's proves nothing.
    expect(
      await raw(
        p,
        JSON.stringify({
          method: "graph.complete",
          params: { ref: "local:demo#1", node: null, configFile: null },
          session: { ...session1, token: "x".repeat(43) },
        }),
      ),
    ).toMatchObject({ ok: false, error: expect.stringMatching(/not valid for local:demo#1/) });
    // A forged actor: the message names none, so one that tries is refused.
    const forged = { ref: "local:demo#1", to: "review", reason: "because", actor: "alice\nforged line" };
    expect(await raw(p, JSON.stringify({ method: "graph.force", params: forged }))).toMatchObject({ ok: false, error: expect.stringMatching(/actor/) });
    expect(
      await raw(p, JSON.stringify({ method: "graph.complete", params: { ref: "local:demo#1", node: null, configFile: null, actor: "alice" } })),
    ).toMatchObject({ ok: false });
    // A force carrying a session credential, raw and through the CLI.
    expect(
      await raw(p, JSON.stringify({ method: "graph.force", params: { ref: "local:demo#1", to: "review", reason: "r" }, session: session1 })),
    ).toMatchObject({
      ok: false,
      error: expect.stringMatching(/operator command/),
    });
    const cliForce = await p.cli(["graph", "force", "#1", "--to", "review", "--reason", "r"], inSession(one));
    expect(cliForce.code).not.toBe(0);
    expect(cliForce.stderr).toMatch(/operator command/);
    for (const args of [
      ["sessions", "stop", "--work-item", "#1"],
      ["item", "comment", "#1", "hi", "--as", "alice"],
    ]) {
      const refused = await p.cli(args, inSession(one));
      expect(refused.code, args.join(" ")).not.toBe(0);
      expect(refused.stderr).toMatch(/operator command/);
    }
    // A force for a ref this daemon does not serve (it polls the local tracker only).
    for (const ref of ["github:evil/repo#1"]) {
      expect(await raw(p, JSON.stringify({ method: "graph.force", params: { ref, to: "review", reason: "r" } }))).toMatchObject({
        ok: false,
        error: expect.stringMatching(/not an item this daemon serves/),
      });
    }
    expect(await stateSnapshot(p)).toEqual(before);
    const events = await p.events();
    expect(events.some((r) => typeof r.work_item === "string" && /evil/.test(r.work_item))).toBe(false);

    // The session's own claim and question, with the environment it was given.
    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
    const claimed = await p.cli(["graph", "complete", "--json"], inSession(one));
    expect(claimed.code, claimed.stderr).toBe(0);
    expect(jsonOf<ClaimJson>(claimed)).toMatchObject({ moved: true, node: "review" });
    const history = (await graphStatus(p)).history as unknown as { kind: string; actor: { kind: string; id: string } }[];
    expect(history.find((entry) => entry.kind === "claimed")?.actor).toEqual({ kind: "agent", id: "fake" });
    const asked = await p.cli(["ask", "Which format, markdown or plain text?"], inSession(one));
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stdout + asked.stderr).not.toContain(token);
    const item = jsonOf<{ comments: { body: string }[] }>(await p.cli(["item", "show", "#1", "--json"]));
    expect(item.comments.some((c) => c.body.includes("Which format, markdown or plain text?"))).toBe(true);
    expect((await graphStatus(p, "#2")).node).toBe("write");

    // The token never reached the event log.
    const log = JSON.stringify(await p.events());
    expect(log).not.toContain(token);
    expect((await p.cli(["status"])).code).toBe(0);
  });
});
