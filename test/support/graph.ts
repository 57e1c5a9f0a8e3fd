import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect } from "vitest";
import { stringify } from "yaml";
import { ARM } from "./builders.js";
import { jsonOf } from "./cli.js";
import { testProject } from "./project.js";
import type { TestProject } from "./project.js";
import { waitFor } from "./wait.js";

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
  /** The live session's usage against routing.budget; null without a live session. */
  usage: { tokens: number | null; unreadable?: string; minutes: number; limits: { tokens?: number; minutes?: number }; readAt?: string } | null;
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

/**
 * A project (not started) whose items run on `graph`, written to the state root's graph.yaml, the
 * sessions working in `work/`; `routing` is merged over that, and `hooks` are the config's hooks.
 */
export async function graphProject(
  graph: { readonly name: string },
  options: { readonly routing?: Record<string, unknown>; readonly hooks?: readonly { readonly name: string; readonly path: string }[] } = {},
): Promise<TestProject> {
  const p = await testProject({
    graph: { enabled: true, default: graph.name },
    graphs: [{ name: graph.name, path: "graph.yaml" }],
    ...(options.hooks !== undefined ? { hooks: options.hooks } : {}),
    routing: { spawnWorkdir: "work", ...options.routing },
  });
  await writeFile(join(p.root, "graph.yaml"), stringify(graph));
  await mkdir(join(p.dir, "work"), { recursive: true });
  return p;
}

/** A project on the spec-review graph whose fake harness records its environment, working in `work/`. */
export async function specReviewProject(routing: Record<string, unknown> = {}): Promise<TestProject> {
  const p = await testProject({
    graph: { enabled: true, default: "spec-review" },
    graphs: [{ name: "spec-review", path: "spec-review.yaml" }],
    routing: { spawnWorkdir: "work", tmux: { passEnv: ["FAKE_HARNESS_RECORD_ENV"] }, ...routing },
  });
  await writeFile(join(p.root, "spec-review.yaml"), stringify(SPEC_REVIEW_GRAPH));
  await mkdir(join(p.dir, "work"), { recursive: true });
  return p;
}

/** The daemon started, and `#1` made armed by alice: its session spawned and booted. */
export async function runningItem(p: TestProject): Promise<void> {
  const started = await p.cli(["start", "--json"]);
  expect(started.code, started.stderr).toBe(0);
  await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
  expect((await p.cli(["item", "new", "Write a spec", "--label", ARM, "--as", "alice"])).code).toBe(0);
  await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
  await waitFor("the boot", async () => (await p.transcript()).some((entry) => entry.type === "boot"));
}

/** The environment the daemon gave the session of `ref`, as its harness saw it. */
export async function sessionEnvOf(p: TestProject, ref: string): Promise<Record<string, string>> {
  const boot = await waitFor(`the boot of ${ref}`, async () =>
    (await p.transcript()).find((entry) => entry.type === "boot" && entry.environment?.THE_LOOP_WORK_ITEM === ref),
  );
  return boot.environment as Record<string, string>;
}

/** Two sessions on the spec-review graph: the daemon started (its harness recording its environment), `#1` and `#2` armed by alice, both runs at `write`. */
export async function twoSessions(p: TestProject): Promise<{ one: Record<string, string>; two: Record<string, string> }> {
  const started = await p.cli(["start"], { FAKE_HARNESS_RECORD_ENV: "1" });
  expect(started.code, started.stderr).toBe(0);
  await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
  for (const title of ["First", "Second"]) {
    expect((await p.cli(["item", "new", title, "--label", ARM, "--as", "alice"])).code).toBe(0);
  }
  const one = await sessionEnvOf(p, "local:demo#1");
  const two = await sessionEnvOf(p, "local:demo#2");
  await waitFor("both runs", async () => (await graphStatus(p, "#2")).node === "write");
  return { one, two };
}

/** Only what a session is given of the-loop's, from the environment it was started with: its item, its credential and (`socket`) its own socket's path. */
export function sessionVariables(env: Record<string, string>, { socket }: { socket: boolean }): Record<string, string> {
  return {
    THE_LOOP_WORK_ITEM: env.THE_LOOP_WORK_ITEM ?? "",
    THE_LOOP_SESSION_TOKEN: env.THE_LOOP_SESSION_TOKEN ?? "",
    ...(socket ? { THE_LOOP_SESSION_SOCKET: env.THE_LOOP_SESSION_SOCKET ?? "" } : {}),
  };
}
