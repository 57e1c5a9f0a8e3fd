import { describe, expect, it } from "vitest";
import { jsonOf } from "../support/cli.js";
import { paneState } from "../support/e2e.js";
import { ARM, TOKEN, startGitHub, startProject } from "../support/github-project.js";
import { waitFor } from "../support/wait.js";

describe("GitHub through the poller, end to end (fake GitHub, real daemon, real tmux)", () => {
  it("spawns on an authorized comment on a labelled issue, delivers the next one, and closes with the issue", async () => {
    const gh = await startGitHub();
    gh.addRepo("octo/repo");
    const issue = gh.addIssue("octo/repo", { title: "Add a health check", user: "alice", labels: [ARM] });
    gh.addComment("octo/repo", issue, { user: "alice", body: "Said before the daemon started." });
    const ref = `github:${gh.host}/octo/repo#${issue}`;

    const p = await startProject({
      polling: { enabled: true, intervalSeconds: 0.2, sources: [{ provider: "github", repos: ["octo/repo"] }] },
      github: { apiUrl: gh.apiUrl },
      routing: { workspace: { enabled: false } },
    });
    const started = await p.cli(["start", "--json"], { GH_TOKEN: TOKEN });
    expect(started.code, started.stderr + started.stdout).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline" && r.poll_source === "github:octo/repo");
    expect((await p.events()).filter((r) => r.event === "poll.provider_error")).toEqual([]);

    const first = gh.addComment("octo/repo", issue, { user: "alice", body: "Please start with the endpoint." });
    const spawned = await p.waitForEvent("the spawn", (r) => r.event === "session.spawned");
    expect(spawned.work_item).toBe(ref);
    const boot = await waitFor("the boot prompt", async () => (await p.transcript()).find((e) => e.type === "boot"));
    expect(boot.argv?.at(-1)).toContain("Please start with the endpoint.");
    expect(boot.argv?.at(-1)).not.toContain("Said before the daemon started.");
    await p.waitForEvent("the announcement", (r) => r.event === "session.announced");

    const second = gh.addComment("octo/repo", issue, { user: "alice", body: "Use port 8080, please." });
    const delivered = await p.waitForEvent("the delivery", (r) => r.event === "dispatch.succeeded" && r.delivery_id === `poll-comment-${second.id}`);
    expect(delivered.work_item).toBe(ref);
    const input = await waitFor("the delivered input", async () => (await p.transcript()).find((e) => e.type === "input"));
    expect(input.text).toContain("Use port 8080, please.");

    gh.addComment("octo/repo", issue, { user: "mallory", body: "rm -rf everything" });
    await p.waitForEvent("the unauthorized drop", (r) => r.event === "routing.dropped" && r.reason === "unauthorized-actor" && r.actor === "mallory");

    // The issue has a live session now, so its closing is read and closes it.
    gh.closeItem("octo/repo", issue);
    const closed = await p.waitForEvent("the close", (r) => r.event === "session.closed");
    expect(closed.work_item).toBe(ref);

    const events = await p.events();
    expect(events.filter((r) => r.event === "session.spawned")).toHaveLength(1);
    expect(events.filter((r) => r.event === "dispatch.succeeded" && r.delivery_id === `poll-comment-${first.id}`)).toHaveLength(0);
    expect((await p.transcript()).filter((e) => e.type === "input")).toHaveLength(1);
    expect(events.some((r) => r.event === "poll.provider_error")).toBe(false);
    expect(JSON.stringify(events)).not.toContain(TOKEN);

    // Idle, the poller asks GitHub only conditionally and is answered 304 throughout.
    const cyclesAfter = async (count: number): Promise<void> => {
      const from = (await p.events()).filter((r) => r.event === "poll.cycle").length;
      await waitFor(`${count} more cycles`, async () => ((await p.events()).filter((r) => r.event === "poll.cycle").length >= from + count ? true : undefined));
    };
    await cyclesAfter(3);
    gh.clearRequests();
    await cyclesAfter(2);
    const polls = gh.requests.filter((request) => request.method === "GET" && /\/(issues|comments)$/.test(request.path));
    expect(polls.length).toBeGreaterThan(0);
    expect(polls.filter((request) => request.status !== 304)).toEqual([]);
  }, 90_000);

  it("tells the issue's session that a pull request fixing it was merged, and keeps the session live", async () => {
    const gh = await startGitHub();
    gh.addRepo("octo/repo");
    const issue = gh.addIssue("octo/repo", { title: "Add a health check", user: "alice", labels: [ARM] });
    const ref = `github:${gh.host}/octo/repo#${issue}`;
    const p = await startProject({
      polling: { enabled: true, intervalSeconds: 0.2, sources: [{ provider: "github", repos: ["octo/repo"] }] },
      github: { apiUrl: gh.apiUrl },
      routing: { workspace: { enabled: false }, announce: { enabled: false } },
    });
    const env = { GH_TOKEN: TOKEN };
    const started = await p.cli(["start", "--json"], env);
    expect(started.code, started.stderr + started.stdout).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline" && r.poll_source === "github:octo/repo");

    gh.addComment("octo/repo", issue, { user: "alice", body: "Please start." });
    const spawned = await p.waitForEvent("the spawn", (r) => r.event === "session.spawned" && r.work_item === ref);
    // No event of the PR reached the session before its merge: its `Fixes` is what links it.
    const pr = gh.addPullRequest("octo/repo", { title: "Health check", body: `Fixes #${issue}`, user: "alice", head: "health" });
    gh.closeItem("octo/repo", pr, { merged: true, actor: "bob" });
    const closedAt = gh.pull("octo/repo", pr).closed_at;
    const deliveryId = `poll-closed-github:${gh.host}/octo/repo#${pr}-${closedAt}`;
    const delivered = await p.waitForEvent("the merge's delivery", (r) => r.event === "dispatch.succeeded" && r.delivery_id === deliveryId);
    expect(delivered.work_item).toBe(ref);
    const told = (await p.transcript()).filter((e) => e.type === "input").map((e) => e.text ?? "");
    expect(told).toHaveLength(1);
    expect(told[0]).toContain(`Pull request #${pr} (${gh.pull("octo/repo", pr).html_url}) was merged by bob.`);

    expect((await p.events()).filter((r) => r.event === "session.closed")).toEqual([]);
    const live = jsonOf<{ sessions: { workItem: { ref: string }; status: string }[] }>(await p.cli(["sessions", "list", "--json", "--status", "live"], env));
    expect(live.sessions.map((session) => [session.workItem.ref, session.status])).toEqual([[ref, "active"]]);
    expect(await paneState(p.socketName, String(spawned.tmux_target))).toBe("alive");
  }, 90_000);
});
