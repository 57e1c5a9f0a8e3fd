import { describe, expect, it } from "vitest";
import { RefError, checkLocalProject, formatWorkItemRef, hostOf, parseRefInput, parseWorkItemRef, repositoryOf, sameWorkItem } from "../../src/workitem/ref.js";
import type { LooseRefOptions, WorkItemKind, WorkItemRef } from "../../src/workitem/ref.js";

/** The RefError a parse throws; fails the test when it throws nothing or something else. */
function refErrorOf(parse: () => unknown): RefError {
  try {
    parse();
  } catch (error) {
    if (error instanceof RefError) return error;
    throw error;
  }
  throw new Error("expected a RefError, but the input was accepted");
}

describe("canonical work item refs", () => {
  it.each<[string, WorkItemRef]>([
    ["github:owner/repo#15", { tracker: "github", host: "github.com", owner: "owner", repo: "repo", number: 15 }],
    ["github:ghe.example.com/owner/repo#15", { tracker: "github", host: "ghe.example.com", owner: "owner", repo: "repo", number: 15 }],
    ["github:host:8443/o/r#1", { tracker: "github", host: "host:8443", owner: "o", repo: "r", number: 1 }],
    ["github:10.0.0.7:65535/o/r#1", { tracker: "github", host: "10.0.0.7:65535", owner: "o", repo: "r", number: 1 }],
    ["github:my-org/my.repo_name#2147483647", { tracker: "github", host: "github.com", owner: "my-org", repo: "my.repo_name", number: 2147483647 }],
    ["github:o/.github#3", { tracker: "github", host: "github.com", owner: "o", repo: ".github", number: 3 }],
    ["local:proj#7", { tracker: "local", project: "proj", number: 7 }],
    ["local:my_proj.v2-x#1", { tracker: "local", project: "my_proj.v2-x", number: 1 }],
  ])("%s parses and formats back unchanged", (text, ref) => {
    expect(parseWorkItemRef(text)).toEqual(ref);
    expect(formatWorkItemRef(ref)).toBe(text);
    expect(parseRefInput(text)).toEqual({ ref });
  });

  it.each([
    ["github:Octo/Repo#1", "github:octo/repo#1"],
    ["GitHub:OCTO/REPO#1", "github:octo/repo#1"],
    ["github:GHE.Example.COM/Octo/Repo#1", "github:ghe.example.com/octo/repo#1"],
    ["LOCAL:Proj#7", "local:proj#7"],
    // The default host is implied, never written, so both spellings are one work item.
    ["github:github.com/octo/repo#1", "github:octo/repo#1"],
    ["github:GitHub.com/octo/repo#1", "github:octo/repo#1"],
    ["  github:octo/repo#1\n", "github:octo/repo#1"],
  ])("%s is canonically %s", (text, canonical) => {
    const ref = parseWorkItemRef(text);
    expect(formatWorkItemRef(ref)).toBe(canonical);
    expect(sameWorkItem(ref, parseWorkItemRef(canonical))).toBe(true);
  });

  it("tells different work items apart", () => {
    const same = (a: string, b: string): boolean => sameWorkItem(parseWorkItemRef(a), parseWorkItemRef(b));
    expect(same("github:o/r#1", "github:o/r#2")).toBe(false);
    expect(same("github:o/r#1", "github:ghe.example.com/o/r#1")).toBe(false);
    expect(same("github:host:8443/o/r#1", "github:host:8444/o/r#1")).toBe(false);
    expect(same("github:a-b/c#1", "github:a/b-c#1")).toBe(false);
    expect(same("local:o#1", "local:p#1")).toBe(false);
  });

  it("names the repository and host of each tracker", () => {
    const github = parseWorkItemRef("github:ghe.example.com/Octo/Repo#4");
    expect(repositoryOf(github)).toBe("octo/repo");
    expect(hostOf(github)).toBe("ghe.example.com");
    expect(hostOf(parseWorkItemRef("github:octo/repo#4"))).toBe("github.com");
    const local = parseWorkItemRef("local:Proj#4");
    expect(repositoryOf(local)).toBe("proj");
    expect(hostOf(local)).toBe("local");
  });
});

describe("refs typed on the command line", () => {
  const withProject: LooseRefOptions = { defaultLocalProject: "Inbox" };
  it.each<[string, LooseRefOptions, string, WorkItemKind | undefined]>([
    ["owner/repo#15", {}, "github:owner/repo#15", undefined],
    ["Owner/Repo#15", {}, "github:owner/repo#15", undefined],
    ["ghe.example.com/owner/repo#15", {}, "github:ghe.example.com/owner/repo#15", undefined],
    ["localhost:8443/owner/repo#15", {}, "github:localhost:8443/owner/repo#15", undefined],
    ["https://github.com/o/r/issues/15", {}, "github:o/r#15", "issue"],
    ["https://github.com/o/r/pull/15", {}, "github:o/r#15", "pull_request"],
    ["https://github.com/o/r/pull/15/files", {}, "github:o/r#15", "pull_request"],
    ["https://github.com/o/r/pulls/15", {}, "github:o/r#15", "pull_request"],
    ["https://github.com/o/r/issues/15#issuecomment-42", {}, "github:o/r#15", "issue"],
    ["https://github.com/o/r/issues/15?notification_referrer_id=x", {}, "github:o/r#15", "issue"],
    ["http://GitHub.com/Octo/Repo/issues/2", {}, "github:octo/repo#2", "issue"],
    ["https://ghe.example.com/o/r/issues/3", {}, "github:ghe.example.com/o/r#3", "issue"],
    ["https://ghe.example.com:8443/o/r/pull/3", {}, "github:ghe.example.com:8443/o/r#3", "pull_request"],
    ["#7", withProject, "local:inbox#7", undefined],
    ["7", withProject, "local:inbox#7", undefined],
    [" 7 ", withProject, "local:inbox#7", undefined],
    // A full ref wins over the default project.
    ["local:other#7", withProject, "local:other#7", undefined],
    ["owner/repo#7", withProject, "github:owner/repo#7", undefined],
  ])("%s (%o) → %s", (input, options, canonical, kind) => {
    const parsed = parseRefInput(input, options);
    expect(formatWorkItemRef(parsed.ref)).toBe(canonical);
    expect(parsed.kind).toBe(kind);
  });
});

