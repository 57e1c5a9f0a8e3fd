import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { GitError, WorkspaceError, workspaceLayout } from "../../src/workspace/index.js";
import { workItemSlug } from "../../src/workitem/index.js";
import { tempDir } from "../support/temp.js";
import { exists, git, head, item, prepared, setup, trap } from "./fixture.js";

describe("Workspaces, worktree strategy", () => {
  it("checks an issue out detached at the default branch, in a worktree of a new shared clone", async () => {
    const t = await setup();
    const issue = item("github:octo/repo#1");
    const workspace = await prepared(t.workspaces, issue);

    const checkout = join(t.root, ".worktrees", "github.com", "octo", "repo", workItemSlug(issue.ref));
    expect(workspace).toEqual({ checkout, strategy: "worktree" });
    expect(await readFile(join(checkout, "README.md"), "utf8")).toBe("hello\n");
    expect(await exists(join(checkout, "feature.txt"))).toBe(false);
    expect(head(checkout)).toBe("HEAD");
    expect(git(checkout, "rev-parse", "HEAD")).toBe(t.mainHead);
    expect(await exists(join(t.sharedClone, ".git"))).toBe(true);
    // The shared clone holds no branch, so every branch stays free for a worktree.
    expect(git(t.sharedClone, "rev-parse", "--abbrev-ref", "HEAD")).toBe("HEAD");
    expect(t.emitted("workspace.prepared")).toEqual([{ work_item: issue.ref, checkout, strategy: "worktree", reused: false }]);
  });

  it("gives two work items of one repository their own worktrees of one shared clone", async () => {
    const t = await setup();
    const one = await prepared(t.workspaces, item("github:octo/repo#1"));
    const later = t.origin.push("later.txt");
    const two = await prepared(t.workspaces, item("github:octo/repo#2"));

    expect(one.checkout).not.toBe(two.checkout);
    const listed = git(t.sharedClone, "worktree", "list", "--porcelain");
    expect(listed).toContain(`worktree ${one.checkout}`);
    expect(listed).toContain(`worktree ${two.checkout}`);
    expect(await exists(join(t.root, "github.com", "octo", ".repo.lock"))).toBe(false);
    // The existing clone was fetched, not cloned again: the second item starts at the new head.
    expect(git(two.checkout, "rev-parse", "HEAD")).toBe(later);
    expect(git(one.checkout, "rev-parse", "HEAD")).toBe(t.mainHead);
  });

  it("reuses an item's existing worktree as it is", async () => {
    const t = await setup();
    const issue = item("github:octo/repo#1");
    const first = await prepared(t.workspaces, issue);
    await writeFile(join(first.checkout, "work-in-progress.txt"), "unsaved\n");
    t.origin.push("later.txt");
    const again = await prepared(t.workspaces, issue);

    expect(again).toEqual(first);
    expect(await readFile(join(again.checkout, "work-in-progress.txt"), "utf8")).toBe("unsaved\n");
    expect(git(again.checkout, "rev-parse", "HEAD")).toBe(t.mainHead);
    expect(t.emitted("workspace.prepared").map((fields) => fields.reused)).toEqual([false, true]);
  });

  it("checks a pull request's head branch out on a branch that tracks it", async () => {
    const t = await setup();
    const pr = item("github:octo/repo#7", "pull_request");
    const workspace = await prepared(t.workspaces, pr, { branch: "feature-x", headInRepository: true });

    expect(workspace.branch).toBe("feature-x");
    expect(head(workspace.checkout)).toBe("feature-x");
    expect(git(workspace.checkout, "rev-parse", "HEAD")).toBe(t.featureHead);
    expect(git(workspace.checkout, "rev-parse", "--abbrev-ref", "@{upstream}")).toBe("origin/feature-x");
    expect(await exists(join(workspace.checkout, "feature.txt"))).toBe(true);
    expect(t.emitted("workspace.prepared")).toEqual([
      { work_item: pr.ref, checkout: workspace.checkout, strategy: "worktree", branch: "feature-x", reused: false },
    ]);

    const reused = await prepared(t.workspaces, pr, { branch: "feature-x" });
    expect(reused.branch).toBe("feature-x");
  });

  it("falls back to the default branch when the head branch does not exist", async () => {
    const t = await setup();
    const workspace = await prepared(t.workspaces, item("github:octo/repo#7", "pull_request"), { branch: "gone-away" });

    expect(workspace.branch).toBeUndefined();
    expect(head(workspace.checkout)).toBe("HEAD");
    expect(git(workspace.checkout, "rev-parse", "HEAD")).toBe(t.mainHead);
  });

  it("uses the default branch for a fork's head, which the shared clone cannot fetch", async () => {
    const t = await setup();
    const workspace = await prepared(t.workspaces, item("github:octo/repo#7", "pull_request"), {
      branch: "feature-x",
      headInRepository: false,
    });

    expect(workspace.branch).toBeUndefined();
    expect(git(workspace.checkout, "rev-parse", "HEAD")).toBe(t.mainHead);
  });

  it("never hands a hostile branch name to git as an option or a path", async () => {
    const t = await setup();
    const marker = join(t.root, "..", "pwned");
    const hostile = [`--upload-pack=touch ${marker}`, "--upload-pack=evil", "-b", "../x", "@{-1}", "a..b", "HEAD"];
    for (const [index, branch] of hostile.entries()) {
      const workspace = await prepared(t.workspaces, item(`github:octo/repo#${index + 10}`, "pull_request"), { branch });
      expect(workspace.branch).toBeUndefined();
      expect(git(workspace.checkout, "rev-parse", "HEAD")).toBe(t.mainHead);
    }
    expect(await exists(marker)).toBe(false);
    expect(git(t.sharedClone, "branch", "--list")).not.toMatch(/upload|evil|x/);
  });

  it("uses the remote's own default branch when the tracker names none", async () => {
    const t = await setup({}, { defaultBranch: "" });
    const workspace = await prepared(t.workspaces, item("github:octo/repo#1"));
    expect(git(workspace.checkout, "rev-parse", "HEAD")).toBe(t.mainHead);
  });

  it("prepares two items of one repository at once, cloning it once", async () => {
    const dir = await tempDir();
    const calls = join(dir, "calls.log");
    const tracing = join(dir, "tracing-git");
    // The command's name is the first argument that is not a `-c name=value` setting.
    await writeFile(tracing, `#!/bin/sh\nfor a in "$@"; do case "$a" in -c|*=*) ;; *) echo "$a" >> "${calls}"; break;; esac; done\nexec git "$@"\n`);
    await chmod(tracing, 0o755);
    const t = await setup({ git: tracing });
    const [one, two] = await Promise.all([
      prepared(t.workspaces, item("github:octo/repo#1")),
      prepared(t.workspaces, item("github:octo/repo#2"), { branch: "feature-x" }),
    ]);

    expect(git(one.checkout, "rev-parse", "HEAD")).toBe(t.mainHead);
    expect(head(two.checkout)).toBe("feature-x");
    expect(t.emitted("workspace.prepared")).toHaveLength(2);
    expect(t.emitted("workspace.failed")).toEqual([]);
    expect((await readFile(calls, "utf8")).split("\n").filter((command) => command === "clone")).toHaveLength(1);
  });

  it("keeps working from the shared clone when the remote cannot be reached", async () => {
    const t = await setup();
    await prepared(t.workspaces, item("github:octo/repo#1"));
    await rename(t.origin.bare, `${t.origin.bare}.moved`);

    const workspace = await prepared(t.workspaces, item("github:octo/repo#2"));
    expect(git(workspace.checkout, "rev-parse", "HEAD")).toBe(t.mainHead);
  });

  it("removes a closed session's worktree and keeps the shared clone", async () => {
    const t = await setup();
    const issue = item("github:octo/repo#1");
    const workspace = await prepared(t.workspaces, issue, { branch: "feature-x" });
    await writeFile(join(workspace.checkout, "scratch.txt"), "untracked\n");

    await t.workspaces.release(issue.ref, workspace);

    expect(await exists(workspace.checkout)).toBe(false);
    expect(git(t.sharedClone, "worktree", "list", "--porcelain")).not.toContain(workspace.checkout);
    expect(await exists(join(t.sharedClone, ".git"))).toBe(true);
    expect(t.emitted("workspace.cleaned")).toEqual([{ work_item: issue.ref, checkout: workspace.checkout }]);

    // The item's next session gets a fresh worktree on the same branch.
    const again = await prepared(t.workspaces, issue, { branch: "feature-x" });
    expect(head(again.checkout)).toBe("feature-x");
    expect(t.emitted("workspace.prepared").map((fields) => fields.reused)).toEqual([false, false]);
  });

  it("keeps the checkout when configured to", async () => {
    const t = await setup({ keepCheckoutOnClose: true });
    const issue = item("github:octo/repo#1");
    const workspace = await prepared(t.workspaces, issue);

    await t.workspaces.release(issue.ref, workspace);

    expect(await exists(join(workspace.checkout, "README.md"))).toBe(true);
    expect(t.emitted("workspace.kept")).toEqual([{ work_item: issue.ref, checkout: workspace.checkout }]);
    expect(t.emitted("workspace.cleaned")).toEqual([]);
  });

  it("releases a checkout that is already gone without throwing", async () => {
    const t = await setup();
    const issue = item("github:octo/repo#1");
    const checkout = workspaceLayout(t.root, issue).worktree;

    await expect(t.workspaces.release(issue.ref, { checkout, strategy: "worktree" })).resolves.toBeUndefined();
    await expect(t.workspaces.release(issue.ref, { checkout, strategy: "clone" })).resolves.toBeUndefined();
    expect(t.emitted("workspace.clean_failed")).toEqual([
      expect.objectContaining({ work_item: issue.ref, checkout, error: expect.stringContaining("refusing to delete") }),
    ]);
    expect(t.emitted("workspace.cleaned")).toHaveLength(1);
  });

  it("refuses to delete anything but the item's own checkout under the root", async () => {
    const t = await setup();
    const issue = item("github:octo/repo#1");
    const workspace = await prepared(t.workspaces, issue);
    const outside = await tempDir();
    await writeFile(join(outside, "precious.txt"), "keep me\n");

    for (const checkout of [outside, t.sharedClone, t.root, join(workspace.checkout, ".."), "relative/path"]) {
      await t.workspaces.release(issue.ref, { checkout, strategy: "worktree" });
      await t.workspaces.release(issue.ref, { checkout, strategy: "clone" });
    }
    await t.workspaces.release("local:demo#1", { checkout: outside, strategy: "clone" });

    expect(await readFile(join(outside, "precious.txt"), "utf8")).toBe("keep me\n");
    expect(await exists(join(workspace.checkout, "README.md"))).toBe(true);
    expect(t.emitted("workspace.cleaned")).toEqual([]);
    expect(t.emitted("workspace.clean_failed")).toHaveLength(11);
  });

  it("fails with the git command, its status and what to check when the clone fails", async () => {
    const t = await setup({}, { cloneUrl: "file:///nonexistent/the-loop/repo.git" });
    const issue = item("github:octo/repo#1");

    const failure = await t.workspaces.prepare(issue, {}).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(WorkspaceError);
    const message = (failure as WorkspaceError).message;
    expect(message).toContain("git clone failed (exit status 128)");
    expect(message).toContain("file:///nonexistent/the-loop/repo.git");
    expect(message).toContain("credentials");
    expect((failure as WorkspaceError).git?.status).toBe(128);
    expect(t.emitted("workspace.failed")).toEqual([{ work_item: issue.ref, error: message }]);
    expect(t.emitted("workspace.prepared")).toEqual([]);
    // Nothing half-made is left to be mistaken for a clone.
    expect(await exists(t.sharedClone)).toBe(false);
  });

  it("keeps credentials written into a clone URL out of the error", async () => {
    const t = await setup({}, { cloneUrl: "https://x-access-token:s3cr3t-value@127.0.0.1:1/octo/repo.git" });
    const failure = (await t.workspaces.prepare(item("github:octo/repo#1"), {}).catch((error: unknown) => error)) as Error;
    expect(failure).toBeInstanceOf(WorkspaceError);
    expect(failure.message).not.toContain("s3cr3t-value");
    expect(JSON.stringify(t.events.events)).not.toContain("s3cr3t-value");
  });

  it("reports a failed repository lookup as a workspace failure", async () => {
    const t = await setup({
      repository: () => Promise.reject(new Error("Bad credentials")),
    });
    const failure = (await t.workspaces.prepare(item("github:octo/repo#1"), {}).catch((error: unknown) => error)) as Error;
    expect(failure).toBeInstanceOf(WorkspaceError);
    expect(failure.message).toContain("Bad credentials");
    expect(t.emitted("workspace.failed")).toHaveLength(1);
  });

  it("stops a git command that runs past the timeout and says so", async () => {
    const dir = await tempDir();
    const slowGit = join(dir, "slow-git");
    // The sleep is a child of the script: stopping only the script would leave it holding the pipes.
    await writeFile(slowGit, "#!/bin/sh\nsleep 30\n");
    await chmod(slowGit, 0o755);
    const t = await setup({ git: slowGit, gitTimeoutMs: 300 });

    const started = Date.now();
    const failure = (await t.workspaces.prepare(item("github:octo/repo#1"), {}).catch((error: unknown) => error)) as WorkspaceError;

    expect(Date.now() - started).toBeLessThan(10_000);
    expect(failure).toBeInstanceOf(WorkspaceError);
    expect(failure.message).toContain("git clone timed out after 300 ms and was stopped");
    expect(failure.message).toContain("gitTimeoutSeconds");
    expect(failure.git?.timedOut).toBe(true);
    expect(t.emitted("workspace.failed")).toHaveLength(1);
  });

  it("gives a local work item no checkout", async () => {
    const t = await setup();
    await expect(t.workspaces.prepare(item("local:demo#1"), { branch: "feature-x" })).resolves.toBeUndefined();
    expect(t.events.events).toEqual([]);
    expect(t.lookups).toEqual([]);
  });

  it("does not look the repository up to reuse a checkout", async () => {
    const t = await setup();
    const issue = item("github:octo/repo#1");
    await prepared(t.workspaces, issue);
    const before = t.lookups.length;
    await prepared(t.workspaces, issue);
    expect(t.lookups).toHaveLength(before);
  });

  it("refuses a checkout whose git link is broken rather than deleting it", async () => {
    const t = await setup();
    const issue = item("github:octo/repo#1");
    const workspace = await prepared(t.workspaces, issue);
    await writeFile(join(workspace.checkout, ".git"), "gitdir: /nonexistent/the-loop\n");

    const failure = (await t.workspaces.prepare(issue, {}).catch((error: unknown) => error)) as Error;
    expect(failure).toBeInstanceOf(WorkspaceError);
    expect(failure.message).toContain("no longer a working git checkout");
    expect(await exists(join(workspace.checkout, "README.md"))).toBe(true);
  });
});

