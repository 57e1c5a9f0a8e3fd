import { retry } from "@octokit/plugin-retry";
import { throttling } from "@octokit/plugin-throttling";
import type { ThrottlingOptions } from "@octokit/plugin-throttling";
import { Octokit } from "@octokit/rest";
import { DEFAULT_GITHUB_API_URL } from "../../config/schema.js";
import { EXIT_USAGE } from "../../errors.js";
import { rememberSecret } from "../../secrets.js";
import type { GitHubIntegrationConfig } from "../../config/schema.js";
import { DEFAULT_GITHUB_HOST } from "../../workitem/index.js";
import { GitHubError, githubErrorFrom, headerOf, isHttpError } from "./errors.js";
import type { TokenSource } from "./token.js";

/**
 * The one octokit class the-loop uses: pagination, Enterprise base URLs, rate-limit waits and
 * retries of transient failures come from octokit; what is ours is the policy (how long to wait,
 * what to retry), conditional requests, and turning every failure into a typed error. It is typed
 * as the plain REST client: the plugins add behaviour, not methods the-loop calls.
 */
const LoopOctokit: typeof Octokit = Octokit.plugin(throttling, retry);
export type LoopOctokitInstance = Octokit;

const DEFAULT_RATE_LIMIT_WAIT_SECONDS = 30;
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_PAGES = 10;

// Retrying a client error repeats the same mistake. A 429 is no exception: the throttling plugin
// waits out the ones GitHub marks as rate limits (as long as onLimit allows), and the retry
// plugin's fixed one-four-nine seconds would ignore the Retry-After of any other.
const DO_NOT_RETRY = Array.from({ length: 100 }, (_, i) => 400 + i);

// A transient failure of these may come after GitHub has done the work (a 502 from a proxy, an
// answer that timed out): sending it again could post the same comment twice.
const NOT_IDEMPOTENT = new Set(["POST", "PATCH"]);

/** The REST API base: the setting, else $GITHUB_API_URL, else api.github.com; no trailing slash. */
export function githubApiUrl(config: Pick<GitHubIntegrationConfig, "apiUrl"> | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.GITHUB_API_URL?.trim();
  const url = config?.apiUrl ?? (fromEnv ? fromEnv : DEFAULT_GITHUB_API_URL);
  return url.replace(/\/+$/, "");
}

/**
 * The host refs carry for items served by `apiUrl`: github.com for the public API, TENANT.ghe.com
 * for GitHub Enterprise Cloud with data residency (whose API is api.TENANT.ghe.com), else the
 * API's own host (GitHub Enterprise Server answers at https://HOST/api/v3).
 */
export function refHostForApiUrl(apiUrl: string): string {
  const url = new URL(apiUrl);
  const host = url.host.toLowerCase();
  if (host === "api.github.com") return DEFAULT_GITHUB_HOST;
  const tenant = /^api\.([^.]+\.ghe\.com)$/.exec(host)?.[1];
  return tenant !== undefined && url.pathname.replace(/\/+$/, "") === "" ? tenant : host;
}

/** This machine: a token sent there over plain http never crosses a network. */
function isLoopback(hostname: string): boolean {
  const name = hostname.toLowerCase();
  return name === "localhost" || name === "[::1]" || /^127(?:\.\d{1,3}){3}$/.test(name);
}

export type ListResult<T> =
  | { readonly notModified: true; readonly etag: string; readonly pollIntervalSeconds?: number }
  | {
      readonly notModified: false;
      readonly items: T[];
      readonly etag?: string;
      readonly pollIntervalSeconds?: number;
      /** More pages were left unread (maxPages reached). */
      readonly truncated: boolean;
    };

export type GetResult<T> =
  | { readonly notModified: true; readonly etag: string; readonly pollIntervalSeconds?: number }
  | { readonly notModified: false; readonly data: T; readonly etag?: string; readonly pollIntervalSeconds?: number };

export type RequestParams = Readonly<Record<string, string | number>>;

