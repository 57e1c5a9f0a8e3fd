import { execFile } from "node:child_process";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { attachPlan, currentTmuxSocket, outsideCommand, shellLine, sshAttachArgv } from "../../src/cli/commands/sessions/attach.js";
import { jsonOf } from "../support/cli.js";
import type { CliResult } from "../support/cli.js";
import { ARM } from "../support/builders.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

const run = promisify(execFile);

describe("sessions attach: where this terminal is", () => {
  it.each<[string | undefined, string | undefined]>([
    [undefined, undefined],
    ["", undefined],
    ["/tmp/tmux-1000/default,4242,0", "/tmp/tmux-1000/default"],
    ["/tmp/odd,name/work,17,3", "/tmp/odd,name/work"],
  ])("$TMUX %j is inside the server at %j", (variable, socket) => {
    expect(currentTmuxSocket(variable)).toBe(socket);
  });

  it.each<[string | undefined, string, string]>([
    [undefined, "/tmp/tmux-1/loop", "attach"],
    ["/tmp/tmux-1/loop", "/tmp/tmux-1/loop", "switch"],
    ["/tmp/tmux-1/default", "/tmp/tmux-1/loop", "elsewhere"],
  ])("inside %j with sessions on %j: %s", (current, sessions, kind) => {
    expect(attachPlan(current, sessions).kind).toBe(kind);
  });

  it.each<[string | undefined, boolean, string]>([
    ["loop", false, "tmux -L loop attach -t =loop-abc"],
    [undefined, false, "tmux -L default attach -t =loop-abc"],
    ["loop", true, "tmux -L loop attach -r -t =loop-abc"],
  ])("tells how to attach from outside on socket %j (read-only %s)", (socket, readOnly, command) => {
    expect(outsideCommand(socket, "loop-abc", readOnly)).toBe(command);
  });
});

/** `$TMUX` as tmux sets it in a pane of `session` on the server at `socketName`. */
async function tmuxVariable(socketName: string, session: string): Promise<string> {
  const { stdout } = await run("tmux", ["-L", socketName, "display-message", "-p", "-t", `=${session}:`, "#{socket_path},#{pid},#{session_id}"]);
  return stdout.trim().replace(/\$(\d+)$/, "$1");
}

async function clientSessions(socketName: string): Promise<string[]> {
  const { stdout } = await run("tmux", ["-L", socketName, "list-clients", "-F", "#{client_session}"]).catch(() => ({ stdout: "" }));
  return stdout.split("\n").filter(Boolean);
}

function ok(result: CliResult): CliResult {
  expect(result.code, result.stderr).toBe(0);
  return result;
}

describe("sessions attach from inside tmux (real tmux)", () => {
  let project: TestProject | undefined;
  let outer: string | undefined;

  afterEach(async () => {
    if (outer !== undefined) {
      await run("tmux", ["-L", outer, "kill-server"]).catch(() => undefined);
      await rm(join(process.env.TMUX_TMPDIR || "/tmp", `tmux-${process.getuid?.() ?? 0}`, outer), { force: true });
      outer = undefined;
    }
    await project?.cleanup();
    project = undefined;
  });

  async function startedSession(): Promise<{ p: TestProject; target: string }> {
    project = await testProject();
    const p = project;
    ok(await p.cli(["item", "new", "Watch me", "--label", ARM, "--as", "alice"]));
    const started = jsonOf<{ session?: { tmuxTarget: string } }>(ok(await p.cli(["sessions", "start", "--work-item", "1", "--json"])));
    const target = started.session?.tmuxTarget ?? "";
    expect(target).toMatch(/^loop-/);
    return { p, target };
  }

  it("switches the client when the terminal is inside the sessions' own server", async () => {
    const { p, target } = await startedSession();
    // A person's client on the sessions' server: a pane of another server runs `tmux attach`.
    await run("tmux", ["-L", p.socketName, "new-session", "-d", "-s", "desk", "-x", "80", "-y", "24", "sh"]);
    outer = `${p.socketName}-outer`;
    await run("tmux", ["-L", outer, "new-session", "-d", "-x", "80", "-y", "24", `env -u TMUX tmux -L ${p.socketName} attach -t =desk`]);
    await waitFor("a client on the desk session", async () => ((await clientSessions(p.socketName)).includes("desk") ? true : undefined));

    const result = await p.cli(["sessions", "attach", "--work-item", "#1"], { TMUX: await tmuxVariable(p.socketName, "desk") });
    expect(result.code, result.stderr).toBe(0);
    await waitFor("the client to switch to the session", async () => ((await clientSessions(p.socketName)).includes(target) ? true : undefined));
  });

  it("prints the command that attaches from outside when the terminal is inside another tmux server", async () => {
    const { p, target } = await startedSession();
    outer = `${p.socketName}-other`;
    await run("tmux", ["-L", outer, "new-session", "-d", "-s", "mine", "-x", "80", "-y", "24", "sh"]);
    const result = await p.cli(["sessions", "attach", "--work-item", "1"], { TMUX: await tmuxVariable(outer, "mine") });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(`tmux -L ${p.socketName} attach -t =${target}\n`);
    expect(result.stderr).toContain("runs on another tmux server");
    expect(result.stderr).not.toContain("no longer exists");
    const watching = await p.cli(["sessions", "attach", "--work-item", "1", "--read-only"], { TMUX: await tmuxVariable(outer, "mine") });
    expect(watching.stdout).toBe(`tmux -L ${p.socketName} attach -r -t =${target}\n`);
  });
});

describe("the attach command for a session on another host", () => {
  it.each([
    [{ host: "box-b", socket: "sock", readOnly: false }, "ssh -t box-b tmux -L sock attach -t =loop-1"],
    [{ host: "box-b", socket: null, readOnly: true }, "ssh -t box-b tmux -L default attach -r -t =loop-1"],
    [{ host: "it's", socket: "a b", readOnly: false }, "ssh -t 'it'\\''s' tmux -L 'a b' attach -t =loop-1"],
  ])("is the ssh of tmux -L <socket> attach, each word quoted as a shell needs (%o)", ({ host, socket, readOnly }, line) => {
    expect(shellLine(sshAttachArgv(host, socket, "loop-1", readOnly))).toBe(line);
  });
});
