import { afterEach, describe, expect, it } from "vitest";
import { HookServer, LifecycleHooks } from "../../src/sdk/hooks/index.js";
import type { SessionSpawnContext } from "../../src/sdk/hooks/index.js";
import { sendWebhook } from "../support/fake-github.js";
import { ARM, TOKEN, freePort, startGitHub, startProject } from "../support/github-project.js";

/**
 * A hook deciding slowly holds up its own work item only (R6.2), in the real daemon: one slot in
 * the pool of spawns, a remote `session_spawn` hook that keeps issue SLOW's launch waiting, and a
 * start on issue QUICK meanwhile, which spawns without waiting for it.
 */

const REPO = "octo/repo";
const SECRET = "webhook-secret-for-the-pool-test";
const START = "the-loop:start-execution";
const SLOW = 1;
const QUICK = 2;

let releaseSlow: () => void = () => undefined;
let slowAsked: () => void = () => undefined;

class HoldsSlow extends LifecycleHooks {
  override async sessionSpawn(context: SessionSpawnContext): Promise<undefined> {
    if (context.workItem.number === SLOW) {
      slowAsked();
      await new Promise<void>((resolve) => (releaseSlow = resolve));
    }
    return undefined;
  }
}

const servers: HookServer[] = [];

afterEach(async () => {
  releaseSlow();
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

describe("a slow hook in the real daemon", () => {
  it("holds up its own work item's launch, not another item's, with one slot in the pool", async () => {
    const gh = await startGitHub();
    gh.addRepo(REPO);
    const server = new HookServer(new HoldsSlow());
    servers.push(server);
    const hookUrl = await server.listen();
    const port = await freePort();
    const p = await startProject({
      polling: { enabled: false, sources: [] },
      github: { apiUrl: gh.apiUrl },
      webhooks: { ghWebhook: { enabled: true, port } },
      routing: { workspace: { enabled: false }, control: { requireStartCommand: true }, announce: { enabled: false }, maxConcurrentDispatches: 1 },
      hooks: [{ name: "holds-slow", url: hookUrl, on: ["session_spawn"], timeoutSeconds: 60 }],
    });
    const env = { GH_TOKEN: TOKEN, THE_LOOP_GH_WEBHOOK_SECRET: SECRET };
    const started = await p.cli(["start", "--json"], env);
    expect(started.code, started.stderr + started.stdout).toBe(0);
    for (const number of [SLOW, QUICK]) {
      expect(gh.addIssue(REPO, { title: `Issue ${number}`, user: "alice" })).toBe(number);
      gh.addLabel(REPO, number, ARM, { actor: "alice" });
    }
    const url = `http://127.0.0.1:${port}/gh-webhook`;
    const start = async (number: number): Promise<string> => {
      const added = gh.addComment(REPO, number, { user: "alice", body: START });
      const delivery = await sendWebhook(url, { event: "issue_comment", payload: gh.payload.issueComment(REPO, number, added), secret: SECRET });
      expect(delivery.status, delivery.body).toBe(202);
      return delivery.deliveryId;
    };

    const asked = new Promise<void>((resolve) => (slowAsked = resolve));
    const slow = await start(SLOW);
    await asked;
    const quick = await start(QUICK);
    await p.waitForEvent("the quick item's spawn while the slow one's hook decides", (r) => r.event === "session.spawned" && r.delivery_id === quick, 20_000);
    const events = await p.events();
    expect(events.some((r) => r.event === "session.spawned" && r.delivery_id === slow)).toBe(false);

    releaseSlow();
    await p.waitForEvent("the slow item's spawn once its hook answers", (r) => r.event === "session.spawned" && r.delivery_id === slow, 20_000);
  });
});
