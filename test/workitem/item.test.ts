import { describe, expect, it } from "vitest";
import { githubItemUrl, workItemOf } from "../../src/workitem/item.js";
import { parseRefInput, parseWorkItemRef } from "../../src/workitem/ref.js";
import type { GitHubRef } from "../../src/workitem/ref.js";

const githubRef = (text: string): GitHubRef => {
  const ref = parseWorkItemRef(text);
  if (ref.tracker !== "github") throw new Error(`${text} is not a GitHub ref`);
  return ref;
};

describe("githubItemUrl", () => {
  it.each([
    ["github:octo/repo#15", "issue", "https://github.com/octo/repo/issues/15"],
    ["github:octo/repo#15", "pull_request", "https://github.com/octo/repo/pull/15"],
    ["github:ghe.example.com:8443/octo/repo#3", "pull_request", "https://ghe.example.com:8443/octo/repo/pull/3"],
  ] as const)("%s (%s) → %s", (text, kind, url) => {
    expect(githubItemUrl(githubRef(text), kind)).toBe(url);
    // The URL leads back to the same item and kind.
    expect(parseRefInput(url)).toEqual({ ref: githubRef(text), kind });
  });
});

describe("workItemOf", () => {
  it("describes a GitHub item", () => {
    const ref = githubRef("github:ghe.example.com/Octo/Repo#15");
    const url = githubItemUrl(ref, "pull_request");
    expect(workItemOf(ref, { kind: "pull_request", url, id: "PR_kwDO" })).toEqual({
      ref: "github:ghe.example.com/octo/repo#15",
      tracker: "github",
      host: "ghe.example.com",
      repository: "octo/repo",
      number: 15,
      kind: "pull_request",
      url: "https://ghe.example.com/octo/repo/pull/15",
      id: "PR_kwDO",
    });
  });

  it("describes a local item", () => {
    const ref = parseWorkItemRef("local:Inbox#7");
    expect(workItemOf(ref, { kind: "issue", url: "file:///x/tracker/inbox/7.json", id: "inbox-7" })).toEqual({
      ref: "local:inbox#7",
      tracker: "local",
      host: "local",
      repository: "inbox",
      number: 7,
      kind: "issue",
      url: "file:///x/tracker/inbox/7.json",
      id: "inbox-7",
    });
  });
});
