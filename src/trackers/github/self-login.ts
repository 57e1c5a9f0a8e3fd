import { messageOf } from "../../errors.js";
import type { SelfLogin } from "../tracker.js";
import { GitHubAuthError, GitHubError, GitHubRateLimitError } from "./errors.js";

/**
 * Whom a GitHub token acts as (`GET /user`), told apart from every way of not knowing it. The
 * self-approval guard of the process graph stands on this answer, so a failure is never read as
 * "no login": a 401 or 403 is permanent (a GitHub App installation token always gets 403 there,
 * and nothing else it is given names the app's `<slug>[bot]` login), and a 5xx, a network error
 * or a rate limit (the secondary one included) is transient, asked again with backoff within a
 * bound of attempts.
 */

export const SELF_LOGIN_SETTING = "integrations.github.selfLogin";

/** How a lookup retries a transient failure: small and injectable, so tests need not wait. */
export interface SelfLoginRetry {
  /** Lookups in one call, the first included (default 3). */
  readonly attempts?: number;
  /** The wait before the second lookup, doubled before each next one (default 500 ms). */
  readonly backoffMs?: number;
  readonly sleep?: (ms: number) => Promise<void>;
}

export const SELF_LOGIN_ATTEMPTS = 3;
export const SELF_LOGIN_BACKOFF_MS = 500;

const PERMANENT_FIX =
  `set ${SELF_LOGIN_SETTING} to the login the-loop's token posts as (a bot account's login, or a GitHub App's "<slug>[bot]"), ` +
  "then restart the daemon (`the-loop stop`, `the-loop start`)";
const TRANSIENT_FIX = `the daemon asks again while gate answers wait; if GitHub stays unreachable, set ${SELF_LOGIN_SETTING} so that no lookup is needed`;

/** Whether asking again could give the login: false for a refusal (401, 403, any other 4xx, no token). */
export function isTransientLookupFailure(error: unknown): boolean {
  if (error instanceof GitHubRateLimitError) return true;
  if (error instanceof GitHubAuthError) return false;
  if (error instanceof GitHubError) return error.status === undefined || error.status >= 500;
  // Not a GitHub answer at all (a bug, a broken socket): nothing says asking again is useless.
  return true;
}

/** The unknown answer for what a lookup threw. */
export function lookupFailure(error: unknown, attempts: number): Extract<SelfLogin, { kind: "unknown" }> {
  const message = messageOf(error);
  if (!isTransientLookupFailure(error)) {
    const status = error instanceof GitHubError && error.status !== undefined ? ` (${error.status})` : "";
    return {
      kind: "unknown",
      permanent: true,
      reason: `GitHub refused to say whom the token acts as${status}: ${message}`,
      fix: PERMANENT_FIX,
    };
  }
  const tries = attempts === 1 ? "1 attempt" : `${attempts} attempts`;
  return { kind: "unknown", permanent: false, reason: `GitHub did not say whom the token acts as (${tries}): ${message}`, fix: TRANSIENT_FIX };
}

const NO_LOGIN: Extract<SelfLogin, { kind: "unknown" }> = {
  kind: "unknown",
  permanent: true,
  reason: "GitHub's answer to GET /user names no login",
  fix: PERMANENT_FIX,
};

/**
 * Runs `lookup` until it answers, fails permanently, or the attempts run out, waiting
 * `backoffMs`, then twice that, and so on between attempts.
 */
export async function lookUpSelfLogin(lookup: () => Promise<unknown>, retry: SelfLoginRetry = {}): Promise<SelfLogin> {
  const attempts = Math.max(1, retry.attempts ?? SELF_LOGIN_ATTEMPTS);
  const backoffMs = retry.backoffMs ?? SELF_LOGIN_BACKOFF_MS;
  const sleep = retry.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  for (let attempt = 1; ; attempt++) {
    try {
      const data = await lookup();
      // GitHub's answer, read by shape: anything but an object with a login names no login.
      const login = typeof data === "object" && data !== null && "login" in data ? data.login : undefined;
      return typeof login === "string" && login !== "" ? { kind: "known", login } : NO_LOGIN;
    } catch (error) {
      if (!isTransientLookupFailure(error) || attempt >= attempts) return lookupFailure(error, attempt);
    }
    try {
      await sleep(backoffMs * 2 ** (attempt - 1));
    } catch (error) {
      // The answer never rejects: a wait that failed ends the attempts, unknown for now.
      return lookupFailure(error, attempt);
    }
  }
}
