import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { afterEach, describe, expect, it } from "vitest";
import { jsonOf, runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";

const SECRET = "daemon-test-webhook-secret";
/**
 * `status` looks for the GitHub token the receiver needs in its own environment. The daemons here
 * are started without one, so that nothing they do can reach GitHub; their status is read with one.
 */
const TOKEN_ENV = { GH_TOKEN: "daemon-test-token" };

interface Listening {
  host: string;
  port: number;
  path: string;
  url: string;
  verified: boolean;
}
interface StatusJson {
  healthy: boolean;
  services: { name: string; enabled: boolean; running: boolean; pid?: number; listening?: Listening }[];
}

const running: string[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((cwd) => runCli(["stop"], { cwd })));
});

async function projectWith(webhook: string, polling = false): Promise<string> {
  const cwd = await tempDir();
  await mkdir(join(cwd, ".the-loop"));
  const config = [
    "routing:",
    "  authorizedUsers: [alice]",
    "  tmux: {socketName: the-loop-webhook-daemon-test}",
    polling ? "polling:\n  enabled: true\n  intervalSeconds: 0.2\n  sources: [{provider: local}]" : "",
    "webhooks:",
    "  ghWebhook:",
    "    enabled: true",
    "    port: 0",
    webhook,
  ].join("\n");
  await writeFile(join(cwd, ".the-loop", "cli-config.yaml"), `${config}\n`);
  return cwd;
}

async function events(cwd: string): Promise<Record<string, unknown>[]> {
  const text = await readFile(join(cwd, ".the-loop", "logs", "events.jsonl"), "utf8").catch(() => "");
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("the webhook receiver in the daemon", () => {
  it("starts with the poller, answers /healthz, reports its address, takes a delivery and stops", async () => {
    const cwd = await projectWith("", true);
    const env = { THE_LOOP_GH_WEBHOOK_SECRET: SECRET };
    const started = await runCli(["start", "--json"], { cwd, env });
    expect(started.code, started.stderr + started.stdout).toBe(0);
    running.push(cwd);
    const answer = jsonOf<{ services: string[]; listening: Listening }>(started);
    expect(answer.services).toEqual(["poller", "gh-webhook"]);
    expect(answer.listening).toMatchObject({ host: "127.0.0.1", path: "/gh-webhook", verified: true });
    expect(answer.listening.port).toBeGreaterThan(0);

    const base = `http://127.0.0.1:${answer.listening.port}`;
    const health = await fetch(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });

    const status = await runCli(["status", "--json"], { cwd, env: TOKEN_ENV });
    expect(status.code, status.stderr + status.stdout).toBe(0);
    const services = jsonOf<StatusJson>(status).services;
    expect(services.map((s) => s.name)).toEqual(["poller", "gh-webhook"]);
    const receiver = services.find((s) => s.name === "gh-webhook");
    expect(receiver).toMatchObject({ enabled: true, running: true, listening: { ...answer.listening } });
    expect(receiver?.pid).toBe(jsonOf<{ pid: number }>(started).pid);
    const table = await runCli(["status"], { cwd });
    expect(table.stdout).toContain(`listening on ${base}/gh-webhook`);

    // The same event-log file the receiver writes names the address too.
    const listening = (await events(cwd)).find((e) => e.event === "webhook.listening");
    expect(listening).toMatchObject({ port: answer.listening.port, verified: true, source: "daemon" });

    // A signed delivery reaches the daemon's dispatcher: nobody armed the item, so it is dropped there.
    const body = JSON.stringify({
      action: "created",
      issue: { number: 3, title: "t", body: "", state: "open", labels: [], html_url: "https://github.com/octo/repo/issues/3" },
      comment: { id: 1, body: "hello", user: { login: "alice" } },
      repository: { full_name: "octo/repo", html_url: "https://github.com/octo/repo" },
      sender: { login: "alice" },
    });
    const delivery = await fetch(`${base}/gh-webhook`, {
      method: "POST",
      headers: { "x-github-event": "issue_comment", "x-github-delivery": "daemon-1", "x-hub-signature-256": await sign(SECRET, body) },
      body,
    });
    expect(delivery.status).toBe(202);
    await waitFor("the dispatcher's decision", async () => (await events(cwd)).find((e) => e.event === "routing.dropped" && e.delivery_id === "daemon-1"));

    const stopped = await runCli(["stop"], { cwd });
    expect(stopped.code).toBe(0);
    expect(stopped.stdout).toContain("stopped gh-webhook");
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
    const after = jsonOf<StatusJson>(await runCli(["status", "--json"], { cwd }));
    expect(after.services.find((s) => s.name === "gh-webhook")).toMatchObject({ running: false });
    expect(after.services.find((s) => s.name === "gh-webhook")?.listening).toBeUndefined();
  });

  it("runs the receiver alone, without the poller", async () => {
    const cwd = await projectWith("");
    const started = await runCli(["start", "--json"], { cwd, env: { THE_LOOP_GH_WEBHOOK_SECRET: SECRET } });
    expect(started.code, started.stderr).toBe(0);
    running.push(cwd);
    expect(jsonOf<{ services: string[] }>(started).services).toEqual(["gh-webhook"]);
    const status = jsonOf<StatusJson>(await runCli(["status", "--json"], { cwd, env: TOKEN_ENV }));
    expect(status.healthy).toBe(true);
    expect(status.services.map((s) => [s.name, s.enabled, s.running])).toEqual([
      ["poller", false, false],
      ["gh-webhook", true, true],
    ]);
  });

  it("refuses to start without the secret, naming the variable, and holds no lock", async () => {
    const cwd = await projectWith("    secretEnv: MY_HOOK_SECRET");
    const start = await runCli(["start"], { cwd });
    expect(start.code).toBe(2);
    expect(start.stderr).toContain("MY_HOOK_SECRET");
    expect(start.stderr).toContain("insecureAllowUnsigned");
    const status = await runCli(["status", "--json"], { cwd });
    expect(status.code).toBe(1);
    expect(jsonOf<StatusJson>(status).services.find((s) => s.name === "gh-webhook")).toMatchObject({ enabled: true, running: false });
    // `serve` refuses the same way, in the foreground.
    const serve = await runCli(["serve"], { cwd });
    expect(serve.code).toBe(2);
    expect(serve.stderr).toContain("MY_HOOK_SECRET");
  });

  it("in insecure mode starts, and warns", async () => {
    const cwd = await projectWith("    insecureAllowUnsigned: true");
    const started = await runCli(["start"], { cwd });
    expect(started.code, started.stderr).toBe(0);
    running.push(cwd);
    expect(started.stdout).toContain("UNSIGNED deliveries accepted");
    await waitFor("the warning", async () => (await events(cwd)).find((e) => e.event === "webhook.insecure"));
    const daemonOut = await readFile(join(cwd, ".the-loop", "logs", "daemon.out"), "utf8");
    expect(daemonOut).toContain("accepts unsigned deliveries");
  });
});
