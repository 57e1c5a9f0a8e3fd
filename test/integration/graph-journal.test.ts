import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startRun } from "../../src/graph-run/advance.js";
import { loadBuiltinGraphs } from "../../src/graph/registry.js";
import { openGraphStates } from "../../src/graph-run/store.js";
import { isProcessAlive } from "../../src/daemon/pidfile.js";
import { withPendingEffects } from "../../src/graph-driver/carry-out.js";
import { ARM } from "../support/builders.js";
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

  it("a kill -9 in the middle of moves leaves a state file that parses, with the item on one node", async () => {
    project = await testProject({ graph: { enabled: true, default: "adhoc" } });
    const p = project;
    const states = openGraphStates({ root: p.root, graphsDir: join(p.root, "graphs") });
    const started = await p.cli(["start", "--json"]);
    expect(started.code, started.stderr).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    expect((await p.cli(["item", "new", "Task", "--label", ARM, "--as", "alice"])).code).toBe(0);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");

    for (let round = 0; round < 3; round += 1) {
      const status = jsonOf<{ services: { name: string; pid?: number }[] }>(await p.cli(["status", "--json"]));
      const pid = status.services.find((service) => service.name === "poller")?.pid;
      expect(pid, `round ${round}: the daemon runs`).toBeTypeOf("number");
      // The work node has no checks: each claim moves the item to the review gate at once, and a
      // force puts it back, so the kill lands somewhere in a move's write and its effects.
      const claim = p.cli(["graph", "complete", "--json"], { THE_LOOP_WORK_ITEM: REF });
      await waitFor(
        `round ${round}: the claim under way`,
        async () => ((await p.events()).some((r) => r.event === "graph.advanced" && r.node === "review") ? true : undefined),
        {
          intervalMs: 2,
        },
      ).catch(() => undefined);
      process.kill(pid as number, "SIGKILL");
      await claim;
      await waitFor(`round ${round}: the killed daemon gone`, () => (isProcessAlive(pid as number) ? undefined : true), { timeoutMs: 5_000 });

      const state = await states.get(REF);
      expect(state, `round ${round}: the state parses`).toBeDefined();
      expect(["work", "review"]).toContain(state?.node);

      const restarted = await p.cli(["start", "--json"]);
      expect(restarted.code, restarted.stderr).toBe(0);
      await waitFor(`round ${round}: journalled effects carried out`, async () => ((await states.get(REF))?.pendingEffects === undefined ? true : undefined));
      const forced = await p.cli(["graph", "force", "#1", "--to", "work", "--reason", `round ${round}`, "--json"]);
      expect(forced.code, forced.stderr + forced.stdout).toBe(0);
      await waitFor(`round ${round}: back at work`, async () => ((await states.get(REF))?.node === "work" ? true : undefined));
      // Re-read the events from here on only.
      await p.waitForEvent(`round ${round}: the force`, (r) => r.event === "graph.forced" && r.reason === `round ${round}`);
    }
    const labels = jsonOf<{ labels: string[] }>(await p.cli(["item", "show", "#1", "--json"])).labels.filter((label) => label.startsWith("loop:"));
    expect(labels).toEqual(["loop:work"]);
  });
});
