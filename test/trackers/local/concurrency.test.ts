import { spawn } from "node:child_process";
import { promises as fs } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../../src/events/index.js";
import { LocalTracker } from "../../../src/trackers/local/index.js";
import { REPO_ROOT } from "../../support/cli.js";
import { tempDir } from "../../support/temp.js";
import { ref } from "./helpers.js";

// Each worker is a separate Node process running the compiled tracker, as the daemon and the CLI
// would: the project lock is the only thing keeping them apart.
const WORKER = `
const [trackerUrl, eventsUrl, trackerDir, eventLog, worker, rounds] = process.argv.slice(2);
const { LocalTracker } = await import(trackerUrl);
const { EventLog } = await import(eventsUrl);
const tracker = new LocalTracker({
  trackerDir,
  events: new EventLog({ path: eventLog, source: "cli" }),
  lock: { timeoutMs: 120000 },
});
const item = { tracker: "local", project: "demo", number: 1 };
for (let round = 0; round < Number(rounds); round++) {
  await tracker.addComment(item, "worker " + worker + " comment " + round, "worker-" + worker);
  await tracker.openItem({ project: "demo", title: "worker " + worker + " item " + round, actor: "worker-" + worker });
}
`;

function runWorker(script: string, args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`worker exited ${code}:\n${stderr}`))));
  });
}

describe("LocalTracker under concurrent writers", () => {
  it("loses nothing when several processes comment and open items at once", async () => {
    const workers = 6;
    const rounds = 8;
    const dir = await tempDir();
    const trackerDir = join(dir, "tracker");
    const eventLog = join(dir, "events.jsonl");
    const script = join(dir, "worker.mjs");
    await fs.writeFile(script, WORKER);
    const tracker = new LocalTracker({ trackerDir, events: new MemoryEventSink() });
    await tracker.openItem({ project: "demo", title: "shared", actor: "alice" });

    const trackerUrl = pathToFileURL(join(REPO_ROOT, "dist", "trackers", "local", "index.js")).href;
    const eventsUrl = pathToFileURL(join(REPO_ROOT, "dist", "events", "index.js")).href;
    const baseline = await tracker.changesSince({}, undefined);
    let finished = false;
    const writers = Promise.all(
      Array.from({ length: workers }, (_, worker) => runWorker(script, [trackerUrl, eventsUrl, trackerDir, eventLog, String(worker), String(rounds)])),
    ).finally(() => (finished = true));
    writers.catch(() => undefined); // reported by the await below, not as an unhandled rejection

    // Readers take no lock: while the writers run, what they see only ever grows, without gaps.
    let seenComments = 0;
    let readings = 0;
    while (!finished) {
      const comments = (await tracker.getItemWithComments(ref("demo", 1))).comments.length;
      expect(comments).toBeGreaterThanOrEqual(seenComments);
      seenComments = comments;
      const feed = await tracker.changesSince({}, baseline.cursor);
      expect(feed.changes.map((change) => change.id)).toEqual(feed.changes.map((_, i) => `demo:${i + 2}`));
      await tracker.listItems({ state: "all" });
      readings += 1;
    }
    await writers;
    expect(readings).toBeGreaterThan(0);

    const total = workers * rounds;
    const shared = await tracker.getItemWithComments(ref("demo", 1));
    const expectedBodies = Array.from({ length: workers }, (_, w) => Array.from({ length: rounds }, (_, r) => `worker ${w} comment ${r}`)).flat();
    expect(shared.comments.map((comment) => comment.body).sort()).toEqual(expectedBodies.sort());
    expect(new Set(shared.comments.map((comment) => comment.id)).size).toBe(total);
    // Each worker's own comments stay in the order it wrote them.
    for (let w = 0; w < workers; w++) {
      const mine = shared.comments.filter((comment) => comment.author === `worker-${w}`).map((comment) => comment.body);
      expect(mine).toEqual(Array.from({ length: rounds }, (_, r) => `worker ${w} comment ${r}`));
    }

    const items = await tracker.listItems({ state: "all" });
    expect(items.map((item) => item.item.number)).toEqual(Array.from({ length: total + 1 }, (_, i) => i + 1));
    expect(new Set(items.map((item) => item.title)).size).toBe(total + 1);

    const journal = await fs.readFile(join(trackerDir, "demo", "journal.jsonl"), "utf8");
    expect(journal.endsWith("\n")).toBe(true);
    const seqs = journal
      .trimEnd()
      .split("\n")
      .map((line) => (JSON.parse(line) as { seq: number }).seq);
    expect(seqs).toEqual(Array.from({ length: 2 * total + 1 }, (_, i) => i + 1));
    const timestamps = journal
      .trimEnd()
      .split("\n")
      .map((line) => (JSON.parse(line) as { ts: string }).ts);
    expect([...timestamps].sort()).toEqual(timestamps);

    const itemFiles = await fs.readdir(join(trackerDir, "demo", "items"));
    expect(itemFiles.filter((name) => name.endsWith(".tmp"))).toEqual([]);
    for (const name of itemFiles) JSON.parse(await fs.readFile(join(trackerDir, "demo", "items", name), "utf8"));
    expect(JSON.parse(await fs.readFile(join(trackerDir, "demo", "meta.json"), "utf8"))).toEqual({
      lastSeq: 2 * total + 1,
      lastNumber: total + 1,
    });

    const events = (await fs.readFile(eventLog, "utf8"))
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { event: string });
    expect(events.filter((event) => event.event === "item.commented")).toHaveLength(total);
    expect(events.filter((event) => event.event === "item.opened")).toHaveLength(total);
  }, 120_000);
});