export interface GitHubClientOptions {
  /** REST API base, e.g. https://api.github.com or https://ghe.example.com/api/v3. */
  readonly apiUrl: string;
  readonly tokens: TokenSource;
  readonly userAgent?: string;
  readonly fetch?: typeof fetch;
  /** Longest rate-limit wait sat out inside a request (once); longer ones fail with GitHubRateLimitError. */
  readonly rateLimitWaitSeconds?: number;
  /** Longest a single attempt may take before it is abandoned (and retried as a transient failure). */
  readonly requestTimeoutMs?: number;
  /** Retries of a transient failure (5xx, no answer, 429); default 3, one, four and nine seconds apart. */
  readonly retries?: number;
  /**
   * Space writes one second apart, and comment creation three (GitHub's advice against secondary
   * limits). On by default; tests against a local server turn it off.
   */
  readonly spaceWrites?: boolean;
}

const quietLog = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

type ThrottleGroup = NonNullable<Extract<ThrottlingOptions, { onRateLimit: unknown }>["write"]>;

// A limiter group that runs every job at once, for callers that do not want writes spaced.
const unspaced = {
  key: () => ({ schedule: (...args: unknown[]) => (args.at(-1) as () => Promise<unknown>)() }),
} as unknown as ThrottleGroup;

export class GitHubClient {
  readonly apiUrl: string;
  /** The host GitHub refs carry for this API (github.com, or the Enterprise host). */
  readonly host: string;
  readonly octokit: LoopOctokitInstance;
  private readonly tokens: TokenSource;
  private readonly origin: string;
  private readonly basePath: string;
  private readonly baseFetch: typeof fetch;
  // Tokens handed out so far, scrubbed from every message should anything ever echo one. A
  // #private field, so that inspecting the client (or anything holding it) never prints them.
  readonly #secrets = new Set<string>();

  constructor(options: GitHubClientOptions) {
    const apiUrl = options.apiUrl.replace(/\/+$/, "");
    const parsed = URL.canParse(apiUrl) ? new URL(apiUrl) : undefined;
    if (!parsed || (parsed.protocol !== "https:" && parsed.protocol !== "http:")) {
      throw new GitHubError(
        `invalid GitHub API URL "${apiUrl}": set integrations.github.apiUrl (or GITHUB_API_URL) to an http(s) URL such as https://ghe.example.com/api/v3`,
        { exitCode: EXIT_USAGE, code: "config" },
      );
    }
    if (parsed.username || parsed.password) {
      throw new GitHubError("integrations.github.apiUrl must not carry credentials; the token comes from integrations.github.tokenEnv", {
        exitCode: EXIT_USAGE,
        code: "config",
      });
    }
    // The token travels with every request: in clear text it could be read anywhere on the way.
    // Plain http is left for this machine (a local proxy or a test server), where it never
    // crosses a network.
    if (parsed.protocol === "http:" && !isLoopback(parsed.hostname)) {
      throw new GitHubError(
        `refusing to send the GitHub token in clear text to ${parsed.host}: set integrations.github.apiUrl (or GITHUB_API_URL) to an https:// URL (plain http is accepted only for this machine)`,
        { exitCode: EXIT_USAGE, code: "config" },
      );
    }
    this.apiUrl = apiUrl;
    this.host = refHostForApiUrl(apiUrl);
    this.origin = parsed.origin;
    this.basePath = parsed.pathname.replace(/\/+$/, "");
    this.tokens = options.tokens;
    const waitSeconds = options.rateLimitWaitSeconds ?? DEFAULT_RATE_LIMIT_WAIT_SECONDS;
    const timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const baseFetch = options.fetch ?? globalThis.fetch;
    this.baseFetch = baseFetch;
    const timedFetch: typeof fetch = (input, init) => {
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
      return baseFetch(input, { ...init, signal });
    };
    // Wait once, and only briefly: a poller or a dispatcher stuck for an hour on a quota is worse
    // than one that fails now with the reset time and comes back then.
    const onLimit = (retryAfter: number, _options: unknown, _octokit: unknown, retryCount: number): boolean => {
      return retryCount < 1 && retryAfter <= waitSeconds;
    };
    const spaced = options.spaceWrites ?? true;
    this.octokit = new LoopOctokit({
      baseUrl: apiUrl,
      userAgent: options.userAgent ?? "the-loop",
      log: quietLog,
      request: { fetch: timedFetch },
      retry: { doNotRetry: DO_NOT_RETRY, ...(options.retries === undefined ? {} : { retries: options.retries }) },
      throttle: {
        id: `the-loop:${this.host}`,
        onRateLimit: onLimit,
        onSecondaryRateLimit: onLimit,
        ...(spaced ? {} : { write: unspaced, notifications: unspaced }),
      },
    });
    this.octokit.hook.before("request", async (request) => {
      // Only the configured API ever sees the token, whatever a Link header points at.
      if (/^https?:\/\//i.test(request.url) && new URL(request.url).origin !== this.origin) {
        throw new GitHubError(`refusing to send the GitHub token to ${new URL(request.url).origin}: it is not the configured API (${this.origin})`);
      }
      const token = await this.tokens.token();
      this.#secrets.add(token);
      rememberSecret(token);
      request.headers.authorization = `token ${token}`;
    });
  }

