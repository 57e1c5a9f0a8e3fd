import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startRun } from "../../src/graph/advance.js";
import { loadBuiltinGraphs } from "../../src/graph/registry.js";
import { openGraphStates } from "../../src/graph/store.js";
import { withPendingEffects } from "../../src/sessions/graph-effects.js";
import { jsonOf } from "../support/cli.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * A graph move is written with its effects journalled, and the effects are taken off once carried
 * out. A daemon killed in between leaves the journal: the next daemon carries the effects out.
 * Here the killed daemon is stood in for by writing such a record, as it would have left it.
 */

const REF = "local:demo#1";

let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

describe("graph effects a killed daemon never carried out", () => {
  it("are carried out by the next daemon, and taken off the record", async () => {
    project = await testProject({ graph: { enabled: true, default: "adhoc" } });
    const p = project;
    expect((await p.cli(["item", "new", "Task", "--as", "alice"])).code).toBe(0);

    const adhoc = (await loadBuiltinGraphs()).get("adhoc");
    if (adhoc === undefined) throw new Error("the adhoc graph is missing");
    const begun = startRun(adhoc, { ref: REF, loopRunId: "run-1", at: new Date(), actor: { kind: "human", id: "alice" } });
    const states = openGraphStates({ root: p.root, graphsDir: join(p.root, "graphs") });
    // What a daemon killed right after committing the move leaves (the assignment is left out: no session).
    const effects = begun.effects.filter((effect) => effect.kind !== "deliver-assignment");
    await states.transaction(REF, async (tx) => {
      await tx.write(withPendingEffects(begun.state, effects));
    });
    expect((await states.get(REF))?.pendingEffects?.length).toBe(effects.length);

    const started = await p.cli(["start", "--json"]);
    expect(started.code, started.stderr).toBe(0);
    await waitFor("the journal carried out", async () => (await states.get(REF))?.pendingEffects === undefined);
    const item = jsonOf<{ labels: string[]; comments: { body: string }[] }>(await p.cli(["item", "show", "#1", "--json"]));
    expect(item.labels).toContain("loop:work");
    expect(item.comments.some((comment) => comment.body.includes("entered phase `work`"))).toBe(true);
    expect((await p.events()).some((record) => record.event === "graph.started" && record.work_item === REF)).toBe(true);
  });
});
