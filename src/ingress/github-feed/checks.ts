import { createHash } from "node:crypto";
import { messageOf } from "../../errors.js";
import type { EventSink } from "../../events/index.js";
import { isFailingConclusion, isFailingStatus } from "../../routing/feedback.js";
import { formatWorkItemRef, parseWorkItemRef } from "../../workitem/index.js";
import type { GitHubRef } from "../../workitem/index.js";
import { inboundFromGitHub } from "../github-events.js";
import { branchIssueNumber, closingReferences } from "../github-links.js";
import type { PollSourceRuntime, SourceBatch, SourceItem } from "../source.js";
import { ConditionalReads } from "./conditional.js";
import type { GitHubReader } from "./conditional.js";
import { PULL, rateLimitOf } from "./rest-shapes.js";
import type { PollInterval, RateLimitLike } from "./rest-shapes.js";

/**
 * The CI of the pull requests live sessions work on, polled (docs/github.md#ci-failures): per
 * pull request, its head commit's check runs and combined status, every read conditional on the
 * ETag of the last answer, so that a cycle in which nothing changed is answered 304 throughout
 * and costs no rate limit. Each failing check is shaped into the webhook payload GitHub would
 * have sent for it (`check_run` completed, `status`) and normalized by the receiver's own
 * function: from there it takes the webhook's path — the pull request found by the commit, the
 * log allowed or not, one message per head commit and check whichever way it came first.
 *
 * Which pull requests: those bound to a live session (the session's own, or linked to its work
 * item), and the open pull requests of the polled repositories that would reach one — closing
 * its item, or on a branch named after it — so that the agent's new pull request is watched
 * before any comment on it linked it.
 */

const OPEN_PULLS = "GET /repos/{owner}/{repo}/pulls";
const CHECK_RUNS = "GET /repos/{owner}/{repo}/commits/{ref}/check-runs";
const COMBINED_STATUS = "GET /repos/{owner}/{repo}/commits/{ref}/status";

/**
 * The cursor: the failures handed out that still fail (by a short hash of their ids), so that a
 * read hands out only failures it has not handed out before. A failure that passes drops out of
 * it, and is news again if it fails once more on the same commit (told once all the same: the
 * delivery remembers its key). The ETags are kept in memory only.
 */
interface ChecksCursor {
  readonly v: 1;
  readonly seen: readonly string[];
}

/** More than any daemon's live pull requests fail at once; the oldest are let go first. */
const SEEN_MAX = 2_000;

/** Pure: the cursor's text, or (unreadable: an older or damaged one) the empty cursor. */
export function parseChecksCursor(text: string): ChecksCursor {
  try {
    const parsed = JSON.parse(text) as unknown;
    const seen = record(parsed)?.seen;
    if (record(parsed)?.v === 1 && Array.isArray(seen) && seen.every((entry) => typeof entry === "string")) return { v: 1, seen: seen as string[] };
  } catch {
    // Not JSON: read as the empty cursor, which hands out what fails now once more (told once all the same).
  }
  return { v: 1, seen: [] };
}

/** Pure: a failure's id as the cursor keeps it. */
export function seenKey(id: string): string {
  return createHash("sha256").update(id).digest("base64url").slice(0, 16);
}

export interface GitHubChecksFeedOptions {
  /** The poll source key. */
  readonly key: string;
  readonly client: GitHubReader;
  /** The polled repositories (`owner/repo`, on the client's host): their open pull requests are looked through. */
  readonly repos: readonly string[];
  /** The pull requests of live sessions, as refs: their own, and those bound to their items. */
  readonly watchedPullRequests: () => readonly string[];
  /** Whether a work item has a live session. */
  readonly isLive: (ref: string) => boolean;
  /** Told about shaped payloads the normalizer refused (`poll.rejected`). */
  readonly events?: EventSink;
  readonly now?: () => Date;
}

/** A pull request as the source reads it. */
export interface PullHead {
  readonly ref: string;
  readonly owner: string;
  readonly repo: string;
  readonly number: number;
  readonly sha: string;
}

/** A failing check found on a pull request's head: its poll id and the payload GitHub would have sent. */
export interface FoundFailure {
  readonly id: string;
  readonly name: "check_run" | "status";
  readonly payload: Record<string, unknown>;
}

type Json = Readonly<Record<string, unknown>>;

function record(value: unknown): Json | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}

/** The ref of pull request `number` of `owner/repo` on `host`; undefined for a name GitHub would not give. */
export function pullRef(host: string, owner: string, repo: string, number: number): GitHubRef | undefined {
  try {
    const ref = parseWorkItemRef(`github:${host === "github.com" ? "" : `${host}/`}${owner}/${repo}#${number}`);
    return ref.tracker === "github" ? ref : undefined;
  } catch {
    // A repository name GitHub would not give: nothing to read.
    return undefined;
  }
}

/**
 * Pure: an open pull request of a listing as the source reads it, and whether its CI is watched —
 * it is bound to a live session (`watched`), or it would reach one: a closing reference in its
 * body, or (from a branch of the repository) its branch's number, names an item with a live
 * session. Undefined for what is not an open pull request with a head commit.
 */
