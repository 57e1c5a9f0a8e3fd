import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/index.js";
import { Poller } from "../../src/ingress/index.js";
import type { EventHandler, HandleResult, PollState } from "../../src/ingress/index.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { REPO_ROOT } from "../support/cli.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";
import { makeTracker, ref } from "../trackers/local/helpers.js";

const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const SRC = pathToFileURL(join(REPO_ROOT, "src")).href;

/**
 * A poller in its own process: it settles demo:3 at once and never answers demo:4, so its cycle
 * is still running — demo:3 settled, the cursor not yet moved — when the test kills it.
 */
const CHILD = `
import { MemoryEventSink } from "${SRC}/events/index.js";
import { Poller } from "${SRC}/ingress/index.js";
import { LocalTracker } from "${SRC}/trackers/local/index.js";

const [trackerDir, stateFile, statusFile] = process.argv.slice(2);
const events = new MemoryEventSink();
const tracker = new LocalTracker({ trackerDir, events });
const handler = {
  handle: (event) => (event.deliveryId === "poll-demo:3" ? Promise.resolve({ settled: true }) : new Promise(() => {})),
};
setInterval(() => {}, 60_000);
await new Poller({ sources: [{ key: "local:*", tracker, scope: {} }], stateFile, statusFile, handler, events, intervalMs: 1000 }).runOnce();
`;

class RecordingHandler implements EventHandler {
  readonly deliveries: string[] = [];
  handle(event: InboundEvent): Promise<HandleResult> {
    this.deliveries.push(event.deliveryId);
    return Promise.resolve({ settled: true });
  }
}

describe("Poller across a kill -9", () => {
  it("never hands out again a change settled before the kill", async () => {
    const dir = await tempDir();
    const trackerDir = join(dir, "tracker");
    const stateFile = join(dir, "poll-state.json");
    const statusFile = join(dir, "poll-status.json");
    const { tracker } = makeTracker(trackerDir);
    const poller = (handler: EventHandler): Poller =>
      new Poller({ sources: [{ key: "local:*", tracker, scope: {} }], stateFile, statusFile, handler, events: new MemoryEventSink(), intervalMs: 1000 });

    await tracker.openItem({ project: "demo", title: "one", actor: "alice" });
    await tracker.openItem({ project: "demo", title: "two", actor: "alice" });
    await poller(new RecordingHandler()).runOnce();
    await tracker.addComment(ref("demo", 1), "settled before the kill", "bob");
    await tracker.addComment(ref("demo", 2), "in flight at the kill", "bob");

    const script = join(dir, "child.mts");
    await fs.writeFile(script, CHILD);
    const child = spawn(process.execPath, ["--import", TSX_LOADER, script, trackerDir, stateFile, statusFile], {
      cwd: REPO_ROOT,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
    try {
      await waitFor("demo:3 settled on disk by the child", async () => {
        if (child.exitCode !== null) throw new Error(`the child exited early:\n${stderr}`);
        const state = JSON.parse(await fs.readFile(stateFile, "utf8")) as PollState;
        return state.sources["local:*"]?.handled.includes("demo:3") ? true : undefined;
      });
    } finally {
      child.kill("SIGKILL");
    }
    expect(await exited).toBe("SIGKILL");

    const handler = new RecordingHandler();
    expect(await poller(handler).runOnce()).toMatchObject({ changes: 1, dispatched: 1, errors: 0 });
    expect(handler.deliveries).toEqual(["poll-demo:4"]);
  });
});
