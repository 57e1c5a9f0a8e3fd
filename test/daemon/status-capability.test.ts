import { describe, expect, it } from "vitest";
import { capabilityChangedProblems } from "../../src/daemon/status/problems.js";
import type { CapabilityRefusal } from "../../src/daemon/status/problems.js";

const refusal = (capability: string, at: string, workItem = "local:demo#1"): CapabilityRefusal => ({
  at,
  capability,
  path: `/bundles/${capability}`,
  workItem,
  reason: "changed",
});

describe("capabilityChangedProblems", () => {
  it.each([
    { what: "no refusal", refusals: [], expected: [] },
    {
      what: "one refusal",
      refusals: [refusal("notes", "2024-01-01T00:00:00Z")],
      expected: [
        'capability "notes" (/bundles/notes) changed since it was consented to: the daemon refused to use it once, last at 2024-01-01T00:00:00Z for local:demo#1, and blocked the item there',
      ],
    },
    {
      what: "one problem per capability, its last refusal named",
      refusals: [refusal("notes", "2024-01-01T00:00:00Z"), refusal("lint", "2024-01-01T00:00:01Z"), refusal("notes", "2024-01-01T00:00:02Z", "local:demo#2")],
      expected: [
        'capability "notes" (/bundles/notes) changed since it was consented to: the daemon refused to use it 2 times, last at 2024-01-01T00:00:02Z for local:demo#2, and blocked the item there',
        'capability "lint" (/bundles/lint) changed since it was consented to: the daemon refused to use it once, last at 2024-01-01T00:00:01Z for local:demo#1, and blocked the item there',
      ],
    },
  ])("$what", ({ refusals, expected }) => {
    const problems = capabilityChangedProblems(refusals);
    expect(problems.map((problem) => problem.message)).toEqual(expected);
    for (const problem of problems) {
      expect(problem.code).toBe("capability-changed");
      expect(problem.fix).toMatch(/^read what changed in \/bundles\/\w+; consent again with `the-loop capabilities add "\/bundles\/\w+" --yes`/);
    }
  });
});