export function watchedPull(raw: unknown, host: string, watched: ReadonlySet<string>, isLive: (ref: string) => boolean): PullHead | undefined {
  const pull = record(raw);
  const head = record(pull?.head);
  const base = record(record(pull?.base)?.repo);
  if (pull === undefined || head === undefined || typeof pull.number !== "number" || typeof head.sha !== "string" || pull.state !== "open") return undefined;
  const fullName = typeof base?.full_name === "string" ? base.full_name : undefined;
  const [owner = "", repo = ""] = (fullName ?? "").split("/");
  const ref = pullRef(host, owner, repo, pull.number);
  if (ref === undefined) return undefined;
  const text = formatWorkItemRef(ref);
  const found: PullHead = { ref: text, owner, repo, number: pull.number, sha: head.sha.toLowerCase() };
  if (watched.has(text.toLowerCase())) return found;
  const context = { host: ref.host, owner, repo, number: pull.number };
  const body = typeof pull.body === "string" ? pull.body : "";
  if (closingReferences(body, context).some((target) => isLive(formatWorkItemRef(target)))) return found;
  const headRepo = record(head.repo)?.full_name;
  const fromRepository = typeof headRepo === "string" && fullName !== undefined && headRepo.toLowerCase() === fullName.toLowerCase();
  const branch = fromRepository ? branchIssueNumber(typeof head.ref === "string" ? head.ref : "") : undefined;
  const named = branch === undefined ? undefined : pullRef(host, owner, repo, branch);
  return named !== undefined && isLive(formatWorkItemRef(named)) ? found : undefined;
}

/**
 * Pure: the failing checks of a pull request's head, from GitHub's answers for the commit's check
 * runs and combined status, each as the webhook payload GitHub sends for it. A check run counts
 * once completed with a failing conclusion (the rule the webhook applies), a status when failed or
 * errored; anything not shaped as GitHub documents it is passed over.
 */
export function failuresOf(pull: PullHead, checkRuns: unknown, combined: unknown, repository: Record<string, unknown>): FoundFailure[] {
  const found: FoundFailure[] = [];
  const at = `${pull.ref}@${pull.sha}`;
  const runs = record(checkRuns)?.check_runs;
  for (const raw of Array.isArray(runs) ? runs : []) {
    const run = record(raw);
    if (run === undefined || typeof run.name !== "string" || run.status !== "completed" || !isFailingConclusion(run.conclusion as string | null)) continue;
    if (typeof run.head_sha !== "string" || run.head_sha.toLowerCase() !== pull.sha) continue;
    found.push({ id: `checks:${at}:run:${run.name}`, name: "check_run", payload: { action: "completed", check_run: run, repository, sender: null } });
  }
  const statuses = record(combined)?.statuses;
  for (const raw of Array.isArray(statuses) ? statuses : []) {
    const status = record(raw);
    if (status === undefined || typeof status.context !== "string" || !isFailingStatus(status.state as string | null)) continue;
    found.push({
      id: `checks:${at}:status:${status.context}`,
      name: "status",
      payload: {
        ...(typeof status.id === "number" ? { id: status.id } : {}),
        sha: pull.sha,
        state: status.state,
        context: status.context,
        target_url: typeof status.target_url === "string" ? status.target_url : null,
        repository,
        sender: null,
      },
    });
  }
  return found;
}

export class GitHubChecksFeed implements PollSourceRuntime {
  readonly key: string;
  private readonly client: GitHubReader;
  private readonly host: string;
  private readonly repos: readonly { readonly key: string; readonly owner: string; readonly repo: string }[];
  private readonly reads: ConditionalReads;
  private readonly now: () => Date;

  constructor(private readonly options: GitHubChecksFeedOptions) {
    this.key = options.key;
    this.client = options.client;
    this.host = options.client.host.toLowerCase();
    this.reads = new ConditionalReads(options.client);
    this.now = options.now ?? (() => new Date());
    const repos = new Map<string, { key: string; owner: string; repo: string }>();
    for (const full of options.repos) {
      const [owner, repo, ...rest] = full.split("/");
      if (!owner || !repo || rest.length > 0) throw new RangeError(`a GitHub poll source names repositories as owner/repo, not "${full}"`);
      repos.set(`${owner}/${repo}`.toLowerCase(), { key: `${owner}/${repo}`.toLowerCase(), owner, repo });
    }
    this.repos = [...repos.values()];
  }

