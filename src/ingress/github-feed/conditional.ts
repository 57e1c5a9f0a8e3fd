import type { GitHubClient } from "../../trackers/index.js";
import { PER_PAGE, REVIEWS, isGone, isReview, noteInterval, onePage, optional } from "./rest-shapes.js";
import type { PollInterval, RepoName, RestReview } from "./rest-shapes.js";

/** The part of the GitHub client the feed uses (tests may pass anything shaped like it). */
export type GitHubReader = Pick<GitHubClient, "host" | "list" | "get">;

/** ETag-validated answers kept between cycles (items, pull requests, reviews). */
const CACHE_MAX = 2_000;

interface Cached {
  readonly etag: string;
  readonly data: unknown;
}

/**
 * Reads of single resources (an item, a pull request) and of a pull request's reviews behind
 * ETags kept in memory only, so asking again for what did not change is a free 304. A restart
 * costs one full read of each. The least recently stored answer is let go first.
 */
export class ConditionalReads {
  private readonly cache = new Map<string, Cached>();

  constructor(private readonly client: GitHubReader) {}

  /** A pull request's submitted reviews (none when it is gone). */
  async reviews(repo: RepoName, number: number, interval: PollInterval): Promise<RestReview[]> {
    const key = `reviews:${repo.key}#${number}`;
    const cached = this.cache.get(key);
    let result;
    try {
      result = await this.client.list(REVIEWS, { owner: repo.owner, repo: repo.repo, pull_number: number, per_page: PER_PAGE }, optional("etag", cached?.etag));
    } catch (error) {
      if (isGone(error)) return [];
      throw error;
    }
    noteInterval(interval, result.pollIntervalSeconds);
    let items: unknown[];
    if (result.notModified) items = Array.isArray(cached?.data) ? cached.data : [];
    else {
      items = result.items;
      const etag = onePage(result);
      if (etag !== undefined) this.remember(key, { etag, data: items });
      // A longer answer's ETag covers its first page only: a review on a later page would be
      // answered 304 with what is kept here. Such a list is read whole each time.
      else this.cache.delete(key);
    }
    return items.filter(isReview).filter((review) => review.state !== "PENDING");
  }

  /**
   * A listing's first page, as GitHub answered it (the caller checks each entry's shape); empty
   * when it is gone. As for reviews, only a one-page answer's ETag is kept.
   */
  async listing(route: string, params: Record<string, string | number>, interval: PollInterval): Promise<unknown[]> {
    const key = `${route} ${JSON.stringify(params)}`;
    const cached = this.cache.get(key);
    let result;
    try {
      result = await this.client.list(route, { ...params, per_page: PER_PAGE }, { ...optional("etag", cached?.etag), maxPages: 1 });
    } catch (error) {
      if (isGone(error)) return [];
      throw error;
    }
    noteInterval(interval, result.pollIntervalSeconds);
    if (result.notModified) return Array.isArray(cached?.data) ? cached.data : [];
    const etag = onePage(result);
    if (etag !== undefined) this.remember(key, { etag, data: result.items });
    else this.cache.delete(key);
    return result.items;
  }

  /** One resource, as GitHub answered it (the caller checks its shape); undefined when it is gone. */
  async get(route: string, params: Record<string, string | number>, interval: PollInterval): Promise<unknown> {
    const key = `${route} ${JSON.stringify(params)}`;
    const cached = this.cache.get(key);
    let result;
    try {
      result = await this.client.get(route, params, optional("etag", cached?.etag));
    } catch (error) {
      if (isGone(error)) return undefined;
      throw error;
    }
    noteInterval(interval, result.pollIntervalSeconds);
    if (result.notModified) {
      if (cached !== undefined) return cached.data;
      // A 304 without a cached answer cannot happen (no ETag was sent); read it whole.
      const whole = await this.client.get(route, params);
      return whole.notModified ? undefined : whole.data;
    }
    if (result.etag !== undefined) this.remember(key, { etag: result.etag, data: result.data });
    return result.data;
  }

  private remember(key: string, entry: Cached): void {
    this.cache.delete(key);
    this.cache.set(key, entry);
    // Maps iterate in insertion order: the first key is the least recently stored.
    if (this.cache.size > CACHE_MAX) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
  }
}
