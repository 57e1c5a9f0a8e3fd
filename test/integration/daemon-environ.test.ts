import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { secretSpellings } from "../../src/secrets.js";
import { ScriptedServer } from "../hooks/support/rpc-server.js";
import { BIN, cliEnv, jsonOf } from "../support/cli.js";
import { ARM, TOKEN, freePort, startGitHub, startProject, webhookProject } from "../support/github-project.js";
import { RUN_MARKER } from "../support/processes.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";

/**
 * No secret the daemon holds is in its `/proc/<pid>/environ` — the block any process of the same
 * user (an agent's session among them) can read — while the daemon still uses every one: the
 * GitHub token (the fake GitHub answers its requests), the webhook secret (the receiver runs
 * verified), a remote hook's token (the hook sees it), and the agent's own key still reaches the
 * session.
 */

const WEBHOOK_SECRET = "webhook-secret-kept-off-the-environ-91d2";
const HOOK_TOKEN = "hook+token/kept-off=the-environ-5c7e";
const AGENT_KEY = "sk-ant-agent-key-kept-off-the-environ-3b8a";
const SECRETS = { GH_TOKEN: TOKEN, THE_LOOP_GH_WEBHOOK_SECRET: WEBHOOK_SECRET, GATE_TOKEN: HOOK_TOKEN, ANTHROPIC_API_KEY: AGENT_KEY };

/** Every spelling of a secret found in `text`: raw, base64 (and each way src/secrets.ts knows). */
function leaksIn(text: string): string[] {
  return Object.entries(SECRETS).flatMap(([name, value]) => {
    const spellings = new Set([value, Buffer.from(value).toString("base64"), ...secretSpellings(value)]);
    return [...spellings].filter((spelling) => text.includes(spelling)).map((spelling) => `${name}: ${spelling}`);
  });
}

function environOf(pid: number): Promise<string> {
  return readFile(`/proc/${pid}/environ`, "latin1");
}

let server: ScriptedServer | undefined;
let foreground: ChildProcess | undefined;
afterEach(async () => {
  if (foreground && foreground.exitCode === null && foreground.signalCode === null) {
    const child = foreground;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }
  foreground = undefined;
  await server?.close();
  server = undefined;
});

describe.skipIf(process.platform !== "linux")("the daemon's /proc/<pid>/environ", () => {
  it("holds no secret after `the-loop start`, and the daemon still uses every one", async () => {
    const gh = await startGitHub();
    gh.addRepo("octo/repo");
    const issue = gh.addIssue("octo/repo", { title: "Show your environment", user: "alice", labels: [ARM] });
    server = await ScriptedServer.start();
    const hook = server;
    const port = await freePort();
    const p = await startProject({
      polling: { enabled: true, intervalSeconds: 0.2, sources: [{ provider: "github", repos: ["octo/repo"] }] },
      github: { apiUrl: gh.apiUrl },
      webhooks: { ghWebhook: { enabled: true, port } },
      routing: { workspace: { enabled: false }, announce: { enabled: false }, tmux: { passEnv: ["FAKE_HARNESS_RECORD_ENV"] } },
      hooks: [{ name: "gate", url: hook.url, tokenEnv: "GATE_TOKEN", on: ["work_item_start"] }],
    });
    const started = await p.cli(["start", "--json"], { ...SECRETS, FAKE_HARNESS_RECORD_ENV: "1" });
    expect(started.code, started.stderr + started.stdout).toBe(0);
    const { pid, listening } = jsonOf<{ pid: number; listening?: { verified: boolean } }>(started);

    const environ = await environOf(pid);
    expect(leaksIn(environ)).toEqual([]);
    for (const name of Object.keys(SECRETS)) expect(environ).not.toContain(`${name}=`);
    // What the daemon keeps: its boot variables (the test run's marker among them).
    expect(environ).toContain(`${RUN_MARKER}=`);
    expect(environ).toContain("HOME=");

    // The webhook secret: the receiver runs verified.
    expect(listening?.verified).toBe(true);
    // The GitHub token: the fake GitHub answers the daemon's polls.
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline" && r.poll_source === "github:octo/repo");
    expect(gh.requests.some((request) => request.authorized && request.status === 200)).toBe(true);
    // The hook's token: the hook is called with it when the session starts.
    gh.addComment("octo/repo", issue, { user: "alice", body: "Please start." });
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    const call = await waitFor("the hook's call", async () => hook.requests.find((request) => request.json?.method === "work_item_start"));
    expect(call.headers.authorization).toBe(`Bearer ${HOOK_TOKEN}`);
    // The session gets the agent's key, and no credential of the-loop's: the daemon posts its questions.
    const boot = await waitFor("the boot line", async () => (await p.transcript()).find((e) => e.type === "boot"));
    expect(boot.environment?.ANTHROPIC_API_KEY).toBe(AGENT_KEY);
    expect(boot.environment?.GH_TOKEN).toBeUndefined();
    expect(boot.environment?.GATE_TOKEN).toBeUndefined();
    expect(boot.environment?.THE_LOOP_GH_WEBHOOK_SECRET).toBeUndefined();

    // Still true once it has run a while.
    expect(leaksIn(await environOf(pid))).toEqual([]);
  }, 60_000);

  it("`serve` in the foreground takes systemd's credentials, and names a secret given in its environment", async () => {
    const { p } = await webhookProject({ routing: { workspace: { enabled: false } } });
    const credentials = join(await tempDir(), "credentials");
    await mkdir(credentials, { mode: 0o700 });
    await writeFile(join(credentials, "THE_LOOP_GH_WEBHOOK_SECRET"), `${WEBHOOK_SECRET}\n`, { mode: 0o600 });
    const child = (foreground = spawn(process.execPath, [BIN, "serve"], {
      cwd: p.dir,
      env: cliEnv({ cwd: p.dir, env: { CREDENTIALS_DIRECTORY: credentials, GH_TOKEN: TOKEN } }),
      stdio: ["ignore", "ignore", "pipe"],
    }));
    let stderr = "";
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    await waitFor("the daemon serving", async () => (stderr.includes("the-loop serving") ? true : undefined), { timeoutMs: 20_000 });
    // The credential made the receiver verified, and is nowhere in the environment block.
    expect(stderr).toMatch(/webhook receiver listening on \S+$/m);
    const environ = await environOf(child.pid ?? -1);
    expect(environ).not.toContain(WEBHOOK_SECRET);
    // The token given in the environment is there for anyone to read: said, by name only.
    expect(environ).toContain(TOKEN);
    expect(stderr).toContain(`GH_TOKEN reached the daemon in its environment: any process of this user can read it in /proc/${child.pid}/environ`);
    expect(stderr).not.toContain(TOKEN);
    expect(stderr).not.toContain("THE_LOOP_GH_WEBHOOK_SECRET reached");
  }, 60_000);
});