  /**
   * The watched pull requests' failing checks not handed out before (the cursor's). First sight
   * reads nothing: the next read hands out what fails then (a failure told already is dropped
   * further on, by its key). One pull
   * request that cannot be read is reported in `errors` while the others are read; a rate limit
   * stops the read where it is (thrown when nothing was read yet, for the poller to back off).
   * Reads go one after another, never at once: GitHub meets concurrent requests with secondary limits.
   */
  async read(cursor: string | undefined, signal?: AbortSignal): Promise<SourceBatch> {
    if (cursor === undefined) return { items: [], cursor: JSON.stringify({ v: 1, seen: [] } satisfies ChecksCursor) };
    const prior = new Set(parseChecksCursor(cursor).seen);
    const failing: string[] = [];
    const interval: PollInterval = { seconds: 0 };
    const errors: string[] = [];
    let limited: RateLimitLike | undefined;
    let read = 0;
    const attempt = async <T>(what: string, work: () => Promise<T>): Promise<T | undefined> => {
      if (limited !== undefined || signal?.aborted === true) return undefined;
      try {
        const result = await work();
        read++;
        return result;
      } catch (error) {
        const limit = rateLimitOf(error);
        if (limit === undefined) errors.push(`${what}: ${messageOf(error)}`);
        else if (read === 0) throw error;
        else limited = limit;
        return undefined;
      }
    };

    const watched = new Set(this.options.watchedPullRequests().map((ref) => ref.toLowerCase()));
    const pulls = new Map<string, PullHead>();
    const add = (pull: PullHead | undefined): void => {
      if (pull !== undefined) pulls.set(pull.ref.toLowerCase(), pull);
    };
    for (const repo of this.repos) {
      const listed = await attempt(`${repo.owner}/${repo.repo}`, () =>
        this.reads.listing(OPEN_PULLS, { owner: repo.owner, repo: repo.repo, state: "open" }, interval),
      );
      for (const raw of listed ?? []) add(watchedPull(raw, this.host, watched, this.options.isLive));
    }
    // A bound pull request outside the polled repositories is read on its own.
    const polled = new Set(this.repos.map((repo) => repo.key));
    for (const ref of watched) {
      const parsed = outsideRef(ref, this.host, polled);
      if (parsed === undefined || pulls.has(ref)) continue;
      const raw = await attempt(ref, () => this.reads.get(PULL, { owner: parsed.owner, repo: parsed.repo, pull_number: parsed.number }, interval));
      add(watchedPull(raw, this.host, watched, () => false));
    }

    const items: SourceItem[] = [];
    for (const pull of pulls.values()) {
      const params = { owner: pull.owner, repo: pull.repo, ref: pull.sha };
      const runs = await attempt(pull.ref, () => this.reads.get(CHECK_RUNS, { ...params, filter: "latest", per_page: 100 }, interval));
      const combined = await attempt(pull.ref, () => this.reads.get(COMBINED_STATUS, { ...params, per_page: 100 }, interval));
      for (const failure of failuresOf(pull, runs, combined, this.repositoryOf(pull))) {
        const key = seenKey(failure.id);
        failing.push(key);
        if (prior.has(key)) continue;
        const deliveryId = `poll-${failure.id}`;
        const result = inboundFromGitHub(failure.name, failure.payload, { deliveryId, source: "poll", defaultHost: this.host });
        if ("event" in result) items.push({ id: failure.id, event: result.event });
        // Not what GitHub sends: refused as the receiver refuses such a delivery, and said.
        else if ("rejected" in result) {
          this.options.events?.emit("poll.rejected", { poll_source: this.key, delivery_id: deliveryId, github_event: failure.name, reason: result.rejected });
        }
      }
    }

    const pause = limited
      ? { notBefore: limited.resetAt, notBeforeReason: limited.secondary === true ? "secondary-limit" : "rate-limit" }
      : interval.seconds > 0
        ? { notBefore: new Date(this.now().getTime() + interval.seconds * 1000), notBeforeReason: "poll-interval" }
        : {};
    const partial = errors.length > 0 || limited !== undefined;
    // What was not read this time is not known to pass: its failures stay seen.
    const seen = partial ? [...new Set([...prior, ...failing])] : [...new Set(failing)];
    const next: ChecksCursor = { v: 1, seen: seen.slice(-SEEN_MAX) };
    return { items, cursor: JSON.stringify(next), ...pause, ...(errors.length > 0 ? { errors } : {}), ...(partial ? { partial } : {}) };
  }

  private repositoryOf(pull: PullHead): Record<string, unknown> {
    return {
      full_name: `${pull.owner}/${pull.repo}`,
      name: pull.repo,
      owner: { login: pull.owner },
      html_url: `https://${this.host}/${pull.owner}/${pull.repo}`,
    };
  }
}

/** A watched ref's pull request when it is on this host and in none of the polled repositories. */
function outsideRef(ref: string, host: string, polled: ReadonlySet<string>): { owner: string; repo: string; number: number } | undefined {
  let parsed;
  try {
    parsed = parseWorkItemRef(ref);
  } catch {
    // Not a ref the-loop wrote: nothing to read.
    return undefined;
  }
  if (parsed.tracker !== "github" || parsed.host.toLowerCase() !== host) return undefined;
  if (polled.has(`${parsed.owner}/${parsed.repo}`.toLowerCase())) return undefined;
  return { owner: parsed.owner, repo: parsed.repo, number: parsed.number };
}
