import { execFileSync } from "node:child_process";
import { chmod, mkdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { EventType } from "../../src/events/catalog.js";
import { MemoryEventSink } from "../../src/events/log.js";
import type { SessionWorkspace } from "../../src/registry/record.js";
import type { RepositoryInfo } from "../../src/trackers/tracker.js";
import { Workspaces } from "../../src/workspace/index.js";
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

/** Runs the real git in `cwd` with a fixed author and no prompts; returns its trimmed output. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, env: GIT_ENV, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
}

export async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

export function item(ref: string, kind: "issue" | "pull_request" = "issue"): WorkItem {
  return workItemOf(parseWorkItemRef(ref), { kind, url: `https://example.invalid/${ref}`, id: `I_${ref}` });
}

/** A bare "remote" with two commits on main and a feature-x branch one commit ahead of it. */
async function remote(): Promise<{ bare: string; author: string; url: string; push(file: string): string }> {
  const dir = await tempDir("the-loop-remote-");
  const author = join(dir, "author");
  const bare = join(dir, "repo.git");
  await mkdir(author);
  git(author, "init", "-q", "-b", "main");
  await writeFile(join(author, "README.md"), "hello\n");
  git(author, "add", "README.md");
  git(author, "commit", "-q", "-m", "first");
  await writeFile(join(author, "src.txt"), "code\n");
  git(author, "add", "src.txt");
  git(author, "commit", "-q", "-m", "second");
  git(author, "checkout", "-q", "-b", "feature-x");
  await writeFile(join(author, "feature.txt"), "feature\n");
  git(author, "add", "feature.txt");
  git(author, "commit", "-q", "-m", "feature");
  git(author, "checkout", "-q", "main");
  git(dir, "clone", "-q", "--bare", author, bare);
  return {
    bare,
    author,
    url: `file://${bare}`,
    /** Commits a new file on main and pushes it; returns the new head. */
    push(file: string): string {
      execFileSync("sh", ["-c", `echo x > "${file}"`], { cwd: author });
      git(author, "add", file);
      git(author, "commit", "-q", "-m", `add ${file}`);
      git(author, "push", "-q", bare, "main");
      return git(author, "rev-parse", "HEAD");
    },
  };
}

/** Workspaces (worktree strategy unless overridden) over a fresh bare remote of `github:octo/repo`. */
export async function setup(overrides: Partial<WorkspacesOptions> = {}, info?: Partial<RepositoryInfo>) {
  const origin = await remote();
  const root = join(await tempDir("the-loop-ws-"), "workspaces");
  const events = new MemoryEventSink();
  const lookups: string[] = [];
  const workspaces = new Workspaces({
    root,
    strategy: "worktree",
    keepCheckoutOnClose: false,
    gitTimeoutMs: 30_000,
    events,
    repository: async (workItem) => {
      lookups.push(workItem.ref);
      return { cloneUrl: origin.url, defaultBranch: "main", ...info };
    },
    ...overrides,
  });
  const emitted = (type: EventType): Record<string, unknown>[] => events.events.filter((event) => event.type === type).map((event) => event.fields);
  const mainHead = git(origin.bare, "rev-parse", "main");
  const featureHead = git(origin.bare, "rev-parse", "feature-x");
  const sharedClone = join(root, "github.com", "octo", "repo");
  return { origin, root, events, emitted, workspaces, lookups, mainHead, featureHead, sharedClone };
}

export async function prepared(workspaces: Workspaces, workItem: WorkItem, request = {}): Promise<SessionWorkspace> {
  const workspace = await workspaces.prepare(workItem, request);
  if (workspace === undefined) throw new Error("expected a checkout");
  return workspace;
}

/** The branch a checkout is on, or "HEAD" when it is detached. */
export const head = (checkout: string): string => git(checkout, "rev-parse", "--abbrev-ref", "HEAD");

/** An executable that leaves `marker` behind when anything runs it. */
export async function trap(path: string, marker: string): Promise<void> {
  await writeFile(path, `#!/bin/sh\necho "$0 $*" >> "${marker}"\nexit 0\n`);
  await chmod(path, 0o755);
}
