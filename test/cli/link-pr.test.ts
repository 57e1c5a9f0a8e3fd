import { mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { stringify } from "yaml";
import { runSessionsLinkPr } from "../../src/cli/commands/sessions/sessions.js";
import { SessionRegistry } from "../../src/registry/registry.js";
import { tmuxTargetFor } from "../../src/registry/record.js";
import { workItemSlug } from "../../src/workitem/index.js";
import type { WorkItem } from "../../src/workitem/index.js";
import { jsonOf, runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";
import { sessionRecord } from "../support/builders.js";

/**
 * `the-loop sessions link-pr` on the local tracker. It has no pull requests, so any existing item
 * stands for one: `--pull-request 2` next to `local:proj#1` names `local:proj#2`.
 */

interface Linked {
  workItem: string;
  pullRequest: string;
  source: string;
  session?: string;
}

interface EventJson {
  event: string;
  work_item?: string;
  pull_request?: string;
  linked_by?: string;
}

async function project(): Promise<string> {
  const cwd = await tempDir();
  await mkdir(join(cwd, ".the-loop"), { recursive: true });
  await writeFile(join(cwd, ".the-loop", "cli-config.yaml"), stringify({ version: 1, integrations: { local: { project: "proj" } } }));
  for (const title of ["Parser crashes", "Fix the parser"]) {
    const created = await runCli(["item", "new", title, "--as", "alice"], { cwd });
    expect(created.code, created.stderr).toBe(0);
  }
  return cwd;
}

/** A live session record for the item, as a spawn would leave it (no tmux needed to link). */
async function liveRecord(cwd: string, number: number): Promise<string> {
  const ref = `local:proj#${number}`;
  const item: WorkItem = { ref, tracker: "local", host: "local", repository: "proj", number, kind: "issue", url: "", id: `proj-${number}` };
  const target = tmuxTargetFor(workItemSlug(ref));
  const at = new Date().toISOString();
  await new SessionRegistry({ dir: join(cwd, ".the-loop", "sessions") }).claim(item, () =>
    sessionRecord(item, { cwd, createdAt: at, lastEventAt: at, tmuxTarget: target }),
  );
  return target;
}

const linksDir = (cwd: string): string => join(cwd, ".the-loop", "sessions", "links");

describe("the-loop sessions link-pr", () => {
  it("binds the pull request explicitly and records the event", async () => {
    const cwd = await project();
    const linked = await runCli(["sessions", "link-pr", "--work-item", "local:proj#1", "--pull-request", "2", "--json"], { cwd });
    expect(linked.code, linked.stderr).toBe(0);
    expect(jsonOf<Linked>(linked)).toEqual({ workItem: "local:proj#1", pullRequest: "local:proj#2", source: "explicit" });

    const file = join(linksDir(cwd), `${workItemSlug("local:proj#2")}.json`);
    expect(JSON.parse(await readFile(file, "utf8"))).toMatchObject({
      pullRequest: "local:proj#2",
      workItem: { ref: "local:proj#1", tracker: "local", repository: "proj", number: 1 },
      source: "explicit",
    });
    const events = jsonOf<EventJson[]>(await runCli(["events", "--type", "session.pr_linked", "--json"], { cwd }));
    expect(events).toEqual([
      expect.objectContaining({ event: "session.pr_linked", work_item: "local:proj#1", pull_request: "local:proj#2", linked_by: "explicit" }),
    ]);

    // Binding it again changes nothing and records nothing.
    const again = await runCli(["sessions", "link-pr", "--work-item", "#1", "--pull-request", "local:proj#2"], { cwd });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain("local:proj#2 was already bound to local:proj#1");
    expect(jsonOf<EventJson[]>(await runCli(["events", "--type", "session.pr_linked", "--json"], { cwd }))).toHaveLength(1);
  });

  it("adds the binding to the work item's live session and names that session", async () => {
    const cwd = await project();
    const target = await liveRecord(cwd, 1);
    const linked = await runCli(["sessions", "link-pr", "--work-item", "#1", "--pull-request", "#2", "--json"], { cwd });
    expect(linked.code, linked.stderr).toBe(0);
    expect(jsonOf<Linked>(linked)).toEqual({ workItem: "local:proj#1", pullRequest: "local:proj#2", source: "explicit", session: target });

    const record = new SessionRegistry({ dir: join(cwd, ".the-loop", "sessions") }).get("local:proj#1");
    expect(record?.pullRequests).toEqual([{ ref: "local:proj#2", source: "explicit", linkedAt: expect.any(String) }]);

    const text = await runCli(["sessions", "link-pr", "--work-item", "#1", "--pull-request", "2"], { cwd });
    expect(text.stdout).toContain(`its events reach the session ${target}`);
  });

  it("refuses malformed refs and a binding of an item to itself (exit 2)", async () => {
    const cwd = await project();
    const badItem = await runCli(["sessions", "link-pr", "--work-item", "nope#", "--pull-request", "2"], { cwd });
    expect(badItem.code).toBe(2);
    expect(badItem.stderr).toContain("invalid work item reference");
    const badPr = await runCli(["sessions", "link-pr", "--work-item", "#1", "--pull-request", "two", "--json"], { cwd });
    expect(badPr.code).toBe(2);
    expect(jsonOf<{ error: { code: string } }>(badPr).error.code).toBe("usage");
    const self = await runCli(["sessions", "link-pr", "--work-item", "#1", "--pull-request", "1"], { cwd });
    expect(self.code).toBe(2);
    expect(self.stderr).toContain("local:proj#1 cannot be bound to itself");
    await expect(readdir(linksDir(cwd))).rejects.toThrow();
  });

  it("refuses a pull request number that is no item number as malformed (exit 2), before asking any tracker", async () => {
    const cwd = await project();
    for (const number of ["0", "#0", "99999999999", "99999999999999999999999"]) {
      const result = await runCli(["sessions", "link-pr", "--work-item", "#1", "--pull-request", number, "--json"], { cwd });
      expect(result.code, `${number}: ${result.stderr}`).toBe(2);
      expect(jsonOf<{ error: { code: string; message: string } }>(result).error).toMatchObject({
        code: "usage",
        message: expect.stringContaining("invalid work item number"),
      });
    }
    await expect(readdir(linksDir(cwd))).rejects.toThrow();
  });

  it("refuses a pull request on another GitHub host than the work item (exit 2), naming both hosts", async () => {
    const cwd = await project();
    // No request could answer this: the-loop serves one GitHub host, so such a binding never applies.
    const env = { GITHUB_API_URL: "http://127.0.0.1:9/api/v3", GH_TOKEN: undefined, GITHUB_TOKEN: undefined };
    const result = await runCli(["sessions", "link-pr", "--work-item", "github:octo/app#12", "--pull-request", "https://ghe.example.com/octo/app/pull/5"], {
      cwd,
      env,
    });
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain("github:ghe.example.com/octo/app#5 is on ghe.example.com");
    expect(result.stderr).toContain("github:octo/app#12 is on github.com");
    await expect(readdir(linksDir(cwd))).rejects.toThrow();
  });

  it("fails (exit 1) when the pull request or the work item does not exist, binding nothing", async () => {
    const cwd = await project();
    const noPr = await runCli(["sessions", "link-pr", "--work-item", "#1", "--pull-request", "9", "--json"], { cwd });
    expect(noPr.code).toBe(1);
    expect(jsonOf<{ error: { code: string; message: string } }>(noPr).error).toMatchObject({
      code: "not-found",
      message: expect.stringContaining("no work item local:proj#9"),
    });
    const noItem = await runCli(["sessions", "link-pr", "--work-item", "#7", "--pull-request", "2"], { cwd });
    expect(noItem.code).toBe(1);
    expect(noItem.stderr).toContain("no work item local:proj#7");
    expect(noItem.stderr).toContain("nothing was bound");
    await expect(readdir(linksDir(cwd))).rejects.toThrow();
  });

  it("says which tracker could not be asked instead of binding blindly", async () => {
    const cwd = await project();
    // An API that serves another host: the tracker of github.com refs cannot be asked, and no request leaves the machine.
    const env = { GITHUB_API_URL: "http://127.0.0.1:9/api/v3", GH_TOKEN: undefined, GITHUB_TOKEN: undefined };
    const result = await runCli(["sessions", "link-pr", "--work-item", "#1", "--pull-request", "octo/app#5"], { cwd, env });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("could not check github:octo/app#5 on its tracker");
    expect(result.stderr).toContain("nothing was bound");
    await expect(readdir(linksDir(cwd))).rejects.toThrow();
  });

  describe("inside a session", () => {
    const saved = process.env.THE_LOOP_WORK_ITEM;
    afterEach(() => {
      if (saved === undefined) delete process.env.THE_LOOP_WORK_ITEM;
      else process.env.THE_LOOP_WORK_ITEM = saved;
      vi.restoreAllMocks();
    });

    it("takes the work item from THE_LOOP_WORK_ITEM, and asks for one when it is unset", async () => {
      const cwd = await project();
      const config = join(cwd, ".the-loop", "cli-config.yaml");
      const written: string[] = [];
      vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
        written.push(String(chunk));
        return true;
      });

      delete process.env.THE_LOOP_WORK_ITEM;
      await expect(runSessionsLinkPr({ config }, { pullRequest: "2", json: true })).rejects.toThrow("pass --work-item REF");

      process.env.THE_LOOP_WORK_ITEM = "local:proj#1";
      await runSessionsLinkPr({ config }, { pullRequest: "2", json: true });
      expect(JSON.parse(written.join(""))).toEqual({ workItem: "local:proj#1", pullRequest: "local:proj#2", source: "explicit" });
    });
  });
});
