import { describe, expect, it } from "vitest";
import { workItemActedOn } from "../../src/registry/acted-on.js";
import type { PullRequestLink } from "../../src/registry/pr-links.js";

const PR = "github:github.com/o/r#9";
const ISSUE = "github:github.com/o/r#7";
const live = { status: "active" } as const;
const closed = { status: "closed" } as const;

function links(bound: Record<string, string>): { get(ref: string): PullRequestLink | undefined } {
  return { get: (ref) => (bound[ref] !== undefined ? ({ workItem: { ref: bound[ref] } } as PullRequestLink) : undefined) };
}

describe("the work item a control command acts on", () => {
  it.each([
    ["a pull request bound to an issue, neither live", PR, { [PR]: ISSUE }, {}, ISSUE],
    ["the bound issue live", PR, { [PR]: ISSUE }, { [ISSUE]: live }, ISSUE],
    ["only the pull request live", PR, { [PR]: ISSUE }, { [PR]: live }, PR],
    ["both live: the bound issue first", PR, { [PR]: ISSUE }, { [PR]: live, [ISSUE]: live }, ISSUE],
    ["the pull request live, the issue's session closed", PR, { [PR]: ISSUE }, { [PR]: live, [ISSUE]: closed }, PR],
    ["bound to nothing", PR, {}, {}, PR],
    ["an issue", ISSUE, { [PR]: ISSUE }, {}, ISSUE],
    ["a local item, whatever its binding", "local:demo#1", { "local:demo#1": "local:demo#2" }, {}, "local:demo#1"],
  ] as const)("%s", (_, ref, bound, sessions, acted) => {
    const registry = { get: (key: string) => (sessions as Record<string, { status: "active" | "closed" }>)[key] };
    expect(workItemActedOn(ref, links(bound), registry)).toBe(acted);
  });

  it("acts on the bound item when a session record does not parse", () => {
    const registry = {
      get: (): never => {
        throw new Error("damaged");
      },
    };
    expect(workItemActedOn(PR, links({ [PR]: ISSUE }), registry)).toBe(ISSUE);
  });
});
