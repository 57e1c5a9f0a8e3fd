import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/load.js";
import { composeRuntime } from "../../src/daemon/runtime.js";
import { EventLog } from "../../src/events/log.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { parseWorkItemRef, workItemOf } from "../../src/workitem/index.js";
import type { WorkItem } from "../../src/workitem/index.js";
import { jsonOf } from "../support/cli.js";
import { testProject } from "../support/project.js";
import type { TestProject } from "../support/project.js";
import { ARM } from "../support/builders.js";

const ITEMS = 8;
const run = promisify(execFile);
let project: TestProject | undefined;

afterEach(async () => {
  await project?.cleanup();
  project = undefined;
});

interface ItemJson {
  ref: string;
  id: string;
  url: string;
}

describe("the daemon and another process racing to start the same sessions", () => {
  it("never leaves two live sessions for one work item", async () => {
    project = await testProject();
    const p = project;
    // A second process's dispatcher — what `the-loop sessions start` will run — on the same state root.
    const loaded = await loadConfig({ cwd: p.dir });
    const events = new EventLog({ path: loaded.paths.eventLog, source: "sessions" });
    const runtime = composeRuntime({ ...loaded, baseDir: loaded.baseDir, configFile: loaded.source.path ?? undefined, events });
    const rival = await runtime.dispatcher();

    expect((await p.cli(["start"])).code).toBe(0);
    await p.waitForEvent("the baseline", (r) => r.event === "poll.baseline");
    const items: WorkItem[] = [];
    for (let n = 1; n <= ITEMS; n++) {
      const created = jsonOf<ItemJson>(await p.cli(["item", "new", `Task ${n}`, "--json", "--as", "alice"]));
      items.push(workItemOf(parseWorkItemRef(created.ref), { kind: "issue", url: created.url, id: created.id }));
    }

    const rivalEvent = (item: WorkItem): InboundEvent => ({
      source: "cli",
      deliveryId: `cli-race-${item.number}`,
      kind: "labeled",
      trackerEvent: "cli:start",
      workItems: [item],
      actor: "alice",
      body: null,
      labels: [ARM],
      label: ARM,
      itemState: "open",
      title: `Task ${item.number}`,
      occurredAt: new Date().toISOString(),
      excerpt: {},
    });
    const arm = (item: WorkItem) => p.cli(["item", "label", `#${item.number}`, "--add", ARM, "--as", "alice"]);
    // Half the items: the rival starts first and the daemon's spawn arrives while it runs. The
    // other half: the daemon has decided to spawn and the rival comes in during that spawn.
    const half = ITEMS / 2;
    const rivalFirst = items.slice(0, half).map(async (item) => {
      const handled = rival.handle(rivalEvent(item));
      await arm(item);
      return handled;
    });
    const daemonFirst = items.slice(half).map(async (item) => {
      await arm(item);
      await p.waitForEvent(`the daemon's decision on ${item.ref}`, (r) => r.source === "daemon" && r.event === "routing.routed" && r.work_item === item.ref);
      return rival.handle(rivalEvent(item));
    });
    const arming = Promise.all(rivalFirst);
    const rivals = Promise.all(daemonFirst);
    await Promise.all([arming, rivals]);
    for (const item of items) {
      await p.waitForEvent(
        `the daemon to handle ${item.ref}`,
        (r) => r.source === "daemon" && r.work_item === item.ref && ["session.spawned", "dispatch.succeeded", "dispatch.dropped"].includes(String(r.event)),
      );
    }
    await rival.drain();

    const all = await p.events();
    const spawners = new Set(all.filter((r) => r.event === "session.spawned").map((r) => r.source));
    // Both sides won some: the race was real.
    expect([...spawners].sort()).toEqual(["daemon", "sessions"]);
    for (const item of items) {
      expect(
        all.filter((r) => r.event === "session.spawned" && r.work_item === item.ref),
        item.ref,
      ).toHaveLength(1);
    }
    const listed = jsonOf<{ sessions: { workItem: { ref: string }; status: string }[] }>(await p.cli(["sessions", "list", "--json", "--status", "live"]));
    expect(listed.sessions.map((s) => s.workItem.ref).sort()).toEqual(items.map((item) => item.ref).sort());
    const { stdout } = await run("tmux", ["-L", p.socketName, "list-sessions", "-F", "#{session_name}"]);
    expect(stdout.trim().split("\n")).toHaveLength(ITEMS);
  });
});