describe("Workspaces, clone strategy", () => {
  it("makes a full clone per item, on the pull request's branch", async () => {
    const t = await setup({ strategy: "clone" });
    const pr = item("github:octo/repo#7", "pull_request");
    const workspace = await prepared(t.workspaces, pr, { branch: "feature-x" });

    const itemDir = join(t.root, ".work-items", workItemSlug(pr.ref));
    expect(workspace).toEqual({ checkout: join(itemDir, "github.com", "octo", "repo"), strategy: "clone", branch: "feature-x" });
    expect(head(workspace.checkout)).toBe("feature-x");
    expect(git(workspace.checkout, "rev-parse", "HEAD")).toBe(t.featureHead);
    expect(await exists(t.sharedClone)).toBe(false);

    const issue = await prepared(t.workspaces, item("github:octo/repo#1"));
    expect(issue.branch).toBeUndefined();
    expect(git(issue.checkout, "rev-parse", "HEAD")).toBe(t.mainHead);

    const fallback = await prepared(t.workspaces, item("github:octo/repo#8", "pull_request"), { branch: "gone-away" });
    expect(fallback.branch).toBeUndefined();
    expect(git(fallback.checkout, "rev-parse", "HEAD")).toBe(t.mainHead);

    const reused = await prepared(t.workspaces, pr, { branch: "feature-x" });
    expect(reused).toEqual(workspace);
    expect(t.emitted("workspace.prepared").map((fields) => [fields.strategy, fields.reused])).toEqual([
      ["clone", false],
      ["clone", false],
      ["clone", false],
      ["clone", true],
    ]);

    await t.workspaces.release(pr.ref, workspace);
    expect(await exists(itemDir)).toBe(false);
    expect(await exists(issue.checkout)).toBe(true);
    expect(t.emitted("workspace.cleaned")).toEqual([{ work_item: pr.ref, checkout: workspace.checkout }]);
  });
});

