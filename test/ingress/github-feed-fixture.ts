import { afterEach } from "vitest";
import { MemoryEventSink } from "../../src/events/index.js";
import type { SourceBatch } from "../../src/ingress/poller.js";
import { GitHubClient } from "../../src/trackers/github/client.js";
import { GitHubFeed } from "../../src/ingress/github-feed/index.js";
import type { GitHubFeedOptions, GitHubReader } from "../../src/ingress/github-feed/index.js";
import { FakeGitHub } from "../support/fake-github.js";
import type { RequestLogEntry } from "../support/fake-github.js";
import { waitFor } from "../support/wait.js";

export const TOKEN = "ghp_feedTestToken_neverPrinted_5e1d";
export const LABEL = "the-loop";
export const REPO = "octo/repo";
const fakes: FakeGitHub[] = [];

afterEach(async () => {
  await Promise.all(fakes.splice(0).map((fake) => fake.stop()));
});

export interface FeedSetup {
  readonly gh: FakeGitHub;
  readonly client: GitHubClient;
  readonly feed: GitHubFeed;
  /** Refs with a live session. */
  readonly watched: Set<string>;
  /** What the feed itself reports. */
  readonly events: MemoryEventSink;
  ref(number: number, repo?: string): string;
  /** One read from the cursor of the previous one (the first is first sight). */
  cycle(): Promise<SourceBatch>;
  /** Two cycles whose changes are dropped (first sight and the one after it, at the start), so what happens next is news. */
  settle(): Promise<void>;
  /** The ids handed out over the next `cycles` cycles. */
  idsOver(cycles: number): Promise<string[]>;
  /** The cursor the next cycle reads from. */
  cursor(): string | undefined;
  /** The requests of one cycle. */
  requestsOf(run: () => Promise<unknown>): Promise<RequestLogEntry[]>;
}

export interface FeedSetupOptions extends Partial<GitHubFeedOptions> {
  /** The repositories the fake knows from the start (default: REPO). */
  readonly addRepos?: string[];
  /** What the feed reads through instead of the client itself. */
  readonly reader?: (client: GitHubClient, gh: FakeGitHub) => GitHubReader;
}

/** A GitHubFeed over a fresh FakeGitHub holding REPO, armed by LABEL. */
export async function setup(options: FeedSetupOptions = {}): Promise<FeedSetup> {
  const { addRepos = [REPO], reader, ...feedOptions } = options;
  const gh = await FakeGitHub.start({ token: TOKEN });
  fakes.push(gh);
  for (const repo of addRepos) gh.addRepo(repo);
  // No waiting inside the client: a rate limit reaches the feed and the poller at once.
  const client = new GitHubClient({
    apiUrl: gh.apiUrl,
    tokens: { token: () => Promise.resolve(TOKEN) },
    spaceWrites: false,
    retries: 0,
    rateLimitWaitSeconds: 0,
  });
  const watched = new Set<string>();
  const events = new MemoryEventSink();
  const repos = feedOptions.repos ?? [REPO];
  const feed = new GitHubFeed({
    key: `github:${repos.join(",")}`,
    client: reader ? reader(client, gh) : client,
    repos,
    label: LABEL,
    isWatched: (ref) => watched.has(ref),
    events,
    ...feedOptions,
  });
  let cursor: string | undefined;
  const cycle = async (): Promise<SourceBatch> => {
    const batch = await feed.read(cursor);
    cursor = batch.cursor;
    return batch;
  };
  return {
    gh,
    client,
    feed,
    watched,
    events,
    ref: (number, repo = REPO) => `github:${gh.host}/${repo}#${number}`,
    cycle,
    async settle() {
      await cycle();
      await cycle();
    },
    async idsOver(cycles) {
      const seen: string[] = [];
      for (let i = 0; i < cycles; i++) seen.push(...ids(await cycle()));
      return seen;
    },
    cursor: () => cursor,
    async requestsOf(run) {
      gh.clearRequests();
      await run();
      return [...gh.requests];
    },
  };
}

/** The ids of a batch's changes. */
export function ids(batch: SourceBatch): string[] {
  return batch.items.map((item) => item.id);
}

/** Waits (bounded) until a fresh second has just begun, so what follows happens within one second. */
export async function startOfSecond(): Promise<void> {
  await waitFor("the start of a second", () => (Date.now() % 1000 < 50 ? true : undefined), { timeoutMs: 3_000, intervalMs: 2 });
}
