import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { watchdogReactionMs } from "../../src/fleet/adopt-decide.js";
import { SELF_COMMENT_MARKER } from "../../src/workitem/marker.js";
import { ARM } from "../support/builders.js";
import { jsonOf } from "../support/cli.js";
import { FakeGitHub, sendWebhook } from "../support/fake-github.js";
import { TOKEN, bareRepository, freePort } from "../support/github-project.js";
import { hasTmuxSession, LOST_HOST } from "../support/lost-host.js";
import { queryRows } from "../support/postgres-project.js";
import { postgresServer } from "../support/postgres.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";

/**
 * Losing a host with a GitHub work item (docs/scale.md, "Losing a host: adoption"): two real
 * daemons on two state roots, two tmux servers, one real PostgreSQL server, a fake GitHub and a
 * real git repository (a local bare one as the clone source), `routing.workspace` on. Daemon A
 * runs the issue's session in a checkout under its own workspace root, and a pull request that
 * says "Fixes #N" is linked to it, its head branch pushed; A is killed with `kill -9`. Daemon B
 * adopts the item: a fresh checkout under B's own root, on the linked pull request's head branch,
 * the new agent running in it with the adoption's note and the transcript tail, the marked
 * comment on the issue, `session.adopted`, and the pull request still the session's.
 */

const server = postgresServer();
const SECRET = "webhook-secret-for-the-adoption-test";
const git = promisify(execFile);

interface SessionRow {
  item: string;
  body: { status: string; tmuxTarget: string; cwd: string; workspace?: { checkout: string; branch?: string }; pullRequests?: { ref: string }[] };
}

/** Pushes a branch `name` with one more commit (a file `file`) to the bare repository: the previous agent's pushed work. */
async function pushBranch(bare: string, name: string, file: string): Promise<void> {
  const work = join(await tempDir(), "push");
  await git("git", ["clone", "-q", bare, work]);
  await git("git", ["-C", work, "checkout", "-q", "-b", name]);
  await writeFile(join(work, file), "ok\n");
  await git("git", ["-C", work, "add", file]);
  await git("git", ["-C", work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "health check"]);
  await git("git", ["-C", work, "push", "-q", "origin", name]);
}

/** A daemon named `name` on the database at `url`, receiving GitHub's webhooks on `webhookPort`, with short leases (LOST_HOST). */
function githubHost(url: string, name: string, gh: FakeGitHub, webhookPort: number): Promise<TestProject> {
  const { leaseSeconds, heartbeatSeconds, adoptGraceSeconds, killGraceSeconds } = LOST_HOST;
  return testProject({
    github: { apiUrl: gh.apiUrl },
    polling: { enabled: false, sources: [] },
    webhooks: { ghWebhook: { enabled: true, port: webhookPort } },
    routing: { workspace: { enabled: true }, tmux: { harnessKillGraceSeconds: killGraceSeconds } },
    state: { store: "postgres", url, daemonName: name, leaseSeconds, heartbeatSeconds, adoptGraceSeconds },
  });
}

const sessionRows = (url: string): Promise<SessionRow[]> =>
  queryRows<SessionRow>(url, "SELECT item, body FROM the_loop_records WHERE kind = 'sessions' AND body IS NOT NULL");

