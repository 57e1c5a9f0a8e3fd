import { describe, expect, it } from "vitest";
import { failClosedWarning, isAuthorized } from "../../src/routing/authz.js";

describe("isAuthorized", () => {
  const team = new Set(["alice", "Bob", "dependabot[bot]"]);
  it.each([
    ["alice", team, true],
    ["Bob", team, true],
    ["dependabot[bot]", team, true],
    ["Alice", team, false],
    ["bob", team, false],
    ["alice ", team, false],
    [" alice", team, false],
    ["", team, false],
    ["mallory", team, false],
    ["alice", new Set<string>(), false],
    ["", new Set<string>(), false],
    [null, team, true],
    [null, new Set<string>(), true],
  ] as const)("%j in %j → %s", (actor, authorized, expected) => {
    expect(isAuthorized(actor, authorized)).toBe(expected);
  });
});

describe("failClosedWarning", () => {
  it("says nothing when someone is authorized", () => {
    expect(failClosedWarning({ authorizedUsers: ["alice"] })).toBeUndefined();
  });

  it("explains an empty allowlist and shows the config to add", () => {
    const warning = failClosedWarning({ authorizedUsers: [] });
    expect(warning).toContain("routing.authorizedUsers is empty");
    expect(warning).toContain("fail closed");
    expect(warning).toMatch(/routing:\n {4}authorizedUsers: \[your-login\]/);
  });
});
