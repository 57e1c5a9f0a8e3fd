import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryEventSink } from "../../src/events/index.js";
import { GitHubFeed } from "../../src/ingress/github-feed/index.js";
import { Poller } from "../../src/ingress/poller.js";
import type { PollerStatus } from "../../src/ingress/poller.js";
import type { InboundEvent } from "../../src/routing/inbound.js";
import { PostgresDatabase } from "../../src/state/postgres/database.js";
import { PostgresDocumentStore } from "../../src/state/postgres/document-store.js";
import { PostgresSourceLocks } from "../../src/state/postgres/source-locks.js";
import { GitHubClient } from "../../src/trackers/github/client.js";
import { FakeGitHub } from "../support/fake-github.js";
import { postgresServer } from "../support/postgres.js";
import { tempDir } from "../support/temp.js";
import { waitFor } from "../support/wait.js";

/**
 * Two daemons' pollers on one real PostgreSQL server against one (fake) GitHub (docs/scale.md,
 * "One poller per source"): only the holder of a source's lock reads it; when its connection dies
 * the other takes the source over, from the cursor and ETags the first stored — its first requests
 * are conditional, answered 304, and nothing is handed out again.
 */

const cluster = postgresServer();
const REPO = "octo/repo";
const LABEL = "the-loop";
const open: { close(): Promise<void> }[] = [];

afterEach(async () => {
  for (const closable of open.splice(0).reverse()) await closable.close();
});

interface PollerSide {
  readonly poller: Poller;
  readonly events: MemoryEventSink;
  readonly handled: InboundEvent[];
  readonly statusFile: string;
}

async function side(url: string, name: string, gh: FakeGitHub): Promise<PollerSide> {
  const database = await PostgresDatabase.open({ url, name, lockTimeoutMs: 2_000 });
  open.push(database);
  const client = new GitHubClient({
    apiUrl: gh.apiUrl,
    tokens: { token: () => Promise.resolve("ghp_shared") },
    spaceWrites: false,
    retries: 0,
    rateLimitWaitSeconds: 0,
  });
  const events = new MemoryEventSink();
  const handled: InboundEvent[] = [];
  const statusFile = join(await tempDir(), "poll-status.json");
  const key = `github:${REPO}`;
  const poller = new Poller({
    sources: [new GitHubFeed({ key, client, repos: [REPO], label: LABEL, isWatched: () => false, events })],
    stateFile: join(await tempDir(), "unused.json"),
    stateDocument: new PostgresDocumentStore({ name: "poll-state", database }),
    claims: new PostgresSourceLocks(database, name),
    statusFile,
    handler: {
      handle: async (event) => {
        handled.push(event);
        return { settled: true };
      },
    },
    events,
    intervalMs: 60_000,
  });
  open.push(poller);
  return { poller, events, handled, statusFile };
}

const typesOf = (events: MemoryEventSink, type: string): Record<string, unknown>[] =>
  events.events.filter((event) => event.type === type).map((event) => event.fields);

describe("one poller per source on a shared database", () => {
  it("lets only the lock's holder read a repository, and hands it over with its cursor and ETags when the holder's connection dies", async () => {
    const url = await cluster.freshDatabase();
    const gh = await FakeGitHub.start();
    open.push({ close: () => gh.stop() });
    gh.addRepo(REPO);
    const issue = gh.addIssue(REPO, { title: "armed", user: "alice", labels: [LABEL] });
    const a = await side(url, "box-a", gh);
    const b = await side(url, "box-b", gh);

    // box-a comes first: it takes the source and sees it for the first time.
    await a.poller.runOnce();
    expect(typesOf(a.events, "poll.source_taken")).toEqual([expect.objectContaining({ poll_source: `github:${REPO}`, daemon: "box-a" })]);
    expect(typesOf(a.events, "poll.baseline")).toHaveLength(1);
    // box-b polls nothing: not one request reaches GitHub from it.
    gh.clearRequests();
    await b.poller.runOnce();
    await b.poller.runOnce();
    expect(gh.requests).toEqual([]);
    expect(typesOf(b.events, "poll.source_skipped")).toEqual([expect.objectContaining({ poll_source: `github:${REPO}`, daemon: "box-b", holder: "box-a" })]);

    // A comment is handed out once, by the holder.
    const first = gh.addComment(REPO, issue, { user: "alice", body: "please fix" });
    await a.poller.runOnce();
    await b.poller.runOnce();
    expect(a.handled.map((event) => event.commentId)).toEqual([String(first.id)]);
    expect(b.handled).toEqual([]);
    // An idle cycle of the holder: every listing is conditional, and its ETags are stored with the cursor.
    gh.clearRequests();
    await a.poller.runOnce();
    const idle = gh.requests.map((request) => [request.path, request.status, request.ifNoneMatch]);
    expect(idle.map(([, status]) => status)).toEqual([304, 304, 304]);
    expect(JSON.parse(readFileSync(b.statusFile, "utf8")) as PollerStatus).toMatchObject({ sources: { [`github:${REPO}`]: { here: false, by: "box-a" } } });
    expect(JSON.parse(readFileSync(a.statusFile, "utf8")) as PollerStatus).toMatchObject({ sources: { [`github:${REPO}`]: { here: true, by: "box-a" } } });

    // box-a's lock connection dies (as with a kill -9 or a lost network): the server frees its lock.
    const killer = await PostgresDatabase.open({ url, name: "test", lockTimeoutMs: 2_000 });
    open.push(killer);
    const { rows } = await killer.pool.query<{ ended: boolean }>(
      "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = 'the-loop box-a poller'",
    );
    expect(rows.map((row) => row.ended)).toEqual([true]);

    // box-b takes it over, and its first requests are the holder's: conditional, with the same ETags, answered 304.
    gh.clearRequests();
    await waitFor("box-b takes the source", async () => {
      await b.poller.runOnce();
      return typesOf(b.events, "poll.source_taken").length > 0 ? true : undefined;
    });
    expect(typesOf(b.events, "poll.source_taken")).toEqual([expect.objectContaining({ poll_source: `github:${REPO}`, daemon: "box-b", from: "box-a" })]);
    expect(gh.requests.map((request) => [request.path, request.status, request.ifNoneMatch])).toEqual(idle);
    expect(b.handled).toEqual([]);
    expect(typesOf(b.events, "poll.baseline")).toEqual([]);

    // box-a finds its lock gone and leaves the source to box-b; a new comment is box-b's alone.
    gh.clearRequests();
    await a.poller.runOnce();
    expect(gh.requests).toEqual([]);
    expect(typesOf(a.events, "poll.source_skipped")).toEqual([expect.objectContaining({ poll_source: `github:${REPO}`, daemon: "box-a", holder: "box-b" })]);
    const second = gh.addComment(REPO, issue, { user: "alice", body: "and this" });
    await a.poller.runOnce();
    await b.poller.runOnce();
    expect(b.handled.map((event) => event.commentId)).toEqual([String(second.id)]);
    expect(a.handled.map((event) => event.commentId)).toEqual([String(first.id)]);
  });
});
