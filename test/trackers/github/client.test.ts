import { inspect } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { GitHubClient } from "../../../src/trackers/github/client.js";
import type { GitHubClientOptions } from "../../../src/trackers/github/client.js";
import { GitHubAuthError, GitHubError, GitHubNotFoundError, GitHubRateLimitError } from "../../../src/trackers/github/errors.js";
import type { TokenSource } from "../../../src/trackers/github/token.js";
import { FakeGitHub } from "../../support/fake-github.js";

const TOKEN = "ghp_theLoopTestToken_DoNotLeak_7f3a9c";
const fakes: FakeGitHub[] = [];

afterEach(async () => {
  await Promise.all(fakes.splice(0).map((fake) => fake.stop()));
});

async function fake(): Promise<FakeGitHub> {
  const gh = await FakeGitHub.start({ token: TOKEN });
  fakes.push(gh);
  gh.addRepo("octo/repo");
  return gh;
}

function fixedToken(token = TOKEN): TokenSource {
  return { token: () => Promise.resolve(token), describe: () => "GH_TOKEN" };
}

function client(gh: FakeGitHub, options: Partial<GitHubClientOptions> = {}): GitHubClient {
  return new GitHubClient({ apiUrl: gh.apiUrl, tokens: fixedToken(), spaceWrites: false, ...options });
}

interface Issue {
  number: number;
  title: string;
}

const ISSUES = "GET /repos/{owner}/{repo}/issues";

function expectNoToken(error: unknown): void {
  expect(String(error)).not.toContain(TOKEN);
  expect(inspect(error, { depth: 8 })).not.toContain(TOKEN);
  expect(JSON.stringify(error)).not.toContain(TOKEN);
}

