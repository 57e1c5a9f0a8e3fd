import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, expect } from "vitest";
import { ARM } from "./builders.js";
import { FakeGitHub, sendWebhook } from "./fake-github.js";
import { testProject } from "./project.js";
import type { CliResult } from "./cli.js";
import type { ProjectOverrides, TestProject } from "./project.js";
import { tempDir } from "./temp.js";

/**
 * What the GitHub integration tests share: a fake GitHub and a throwaway project per test, both
 * stopped after it, and the token the daemon is given for that fake.
 */

/** The label that arms an item. */
export { ARM } from "./builders.js";
/** The token the fake GitHub accepts; it must never reach the event log. */
export const TOKEN = "ghp_integration-test-token-7f3a";

let project: TestProject | undefined;
let github: FakeGitHub | undefined;

afterEach(async () => {
  await project?.cleanup();
  await github?.stop();
  project = undefined;
  github = undefined;
});

/** A fake GitHub that takes TOKEN, stopped after the current test. */
export async function startGitHub(): Promise<FakeGitHub> {
  github = await FakeGitHub.start({ token: TOKEN });
  return github;
}

/** A throwaway project (see testProject), cleaned up after the current test. */
export async function startProject(overrides: ProjectOverrides): Promise<TestProject> {
  project = await testProject(overrides);
  return project;
}

/** A TCP port nothing listens on at the moment. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

const git = promisify(execFile);

/** A bare repository with one commit on main: the "remote" the workspace clones. */
export async function bareRepository(): Promise<string> {
  const dir = await tempDir();
  const work = join(dir, "work");
  const bare = join(dir, "repo.git");
  await mkdir(work);
  await git("git", ["init", "-q", "-b", "main", work]);
  await writeFile(join(work, "README.md"), "# octo/repo\n");
  await git("git", ["-C", work, "add", "README.md"]);
  await git("git", ["-C", work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first"]);
  await git("git", ["clone", "-q", "--bare", work, bare]);
  return bare;
}

/** A project whose daemon takes GitHub webhooks, started against a fake GitHub with one armed issue. */
export interface WebhookDaemon {
  readonly gh: FakeGitHub;
  /** The armed issue on octo/repo, and its work-item ref. */
  readonly issue: number;
  readonly ref: string;
  readonly port: number;
  readonly p: TestProject;
  /** What the CLI is run with: TOKEN and the webhook secret. */
  readonly env: Record<string, string>;
  /** The answer of `the-loop start --json`. */
  readonly started: CliResult;
  /** The receiver's URL. */
  readonly url: string;
  /** Sends a signed delivery, expects it accepted (202) and answers its delivery id. */
  deliver(event: string, payload: unknown): Promise<string>;
  /** The text of each input the session was given, in order. */
  inputs(): Promise<string[]>;
}

/**
 * A fake GitHub with octo/repo, and a project (not started) on it whose webhook receiver listens on
 * a free port, polling off unless `polling` says otherwise; both stopped after the current test.
 */
export async function webhookProject(options: {
  readonly repo?: { defaultBranch?: string; cloneUrl?: string };
  readonly polling?: Record<string, unknown>;
  readonly routing?: Record<string, unknown>;
}): Promise<{ gh: FakeGitHub; port: number; p: TestProject }> {
  const gh = await startGitHub();
  gh.addRepo("octo/repo", options.repo);
  const port = await freePort();
  const p = await startProject({
    polling: options.polling ?? { enabled: false, sources: [] },
    github: { apiUrl: gh.apiUrl },
    webhooks: { ghWebhook: { enabled: true, port } },
    ...(options.routing === undefined ? {} : { routing: options.routing }),
  });
  return { gh, port, p };
}

/**
 * A fake GitHub with octo/repo and alice's armed issue "Add a health check", and a started daemon
 * receiving its webhooks signed with `secret` (polling off unless `polling` says otherwise),
 * both stopped after the current test.
 */
export async function startWebhookDaemon(options: {
  readonly secret: string;
  readonly repo?: { defaultBranch?: string; cloneUrl?: string };
  readonly polling?: Record<string, unknown>;
  readonly routing?: Record<string, unknown>;
}): Promise<WebhookDaemon> {
  const { gh, port, p } = await webhookProject(options);
  const issue = gh.addIssue("octo/repo", { title: "Add a health check", user: "alice", labels: [ARM] });
  const ref = `github:${gh.host}/octo/repo#${issue}`;
  const env = { GH_TOKEN: TOKEN, THE_LOOP_GH_WEBHOOK_SECRET: options.secret };
  const started = await p.cli(["start", "--json"], env);
  expect(started.code, started.stderr + started.stdout).toBe(0);
  const url = `http://127.0.0.1:${port}/gh-webhook`;
  const deliver = async (event: string, payload: unknown): Promise<string> => {
    const sent = await sendWebhook(url, { event, payload, secret: options.secret });
    expect(sent.status).toBe(202);
    return sent.deliveryId;
  };
  const inputs = async (): Promise<string[]> => (await p.transcript()).filter((e) => e.type === "input").map((e) => e.text ?? "");
  return { gh, issue, ref, port, p, env, started, url, deliver, inputs };
}
