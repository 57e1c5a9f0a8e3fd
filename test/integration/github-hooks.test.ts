import { afterEach, describe, expect, it } from "vitest";
import { isSelfAuthored } from "../../src/workitem/marker.js";
import { HookServer, LifecycleHooks } from "../../src/sdk/hooks/index.js";
import type { SessionSpawnContext, WorkItemStartContext } from "../../src/sdk/hooks/index.js";
import { sendWebhook } from "../support/fake-github.js";
import type { FakeGitHub } from "../support/fake-github.js";
import { ARM, TOKEN, freePort, startGitHub, startProject } from "../support/github-project.js";
import type { TestProject } from "../support/project.js";
import { count, tmuxSessions } from "../support/e2e.js";
import { waitFor } from "../support/wait.js";

/**
 * Lifecycle hooks end to end (docs/hooks.md): fake GitHub, signed webhook deliveries, the real
 * daemon with three remote hooks (JSON-RPC over loopback, hosted by the SDK's HookServer in this
 * process), real tmux and the fake harness. What each hook does depends on the issue's number, so
 * one daemon serves every case:
 * - `policy` (work_item_start) refuses issue REFUSED and outlasts its timeout on issue SLOW;
 * - `gate` (work_item_start, required) outlasts its timeout on issue GATED;
 * - `prefix` (session_spawn) prefixes every launch prompt.
 */

const REPO = "octo/repo";
const SECRET = "webhook-secret-for-the-hooks-test";
const START = "the-loop:start-execution";
const HOOK_TOKEN = "hook-bearer-token-never-logged";
const PREFIX = "[ACME engineering policy applies]";

const REFUSED = 1;
const PROMPTED = 2;
const SLOW = 3;
const GATED = 4;

/** Longer than the hooks' timeout: a call that takes it has failed by the time it answers. */
const OUTLAST_MS = 2_000;

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

class Policy extends LifecycleHooks {
  override async workItemStart(context: WorkItemStartContext): Promise<WorkItemStartContext | undefined> {
    if (context.workItem.number === REFUSED) return { ...context, proceed: false, reason: "this repository is frozen for the release" };
    if (context.workItem.number === SLOW) await pause(OUTLAST_MS);
    return undefined;
  }
}

class Gate extends LifecycleHooks {
  override async workItemStart(context: WorkItemStartContext): Promise<undefined> {
    if (context.workItem.number === GATED) await pause(OUTLAST_MS);
    return undefined;
  }
}

class Prefix extends LifecycleHooks {
  override sessionSpawn(context: SessionSpawnContext): SessionSpawnContext {
    return { ...context, prompt: `${PREFIX}\n\n${context.prompt}` };
  }
}

const ENV = { GH_TOKEN: TOKEN, THE_LOOP_GH_WEBHOOK_SECRET: SECRET, HOOK_TOKEN };

const servers: HookServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/** Fake GitHub with the four issues armed, the three hooks served, and the daemon started on them. */
async function setup() {
  const gh: FakeGitHub = await startGitHub();
  gh.addRepo(REPO);
  const hosted = [new HookServer(new Policy(), { token: HOOK_TOKEN }), new HookServer(new Gate()), new HookServer(new Prefix())];
  servers.push(...hosted);
  const [policyUrl, gateUrl, prefixUrl] = await Promise.all(hosted.map((server) => server.listen()));
  const port = await freePort();
  const p: TestProject = await startProject({
    polling: { enabled: false, sources: [] },
    github: { apiUrl: gh.apiUrl },
    webhooks: { ghWebhook: { enabled: true, port } },
    routing: { workspace: { enabled: false }, control: { requireStartCommand: true }, announce: { enabled: false } },
    hooks: [
      { name: "policy", url: policyUrl, tokenEnv: "HOOK_TOKEN", on: ["work_item_start"], timeoutSeconds: 0.5 },
      { name: "gate", url: gateUrl, on: ["work_item_start"], required: true, timeoutSeconds: 0.5 },
      { name: "prefix", url: prefixUrl, on: ["session_spawn"] },
    ],
  });
  const url = `http://127.0.0.1:${port}/gh-webhook`;
  const started = await p.cli(["start", "--json"], ENV);
  expect(started.code, started.stderr + started.stdout).toBe(0);
  const loaded = await p.waitForEvent("the hooks loaded", (r) => r.event === "hooks.loaded");
  expect(loaded.hooks).toEqual(["policy", "gate", "prefix"]);
  for (const number of [REFUSED, PROMPTED, SLOW, GATED]) {
    expect(gh.addIssue(REPO, { title: `Issue ${number}`, user: "alice" })).toBe(number);
    gh.addLabel(REPO, number, ARM, { actor: "alice" });
  }
  const refOf = (number: number): string => `github:${gh.host}/${REPO}#${number}`;
  /** A comment by alice on the issue, delivered as GitHub would; its delivery id. */
  const comment = async (number: number, body: string): Promise<string> => {
    const added = gh.addComment(REPO, number, { user: "alice", body });
    const delivery = await sendWebhook(url, { event: "issue_comment", payload: gh.payload.issueComment(REPO, number, added), secret: SECRET });
    expect(delivery.status, delivery.body).toBe(202);
    return delivery.deliveryId;
  };
  const start = (number: number): Promise<string> => comment(number, START);
  return { gh, p, refOf, comment, start };
}

