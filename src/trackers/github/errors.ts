import { EXIT_FAILURE, EXIT_USAGE, ExitError } from "../../errors.js";
import type { ErrorCode } from "../../errors.js";

/**
 * Every failure of a GitHub request surfaces as one of these. They are ExitErrors so the CLI
 * prints them as they are; they carry the route template (never a URL, which could hold
 * credentials) and never the token.
 */
export class GitHubError extends ExitError {
  override readonly name: string = "GitHubError";
  /** The HTTP status GitHub answered with; absent when no answer came (network, timeout). */
  readonly status: number | undefined;
  /** The request in octokit form, e.g. `GET /repos/{owner}/{repo}/issues`. */
  readonly route: string | undefined;
  constructor(message: string, options: { status?: number; route?: string; exitCode?: number; code?: ErrorCode } = {}) {
    super(message, options.exitCode ?? EXIT_FAILURE, options.code ?? "failure");
    this.status = options.status;
    this.route = options.route;
  }
}

/** No token, or GitHub refused the one we sent (401). The message names the fix. */
export class GitHubAuthError extends GitHubError {
  override readonly name: string = "GitHubAuthError";
  constructor(message: string, options: { status?: number; route?: string } = {}) {
    super(message, { ...options, exitCode: EXIT_USAGE, code: "config" });
  }
}

export class GitHubNotFoundError extends GitHubError {
  override readonly name: string = "GitHubNotFoundError";
  constructor(message: string, options: { status?: number; route?: string } = {}) {
    super(message, { ...options, code: "not-found" });
  }
}

/** GitHub asked us to slow down for longer than the client is willing to wait in line. */
export class GitHubRateLimitError extends GitHubError {
  override readonly name: string = "GitHubRateLimitError";
  constructor(
    message: string,
    /** When asking again makes sense. */
    readonly resetAt: Date,
    /** A secondary (abuse) limit rather than the hourly quota. */
    readonly secondary: boolean,
    options: { status?: number; route?: string } = {},
  ) {
    super(message, options);
  }
}

/** A GitHub ref on a host the configured API does not serve. */
export class UnsupportedGitHubHostError extends GitHubError {
  override readonly name: string = "UnsupportedGitHubHostError";
  constructor(
    readonly ref: string,
    readonly refHost: string,
    readonly apiUrl: string,
    readonly apiHost: string,
  ) {
    super(
      `${ref} is on ${refHost}, but the GitHub API in use (${apiUrl}) serves ${apiHost}; ` +
        `set integrations.github.apiUrl to ${suggestedApiUrl(refHost)} to work with ${refHost}`,
      { exitCode: EXIT_USAGE, code: "config" },
    );
  }
}

function suggestedApiUrl(host: string): string {
  if (host === "github.com") return "https://api.github.com";
  // GitHub Enterprise Cloud with data residency serves TENANT.ghe.com from api.TENANT.ghe.com.
  if (/^[^.:]+\.ghe\.com$/.test(host)) return `https://api.${host}`;
  return `https://${host}/api/v3`;
}

/** Where a request failed, for the messages; `path` is the expanded path without origin or query. */
export interface RequestContext {
  readonly route: string;
  readonly path?: string;
  /** Values that must never appear in a message (the token in use). */
  readonly secrets?: Iterable<string>;
  /** Where the token came from (`GH_TOKEN`, `gh auth token`), for the 401 message. */
  readonly tokenOrigin?: string;
  readonly now?: () => Date;
}

interface HttpErrorLike {
  readonly status: number;
  readonly message: string;
  /** The answer, when one came; its headers are read with headerOf, which checks them. */
  readonly response?: { readonly headers?: unknown; readonly data?: unknown };
}

/** Octokit's RequestError (and fetch failures it wraps), recognised by shape, not by class. */
export function isHttpError(error: unknown): error is HttpErrorLike & Error {
  if (!(error instanceof Error) || !("status" in error) || typeof error.status !== "number") return false;
  const response = "response" in error ? error.response : undefined;
  return response === undefined || (typeof response === "object" && response !== null);
}

