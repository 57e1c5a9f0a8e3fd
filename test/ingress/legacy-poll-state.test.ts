import { existsSync, promises as fs } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/index.js";
import type { EventFields, EventType } from "../../src/events/index.js";
import { PollStateError } from "../../src/ingress/poll-state.js";
import type { PollState } from "../../src/ingress/poll-state.js";
import { resolvePollStateFile } from "../../src/ingress/legacy-poll-state.js";
import { Poller, trackerPollSource } from "../../src/ingress/poller.js";
import type { EventHandler, HandleResult, PollSourceRuntime } from "../../src/ingress/poller.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { GitHubClient } from "../../src/trackers/github/client.js";
import { GitHubFeed } from "../../src/ingress/github-feed/index.js";
import { FakeGitHub } from "../support/fake-github.js";
import { tempDir } from "../support/temp.js";
import { makeTracker, ref } from "../trackers/local/helpers.js";

const TOKEN = "ghp_legacyTestToken_neverPrinted_9a7c";
const fakes: FakeGitHub[] = [];

afterEach(async () => {
  await Promise.all(fakes.splice(0).map((fake) => fake.stop()));
});

class RecordingHandler implements EventHandler {
  readonly deliveries: string[] = [];
  handle(event: InboundEvent): Promise<HandleResult> {
    this.deliveries.push(event.deliveryId);
    return Promise.resolve({ settled: true });
  }
}

function emitted<T extends EventType>(events: MemoryEventSink, type: T): EventFields<T>[] {
  return events.events.filter((event) => event.type === type).map((event) => event.fields as EventFields<T>);
}

describe("resolvePollStateFile", () => {
  const paths = { pollStateFile: "/root/sessions/poll-state.json", legacyPollStateFile: "/project/.the-loop/poll-state.json" };
  const existing =
    (...files: string[]) =>
    (path: string) =>
      files.includes(path);

  it("keeps using the legacy file only while it exists and the new one does not", () => {
    expect(resolvePollStateFile(paths, existing(paths.legacyPollStateFile))).toEqual({ file: paths.legacyPollStateFile, legacy: true });
    expect(resolvePollStateFile(paths, existing())).toEqual({ file: paths.pollStateFile, legacy: false });
    expect(resolvePollStateFile(paths, existing(paths.pollStateFile))).toEqual({ file: paths.pollStateFile, legacy: false });
    expect(resolvePollStateFile(paths, existing(paths.pollStateFile, paths.legacyPollStateFile))).toEqual({
      file: paths.pollStateFile,
      legacy: false,
    });
  });

  it("never falls back when polling.stateFile is configured", () => {
    const explicit = { pollStateFile: "/srv/poll.json", legacyPollStateFile: null };
    expect(resolvePollStateFile(explicit, () => true)).toEqual({ file: "/srv/poll.json", legacy: false });
    expect(resolvePollStateFile(explicit, () => false)).toEqual({ file: "/srv/poll.json", legacy: false });
  });
});