  /**
   * One listing, conditional on `etag` for its first page. A 304 costs no quota; on a 200 the
   * following pages (Link rel="next") are read too, up to `maxPages`, and the first page's ETag
   * is returned for the next call.
   */
  async list(route: string, params: RequestParams, options: { etag?: string; maxPages?: number } = {}): Promise<ListResult<unknown>> {
    const maxPages = options.maxPages ?? DEFAULT_MAX_PAGES;
    let first;
    try {
      first = await this.octokit.request(route, { ...params, headers: conditional(options.etag) });
    } catch (error) {
      const notModified = notModifiedOf(error, options.etag);
      if (notModified) return notModified;
      throw this.failure(error, route);
    }
    const items: unknown[] = [...pageItems(first.data, route)];
    const headers = first.headers;
    let next = nextLink(headerOf(headers, "link"));
    for (let pages = 1; next !== undefined && pages < maxPages; pages++) {
      let page;
      try {
        page = await this.octokit.request({ method: "GET", url: next });
      } catch (error) {
        throw this.failure(error, route);
      }
      items.push(...pageItems(page.data, route));
      next = nextLink(headerOf(page.headers, "link"));
    }
    return {
      notModified: false,
      items,
      etag: headerOf(headers, "etag"),
      pollIntervalSeconds: pollIntervalOf(headers),
      truncated: next !== undefined,
    };
  }

  /** One resource, conditional on `etag` when given; its body as GitHub sent it, for the caller to parse. */
  async get(route: string, params: RequestParams, options: { etag?: string } = {}): Promise<GetResult<unknown>> {
    let response;
    try {
      response = await this.octokit.request(route, { ...params, headers: conditional(options.etag) });
    } catch (error) {
      const notModified = notModifiedOf(error, options.etag);
      if (notModified) return notModified;
      throw this.failure(error, route);
    }
    const headers = response.headers;
    return {
      notModified: false,
      data: response.data,
      etag: headerOf(headers, "etag"),
      pollIntervalSeconds: pollIntervalOf(headers),
    };
  }

  /**
   * Any other call (writes); answers the response body. A POST or PATCH is sent at most once
   * (a rate-limit answer, which means GitHub did nothing, is still waited out and sent again).
   * The body is as GitHub sent it: the caller parses what it reads.
   */
  async request(route: string, params: Readonly<Record<string, unknown>> = {}): Promise<unknown> {
    const method = route.split(" ")[0]?.toUpperCase() ?? "";
    const once = NOT_IDEMPOTENT.has(method) ? { request: { retries: 0 } } : {};
    try {
      const response = await this.octokit.request(route, { ...params, ...once });
      const data: unknown = response.data;
      return data;
    } catch (error) {
      throw this.failure(error, route);
    }
  }