describe("GitHubClient", () => {
  it("knows its API and the host refs carry", async () => {
    const gh = await fake();
    const c = client(gh, { apiUrl: `${gh.apiUrl}/` });
    expect(c.apiUrl).toBe(gh.apiUrl);
    expect(c.host).toBe(gh.host);
    expect(new GitHubClient({ apiUrl: "https://api.github.com", tokens: fixedToken() }).host).toBe("github.com");
  });

  it("does not ask for a token before the first request", async () => {
    let asked = 0;
    const tokens: TokenSource = {
      token: () => {
        asked++;
        return Promise.resolve(TOKEN);
      },
    };
    const gh = await fake();
    const c = new GitHubClient({ apiUrl: gh.apiUrl, tokens });
    expect(asked).toBe(0);
    await c.get("GET /repos/{owner}/{repo}", { owner: "octo", repo: "repo" });
    expect(asked).toBe(1);
    expect(gh.requests.at(-1)?.authorized).toBe(true);
  });

  it("refuses an API URL with credentials or an unparseable one", () => {
    expect(() => new GitHubClient({ apiUrl: "https://user:pw@ghe.example.com/api/v3", tokens: fixedToken() })).toThrow(/must not carry credentials/);
    expect(() => new GitHubClient({ apiUrl: "not a url", tokens: fixedToken() })).toThrow(/invalid GitHub API URL/);
  });

  it("lists with an ETag: the second call is not modified and costs no quota", async () => {
    const gh = await fake();
    gh.addIssue("octo/repo", { title: "one", user: "alice" });
    const c = client(gh);
    const first = await c.list(ISSUES, { owner: "octo", repo: "repo", state: "open" });
    expect(first.notModified).toBe(false);
    if (first.notModified) throw new Error("unreachable");
    expect((first.items as Issue[]).map((i) => i.title)).toEqual(["one"]);
    expect(first.etag).toMatch(/^W\/"/);
    expect(first.truncated).toBe(false);

    const used = gh.rateLimitUsed();
    const second = await c.list(ISSUES, { owner: "octo", repo: "repo", state: "open" }, { etag: first.etag });
    expect(second).toEqual({ notModified: true, etag: first.etag, pollIntervalSeconds: undefined });
    expect(gh.rateLimitUsed()).toBe(used);
    expect(gh.requests.at(-1)).toMatchObject({ status: 304, ifNoneMatch: first.etag });

    gh.addIssue("octo/repo", { title: "two", user: "bob" });
    const third = await c.list(ISSUES, { owner: "octo", repo: "repo", state: "open" }, { etag: first.etag });
    expect(third.notModified).toBe(false);
    if (third.notModified) throw new Error("unreachable");
    expect((third.items as Issue[]).map((i) => i.title).sort()).toEqual(["one", "two"]);
    expect(third.etag).not.toBe(first.etag);
  });

  it("follows Link pages, unconditionally, up to maxPages", async () => {
    const gh = await fake();
    for (let i = 1; i <= 7; i++) gh.addIssue("octo/repo", { title: `issue ${i}`, user: "alice" });
    const c = client(gh);
    // Newest first, so that whatever changes shows on the conditional first page.
    const params = { owner: "octo", repo: "repo", per_page: 3, sort: "created", direction: "desc" };
    const all = await c.list(ISSUES, params);
    if (all.notModified) throw new Error("unreachable");
    expect((all.items as Issue[]).map((i) => i.number)).toEqual([7, 6, 5, 4, 3, 2, 1]);
    expect(all.truncated).toBe(false);
    const pages = gh.requests.filter((r) => r.path === "/repos/octo/repo/issues");
    expect(pages.map((r) => r.query.page ?? "1")).toEqual(["1", "2", "3"]);

    gh.clearRequests();
    const firstEtag = all.etag;
    const two = await c.list(ISSUES, params, { maxPages: 2 });
    if (two.notModified) throw new Error("unreachable");
    expect(two.items).toHaveLength(6);
    expect(two.truncated).toBe(true);
    expect(two.etag).toBe(firstEtag);

    gh.clearRequests();
    gh.addIssue("octo/repo", { title: "issue 8", user: "alice" });
    const changed = await c.list(ISSUES, params, { etag: firstEtag });
    if (changed.notModified) throw new Error("unreachable");
    expect(changed.items).toHaveLength(8);
    // Only the first page is conditional.
    expect(gh.requests.map((r) => r.ifNoneMatch)).toEqual([firstEtag, undefined, undefined]);
  });

  it("reports X-Poll-Interval", async () => {
    const gh = await fake();
    gh.pollInterval = 90;
    const c = client(gh);
    const first = await c.list(ISSUES, { owner: "octo", repo: "repo" });
    expect(first.pollIntervalSeconds).toBe(90);
    const second = await c.list(ISSUES, { owner: "octo", repo: "repo" }, { etag: first.etag });
    expect(second).toMatchObject({ notModified: true, pollIntervalSeconds: 90 });
  });

  it("gets one resource, conditionally", async () => {
    const gh = await fake();
    const c = client(gh);
    const first = await c.get("GET /repos/{owner}/{repo}", { owner: "octo", repo: "repo" });
    if (first.notModified) throw new Error("unreachable");
    expect(first.data).toMatchObject({ default_branch: "main" });
    const second = await c.get("GET /repos/{owner}/{repo}", { owner: "octo", repo: "repo" }, { etag: first.etag });
    expect(second).toMatchObject({ notModified: true, etag: first.etag });
  });

  it("turns a 404 into GitHubNotFoundError with the route and the path", async () => {
    const gh = await fake();
    const error = await client(gh)
      .get("GET /repos/{owner}/{repo}/issues/{issue_number}", { owner: "octo", repo: "repo", issue_number: 99 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubNotFoundError);
    expect(error).toMatchObject({ status: 404, route: "GET /repos/{owner}/{repo}/issues/{issue_number}" });
    expect((error as Error).message).toContain("GET /repos/octo/repo/issues/99");
    expect((error as Error).message).not.toContain("127.0.0.1");
  });

  it("a 401 is a GitHubAuthError naming where the token came from, never the token", async () => {
    const gh = await fake();
    const wrong = "ghp_wrongTokenAlsoSecret_123456";
    const c = client(gh, { tokens: { token: () => Promise.resolve(wrong), describe: () => "GH_TOKEN" } });
    const error = await c.list(ISSUES, { owner: "octo", repo: "repo" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubAuthError);
    expect(error).toMatchObject({ status: 401, exitCode: 2 });
    expect((error as Error).message).toContain("from GH_TOKEN");
    expect((error as Error).message).toContain("gh auth login");
    expect(inspect(error, { depth: 8 })).not.toContain(wrong);
    expect(JSON.stringify(error)).not.toContain(wrong);
    // 401 is not retried.
    expect(gh.requests).toHaveLength(1);
  });

  it("a missing token fails the request with the fix, before anything is sent", async () => {
    const gh = await fake();
    const tokens: TokenSource = { token: () => Promise.reject(new GitHubAuthError("no GitHub token: set GH_TOKEN")) };
    await expect(client(gh, { tokens }).list(ISSUES, { owner: "octo", repo: "repo" })).rejects.toThrow("no GitHub token: set GH_TOKEN");
    expect(gh.requests).toHaveLength(0);
  });

  it("waits out a short rate limit transparently", async () => {
    const gh = await fake();
    gh.addIssue("octo/repo", { title: "one", user: "alice" });
    gh.rateLimitNext({ resetInSeconds: 1 });
    const started = Date.now();
    const result = await client(gh).list(ISSUES, { owner: "octo", repo: "repo" });
    expect(result.notModified).toBe(false);
    expect(gh.requests.map((r) => r.status)).toEqual([403, 200]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  }, 15_000);

  it("fails at once with the reset time when the limit lasts longer than it waits", async () => {
    const gh = await fake();
    gh.rateLimitNext({ resetInSeconds: 600 });
    const started = Date.now();
    const error = await client(gh, { rateLimitWaitSeconds: 30 })
      .list(ISSUES, { owner: "octo", repo: "repo" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubRateLimitError);
    const limit = error as GitHubRateLimitError;
    expect(limit.secondary).toBe(false);
    expect(limit.status).toBe(403);
    expect(limit.resetAt.getTime()).toBeGreaterThan(Date.now() + 590_000);
    expect(limit.resetAt.getTime()).toBeLessThan(Date.now() + 610_000);
    expect(limit.message).toContain(limit.resetAt.toISOString());
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(gh.requests).toHaveLength(1);
    expectNoToken(error);
  });

  it("a secondary limit beyond the wait fails with resetAt from Retry-After, without retries", async () => {
    const gh = await fake();
    gh.rateLimitNext({ resetInSeconds: 120, secondary: true });
    const error = await client(gh)
      .request("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", {
        owner: "octo",
        repo: "repo",
        issue_number: gh.addIssue("octo/repo", { title: "t", user: "alice" }),
        body: "hi",
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubRateLimitError);
    expect((error as GitHubRateLimitError).secondary).toBe(true);
    const resetIn = (error as GitHubRateLimitError).resetAt.getTime() - Date.now();
    expect(resetIn).toBeGreaterThan(110_000);
    expect(resetIn).toBeLessThanOrEqual(120_000);
    expect(gh.requests).toHaveLength(1);
  });

  it("a short secondary limit is waited out once", async () => {
    const gh = await fake();
    gh.rateLimitNext({ resetInSeconds: 1, secondary: true });
    const result = await client(gh).get("GET /repos/{owner}/{repo}", { owner: "octo", repo: "repo" });
    expect(result.notModified).toBe(false);
    expect(gh.requests.map((r) => r.status)).toEqual([403, 200]);
  }, 15_000);

  it("retries a transient 5xx but not a 4xx", async () => {
    const gh = await fake();
    gh.failNext(502);
    const ok = await client(gh).get("GET /repos/{owner}/{repo}", { owner: "octo", repo: "repo" });
    expect(ok.notModified).toBe(false);
    expect(gh.requests.map((r) => r.status)).toEqual([502, 200]);

    gh.clearRequests();
    gh.failNext(409);
    const error = await client(gh)
      .get("GET /repos/{owner}/{repo}", { owner: "octo", repo: "repo" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubError);
    expect(error).toMatchObject({ status: 409 });
    expect(gh.requests).toHaveLength(1);
  }, 15_000);

  it("a server that does not answer is a GitHubError without a status", async () => {
    const gh = await fake();
    const apiUrl = gh.apiUrl;
    await gh.stop();
    const error = await new GitHubClient({ apiUrl, tokens: fixedToken(), retries: 1 })
      .get("GET /repos/{owner}/{repo}", { owner: "octo", repo: "repo" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubError);
    expect(error).toMatchObject({ status: undefined, route: "GET /repos/{owner}/{repo}" });
    expect((error as Error).message).toMatch(/^GitHub GET \/repos\/octo\/repo: no answer \(.*ECONNREFUSED/);
    expectNoToken(error);
  }, 15_000);

  it("abandons an attempt that takes longer than requestTimeoutMs", async () => {
    const gh = await fake();
    const hanging: typeof fetch = (_input, init) =>
      new Promise((_resolve, reject) => {
        init?.signal?.addEventListener("abort", () => reject(init.signal?.reason as Error));
      });
    const started = Date.now();
    const error = await client(gh, { fetch: hanging, requestTimeoutMs: 200, retries: 0 })
      .get("GET /repos/{owner}/{repo}", { owner: "octo", repo: "repo" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubError);
    expect((error as Error).message).toContain("no answer");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("spaces writes by default, as GitHub advises against secondary limits", async () => {
    const gh = await fake();
    const n = gh.addIssue("octo/repo", { title: "t", user: "alice" });
    const c = new GitHubClient({ apiUrl: gh.apiUrl, tokens: fixedToken() });
    const route = "POST /repos/{owner}/{repo}/issues/{issue_number}/labels";
    const started = Date.now();
    await c.request(route, { owner: "octo", repo: "repo", issue_number: n, labels: ["a"] });
    await c.request(route, { owner: "octo", repo: "repo", issue_number: n, labels: ["b"] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(gh.item("octo/repo", n).labels.map((l) => l.name)).toEqual(["a", "b"]);
  }, 15_000);

  it("never sends the token to another origin named by a Link header", async () => {
    const gh = await fake();
    const seen: string[] = [];
    const evilFetch: typeof fetch = async (input, init) => {
      const url = String(input);
      seen.push(url);
      const response = await fetch(input, init);
      if (!url.includes("page=")) {
        const headers = new Headers(response.headers);
        headers.set("link", '<http://evil.example/steal?page=2>; rel="next"');
        return new Response(await response.text(), { status: response.status, headers });
      }
      return response;
    };
    const error = await client(gh, { fetch: evilFetch })
      .list(ISSUES, { owner: "octo", repo: "repo" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubError);
    expect((error as Error).message).toContain("refusing to send the GitHub token to http://evil.example");
    expect(seen.some((url) => url.includes("evil.example"))).toBe(false);
  });

  it("scrubs the token from any message that would echo it", async () => {
    const gh = await fake();
    const echoing: typeof fetch = (_input, init) => {
      const auth = new Headers(init?.headers).get("authorization") ?? "";
      return Promise.resolve(
        new Response(JSON.stringify({ message: `token ${auth.split(" ")[1] ?? ""} is not allowed here` }), {
          status: 422,
          headers: { "content-type": "application/json" },
        }),
      );
    };
    const error = await client(gh, { fetch: echoing })
      .request("POST /repos/{owner}/{repo}/issues", { owner: "octo", repo: "repo", title: "x" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubError);
    expect((error as Error).message).toContain("[REDACTED]");
    expectNoToken(error);
  });
});
