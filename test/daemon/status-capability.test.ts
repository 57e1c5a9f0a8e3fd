import { describe, expect, it } from "vitest";
import { capabilityChangedProblems, capabilityRuntimeOf, capabilityRuntimeProblems } from "../../src/daemon/status/problems.js";
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

describe("capabilityRuntimeOf and capabilityRuntimeProblems", () => {
  const unsupported = (pid: number, ts: string, id = "notes") => ({
    ts,
    pid,
    event: "capability.runtime_unsupported",
    id,
    path: `/bundles/${id}`,
    harnesses: ["fake"],
    reason: `runtimeCompat: capability ${id} supports claude, and the config runs sessions only in fake`,
  });
  const reloaded = (pid: number, ts: string) => ({ ts, pid, event: "config.reloaded", config: "/p/cli-config.yaml", applied: [], restart_required: [] });

  it.each([
    { what: "nothing said", events: [], expected: [] },
    { what: "said after the last reload", events: [reloaded(7, "t1"), unsupported(7, "t2"), unsupported(7, "t2", "lint")], expected: ["notes@t2", "lint@t2"] },
    { what: "mended by a later reload that said nothing", events: [reloaded(7, "t1"), unsupported(7, "t2"), reloaded(7, "t3")], expected: [] },
    {
      what: "said again by a later reload",
      events: [reloaded(7, "t1"), unsupported(7, "t2"), reloaded(7, "t3"), unsupported(7, "t4")],
      expected: ["notes@t4"],
    },
    { what: "an earlier daemon's is past", events: [reloaded(6, "t1"), unsupported(6, "t2")], expected: [] },
  ])("$what", ({ events, expected }) => {
    const facts = capabilityRuntimeOf(events, new Set([7]));
    expect(facts.map((fact) => `${fact.capability}@${fact.at}`)).toEqual(expected);
    for (const problem of capabilityRuntimeProblems(facts)) {
      expect(problem.code).toBe("capability-runtime");
      expect(problem.message).toMatch(/^capability "\w+" supports none of the harnesses the config runs sessions in since the reload at t\d \(fake\)/);
      expect(problem.fix).toContain("declare a harness it supports under routing.harnesses");
      expect(problem.fix).toContain("remove its entry from `capabilities:` and restart the daemon");
    }
  });
});
