import { afterEach, describe, expect, it, vi } from "vitest";
import { GitHubAuthError, GitHubError, GitHubNotFoundError, GitHubRateLimitError } from "../../../src/trackers/github/errors.js";
import { isTransientLookupFailure, lookUpSelfLogin } from "../../../src/trackers/github/self-login.js";

/** How a failed `GET /user` is read: permanent (asking again cannot help) or transient (asked again with backoff). */
describe("isTransientLookupFailure", () => {
  const rateLimit = (secondary: boolean): GitHubRateLimitError => new GitHubRateLimitError("limited", new Date(), secondary, { status: 403 });
  it.each([
    ["a 401 (a token GitHub rejects)", new GitHubAuthError("bad credentials", { status: 401 }), false],
    ["no token at all", new GitHubAuthError("no token"), false],
    ["a 403 (an App installation token)", new GitHubError("forbidden", { status: 403 }), false],
    ["a 404", new GitHubNotFoundError("not found", { status: 404 }), false],
    ["a 500", new GitHubError("server error", { status: 500 }), true],
    ["a 502", new GitHubError("bad gateway", { status: 502 }), true],
    ["no answer (network)", new GitHubError("no answer"), true],
    ["a secondary rate limit", rateLimit(true), true],
    ["the primary rate limit", rateLimit(false), true],
    ["something else thrown", new Error("socket hang up"), true],
  ])("%s → transient: %s", (_what, error, transient) => {
    expect(isTransientLookupFailure(error)).toBe(transient);
  });
});

describe("lookUpSelfLogin", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("waits the backoff between attempts, doubling, and stops at the bound", async () => {
    vi.useFakeTimers();
    let calls = 0;
    const answer = lookUpSelfLogin(
      async () => {
        calls++;
        throw new GitHubError("server error", { status: 503 });
      },
      { attempts: 3, backoffMs: 1_000 },
    );
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toBe(1);
    await vi.advanceTimersByTimeAsync(999);
    expect(calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toBe(2);
    await vi.advanceTimersByTimeAsync(1_999);
    expect(calls).toBe(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toBe(3);
    expect(await answer).toMatchObject({ kind: "unknown", permanent: false });
    expect(vi.getTimerCount()).toBe(0);
  });

  it("stops at the first permanent failure, and answers a login as soon as one comes", async () => {
    let calls = 0;
    const sleep = vi.fn(async () => undefined);
    expect(
      await lookUpSelfLogin(
        async () => {
          calls++;
          throw new GitHubError("forbidden", { status: 403 });
        },
        { attempts: 5, sleep },
      ),
    ).toMatchObject({ kind: "unknown", permanent: true });
    expect(calls).toBe(1);
    const answers = [new GitHubError("down", { status: 500 }), { login: "octo-bot" }];
    expect(
      await lookUpSelfLogin(
        async () => {
          const next = answers.shift();
          if (next instanceof Error) throw next;
          return next ?? {};
        },
        { attempts: 5, sleep },
      ),
    ).toEqual({ kind: "known", login: "octo-bot" });
    expect(sleep).toHaveBeenCalledTimes(1);
  });

  it("never takes an answer without a login for one", async () => {
    expect(await lookUpSelfLogin(async () => ({ login: "" }))).toMatchObject({ kind: "unknown", permanent: true });
    expect(await lookUpSelfLogin(async () => ({}))).toMatchObject({ kind: "unknown", permanent: true });
  });
});
