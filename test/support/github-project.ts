import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach } from "vitest";
import { FakeGitHub } from "./fake-github.js";
import { testProject } from "./project.js";
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