  /**
   * The last `maxBytes` of a file GitHub serves by redirect (a job's log: `GET
   * /repos/{owner}/{repo}/actions/jobs/{job_id}/logs` answers 302 to a short-lived URL on another
   * host). The token goes to the API alone; the redirect is followed with no credentials at all,
   * and the body is read as it streams, keeping only its tail in memory. Undefined when GitHub
   * has no such file (404, 410: the log expired).
   */
  async redirectedTail(path: string, maxBytes: number): Promise<Buffer | undefined> {
    const fetchImpl = this.baseFetch;
    const token = await this.tokens.token();
    this.#secrets.add(token);
    rememberSecret(token);
    const first = await fetchImpl(`${this.apiUrl}${path}`, {
      redirect: "manual",
      headers: { authorization: `token ${token}`, accept: "application/vnd.github+json", "user-agent": "the-loop" },
      signal: AbortSignal.timeout(DEFAULT_REQUEST_TIMEOUT_MS),
    });
    let response = first;
    if (first.status >= 300 && first.status < 400) {
      const location = first.headers.get("location");
      await first.body?.cancel();
      if (location === null) throw new GitHubError(`GitHub GET ${path}: a redirect without a Location`, { route: path });
      // A fresh request: no Authorization, no cookies; whatever host it names never sees the token.
      response = await fetchImpl(new URL(location, this.apiUrl), {
        redirect: "follow",
        credentials: "omit",
        signal: AbortSignal.timeout(DEFAULT_REQUEST_TIMEOUT_MS),
      });
    }
    if (response.status === 404 || response.status === 410) {
      await response.body?.cancel();
      return undefined;
    }
    if (!response.ok || response.body === null) {
      await response.body?.cancel();
      throw new GitHubError(`GitHub GET ${path}: answered ${response.status}`, { route: path, status: response.status });
    }
    return tailOf(response.body, maxBytes);
  }

  /** The typed error for what a request threw. */
  failure(error: unknown, route: string): GitHubError {
    return githubErrorFrom(error, {
      route,
      path: this.pathOf(error),
      secrets: this.#secrets,
      tokenOrigin: this.tokens.describe?.(),
    });
  }

  private pathOf(error: unknown): string | undefined {
    if (!isHttpError(error) || !("request" in error) || typeof error.request !== "object" || error.request === null) return undefined;
    const url = "url" in error.request ? error.request.url : undefined;
    if (typeof url !== "string") return undefined;
    try {
      const pathname = new URL(url, this.origin).pathname;
      return pathname.startsWith(`${this.basePath}/`) ? pathname.slice(this.basePath.length) : pathname;
    } catch {
      return undefined;
    }
  }
}

function conditional(etag: string | undefined): Record<string, string> {
  return etag ? { "if-none-match": etag } : {};
}

function notModifiedOf(error: unknown, etag: string | undefined): { notModified: true; etag: string; pollIntervalSeconds?: number } | undefined {
  if (!isHttpError(error) || error.status !== 304 || etag === undefined) return undefined;
  const headers = error.response?.headers;
  return {
    notModified: true,
    etag: headerOf(headers, "etag") ?? etag,
    pollIntervalSeconds: pollIntervalOf(headers),
  };
}

function pageItems(data: unknown, route: string): readonly unknown[] {
  if (!Array.isArray(data)) {
    throw new GitHubError(`GitHub ${route}: expected a list in the answer`, { route });
  }
  return data;
}

function pollIntervalOf(headers: unknown): number | undefined {
  const value = Number(headerOf(headers, "x-poll-interval"));
  return Number.isFinite(value) && value > 0 ? value : undefined;
}

/** The rel="next" target of a Link header. */
export function nextLink(link: string | undefined): string | undefined {
  if (!link) return undefined;
  for (const part of link.split(",")) {
    const match = /<([^>]+)>\s*;\s*rel="?([^";]+)"?/.exec(part.trim());
    if (match && match[2]?.split(/\s+/).includes("next")) return match[1];
  }
  return undefined;
}

/** The last `maxBytes` of a stream, holding no more than twice that at once. */
async function tailOf(body: ReadableStream<Uint8Array>, maxBytes: number): Promise<Buffer> {
  let kept = Buffer.alloc(0);
  for await (const chunk of body) {
    kept = Buffer.concat([kept, chunk]);
    if (kept.length > 2 * maxBytes) kept = kept.subarray(kept.length - maxBytes);
  }
  return kept.length > maxBytes ? kept.subarray(kept.length - maxBytes) : kept;
}
