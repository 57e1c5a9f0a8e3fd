import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sessionSocketPath } from "../../src/daemon/socket/path.js";
import { jsonOf, runCli } from "../support/cli.js";
import { graphStatus, sessionVariables, specReviewProject, twoSessions } from "../support/graph.js";
import type { ClaimJson } from "../support/graph.js";
import type { TestProject } from "../support/project.js";

/**
 * A session's own socket on the real daemon: the session is told its path, and `the-loop ask`
 * and `the-loop graph complete` run from a folder with no config and no state root, with nothing
 * but the session's own variables — as they do in a sandbox that hides both
 * (sandboxed-session.test.ts runs them there). The socket takes
 * its own item's requests only, refuses an operator command, and closes when the session does.
 */

let project: TestProject | undefined;
const scratch: string[] = [];
afterEach(async () => {
  await project?.cleanup();
  project = undefined;
  for (const dir of scratch.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** Only what the session was given of the-loop's: no config file, no state root. */
const sessionOnly = (env: Record<string, string>): Record<string, string> => sessionVariables(env, { socket: true });

describe("a session's own socket (real daemon)", () => {
  it("serves the session's ask and claim with no config in sight, for its own item only, and closes with the session", async () => {
    // Unsandboxed, so the test can act from outside with the session's own variables as they are.
    project = await specReviewProject({ sandbox: { mode: "none", bind: [] } });
    const p = project;
    const { one, two } = await twoSessions(p);
    const socket = one.THE_LOOP_SESSION_SOCKET ?? "";
    expect(socket).toBe(sessionSocketPath(p.root, "local:demo#1"));
    expect(two.THE_LOOP_SESSION_SOCKET).not.toBe(socket);
    await p.waitForEvent("#1's socket", (r) => r.event === "session.socket_opened" && r.work_item === "local:demo#1");

    // A folder with no config above it, and a HOME of its own: only the session's variables lead anywhere.
    const elsewhere = await mkdtemp(join(tmpdir(), "the-loop-no-config-"));
    scratch.push(elsewhere);
    const inside = (args: string[], env: Record<string, string>) => runCli(args, { cwd: elsewhere, env: sessionOnly(env) });

    const asked = await inside(["ask", "Which format should the spec use?", "--json"], one);
    expect(asked.code, asked.stderr).toBe(0);
    expect(jsonOf<{ workItem: string; posted: boolean }>(asked)).toMatchObject({ workItem: "local:demo#1", posted: true });
    const shown = await p.cli(["item", "show", "#1", "--json"]);
    expect(shown.stdout).toContain("Which format should the spec use?");

    // Another item's credential on #1's socket, and #1's socket asked to move #2: refused, nothing moves.
    const crossed = await inside(["graph", "complete", "--json"], { ...two, THE_LOOP_SESSION_SOCKET: socket });
    expect(crossed.code).not.toBe(0);
    expect(crossed.stderr).toMatch(/serves the session of local:demo#1 only/);
    const other = await inside(["graph", "complete", "local:demo#2", "--json"], one);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/own work item only/);
    expect((await graphStatus(p, "#2")).node).toBe("write");
    // An operator command, through the CLI (refused before it asks) — the socket takes none.
    const forced = await inside(["graph", "force", "local:demo#1", "--to", "review", "--reason", "r"], one);
    expect(forced.code).not.toBe(0);
    expect(forced.stderr).toMatch(/operator command/);

    // Its own run, asked of the daemon; another item's is not the session's to see.
    const status = await inside(["graph", "status", "local:demo#1", "--json"], one);
    expect(status.code, status.stderr).toBe(0);
    expect(jsonOf<{ ref: string; node: string }>(status)).toMatchObject({ ref: "local:demo#1", node: "write" });
    const peek = await inside(["graph", "status", "local:demo#2"], one);
    expect(peek.code).not.toBe(0);
    expect(peek.stderr).toMatch(/the session's own item: local:demo#1/);

    // The session's own claim, under the daemon's config, with no config file here.
    await writeFile(join(p.dir, "work", "spec.md"), "# Spec\n");
    const claimed = await inside(["graph", "complete", "--json"], one);
    expect(claimed.code, claimed.stderr).toBe(0);
    expect(jsonOf<ClaimJson>(claimed)).toMatchObject({ moved: true, node: "review" });

    // The session ends: its socket closes and goes away, and a command inside says what happened.
    expect((await p.cli(["sessions", "stop", "--work-item", "#1"])).code).toBe(0);
    await p.waitForEvent("#1's socket closed", (r) => r.event === "session.socket_closed" && r.work_item === "local:demo#1");
    await expect(stat(socket)).rejects.toMatchObject({ code: "ENOENT" });
    const late = await inside(["ask", "Still there?"], one);
    expect(late.code).not.toBe(0);
    expect(late.stderr).toMatch(/nothing listens on this session's socket/);
  });
});
