import { readFile, readdir, writeFile, mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { PullRequestLinks } from "../../src/registry/pr-links.js";
import { githubItemUrl, workItemOf, workItemSlug } from "../../src/workitem/index.js";
import type { WorkItem } from "../../src/workitem/index.js";
import { tempDir } from "../support/temp.js";

const T0 = new Date("2025-03-01T10:00:00.000Z");
const T1 = new Date("2025-03-01T11:00:00.000Z");
const PR = "github:octo/app#5";

function issue(number: number): WorkItem {
  const ref = { tracker: "github", host: "github.com", owner: "octo", repo: "app", number } as const;
  return workItemOf(ref, { kind: "issue", url: githubItemUrl(ref, "issue"), id: `node-${number}` });
}

async function store(): Promise<PullRequestLinks> {
  return new PullRequestLinks(join(await tempDir(), "sessions", "links"));
}

describe("PullRequestLinks", () => {
  it("keeps one file per pull request, named by its slug, holding the whole work item", async () => {
    const links = await store();
    expect(links.get(PR)).toBeUndefined();
    expect(await links.bind(PR, issue(12), "closing-reference", T0)).toBe(true);

    expect(await readdir(links.dir)).toEqual([`${workItemSlug(PR)}.json`]);
    const stored = { pullRequest: PR, workItem: issue(12), source: "closing-reference", linkedAt: T0.toISOString() };
    expect(JSON.parse(await readFile(links.pathFor(PR), "utf8"))).toEqual(stored);
    expect(links.get(PR)).toEqual(stored);
    // Any spelling of the ref names the same binding.
    expect(links.get("github:Octo/App#5")).toEqual(stored);
  });

  it("reports re-seeing the same inferred binding as no change", async () => {
    const links = await store();
    await links.bind(PR, issue(12), "closing-reference", T0);
    expect(await links.bind(PR, issue(12), "branch", T1)).toBe(false);
    expect(links.get(PR)).toMatchObject({ source: "closing-reference", linkedAt: T0.toISOString() });
  });

  it("lets a later inference that names another item replace an earlier one", async () => {
    const links = await store();
    await links.bind(PR, issue(12), "branch", T0);
    expect(await links.bind(PR, issue(13), "closing-reference", T1)).toBe(true);
    expect(links.get(PR)).toMatchObject({ workItem: { ref: "github:octo/app#13" }, source: "closing-reference" });
  });

  it("never overwrites an explicit binding with an inferred one", async () => {
    const links = await store();
    await links.bind(PR, issue(12), "explicit", T0);
    expect(await links.bind(PR, issue(13), "closing-reference", T1)).toBe(false);
    expect(await links.bind(PR, issue(12), "branch", T1)).toBe(false);
    expect(links.get(PR)).toMatchObject({ workItem: { ref: "github:octo/app#12" }, source: "explicit", linkedAt: T0.toISOString() });
  });

  it("lets an explicit binding replace anything, and not itself", async () => {
    const links = await store();
    await links.bind(PR, issue(12), "closing-reference", T0);
    expect(await links.bind(PR, issue(12), "explicit", T1)).toBe(true);
    expect(links.get(PR)).toMatchObject({ source: "explicit", linkedAt: T1.toISOString() });
    expect(await links.bind(PR, issue(12), "explicit", T1)).toBe(false);
    expect(await links.bind(PR, issue(13), "explicit", T1)).toBe(true);
    expect(links.get(PR)).toMatchObject({ workItem: { ref: "github:octo/app#13" }, source: "explicit" });
  });

  it("describes a damaged file instead of throwing, and a new binding replaces it", async () => {
    const links = await store();
    const path = links.pathFor(PR);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, "{ not json");
    expect(links.get(PR)).toBeUndefined();
    expect(links.lookup(PR).problem).toMatch(/^pull request binding .* is damaged: not valid JSON/);

    await writeFile(path, JSON.stringify({ pullRequest: PR, workItem: { ref: "x" }, source: "explicit", linkedAt: "" }));
    expect(links.lookup(PR).problem).toContain("not a pull request binding");
    await writeFile(path, JSON.stringify({ pullRequest: "github:octo/app#6", workItem: issue(12), source: "explicit", linkedAt: "" }));
    expect(links.lookup(PR).problem).toContain("it holds github:octo/app#6, not github:octo/app#5");

    expect(await links.bind(PR, issue(12), "branch", T0)).toBe(true);
    expect(links.lookup(PR)).toEqual({ link: expect.objectContaining({ source: "branch" }) });
  });

  it("leaves one whole binding when two processes bind at once", async () => {
    const links = await store();
    const twin = new PullRequestLinks(links.dir);
    const results = await Promise.all([links.bind(PR, issue(12), "explicit", T0), twin.bind(PR, issue(13), "closing-reference", T0)]);
    expect(results).toContain(true);
    // Whichever ran first, the explicit binding is what remains.
    expect(links.get(PR)).toMatchObject({ workItem: { ref: "github:octo/app#12" }, source: "explicit" });
    expect((await readdir(links.dir)).filter((name) => name.endsWith(".json"))).toHaveLength(1);
  });
});
