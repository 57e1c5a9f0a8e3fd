import { describe, expect, it } from "vitest";
import { jsonOf } from "../support/cli.js";
import { sendWebhook } from "../support/fake-github.js";
import { startWebhookDaemon } from "../support/github-project.js";
import { isRunning } from "../support/processes.js";
import { waitFor } from "../support/wait.js";

const SECRET = "webhook-secret-for-the-stop-test";
/** Each comment costs two reactions, and GitHub's client sends one write a second. */
const COMMENTS = 10;

describe("the-loop stop (fake GitHub, real daemon, real tmux)", () => {
  it("ends the daemon's process once it answers, even with reactions still queued for GitHub", async () => {
    const { gh, issue, ref, p, env, started, url } = await startWebhookDaemon({
      secret: SECRET,
      routing: { workspace: { enabled: false }, announce: { enabled: false } },
    });
    const { pid } = jsonOf<{ pid: number }>(started);

    for (let i = 0; i < COMMENTS; i++) {
      const comment = gh.addComment("octo/repo", issue, { user: "alice", body: `Step ${i + 1}, please.` });
      const delivery = await sendWebhook(url, { event: "issue_comment", payload: gh.payload.issueComment("octo/repo", issue, comment), secret: SECRET });
      expect(delivery.status).toBe(202);
    }
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned" && r.work_item === ref);
    // Most of the reactions are still waiting for their turn when the stop comes.
    expect((await p.events()).filter((r) => r.event === "reaction.added").length).toBeLessThan(COMMENTS);

    const stopped = await p.cli(["stop", "--json"], env);
    expect(stopped.code, stopped.stderr + stopped.stdout).toBe(0);
    // Drained and unlocked, it is done: nothing left behind keeps calling GitHub or writing the
    // event log beside the next daemon on this state root.
    await waitFor(`daemon pid ${pid} to exit after the stop`, () => (isRunning(pid) ? undefined : true), { intervalMs: 25 });
    // It ended without working through the queue (one write a second): reactions were left unsent.
    expect(gh.reactions().length).toBeLessThan(2 * COMMENTS);
  }, 60_000);
});