/**
 * A response header as text, or undefined. The headers are whatever the answer carried (octokit
 * passes them on as the server sent them), so they are checked here rather than typed.
 */
export function headerOf(headers: unknown, name: string): string | undefined {
  if (typeof headers !== "object" || headers === null) return undefined;
  const value: unknown = Object.hasOwn(headers, name) ? Reflect.get(headers, name) : undefined;
  if (typeof value === "string") return value;
  if (typeof value === "number") return String(value);
  return undefined;
}

/** Replaces every secret in `text`; a defence in depth should a server or a library echo one. */
export function redact(text: string, secrets: Iterable<string> = []): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join("[REDACTED]");
  }
  return out;
}

function isRateLimited(error: HttpErrorLike): { secondary: boolean } | undefined {
  if (error.status !== 403 && error.status !== 429) return undefined;
  const headers = error.response?.headers;
  if (/\bsecondary rate\b/i.test(error.message)) return { secondary: true };
  if (headerOf(headers, "x-ratelimit-remaining") === "0") return { secondary: false };
  if (headerOf(headers, "retry-after") !== undefined) return { secondary: true };
  if (error.status === 429) return { secondary: true };
  return undefined;
}

/**
 * GitHub's rule: not before Retry-After when it is given; not before X-RateLimit-Reset when
 * X-RateLimit-Remaining is 0; otherwise at least a minute. The reset of a window that is not
 * exhausted says nothing about a secondary limit: it may be seconds away (asking again then
 * prolongs the limit) or most of an hour (waiting that long is needless).
 */
function resetOf(error: HttpErrorLike, now: Date): Date {
  const headers = error.response?.headers;
  const retryAfterText = headerOf(headers, "retry-after");
  const retryAfter = retryAfterText === undefined ? Number.NaN : Number(retryAfterText);
  const reset = Number(headerOf(headers, "x-ratelimit-reset"));
  const times: number[] = [];
  if (Number.isFinite(retryAfter) && retryAfter >= 0) times.push(now.getTime() + retryAfter * 1000);
  if (headerOf(headers, "x-ratelimit-remaining") === "0" && Number.isFinite(reset) && reset > 0) times.push(reset * 1000);
  return new Date(times.length > 0 ? Math.max(...times) : now.getTime() + 60_000);
}

/** Maps whatever a request threw to one of the typed errors; GitHubErrors pass through. */
export function githubErrorFrom(error: unknown, context: RequestContext): GitHubError {
  if (error instanceof GitHubError) return error;
  const secrets = [...(context.secrets ?? [])];
  const where = `GitHub ${context.path ? `${context.route.split(" ")[0] ?? ""} ${context.path}` : context.route}`;
  const options = { route: context.route };
  if (!isHttpError(error) || error.response === undefined) {
    // No answer at all: a refused connection, a timeout, a DNS failure.
    const reason = error instanceof Error ? error.message : String(error);
    return new GitHubError(redact(`${where}: no answer (${reason})`, secrets), options);
  }
  const status = error.status;
  const detail = redact(error.message, secrets);
  const withStatus = { ...options, status };
  if (status === 401) {
    const origin = context.tokenOrigin ? ` from ${context.tokenOrigin}` : "";
    return new GitHubAuthError(
      redact(`${where}: GitHub rejected the token${origin} (401 ${detail}); set a valid token, or log in again with \`gh auth login\``, secrets),
      withStatus,
    );
  }
  const limited = isRateLimited(error);
  if (limited) {
    const resetAt = resetOf(error, (context.now ?? (() => new Date()))());
    const which = limited.secondary ? "secondary rate limit" : "rate limit";
    return new GitHubRateLimitError(
      `${where}: GitHub ${which} reached (${status}); try again after ${resetAt.toISOString()}`,
      resetAt,
      limited.secondary,
      withStatus,
    );
  }
  if (status === 404 || status === 410) {
    return new GitHubNotFoundError(`${where}: not found (${status} ${detail}); for a private repository, check that the token can read it`, withStatus);
  }
  return new GitHubError(`${where}: ${status} ${detail}`, withStatus);
}
