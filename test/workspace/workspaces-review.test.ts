import { execFileSync } from "node:child_process";
import { chmod, mkdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/log.js";
import type { RepositoryInfo } from "../../src/trackers/tracker.js";
import { GitError, WorkspaceError, Workspaces } from "../../src/workspace/index.js";
import type { WorkspacesOptions } from "../../src/workspace/index.js";
import { parseWorkItemRef, workItemOf } from "../../src/workitem/index.js";
import type { WorkItem } from "../../src/workitem/index.js";
import { tempDir } from "../support/temp.js";

const GIT_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: "Ann",
  GIT_AUTHOR_EMAIL: "ann@example.com",
  GIT_COMMITTER_NAME: "Ann",
  GIT_COMMITTER_EMAIL: "ann@example.com",
  GIT_TERMINAL_PROMPT: "0",
};

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, env: GIT_ENV, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

function item(ref: string, kind: "issue" | "pull_request" = "issue"): WorkItem {
  return workItemOf(parseWorkItemRef(ref), { kind, url: `https://example.invalid/${ref}`, id: `I_${ref}` });
}

/** A bare remote with main and a feature-x branch. */
async function remote(): Promise<string> {
  const dir = await tempDir("the-loop-remote-");
  const author = join(dir, "author");
  const bare = join(dir, "repo.git");
  await mkdir(author);
  git(author, "init", "-q", "-b", "main");
  await writeFile(join(author, "README.md"), "hello\n");
  git(author, "add", "README.md");
  git(author, "commit", "-q", "-m", "first");
  git(author, "checkout", "-q", "-b", "feature-x");
  await writeFile(join(author, "feature.txt"), "feature\n");
  git(author, "add", "feature.txt");
  git(author, "commit", "-q", "-m", "feature");
  git(author, "checkout", "-q", "main");
  git(dir, "clone", "-q", "--bare", author, bare);
  return bare;
}

async function setup(overrides: Partial<WorkspacesOptions> = {}, info?: Partial<RepositoryInfo>) {
  const bare = await remote();
  const root = join(await tempDir("the-loop-ws-"), "workspaces");
  const events = new MemoryEventSink();
  const workspaces = new Workspaces({
    root,
    strategy: "worktree",
    keepCheckoutOnClose: false,
    gitTimeoutMs: 30_000,
    events,
    repository: () => Promise.resolve({ cloneUrl: `file://${bare}`, defaultBranch: "main", ...info }),
    ...overrides,
  });
  return { root, events, workspaces, sharedClone: join(root, "github.com", "octo", "repo") };
}

/** An executable that leaves `marker` behind when anything runs it. */
async function trap(path: string, marker: string): Promise<void> {
  await writeFile(path, `#!/bin/sh\necho "$0 $*" >> "${marker}"\nexit 0\n`);
  await chmod(path, 0o755);
}

describe("Workspaces run nothing a checkout planted", () => {
  it("runs no hook and no fsmonitor of the shared clone, which every session's worktree can write to", async () => {
    const t = await setup();
    const first = await t.workspaces.prepare(item("github:octo/repo#1"), {});
    if (first === undefined) throw new Error("expected a checkout");
    const marker = join(await tempDir(), "ran");

    // What a session could do from its worktree: the git dir it writes commits to is the shared
    // clone's, hooks and config included.
    const hooks = join(t.sharedClone, ".git", "hooks");
    await mkdir(hooks, { recursive: true });
    for (const hook of ["post-checkout", "reference-transaction", "post-index-change", "pre-auto-gc"]) {
      await trap(join(hooks, hook), marker);
    }
    const elsewhere = join(await tempDir(), "hooks");
    await mkdir(elsewhere);
    await trap(join(elsewhere, "post-checkout"), marker);
    await trap(join(elsewhere, "reference-transaction"), marker);
    const monitor = join(await tempDir(), "fsmonitor");
    await trap(monitor, marker);

    await t.workspaces.prepare(item("github:octo/repo#2"), {});
    await t.workspaces.prepare(item("github:octo/repo#3", "pull_request"), { branch: "feature-x", headInRepository: true });
    git(first.checkout, "config", "core.hooksPath", elsewhere);
    git(first.checkout, "config", "core.fsmonitor", monitor);
    const pr = await t.workspaces.prepare(item("github:octo/repo#4", "pull_request"), { branch: "feature-x" });
    if (pr === undefined) throw new Error("expected a checkout");
    await t.workspaces.release("github:octo/repo#4", pr);

    expect(t.events.events.filter((event) => event.type === "workspace.failed")).toEqual([]);
    expect(await exists(marker)).toBe(false);
  });
});

describe("Workspaces keep clone-URL credentials out of errors", () => {
  it("not in the message, and not in the git command the error carries either", async () => {
    const secret = "s3cr3t-clone-credential";
    const t = await setup({}, { cloneUrl: `https://x-access-token:${secret}@127.0.0.1:1/octo/repo.git` });
    const failure = (await t.workspaces.prepare(item("github:octo/repo#1"), {}).catch((error: unknown) => error)) as WorkspaceError;
    expect(failure).toBeInstanceOf(WorkspaceError);
    expect(failure.git).toBeInstanceOf(GitError);
    expect(failure.git?.args).toContain("https://***@127.0.0.1:1/octo/repo.git");
    expect(inspect(failure, { depth: 10 })).not.toContain(secret);
    expect(JSON.stringify(failure)).not.toContain(secret);
    expect(JSON.stringify(t.events.events)).not.toContain(secret);
  });
});