describe("adoption of a lost daemon's GitHub item with routing.workspace on (two real daemons, real git, real tmux, a real server)", () => {
  it("B adopts A's issue into a fresh checkout of its own, on the linked pull request's branch, with the note, the tail, the comment and session.adopted", async () => {
    const url = await server.freshDatabase();
    const bare = await bareRepository();
    await pushBranch(bare, "health", "HEALTH.md");
    const gh = await FakeGitHub.start({ token: TOKEN });
    try {
      gh.addRepo("octo/repo", { defaultBranch: "main", cloneUrl: `file://${bare}` });
      const issue = gh.addIssue("octo/repo", { title: "Add a health check", user: "alice", labels: [ARM] });
      const ref = `github:${gh.host}/octo/repo#${issue}`;
      const env = { GH_TOKEN: TOKEN, THE_LOOP_GH_WEBHOOK_SECRET: SECRET };
      const port = await freePort();
      const portB = await freePort();
      const deliver = async (event: string, payload: unknown, to = port): Promise<string> => {
        const sent = await sendWebhook(`http://127.0.0.1:${to}/gh-webhook`, { event, payload, secret: SECRET });
        expect(sent.status).toBe(202);
        return sent.deliveryId;
      };

      // A runs the issue's session in a checkout under A's workspace root.
      const a = await githubHost(url, "box-a", gh, port);
      const startedA = await a.cli(["start", "--json"], env);
      expect(startedA.code, startedA.stderr + startedA.stdout).toBe(0);
      const pid = jsonOf<{ pid: number }>(startedA).pid;
      const first = gh.addComment("octo/repo", issue, { user: "alice", body: "Please start with the endpoint." });
      await deliver("issue_comment", gh.payload.issueComment("octo/repo", issue, first));
      const spawnedA = await a.waitForEvent("the spawn on A", (r) => r.event === "session.spawned" && r.work_item === ref);
      const checkoutA = String(spawnedA.cwd);
      expect(checkoutA.startsWith(join(a.root, "workspaces"))).toBe(true);
      expect(existsSync(join(checkoutA, "README.md"))).toBe(true);

      // The agent's pull request says "Fixes #N": a review comment on it reaches A's session and links it.
      const pr = gh.addPullRequest("octo/repo", { title: "Health check", body: `Fixes #${issue}`, user: "alice", head: "health" });
      const prRef = `github:${gh.host}/octo/repo#${pr}`;
      const review = gh.addReviewComment("octo/repo", pr, { user: "alice", body: "Rename handler to healthz." });
      await deliver("pull_request_review_comment", gh.payload.pullRequestReviewComment("octo/repo", pr, review));
      await a.waitForEvent("the PR binding on A", (r) => r.event === "session.pr_linked" && r.work_item === ref);

      // The tail of A's pane is in the database.
      const tail = await waitFor(
        "the transcript tail",
        async () => (await queryRows<{ tail: string }>(url, `SELECT tail FROM the_loop_transcript_tails WHERE item = '${ref}'`))[0]?.tail,
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      expect(tail).toContain("fake-harness: ready");
      const oldTarget = (await sessionRows(url)).find((row) => row.item === ref)?.body.tmuxTarget ?? "";
      expect(await hasTmuxSession(a.socketName, oldTarget)).toBe(true);

      // B joins; A is killed -9 (its process only): its tmux server, harness and checkout stay.
      const b = await githubHost(url, "box-b", gh, portB);
      const startedB = await b.cli(["start", "--json"], env);
      expect(startedB.code, startedB.stderr + startedB.stdout).toBe(0);
      process.kill(pid, "SIGKILL");
      await waitFor("A's harness ended by its watchdog", async () => !(await hasTmuxSession(a.socketName, oldTarget)), {
        timeoutMs: LOST_HOST.leaseSeconds * 1000 + watchdogReactionMs(LOST_HOST.killGraceSeconds * 1000) + 2_000,
        intervalMs: 200,
      });

      // B adopts the item.
      const adopted = await b.waitForEvent("the adoption", (r) => r.event === "session.adopted" && r.work_item === ref, 60_000);
      expect(adopted).toMatchObject({ daemon: "box-b", from: "box-a", started: true });
      expect(adopted.error).toBeUndefined();

      // A fresh checkout under B's own workspace root, not A's path, on the pull request's head branch.
      const spawns = (await b.events()).filter((r) => r.event === "session.spawned" && r.work_item === ref);
      expect(spawns).toHaveLength(2);
      const checkoutB = String(spawns[1]?.cwd);
      expect(checkoutB).not.toBe(checkoutA);
      expect(checkoutB.startsWith(join(b.root, "workspaces"))).toBe(true);
      const prepared = (await b.events()).filter((r) => r.event === "workspace.prepared" && r.work_item === ref);
      expect(prepared.map((r) => r.checkout)).toEqual([checkoutA, checkoutB]);
      expect(prepared[1]).toMatchObject({ reused: false, branch: "health" });
      expect((await git("git", ["-C", checkoutB, "rev-parse", "--abbrev-ref", "HEAD"])).stdout.trim()).toBe("health");
      expect(existsSync(join(checkoutB, "HEALTH.md"))).toBe(true);
      // A's checkout is A's host's: B neither removed it nor tried to.
      expect(existsSync(checkoutA)).toBe(true);
      expect((await b.events()).some((r) => r.event === "workspace.clean_failed" || (r.event === "workspace.cleaned" && r.work_item === ref))).toBe(false);

      // The new agent runs in it, told it was adopted, with the transcript tail.
      const boot = await waitFor("the boot line of B's harness", async () => (await b.transcript()).find((entry) => entry.type === "boot"), {
        timeoutMs: 15_000,
        intervalMs: 200,
      });
      expect((boot as { cwd?: string }).cwd).toBe(checkoutB);
      const prompt = boot.argv?.join(" ") ?? "";
      expect(prompt).toContain(ref);
      expect(prompt).toContain("This session was adopted");
      expect(prompt).toContain('the daemon "box-a"');
      expect(prompt).toContain("on the branch `health`");
      expect(prompt).toContain("fake-harness: ready");
      expect(prompt).not.toContain(TOKEN);
      expect(prompt).not.toContain(url);

      // B's record: active, in B's checkout, on B's tmux server, the pull request still its own; the lease B's.
      const row = (await sessionRows(url)).find((r) => r.item === ref);
      expect(row?.body).toMatchObject({ status: "active", cwd: checkoutB, workspace: { checkout: checkoutB, branch: "health" } });
      expect(row?.body.pullRequests?.map((link) => link.ref)).toEqual([prRef]);
      expect(await hasTmuxSession(b.socketName, row?.body.tmuxTarget ?? "")).toBe(true);
      expect(await queryRows<{ owner: string }>(url, `SELECT owner FROM the_loop_leases WHERE item = '${ref}'`)).toEqual([{ owner: "box-b" }]);

      // The marked comment is on the issue, through GitHub's API.
      const comment = gh.comments("octo/repo", issue).find((c) => c.body.includes("`box-b` adopted it"));
      expect(comment?.body).toContain(SELF_COMMENT_MARKER);
      expect(comment?.body).toContain("`box-a`");

      // The pull request's next review comment, received by B, reaches B's agent.
      const next = gh.addReviewComment("octo/repo", pr, { user: "alice", body: "Also return the version." });
      const nextDelivery = await deliver("pull_request_review_comment", gh.payload.pullRequestReviewComment("octo/repo", pr, next), portB);
      await b.waitForEvent("the review comment on B", (r) => r.event === "dispatch.succeeded" && r.delivery_id === nextDelivery && r.work_item === ref);
      const input = await waitFor("the review comment in B's agent", async () =>
        (await b.transcript()).find((entry) => entry.type === "input" && (entry.text ?? "").includes("Also return the version.")),
      );
      expect(input.text).toContain("Also return the version.");

      expect(JSON.stringify(await b.events())).not.toContain(TOKEN);
      expect((await b.cli(["sessions", "stop", "--work-item", ref], env)).code).toBe(0);
      await b.waitForEvent("B's checkout released", (r) => r.event === "workspace.cleaned" && r.checkout === checkoutB);
    } finally {
      await gh.stop();
    }
  }, 150_000);
});
