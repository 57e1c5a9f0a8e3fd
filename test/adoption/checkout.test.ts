import { describe, expect, it } from "vitest";
import { adoptedBranch, adoptionPullRequests } from "../../src/adoption/checkout.js";
import type { SessionRecord } from "../../src/registry/record.js";
import type { PullRequestHead } from "../../src/trackers/tracker.js";

type Previous = Pick<SessionRecord, "workItem" | "workspace" | "pullRequests">;

const ISSUE = "github:github.com/octo/repo#1";
const PR = "github:github.com/octo/repo#2";
const LATER_PR = "github:github.com/octo/repo#3";
const OTHER_REPO_PR = "github:github.com/octo/other#4";

const previous = (over: { ref?: string; kind?: "issue" | "pull_request"; branch?: string; linked?: string[]; tracker?: "github" | "local" } = {}): Previous =>
  ({
    workItem: { ref: over.ref ?? ISSUE, tracker: over.tracker ?? "github", kind: over.kind ?? "issue" },
    ...(over.branch !== undefined || over.tracker !== "local"
      ? { workspace: { checkout: "/a/ws", strategy: "worktree", ...(over.branch ? { branch: over.branch } : {}) } }
      : {}),
    ...(over.linked ? { pullRequests: over.linked.map((ref) => ({ ref, source: "closing-reference", linkedAt: "2026-12-01T00:00:00Z" })) } : {}),
  }) as unknown as Previous;

const head = (headBranch: string, over: Partial<PullRequestHead> = {}): PullRequestHead => ({ headBranch, headInRepository: true, state: "open", ...over });

describe("adoptionPullRequests: whose heads are looked up", () => {
  it.each([
    ["a record that names its branch: none", previous({ branch: "health", linked: [PR] }), []],
    ["an issue with no linked pull request: none", previous(), []],
    ["an issue's linked pull requests, the last linked first, only of its repository", previous({ linked: [PR, OTHER_REPO_PR, LATER_PR] }), [LATER_PR, PR]],
    ["a pull request itself first, then those linked", previous({ ref: PR, kind: "pull_request", linked: [LATER_PR] }), [PR, LATER_PR]],
    ["a local item: none", previous({ ref: "local:demo#1", tracker: "local", linked: [PR] }), []],
  ])("%s", (_what, record, expected) => {
    expect(adoptionPullRequests(record)).toEqual(expected);
  });
});

describe("adoptedBranch: the branch the adopted session's checkout is made on", () => {
  it.each([
    ["the branch the previous checkout was on", previous({ branch: "health", linked: [PR] }), new Map([[PR, head("other")]]), "health"],
    ["the linked pull request's head", previous({ linked: [PR] }), new Map([[PR, head("health")]]), "health"],
    [
      "the last linked open one",
      previous({ linked: [PR, LATER_PR] }),
      new Map([
        [PR, head("first")],
        [LATER_PR, head("second")],
      ]),
      "second",
    ],
    [
      "past a closed one",
      previous({ linked: [PR, LATER_PR] }),
      new Map([
        [PR, head("first")],
        [LATER_PR, head("second", { state: "closed" })],
      ]),
      "first",
    ],
    ["not a fork's head: the default branch", previous({ linked: [PR] }), new Map([[PR, head("health", { headInRepository: false })]]), undefined],
    ["a head that was not read: the default branch", previous({ linked: [PR] }), new Map<string, PullRequestHead>(), undefined],
    ["no pull request: the default branch", previous(), new Map<string, PullRequestHead>(), undefined],
    ["a head that is no plain branch name: the default branch", previous({ linked: [PR] }), new Map([[PR, head("x`; rm -rf ~ `")]]), undefined],
    ["a pull request's own head", previous({ ref: PR, kind: "pull_request" }), new Map([[PR, head("feature/a")]]), "feature/a"],
    ["a local item: none", previous({ ref: "local:demo#1", tracker: "local" }), new Map<string, PullRequestHead>(), undefined],
  ])("%s", (_what, record, heads, expected) => {
    expect(adoptedBranch(record, heads)).toBe(expected);
  });
});
