import { expect } from "vitest";
import { jsonOf } from "./cli.js";
import type { TestProject } from "./project.js";

/**
 * The small process the graph's integration tests run: the agent writes spec.md, a person
 * reviews it (approve → done, request changes → back to writing).
 */
export const SPEC_REVIEW_GRAPH = {
  name: "spec-review",
  start: "write",
  nodes: [
    { id: "write", phase: "writing", description: "Write spec.md.", produces: ["spec.md"] },
    { id: "review", phase: "review", actor: "human", description: "Review spec.md." },
    { id: "done", phase: "done", terminal: true },
  ],
  edges: [
    { from: "write", to: "review", on: "pass" },
    { from: "review", to: "done", on: "approved" },
    { from: "review", to: "write", on: "changes-requested" },
  ],
};

/** What `the-loop graph status --json` prints (the fields the tests read). */
export interface GraphStatusJson {
  ref: string;
  graph: string;
  node: string;
  phase: string | null;
  status: string;
  generation: number;
  reason_code: string | null;
  reason: string | null;
  history: { kind: string }[];
}

/** `the-loop graph status REF --json`, which must succeed. */
export async function graphStatus(p: TestProject, ref = "#1"): Promise<GraphStatusJson> {
  const result = await p.cli(["graph", "status", ref, "--json"]);
  expect(result.code, result.stderr).toBe(0);
  return jsonOf<GraphStatusJson>(result);
}

/** What `the-loop graph complete --json` prints. */
export interface ClaimJson {
  moved: boolean;
  node: string | null;
  status: string | null;
  reason_code: string | null;
  reason: string | null;
  /** What the claim's loop points gave the agent. */
  notes: string[];
}