describe("rejected refs", () => {
  it.each<[string, RegExp]>([
    ["github:o/r#0", /invalid work item number "0"/],
    ["github:o/r#01", /invalid work item number "01"/],
    ["github:o/r#-1", /invalid work item number "-1"/],
    ["github:o/r#1.5", /invalid work item number "1.5"/],
    ["github:o/r#1e3", /invalid work item number "1e3"/],
    ["github:o/r#2147483648", /invalid work item number "2147483648"/],
    ["github:o/r#99999999999", /invalid work item number "99999999999"/],
    ["github:o/r#x", /invalid work item number "x"/],
    ["github:o/r", /invalid work item reference "github:o\/r": expected/],
    ["github:o/r#", /invalid work item reference/],
    ["github:o/r#1#2", /invalid work item reference/],
    ["jira:PROJ-1#1", /unknown tracker "jira".*known trackers are github, local/],
    ["github:o/..#1", /invalid repository name "\.\."/],
    ["github:o/.#1", /invalid repository name "\."/],
    ["github:../r#1", /invalid owner "\.\."/],
    ["github:/r#1", /invalid owner ""/],
    ["github:o/#1", /invalid repository name ""/],
    ["github:o/r/x/y#1", /invalid GitHub work item.*expected github:owner\/repo#N/],
    ["github:localhost/o/r#1", /invalid host "localhost"/],
    ["github:bad_host.com/o/r#1", /invalid host "bad_host\.com"/],
    ["github:host:99999/o/r#1", /invalid port 99999/],
    ["github:host:65536/o/r#1", /invalid port 65536/],
    ["github:host:0/o/r#1", /invalid host "host:0"/],
    // Two spellings of one port would be two work items.
    ["github:host:08443/o/r#1", /invalid host "host:08443"/],
    ["github:o r/x#1", /invalid work item reference "github:o r\/x#1"/],
    ["github:o/r #1", /invalid work item reference/],
    ["github:o/r%2e#1", /invalid repository name/],
    ["local:#1", /invalid work item reference/],
    ["local:..#1", /invalid local project "\.\."/],
    ["local:a/b#1", /invalid local project "a\/b"/],
    ["local:-x#1", /invalid local project "-x"/],
    [`local:${"p".repeat(64)}#1`, /invalid local project.*at most 63/],
  ])("%s", (input, message) => {
    expect(refErrorOf(() => parseWorkItemRef(input)).message).toMatch(message);
    // The command-line parser accepts every canonical form, so it refuses the same inputs.
    expect(refErrorOf(() => parseRefInput(input)).message).toMatch(message);
  });

  it.each<[string, LooseRefOptions, RegExp]>([
    ["#7", {}, /"#7" names no tracker/],
    ["7", {}, /"7" names no tracker/],
    ["#0", { defaultLocalProject: "inbox" }, /invalid work item number "0"/],
    ["#7", { defaultLocalProject: "../etc" }, /invalid local project "\.\.\/etc"/],
    ["", {}, /invalid work item reference ""/],
    ["repo#15", {}, /invalid work item reference "repo#15": expected owner\/repo#N/],
    ["owner/repo", {}, /invalid work item reference "owner\/repo"/],
    ["owner/repo#01", {}, /invalid work item number "01"/],
    ["owner/..#1", {}, /invalid repository name "\.\."/],
    ["https://github.com/o/r", {}, /is not an issue or pull request URL/],
    ["https://github.com/o/r/commit/abc123", {}, /is not an issue or pull request URL/],
    ["https://github.com/o/r/issues", {}, /is not an issue or pull request URL/],
    ["https://github.com/o/r/issues/0", {}, /invalid work item number "0"/],
    ["https://github.com/o/r/pull/15x", {}, /invalid work item number "15x"/],
    ["https://github.com/o/%2e%2e/issues/1", {}, /is not an issue or pull request URL/],
    ["https://github.com/o/r%2F../issues/1", {}, /invalid repository name/],
    ["https://", {}, /invalid URL/],
    ["https://localhost/o/r/issues/1", {}, /invalid host "localhost"/],
    ["ftp://github.com/o/r/issues/1", {}, /invalid work item reference/],
  ])("%s (%o)", (input, options, message) => {
    expect(refErrorOf(() => parseRefInput(input, options)).message).toMatch(message);
  });

  it("rejects with a RefError that is an Error", () => {
    const error = refErrorOf(() => parseWorkItemRef("nope"));
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("RefError");
  });
});

describe("checkLocalProject", () => {
  it("folds case and refuses names that are not one plain directory name", () => {
    expect(checkLocalProject("Inbox")).toBe("inbox");
    for (const bad of ["", ".", "..", "a/b", ".hidden", "a b", "a\0b"]) {
      expect(() => checkLocalProject(bad), JSON.stringify(bad)).toThrow(RefError);
    }
  });
});
