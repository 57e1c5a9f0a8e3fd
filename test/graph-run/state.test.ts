import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { applyClaimResult } from "../../src/graph-run/advance.js";
import { GRAPH_HISTORY_MAX, GRAPH_STATE_SHAPE_FILE, graphStateSchema, graphStateShapeModule } from "../../src/graph-run/state.js";
import type { GraphState } from "../../src/graph-run/state.js";
import { GraphStateError, graphStateProblem, graphStatesListingCache, openGraphStates } from "../../src/graph-run/store.js";
import { DamagedRecordError, deriveStatePaths } from "../../src/state/index.js";
import { configSchema } from "../../src/config/schema.js";
import { REPO_ROOT } from "../support/cli.js";
import { tempDir } from "../support/temp.js";
import { AGENT, GRAPH, MISSING, REF, T0, applied, started } from "../graph/fixture.js";

const STALE = "stale generated file: run `npm run generate` and commit the result";

/** A state with every optional field set: a reason (after a failed claim) and an assignment pending. */
function fullState(): GraphState {
  const failed = applied(applyClaimResult(GRAPH, started(), { node: "design", generation: 1, results: [MISSING], actor: AGENT, at: T0 })).state;
  return { ...failed, undelivered: { node: "design", generation: 1 } };
}

async function stateRoot() {
  const root = join(await tempDir(), "state");
  return deriveStatePaths(configSchema.parse({ state: { root } }), root);
}

describe("the graph state record", () => {
  it("has a current generated shape", async () => {
    expect(await readFile(join(REPO_ROOT, GRAPH_STATE_SHAPE_FILE), "utf8"), STALE).toBe(graphStateShapeModule());
  });

  it("bounds its history at the documented size", () => {
    const state = started();
    const entry = state.history[0];
    expect(GRAPH_HISTORY_MAX).toBe(200);
    expect(graphStateSchema.safeParse({ ...state, history: Array(200).fill(entry) }).success).toBe(true);
    expect(graphStateSchema.safeParse({ ...state, history: Array(201).fill(entry) }).success).toBe(false);
  });

  const valid = fullState();
  const variants: [string, unknown][] = [
    ["a full record", valid],
    ["a fresh run", started()],
    ["an unknown key", { ...valid, extra: 1 }],
    ["another version", { ...valid, version: 2 }],
    ["an unknown status", { ...valid, status: "paused" }],
    ["generation 0", { ...valid, generation: 0 }],
    ["a fractional generation", { ...valid, generation: 1.5 }],
    ["zero attempts recorded", { ...valid, attempts: { design: 0 } }],
    ["attempts as a string", { ...valid, attempts: { design: "1" } }],
    ["an empty node id among attempts", { ...valid, attempts: { "": 1 } }],
    ["an unknown outcome", { ...valid, outcomes: { design: "lgtm" } }],
    ["outcomes as a list", { ...valid, outcomes: ["pass"] }],
    ["a reason without its code", { ...valid, reasonCode: undefined }],
    ["a reason code without its reason", { ...valid, reason: undefined }],
    ["a reason code in capitals", { ...valid, reasonCode: "CHECK_FAILED" }],
    ["a null reason", { ...valid, reason: null, reasonCode: null }],
    ["a local time", { ...valid, updatedAt: "2025-03-01T10:00:00" }],
    ["a history entry of an unknown kind", { ...valid, history: [{ ...valid.history[0], kind: "approved" }] }],
    ["a history entry without an actor", { ...valid, history: [{ at: T0.toISOString(), kind: "entered", node: "design" }] }],
    ["an actor of an unknown kind", { ...valid, history: [{ ...valid.history[0], actor: { kind: "bot", id: "x" } }] }],
    ["an undelivered assignment without its generation", { ...valid, undelivered: { node: "design" } }],
    ["a missing ref", { ...valid, ref: undefined }],
    ["null", null],
  ];
  it.each(variants)("is read the same without zod as with it: %s", (_what, value) => {
    const parsed = graphStateSchema.safeParse(value);
    const problem = graphStateProblem(value);
    expect({ accepted: problem === undefined, problem }).toEqual({ accepted: parsed.success, problem: parsed.success ? undefined : expect.any(String) });
  });

  it("names what is wrong with a map entry", () => {
    expect(graphStateProblem({ ...valid, attempts: { design: 0 } })).toBe("attempts.design: expected a positive integer; got 0");
    expect(graphStateProblem({ ...valid, outcomes: { "": "pass" } })).toMatch(/^outcomes: key "": expected a non-empty string/);
  });
});