describe("Workspaces run nothing a checkout planted", () => {
  it("runs no hook and no fsmonitor of the shared clone, which every session's worktree can write to", async () => {
    const t = await setup();
    const first = await prepared(t.workspaces, item("github:octo/repo#1"));
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
    const pr = await prepared(t.workspaces, item("github:octo/repo#4", "pull_request"), { branch: "feature-x" });
    await t.workspaces.release("github:octo/repo#4", pr);

    expect(t.emitted("workspace.failed")).toEqual([]);
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

describe("workspaceLayout", () => {
  it("lays an Enterprise host's port out as a folder name", () => {
    const layout = workspaceLayout("/ws", item("github:ghe.example.com:8443/octo/repo#3"));
    expect(layout.sharedClone).toBe("/ws/ghe.example.com_8443/octo/repo");
    expect(layout.worktree).toMatch(/^\/ws\/\.worktrees\/ghe\.example\.com_8443\/octo\/repo\/[a-z0-9-]+$/);
  });

  it("strips a .git suffix and refuses names that are not plain folder names", () => {
    const base = item("github:octo/repo#1");
    expect(workspaceLayout("/ws", { ...base, repository: "octo/repo.git" }).sharedClone).toBe("/ws/github.com/octo/repo");
    for (const repository of ["../evil", "octo/..", "octo/.hidden", "octo/a/b", "octo", "octo/-x", "octo/.git"]) {
      expect(() => workspaceLayout("/ws", { ...base, repository })).toThrow(WorkspaceError);
    }
    expect(() => workspaceLayout("/ws", { ...base, host: "../etc" })).toThrow(WorkspaceError);
  });
});
