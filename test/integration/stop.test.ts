import { describe, expect, it } from "vitest";
import { jsonOf } from "../support/cli.js";
import { sendWebhook } from "../support/fake-github.js";
import { ARM, TOKEN, freePort, startGitHub, startProject } from "../support/github-project.js";
import { isRunning } from "../support/processes.js";
import { waitFor } from "../support/wait.js";

const SECRET = "webhook-secret-for-the-stop-test";
/** Each comment costs two reactions, and GitHub's client sends one write a second. */
const COMMENTS = 10;

describe("the-loop stop (fake GitHub, real daemon, real tmux)", () => {
  it("ends the daemon's process once it answers, even with reactions still queued for GitHub", async () => {
    const gh = await startGitHub();
    gh.addRepo("octo/repo");
    const issue = gh.addIssue("octo/repo", { title: "Add a health check", user: "alice", labels: [ARM] });
    const ref = `github:${gh.host}/octo/repo#${issue}`;
    const port = await freePort();
    const p = await startProject({
      polling: { enabled: false, sources: [] },
      github: { apiUrl: gh.apiUrl },
      webhooks: { ghWebhook: { enabled: true, port } },
      routing: { workspace: { enabled: false }, announce: { enabled: false } },
    });
    const env = { GH_TOKEN: TOKEN, THE_LOOP_GH_WEBHOOK_SECRET: SECRET };
    const started = await p.cli(["start", "--json"], env);
    expect(started.code, started.stderr + started.stdout).toBe(0);
    const { pid } = jsonOf<{ pid: number }>(started);

    const url = `http://127.0.0.1:${port}/gh-webhook`;
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
    await waitFor(`daemon pid ${pid} to exit after the stop`, () => (isRunning(pid) ? undefined : true), { timeoutMs: 3_000, intervalMs: 25 });
  }, 60_000);
});
