import { existsSync, readdirSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { SELF_COMMENT_MARKER } from "../../src/workitem/marker.js";
import { jsonOf } from "../support/cli.js";
import type { FakeGitHub } from "../support/fake-github.js";
import { SPEC_REVIEW_GRAPH, graphStatus } from "../support/graph.js";
import { ARM, TOKEN, startGitHub, startProject } from "../support/github-project.js";
import type { TestProject } from "../support/project.js";
import { waitFor } from "../support/wait.js";

/**
 * The self-approval guard fails closed, on the real daemon polling the fake GitHub: while the
 * login the-loop's token posts as cannot be learned (`GET /user` failing), no gate answer moves a
 * gate. An answer that would count is held (across a restart) and decided once the login is
 * known — the token's own login refused, another authorized person's taken; a permanent failure
 * (403, what a GitHub App installation token always gets) refuses it with one marked comment,
 * and `status` names the fix; with `integrations.github.selfLogin` set, GitHub is never asked.
 */

const REPO = "octo/repo";
/** The login the fake GitHub's /user names for the token: what the agent's comments carry. */
const SELF = "the-loop-bot";
const APPROVE = "the-loop:approve";
const ENV = { GH_TOKEN: TOKEN };

interface Setup {
  readonly gh: FakeGitHub;
  readonly p: TestProject;
  readonly ref: string;
  readonly issue: number;
}

async function setup(github: Record<string, unknown> = {}, userFailure?: number): Promise<Setup> {
  const gh = await startGitHub();
  gh.addRepo(REPO);
  gh.userFailure = userFailure;
  const p = await startProject({
    polling: { enabled: true, intervalSeconds: 0.2, sources: [{ provider: "github", repos: [REPO] }] },
    github: { apiUrl: gh.apiUrl, ...github },
    // The token's own login is authorized: only the self-approval guard stands between it and the gate.
    // Armed (the poller reads comments on armed items only), and no session: a start command is required.
    routing: { authorizedUsers: ["alice", SELF], workspace: { enabled: false }, announce: { enabled: false }, control: { requireStartCommand: true } },
    graph: { enabled: true, default: "spec-review" },
    graphs: [{ name: "spec-review", path: "spec-review.yaml" }],
  });
  await writeFile(join(p.root, "spec-review.yaml"), stringify(SPEC_REVIEW_GRAPH));
  await start(p);
  const issue = gh.addIssue(REPO, { title: "Write a spec", user: "alice", labels: [ARM] });
  const ref = `github:${gh.host}/${REPO}#${issue}`;
  const forced = await p.cli(["graph", "force", ref, "--to", "review", "--reason", "the spec is written", "--json"], ENV);
  expect(forced.code, forced.stderr + forced.stdout).toBe(0);
  expect(await graphStatus(p, ref)).toMatchObject({ node: "review", status: "waiting" });
  return { gh, p, ref, issue };
}

/** Starts the daemon and waits until it polls GitHub. */
async function start(p: TestProject): Promise<void> {
  const before = (await p.events()).length;
  const started = await p.cli(["start", "--json"], ENV);
  expect(started.code, started.stderr + started.stdout).toBe(0);
  await waitFor("a poll cycle of the started daemon", async () => (await p.events()).slice(before).some((r) => r.event === "poll.cycle"));
}

/** A comment on the item by `user`, as the poller will read it; its delivery id. */
function comment(s: Setup, user: string, body: string): string {
  return `poll-comment-${s.gh.addComment(REPO, s.issue, { user, body }).id}`;
}

/** Waits until the answer given in `delivery` was acted on: held, refused or decided. */
async function answered(s: Setup, actor: string, kinds: readonly string[]): Promise<void> {
  await s.p.waitForEvent(`${actor}'s answer acted on`, (r) => kinds.includes(r.event) && r.actor === actor);
}

const ACTED = ["graph.gate_answer_held", "graph.gate_decided", "graph.gate_refused"];

function refusalComments(s: Setup): string[] {
  return s.gh
    .comments(REPO, s.issue)
    .map((c) => c.body ?? "")
    .filter((body) => body.includes(SELF_COMMENT_MARKER) && body.includes("did not count"));
}

describe("the self-approval guard, with GET /user failing (the real daemon, GitHub polling)", () => {
  it("holds answers while /user answers 500, across a restart; once the login is known the token's own is refused and alice's moves the gate", async () => {
    const s = await setup({}, 500);
    const { p, ref } = s;

    comment(s, SELF, APPROVE);
    await answered(s, SELF, ACTED);
    // The old code took it: the lookup's failure skipped the guard, and the gate moved to done.
    expect((await p.events()).filter((r) => r.event === "graph.gate_decided")).toEqual([]);
    expect(await graphStatus(p, ref)).toMatchObject({ node: "review", status: "waiting" });
    await p.waitForEvent("the failed lookup", (r) => r.event === "graph.self_login_unknown" && r.permanent === false && r.checked === "self-approval");

    comment(s, "alice", APPROVE);
    await answered(s, "alice", ACTED);
    expect(await graphStatus(p, ref)).toMatchObject({ node: "review", status: "waiting" });
    const held = (await p.events()).filter((r) => r.event === "graph.gate_answer_held").map((r) => r.actor);
    expect(held).toEqual([SELF, "alice"]);

    // `why` names what could not be checked.
    const why = jsonOf<{ state: string; summary: string; next: string | null; lastRefusal: string | null; events: { event: string; says: string }[] }>(
      await p.cli(["why", ref, "--json"], ENV),
    );
    expect(why.events.find((e) => e.event === "graph.gate_answer_held")?.says).toContain("could not check");
    // The headline is the held answers, and what releases them: the login the-loop posts as.
    expect(why.state).toBe("answer-held");
    expect(why.summary).toContain(`2 answers (by ${SELF}, alice) are held`);
    expect(why.next).toContain("integrations.github.selfLogin");

    // The holds are on disk and survive a restart, still failing.
    const heldDir = join(p.root, "graphs", "held");
    expect(existsSync(heldDir) && readdirSync(heldDir).filter((name) => name.endsWith(".json"))).toHaveLength(1);
    expect((await p.cli(["stop", "--timeout", "20"])).code).toBe(0);
    await start(p);
    expect(await graphStatus(p, ref)).toMatchObject({ node: "review", status: "waiting" });

    // GitHub answers again: the daemon's retry learns the login and decides the held answers in order.
    s.gh.userFailure = undefined;
    await waitFor("the run's end", async () => (await graphStatus(p, ref)).status === "done", { timeoutMs: 30_000, intervalMs: 200 });
    const events = await p.events();
    expect(events.filter((r) => r.event === "graph.gate_answer_released").map((r) => r.actor)).toEqual([SELF, "alice"]);
    expect(events.find((r) => r.event === "graph.gate_refused" && r.actor === SELF)).toMatchObject({ reason_code: "self-authored" });
    expect(events.filter((r) => r.event === "graph.gate_decided").map((r) => r.actor)).toEqual(["alice"]);
    expect(readdirSync(heldDir).filter((name) => name.endsWith(".json"))).toEqual([]);
    expect(refusalComments(s)).toEqual([]);
  });

  it("refuses at once when /user answers 403 (selfLogin unset), with one marked comment, and status names the fix", async () => {
    const s = await setup({}, 403);
    const { p, ref } = s;

    comment(s, SELF, APPROVE);
    await answered(s, SELF, ACTED);
    const refused = (await p.events()).find((r) => r.event === "graph.gate_refused" && r.actor === SELF);
    expect(refused).toMatchObject({ reason_code: "identity-unknown" });
    expect(await graphStatus(p, ref)).toMatchObject({ node: "review", status: "waiting" });
    await waitFor("the refusal comment", async () => refusalComments(s).length === 1);
    expect(refusalComments(s)[0]).toContain("integrations.github.selfLogin");

    comment(s, "alice", APPROVE);
    await answered(s, "alice", ACTED);
    expect(await graphStatus(p, ref)).toMatchObject({ node: "review", status: "waiting" });
    await waitFor("the second refusal comment", async () => refusalComments(s).length === 2);

    const status = await p.cli(["status", "--json"], ENV);
    const problems = jsonOf<{ problems: { code: string; message: string; fix: string }[] }>(status).problems;
    const problem = problems.find((entry) => entry.code === "self-login-unknown");
    expect(problem?.fix).toContain("integrations.github.selfLogin");
    expect(status.code).toBe(3);
  });

  it("with integrations.github.selfLogin set, never asks GitHub: the token's own answer is refused, alice's moves the gate", async () => {
    const s = await setup({ selfLogin: SELF }, 500);
    const { p, ref } = s;

    comment(s, SELF, APPROVE);
    await answered(s, SELF, ACTED);
    expect((await p.events()).find((r) => r.event === "graph.gate_refused" && r.actor === SELF)).toMatchObject({ reason_code: "self-authored" });
    comment(s, "alice", APPROVE);
    await waitFor("the run's end", async () => (await graphStatus(p, ref)).status === "done");
    expect(s.gh.requests.filter((r) => r.path === "/user")).toEqual([]);
  });
});
