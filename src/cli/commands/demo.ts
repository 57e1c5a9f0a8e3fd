import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configSchema } from "../../config/schema.js";
import { EventLog } from "../../events/log.js";
import { readEvents } from "../../events/reader.js";
import { isSelfAuthored, markSelfAuthored } from "../../routing/marker.js";
import { deriveStatePaths } from "../../state/layout.js";
import { LocalTracker } from "../../trackers/local/index.js";
import type { TrackerChange } from "../../trackers/tracker.js";
import type { LocalRef } from "../../workitem/ref.js";
import type { GlobalOptions } from "../context.js";
import { formatTable, stderr, stdout } from "../output.js";
import { printEventTable } from "./events.js";
import { printItem } from "./item.js";

export interface DemoOptions {
  readonly keep: boolean;
}

const ARMING_LABEL = "the-loop: auto-execute";
const STEPS = 7;

/**
 * The README's main job on the embedded default: the local tracker flow end to end, through the
 * same tracker, journal, change feed and event log the daemon uses, in a throwaway state root —
 * no network, no credentials, nothing outside that folder touched.
 */
export async function runDemo(globals: GlobalOptions, options: DemoOptions): Promise<void> {
  if (globals.config) stderr.line("note: the demo ignores --config; it runs on the defaults in a throwaway state root");
  const root = await realpath(await mkdtemp(join(tmpdir(), "the-loop-demo-")));
  try {
    await narrate(root);
  } finally {
    if (options.keep) {
      stdout.line(`\nThe state root is kept at ${root}; look around, then remove it when done.`);
      stdout.line(`  the-loop events --file ${join(root, "logs", "events.jsonl")}`);
    } else {
      await rm(root, { recursive: true, force: true });
    }
  }
}

async function narrate(root: string): Promise<void> {
  const config = configSchema.parse({ state: { root }, integrations: { local: { project: "demo" } } });
  const paths = deriveStatePaths(config, root);
  const events = new EventLog({ path: paths.eventLog, source: "demo", onWriteError: (message) => stderr.warn(message) });
  const tracker = new LocalTracker({ trackerDir: paths.trackerDir, events });
  let step = 0;
  const say = (text: string): void => {
    step += 1;
    stdout.line(`${stdout.paint("cyan", `[${step}/${STEPS}]`)} ${text}`);
  };
  const detail = (text: string): void => stdout.line(stdout.paint("dim", `      ${text}`));

  stdout.line(stdout.paint("bold", "the-loop demo: the local tracker, end to end"));
  stdout.line(`state root: ${root} (a throwaway folder; nothing else is touched)\n`);

  const opened = await tracker.openItem({
    project: "demo",
    title: "Add a /healthz endpoint",
    body: "The load balancer needs a cheap liveness probe: GET /healthz answering 200 with {\"status\":\"ok\"}.",
    actor: "alice",
  });
  const ref: LocalRef = { tracker: "local", project: "demo", number: opened.item.number };
  say(`alice opens ${stdout.paint("bold", opened.item.ref)} "${opened.title}" on the local tracker`);
  detail(`journal ${paths.trackerDir}/demo/journal.jsonl, snapshot …/items/${ref.number}.json`);

  const baseline = await tracker.changesSince({}, undefined);
  say("the poller sees the tracker for the first time and takes a baseline");
  detail(`cursor ${baseline.cursor}: history before it is not replayed (${baseline.changes.length} changes)`);

  await tracker.addLabels(ref, [ARMING_LABEL], "alice");
  say(`alice labels it "${ARMING_LABEL}" — that arms it; a person still has to start a run`);

  await tracker.addComment(ref, "Please keep it dependency-free and add a test.", "alice");
  say("alice comments with instructions for the agent");

  await tracker.postComment(ref, markSelfAuthored("Thanks — noted. (This is the-loop speaking.)"));
  say("the-loop posts a comment of its own, stamped with the loop-prevention marker");
  detail("anything carrying the marker is never read back as input, whoever its author");

  await tracker.setState(ref, "closed", "alice");
  say("alice closes the work item");

  const feed = await tracker.changesSince({}, baseline.cursor);
  say(`the change feed since the baseline — what the poller turns into events (${feed.changes.length} changes):`);
  stdout.line(
    formatTable(
      ["CHANGE", "KIND", "ACTOR", "DETAIL"],
      feed.changes.map((change) => [change.id, change.kind, change.actor ?? "(unknown)", describe(change)]),
    )
      .split("\n")
      .map((line) => `      ${line}`)
      .join("\n"),
  );

  stdout.line(`\n${stdout.paint("bold", "The work item now")} (the-loop item show ${opened.item.ref})\n`);
  printItem(await tracker.getItemWithComments(ref));

  const log = await readEvents(paths.eventLog, {}, { limit: 0 });
  stdout.line(`\n${stdout.paint("bold", "The event log")} (the-loop events): ${paths.eventLog}\n`);
  printEventTable(log.events);

  stdout.line(`\nDone: ${log.events.length} events recorded, every change in the journal and the feed.`);
  stdout.line("Try it in your own project: the-loop init, then the-loop item new \"…\", the-loop events.");
}

function describe(change: TrackerChange): string {
  switch (change.kind) {
    case "opened":
      return `"${change.title ?? ""}"`;
    case "commented":
      return isSelfAuthored(change.comment?.body) ? "comment (marked: never read back as input)" : "comment";
    case "labeled":
    case "unlabeled":
      return `"${change.label ?? ""}"`;
    default:
      return `state: ${change.state}`;
  }
}
