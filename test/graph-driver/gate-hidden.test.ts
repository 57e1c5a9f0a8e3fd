import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { configSchema } from "../../src/config/schema.js";
import { graphSetupFor } from "../../src/daemon/graph-setup.js";
import { SPEC_REVIEW_GRAPH } from "../support/graph.js";
import { FakeGitHubTracker, HoldingRunner, ISSUE, T0, dispatcherSetup, ghEvent } from "../dispatch/fixture.js";

/**
 * A gate answer a reader cannot see moves nothing: the dispatcher's gate path, with a run waiting
 * at a human gate and an authorized person's comments whose approval is hidden when GitHub renders
 * them. Only the visible approval at the end moves the gate.
 */

const APPROVE = "the-loop:approve";

const HIDDEN_APPROVALS: [what: string, body: string][] = [
  ["a link reference definition", `[//]: # (${APPROVE})`],
  ["image alt text", `<img alt="${APPROVE}" src="x.png">`],
  ["a link title", `[the spec](https://example.com "${APPROVE}")`],
  ["a hidden element", `<div hidden>${APPROVE}</div>`],
  ["a collapsed details element", `<details><summary>notes</summary>\n\n${APPROVE}\n\n</details>`],
  ["struck-through text", `~~${APPROVE}~~`],
];

async function waitingAtReview() {
  const github = new FakeGitHubTracker();
  github.add(ISSUE);
  const base = await dispatcherSetup({ routing: { announce: { enabled: false } }, runner: new HoldingRunner(), github, now: () => T0 });
  await writeFile(join(base.dir, "spec-review.yaml"), stringify(SPEC_REVIEW_GRAPH));
  const config = configSchema.parse({ graph: { enabled: true, default: "spec-review" }, graphs: [{ name: "spec-review", path: "spec-review.yaml" }] });
  const setup = await graphSetupFor({ config, paths: base.paths, baseDir: base.dir });
  if (setup === undefined) throw new Error("the graph is off");
  const dispatcher = base.dispatcher({ graph: setup });
  const forced = await dispatcher.graphForce({ ref: ISSUE.ref, to: "review", reason: "the spec is written", actor: { kind: "operator", id: "operator" } });
  expect(forced).toMatchObject({ moved: true, node: "review", status: "waiting" });
  const comment = (id: string, body: string) => ({ ...ghEvent({ on: ISSUE, commentId: id, kind: "commented", actor: "alice" }), body });
  return { ...base, setup, dispatcher, comment };
}

describe("a gate answer hidden by markdown", () => {
  it("moves no gate in any hidden form; the visible approval after them does", async () => {
    const s = await waitingAtReview();
    for (const [index, [what, body]] of HIDDEN_APPROVALS.entries()) {
      await s.dispatcher.handle(s.comment(`c-${index}`, body));
      expect(s.emitted("graph.gate_decided"), what).toEqual([]);
      expect(await s.setup.states.get(ISSUE.ref), what).toMatchObject({ node: "review", status: "waiting" });
    }
    await s.dispatcher.handle(s.comment("c-visible", `Read it twice. ${APPROVE}`));
    expect(s.emitted("graph.gate_decided")).toEqual([expect.objectContaining({ actor: "alice", decision: "approved", node: "review" })]);
    expect(await s.setup.states.get(ISSUE.ref)).not.toMatchObject({ node: "review", status: "waiting" });
    await s.dispatcher.drain();
  });
});
