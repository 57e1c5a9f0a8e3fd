import { describe, expect, it } from "vitest";
import { branchIssueNumber, closingReferences } from "../../src/ingress/github-links.js";
import type { RepositoryContext } from "../../src/ingress/github-links.js";
import { formatWorkItemRef } from "../../src/workitem/index.js";

const repo: RepositoryContext = { host: "github.com", owner: "Octo", repo: "Repo", number: 40 };
const enterprise: RepositoryContext = { host: "ghe.example.com", owner: "octo", repo: "repo", number: 40 };

function refs(body: string, context: RepositoryContext = repo): string[] {
  return closingReferences(body, context).map(formatWorkItemRef);
}

describe("closingReferences", () => {
  it.each(["close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved"])("honours the keyword %s", (keyword) => {
    expect(refs(`${keyword} #12`)).toEqual(["github:octo/repo#12"]);
  });

  it.each<[string, string, string[]]>([
    ["upper and mixed case", "FIXES #3 and Resolves #4", ["github:octo/repo#3", "github:octo/repo#4"]],
    ["a colon after the keyword", "Fixes: #5", ["github:octo/repo#5"]],
    ["a colon with no space", "closes:#6", ["github:octo/repo#6"]],
    ["a qualified reference resolves in its own repository", "Fixes Other/Thing#7", ["github:other/thing#7"]],
    ["GH-N is in the PR's repository", "Resolves GH-8", ["github:octo/repo#8"]],
    ["an issue URL on the same host", "Closes https://github.com/octo/lib/issues/9", ["github:octo/lib#9"]],
    ["an issue URL on another host is not ours", "Closes https://gitlab.com/octo/lib/issues/9", []],
    ["a pull request URL closes nothing", "Closes https://github.com/octo/repo/pull/9", []],
    ["the PR itself is left out", "Fixes #40, fixes #41", ["github:octo/repo#41"]],
    ["the PR itself by qualified ref is left out", "Fixes octo/repo#40", []],
    ["the same number in another repository is not the PR", "Fixes octo/other#40", ["github:octo/other#40"]],
    ["a keyword inside a word is not a keyword", "prefixes #1, suffixed #2, unfixed #3", []],
    ["no keyword, no link", "See #12 and #13", []],
    ["a keyword glued to the reference is not one", "fixes#12", []],
    ["a reference must end", "fixes #12abc, fixes #13/x", []],
    ["duplicates once, in order of appearance", "Fixes #3. Closes #1. Resolves #3. fixes GH-1", ["github:octo/repo#3", "github:octo/repo#1"]],
    ["several, across lines", "Fixes #1\n\nAlso closes octo/lib#2\r\nresolved: #3", ["github:octo/repo#1", "github:octo/lib#2", "github:octo/repo#3"]],
    ["inline code is not prose", "Use `fixes #5` in your message; fixes #6", ["github:octo/repo#6"]],
    ["a fenced block is not prose", "```\nfixes #5\n```\nfixes #6", ["github:octo/repo#6"]],
    ["an HTML comment is not prose", "<!-- Fixes #123 -->\nFixes #7", ["github:octo/repo#7"]],
    ["#0 is no issue", "fixes #0", []],
    ["a number too large for an issue is none", "fixes #3000000000, fixes #99999999999", []],
    ["a URL to another host that looks like ours is not ours", "fixes https://github.com.evil.com/octo/repo/issues/5", []],
    ["a repository named with a leading dot", "Fixes octo/.github#8", ["github:octo/.github#8"]],
    ["a tilde fence is not prose", "~~~\nfixes #5\n~~~\nfixes #6", ["github:octo/repo#6"]],
  ])("%s", (_name, body, expected) => {
    expect(refs(body)).toEqual(expected);
  });

  it("keeps an Enterprise host on every reference, and reads URLs on that host only", () => {
    expect(refs("Fixes #2, closes team/app#3, resolves https://GHE.example.com/a/b/issues/4, fixes https://github.com/a/b/issues/5", enterprise)).toEqual([
      "github:ghe.example.com/octo/repo#2",
      "github:ghe.example.com/team/app#3",
      "github:ghe.example.com/a/b#4",
    ]);
  });

  it("matches a host with a port", () => {
    const local: RepositoryContext = { host: "127.0.0.1:8080", owner: "octo", repo: "repo" };
    expect(refs("fixes http://127.0.0.1:8080/octo/repo/issues/3 and fixes http://127.0.0.1:9999/octo/repo/issues/4", local)).toEqual([
      "github:127.0.0.1:8080/octo/repo#3",
    ]);
  });

  it("reads nothing from an empty or missing body", () => {
    expect(closingReferences("", repo)).toEqual([]);
    expect(closingReferences(null, repo)).toEqual([]);
    expect(closingReferences(undefined, repo)).toEqual([]);
  });

  it("without the PR's number, no reference is taken for a self-reference", () => {
    expect(refs("fixes #40", { host: "github.com", owner: "octo", repo: "repo" })).toEqual(["github:octo/repo#40"]);
  });
});

describe("branchIssueNumber", () => {
  it.each<[string, number | undefined]>([
    ["issue-12", 12],
    ["issue/12", 12],
    ["Issue-12", 12],
    ["ISSUE/7", 7],
    ["issue-12-fix-login", 12],
    ["issue/12/retry", 12],
    ["issue-12_fix", 12],
    ["issue-12.1", 12],
    ["issue-", undefined],
    ["issue-0", undefined],
    ["issue-012", undefined],
    ["issue-12abc", undefined],
    ["issues-12", undefined],
    ["feature/issue-12", undefined],
    ["fix-12", undefined],
    ["main", undefined],
    ["issue-99999999999", undefined],
    ["", undefined],
  ])("%s → %s", (branch, expected) => {
    expect(branchIssueNumber(branch)).toBe(expected);
  });
});