describe("lifecycle hooks on GitHub (fake GitHub, remote hooks, real daemon and tmux)", () => {
  it("a remote hook refusing work_item_start leaves one marked comment naming it, and no session", async () => {
    const { gh, p, refOf, comment, start } = await setup();
    const deliveryId = await start(REFUSED);
    const refused = await p.waitForEvent("the refusal", (r) => r.event === "hooks.refused" && r.delivery_id === deliveryId);
    expect(refused).toMatchObject({
      point: "work_item_start",
      hook: "policy",
      reason: "this repository is frozen for the release",
      work_item: refOf(REFUSED),
      comment_posted: true,
    });
    const marked = gh.comments(REPO, REFUSED).filter((comment) => isSelfAuthored(comment.body));
    expect(marked).toHaveLength(1);
    expect(marked[0]?.body).toContain("`policy`");
    expect(marked[0]?.body).toContain("this repository is frozen for the release");
    const events = await p.events();
    expect(count(events, (r) => r.event === "session.spawned" && r.work_item === refOf(REFUSED))).toBe(0);
    expect(await tmuxSessions(p.socketName)).not.toContain(expect.stringContaining(`-${REFUSED}`));

    // Disarmed: the next comment starts nothing.
    const next = await comment(REFUSED, "Please go ahead anyway.");
    const held = await p.waitForEvent("the disarmed item's drop", (r) => r.event === "routing.dropped" && r.delivery_id === next);
    expect(held.reason).toBe("execution-stopped");
  });

  it("a prompt rewritten at session_spawn is what the harness boots on", async () => {
    const { p, refOf, start } = await setup();
    const deliveryId = await start(PROMPTED);
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned" && r.delivery_id === deliveryId);
    const boot = await waitFor("the boot line", async () =>
      (await p.transcript()).find((entry) => entry.type === "boot" && (entry.argv ?? []).some((arg) => arg.includes(refOf(PROMPTED)))),
    );
    const prompt = (boot.argv ?? []).find((arg) => arg.includes(refOf(PROMPTED))) ?? "";
    expect(prompt.startsWith(PREFIX)).toBe(true);
    const decided = await p.waitForEvent("the decision", (r) => r.event === "hooks.decided" && r.work_item === refOf(PROMPTED));
    expect(decided).toMatchObject({ point: "session_spawn", hook: "prefix", changed: ["prompt"] });
  });

  it("a hook that times out costs a hooks.failed, and the session still starts", async () => {
    const { p, refOf, start } = await setup();
    const deliveryId = await start(SLOW);
    const failed = await p.waitForEvent("the timeout", (r) => r.event === "hooks.failed" && r.work_item === refOf(SLOW));
    expect(failed).toMatchObject({ point: "work_item_start", hook: "policy", required: false });
    expect(String(failed.error)).toContain("timed out");
    await p.waitForEvent("the spawn", (r) => r.event === "session.spawned" && r.delivery_id === deliveryId);
  });

  it("the same timeout on a required hook refuses the start, naming the hook and the error", async () => {
    const { gh, p, refOf, start } = await setup();
    const deliveryId = await start(GATED);
    const refused = await p.waitForEvent("the refusal", (r) => r.event === "hooks.refused" && r.delivery_id === deliveryId);
    expect(refused).toMatchObject({ point: "work_item_start", hook: "gate", work_item: refOf(GATED) });
    expect(String(refused.reason)).toContain("gate");
    expect(String(refused.reason)).toContain("timed out");
    const marked = gh.comments(REPO, GATED).filter((comment) => isSelfAuthored(comment.body));
    expect(marked).toHaveLength(1);
    expect(count(await p.events(), (r) => r.event === "session.spawned" && r.work_item === refOf(GATED))).toBe(0);
  });

  it("never writes the hook's bearer token to the event log, and sends it to the hook that names it", async () => {
    const { p, start } = await setup();
    // The policy server answers only a request bearing the token: its refusal is the proof it was sent.
    await start(REFUSED);
    await p.waitForEvent("the refusal", (r) => r.event === "hooks.refused" && r.hook === "policy");
    const events = await p.events();
    expect(JSON.stringify(events)).not.toContain(HOOK_TOKEN);
  });
});