describe("openGraphStates", () => {
  it("keeps one record per item under <root>/graphs, written whole and read back", async () => {
    const paths = await stateRoot();
    const states = openGraphStates(paths, { lock: { timeoutMs: 2_000 } });
    expect(states.dir).toBe(join(paths.root, "graphs"));
    const state = fullState();
    await states.transaction(REF, async (tx) => {
      expect(tx.read()).toBeUndefined();
      await tx.write(state);
    });
    expect(await states.get(REF)).toEqual(state);
    expect(await states.get("github:octo/repo#8")).toBeUndefined();
    expect(existsSync(states.locate(REF))).toBe(true);
    expect(states.locate(REF).startsWith(join(paths.root, "graphs"))).toBe(true);

    // A folder changed this very moment is not cached (state/folder-cache.ts): age it.
    const longAgo = new Date(Date.now() - 60_000);
    await utimes(states.dir, longAgo, longAgo);
    const listing = await states.list();
    expect(listing).toEqual({ records: [state], problems: [] });
    expect(existsSync(graphStatesListingCache(paths))).toBe(true);
    expect((await states.list()).records).toEqual([state]); // from the cache, while the folder is unchanged
  });

  it("refuses to write a record the schema refuses", async () => {
    const states = openGraphStates(await stateRoot());
    await expect(states.transaction(REF, (tx) => tx.write({ ...started(), generation: 0 }))).rejects.toThrow(/refusing to write an invalid graph state record/);
    expect(await states.get(REF)).toBeUndefined();
  });

  it.each<[string, string, RegExp]>([
    ["not JSON", "{ torn", /not valid JSON/],
    ["not a graph state", JSON.stringify({ version: 1, ref: REF }), /graph: expected a non-empty string/],
    ["another item's record", JSON.stringify({ ...started(), ref: "github:octo/repo#8" }), /it holds github:octo\/repo#8/],
  ])("reports a damaged record (%s) with how to recover, and lists the rest", async (_what, text, reason) => {
    const paths = await stateRoot();
    const states = openGraphStates(paths);
    await mkdir(states.dir, { recursive: true });
    await writeFile(states.locate(REF), text);
    const error = await states.get(REF).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(GraphStateError);
    expect(error).toBeInstanceOf(DamagedRecordError);
    const message = (error as Error).message;
    expect(message).toMatch(reason);
    expect(message).toContain(states.locate(REF));
    expect(message).toContain(`the-loop graph force ${REF} --to NODE --reason TEXT`);
    await expect(states.transaction(REF, async (tx) => tx.read())).rejects.toBeInstanceOf(GraphStateError);

    const other = { ...started(), ref: "local:demo#1" };
    await states.transaction(other.ref, (tx) => tx.write(other));
    const listing = await states.list();
    expect(listing.records).toEqual([other]);
    expect(listing.problems).toEqual([{ where: states.locate(REF), message: expect.stringMatching(reason) }]);
  });
});

describe("reading graph states without the schema library", () => {
  it("reads and lists records, and advances, without loading zod", async () => {
    const paths = await stateRoot();
    const states = openGraphStates(paths);
    await states.transaction(REF, (tx) => tx.write(started()));
    // A resolve hook that fails any import of zod, in a fresh process running the sources through tsx.
    const hook = `export async function resolve(specifier, context, next) {
      if (specifier === "zod" || specifier.startsWith("zod/")) throw new Error("zod was loaded");
      return next(specifier, context);
    }`;
    const register = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});`;
    const source = (file: string): string => JSON.stringify(pathToFileURL(join(REPO_ROOT, "src", "graph-run", file)).href);
    const main = `
      const { openGraphStates } = await import(${source("store.ts")});
      await import(${source("advance.ts")});
      await import(${source("assignment.ts")});
      const states = openGraphStates(${JSON.stringify({ root: paths.root, graphsDir: paths.graphsDir })});
      const state = await states.get(${JSON.stringify(REF)});
      const listing = await states.list();
      console.log(JSON.stringify({ node: state?.node, listed: listing.records.length }));
    `;
    const child = spawnSync(
      process.execPath,
      ["--import", "tsx", "--import", `data:text/javascript,${encodeURIComponent(register)}`, "--input-type=module", "-e", main],
      { encoding: "utf8", cwd: REPO_ROOT },
    );
    expect(child.stderr).toBe("");
    expect(JSON.parse(child.stdout)).toEqual({ node: "design", listed: 1 });
  });
});