describe("the legacy poll state file", () => {
  it("is read and written in place, with one warning per process naming the new location", async () => {
    const dir = await tempDir();
    const { tracker } = makeTracker(join(dir, "tracker"));
    const legacyFile = join(dir, "project", ".the-loop", "poll-state.json");
    const newFile = join(dir, "state", "sessions", "poll-state.json");
    await tracker.openItem({ project: "demo", title: "one", actor: "alice" });

    const events = new MemoryEventSink();
    const warnings: string[] = [];
    const make = (handler: EventHandler): Poller => {
      const file = resolvePollStateFile({ pollStateFile: newFile, legacyPollStateFile: legacyFile });
      return new Poller({
        sources: [trackerPollSource("local:*", tracker, {})],
        stateFile: file.file,
        ...(file.legacy ? { legacyState: { newFile } } : {}),
        warn: (message) => warnings.push(message),
        statusFile: join(dir, "state", "poll-status.json"),
        handler,
        events,
        intervalMs: 1000,
      });
    };

    // Written by an older version: it lives where the state root did not yet exist.
    await fs.mkdir(join(dir, "project", ".the-loop"), { recursive: true });
    await fs.writeFile(
      legacyFile,
      JSON.stringify({
        version: 1,
        sources: { "local:*": { cursor: JSON.stringify({ v: 1, projects: { demo: 1 } }), handled: [], attempts: {}, updatedAt: "2026-01-01T00:00:00.000Z" } },
      }),
    );
    await tracker.addComment(ref("demo", 1), "since the upgrade", "bob");

    const handler = new RecordingHandler();
    await make(handler).runOnce();
    expect(handler.deliveries).toEqual(["poll-demo:2"]);
    expect(emitted(events, "poll.baseline")).toEqual([]);
    const saved = JSON.parse(await fs.readFile(legacyFile, "utf8")) as PollState;
    expect(JSON.parse(saved.sources["local:*"]?.cursor ?? "")).toEqual({ v: 1, projects: { demo: 2 } });
    expect(existsSync(newFile)).toBe(false);

    // A second poller in the same process (a restart of the loop, a bench) does not repeat it.
    await make(new RecordingHandler()).runOnce();
    expect(emitted(events, "poll.legacy_state")).toEqual([{ legacy_file: legacyFile, new_file: newFile }]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(legacyFile);
    expect(warnings[0]).toContain(newFile);

    // Moved by the operator: the new location wins and nothing more is said.
    await fs.mkdir(join(dir, "state", "sessions"), { recursive: true });
    await fs.rename(legacyFile, newFile);
    await tracker.addComment(ref("demo", 1), "after the move", "bob");
    const moved = new RecordingHandler();
    await make(moved).runOnce();
    expect(moved.deliveries).toEqual(["poll-demo:3"]);
    expect(existsSync(legacyFile)).toBe(false);
    expect(warnings).toHaveLength(1);
  });

  it("refuses content that is neither shape, telling the operator to move it aside", async () => {
    const dir = await tempDir();
    const file = join(dir, "poll-state.json");
    const source: PollSourceRuntime = { key: "x", read: () => Promise.resolve({ cursor: "c", items: [] }) };
    const poller = (): Poller =>
      new Poller({
        sources: [source],
        stateFile: file,
        statusFile: join(dir, "status.json"),
        handler: new RecordingHandler(),
        events: new MemoryEventSink(),
        intervalMs: 1000,
      });
    for (const content of [
      { something: "else" },
      { items: { "github:octo/repo#1": { seenComments: ["IC_1"] } } },
      { items: { "not a ref": { seenComments: [], lastPolledAt: "2026-01-01T00:00:00Z" } } },
      { items: { "github:octo/repo#1": { seenComments: [], lastPolledAt: "yesterday" } } },
    ]) {
      await fs.writeFile(file, JSON.stringify(content));
      const error = await poller()
        .load()
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(PollStateError);
      expect((error as Error).message).toContain(file);
      expect((error as Error).message).toContain("move it aside");
    }
  });

  it("adopts an older per-item ledger: what was said since its last poll is forwarded, what it forwarded is not", async () => {
    const gh = await FakeGitHub.start({ token: TOKEN });
    fakes.push(gh);
    gh.addRepo("octo/repo");
    const client = new GitHubClient({ apiUrl: gh.apiUrl, tokens: { token: () => Promise.resolve(TOKEN) }, spaceWrites: false, retries: 0 });
    const issue = gh.addIssue("octo/repo", { title: "armed", user: "alice", labels: ["the-loop"] });
    gh.addComment("octo/repo", issue, { user: "alice", body: "long ago" });
    gh.advance(10);
    const lastPolledAt = gh.now();
    const forwarded = gh.addComment("octo/repo", issue, { user: "alice", body: "seen by the old poller" });
    const missed = gh.addComment("octo/repo", issue, { user: "alice", body: "same second, not seen" });
    gh.advance(10);
    const later = gh.addComment("octo/repo", issue, { user: "alice", body: "while it was stopped" });

    const dir = await tempDir();
    const stateFile = join(dir, "poll-state.json");
    await fs.writeFile(
      stateFile,
      JSON.stringify({
        items: {
          [`github:${gh.host}/octo/repo#${issue}`]: { seenComments: [forwarded.node_id], lastPolledAt },
          // Another source's repository and the local tracker say nothing about this source.
          [`github:${gh.host}/octo/elsewhere#3`]: { seenComments: [], lastPolledAt: "2030-01-01T00:00:00Z" },
          "local:demo#1": { seenComments: [], lastPolledAt: "2030-01-01T00:00:00Z" },
        },
      }),
    );
    const feed = new GitHubFeed({ key: "github:octo/repo", client, repos: ["octo/repo"], label: "the-loop", isWatched: () => false });
    const events = new MemoryEventSink();
    const handler = new RecordingHandler();
    const poller = new Poller({ sources: [feed], stateFile, statusFile: join(dir, "status.json"), handler, events, intervalMs: 1000 });

    await poller.runOnce();
    expect(emitted(events, "poll.baseline")).toEqual([]);
    expect(handler.deliveries).toEqual([`poll-comment-${missed.id}`, `poll-comment-${later.id}`]);
    const saved = JSON.parse(await fs.readFile(stateFile, "utf8")) as PollState;
    expect(saved.version).toBe(1);
    expect(Object.keys(saved.sources)).toEqual(["github:octo/repo"]);

    // The labelled item is taken as armed already: no `labeled` for it, now or later.
    await poller.runOnce();
    expect(handler.deliveries).toHaveLength(2);
  });

  it("starts a source the ledger does not cover from now", async () => {
    const dir = await tempDir();
    const stateFile = join(dir, "poll-state.json");
    await fs.writeFile(stateFile, JSON.stringify({ items: { "github:octo/other#1": { seenComments: [], lastPolledAt: "2026-01-01T00:00:00Z" } } }));
    const events = new MemoryEventSink();
    const source: PollSourceRuntime = { key: "local:*", read: () => Promise.resolve({ cursor: "now", items: [] }) };
    await new Poller({
      sources: [source],
      stateFile,
      statusFile: join(dir, "status.json"),
      handler: new RecordingHandler(),
      events,
      intervalMs: 1000,
    }).runOnce();
    expect(emitted(events, "poll.baseline")).toEqual([{ poll_source: "local:*" }]);
  });
});
