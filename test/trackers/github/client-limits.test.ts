import { createServer } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { inspect } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { GitHubClient, refHostForApiUrl } from "../../../src/trackers/github/client.js";
import type { GitHubClientOptions } from "../../../src/trackers/github/client.js";
import { GitHubError, GitHubRateLimitError, UnsupportedGitHubHostError } from "../../../src/trackers/github/errors.js";
import type { TokenSource } from "../../../src/trackers/github/token.js";
import { FakeGitHub } from "../../support/fake-github.js";

const TOKEN = "ghp_reviewTestToken_mustStayHidden_5d1e";
const fakes: FakeGitHub[] = [];
const servers: Server[] = [];

afterEach(async () => {
  await Promise.all(fakes.splice(0).map((fake) => fake.stop()));
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

async function fake(): Promise<FakeGitHub> {
  const gh = await FakeGitHub.start({ token: TOKEN });
  fakes.push(gh);
  gh.addRepo("octo/repo");
  return gh;
}

const tokens: TokenSource = { token: () => Promise.resolve(TOKEN), describe: () => "GH_TOKEN" };

function client(apiUrl: string, options: Partial<GitHubClientOptions> = {}): GitHubClient {
  return new GitHubClient({ apiUrl, tokens, spaceWrites: false, ...options });
}

/** A plain server on 127.0.0.1 that records the Authorization header of every request. */
async function server(handler: Parameters<typeof createServer>[1]): Promise<{ origin: string; seen: Array<string | undefined> }> {
  const seen: Array<string | undefined> = [];
  const s = createServer((req, res) => {
    seen.push(req.headers.authorization);
    handler?.(req, res);
  });
  servers.push(s);
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  return { origin: `http://127.0.0.1:${(s.address() as AddressInfo).port}`, seen };
}

/** Answers every request with `status`, `headers` and GitHub's error body `message`. */
function answering(status: number, message: string, headers: Record<string, string> = {}): { fetch: typeof fetch; calls: () => number } {
  let calls = 0;
  return {
    calls: () => calls,
    fetch: () => {
      calls++;
      return Promise.resolve(
        new Response(JSON.stringify({ message, documentation_url: "https://docs.github.com/rest" }), {
          status,
          headers: { "content-type": "application/json", ...headers },
        }),
      );
    },
  };
}

const COMMENTS = "POST /repos/{owner}/{repo}/issues/{issue_number}/comments";

describe("GitHubClient, where the token may go", () => {
  it("refuses a plain-http API on a host other than this machine, naming the setting", () => {
    for (const apiUrl of ["http://ghe.example.com/api/v3", "http://10.0.0.5:8080/api/v3", "HTTP://GHE.example.com/api/v3"]) {
      const error = (() => {
        try {
          client(apiUrl);
          return undefined;
        } catch (caught) {
          return caught;
        }
      })();
      expect(error).toBeInstanceOf(GitHubError);
      expect((error as GitHubError).exitCode).toBe(2);
      expect((error as Error).message).toContain("https://");
      expect((error as Error).message).toContain("integrations.github.apiUrl");
    }
    // This machine is fine: the token never crosses a network.
    for (const apiUrl of ["http://127.0.0.1:8123/api/v3", "http://localhost:8123/api/v3", "http://[::1]:8123/api/v3", "http://127.1.2.3/api/v3"]) {
      expect(() => client(apiUrl)).not.toThrow();
    }
    expect(() => client("https://ghe.example.com/api/v3")).not.toThrow();
  });

  it("does not carry the token along a redirect to another origin", async () => {
    const elsewhere = await server((_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end("{}");
    });
    const api = await server((_req, res) => {
      res.writeHead(302, { location: `${elsewhere.origin}/moved` });
      res.end();
    });
    await client(`${api.origin}/api/v3`, { retries: 0 }).get("GET /repos/{owner}/{repo}", { owner: "octo", repo: "repo" });
    expect(api.seen).toEqual([`token ${TOKEN}`]);
    expect(elsewhere.seen).toEqual([undefined]);
  });

  it("keeps the token out of what inspecting the client prints", async () => {
    const gh = await fake();
    const c = client(gh.apiUrl);
    await c.get("GET /repos/{owner}/{repo}", { owner: "octo", repo: "repo" });
    expect(inspect(c, { depth: 6 })).not.toContain(TOKEN);
  });
});

describe("GitHubClient, writes that must not happen twice", () => {
  it("does not post a comment again after a 502 that came once GitHub had made it", async () => {
    const gh = await fake();
    const n = gh.addIssue("octo/repo", { title: "t", user: "alice" });
    let posts = 0;
    const flaky: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (init?.method === "POST" && posts++ === 0) return new Response("bad gateway", { status: 502 });
      return response;
    };
    const error = await client(gh.apiUrl, { fetch: flaky, retries: 2 })
      .request(COMMENTS, { owner: "octo", repo: "repo", issue_number: n, body: "hello once" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubError);
    expect(error).toMatchObject({ status: 502 });
    expect(gh.comments("octo/repo", n).map((comment) => comment.body)).toEqual(["hello once"]);
  }, 20_000);

  it("does not post a comment again after an attempt timed out waiting for the answer", async () => {
    const gh = await fake();
    const n = gh.addIssue("octo/repo", { title: "t", user: "alice" });
    const slow: typeof fetch = async (input, init) => {
      await fetch(input, { ...init, signal: null });
      return new Promise((_resolve, reject) => {
        init?.signal?.addEventListener("abort", () => reject(init.signal?.reason as Error));
      });
    };
    const error = await client(gh.apiUrl, { fetch: slow, retries: 2, requestTimeoutMs: 200 })
      .request(COMMENTS, { owner: "octo", repo: "repo", issue_number: n, body: "hello once" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubError);
    expect(gh.comments("octo/repo", n)).toHaveLength(1);
  }, 20_000);

  it("still retries a read after a transient 502", async () => {
    const gh = await fake();
    gh.failNext(502);
    const result = await client(gh.apiUrl, { retries: 1 }).get("GET /repos/{owner}/{repo}", { owner: "octo", repo: "repo" });
    expect(result.notModified).toBe(false);
    expect(gh.requests.map((r) => r.status)).toEqual([502, 200]);
  }, 15_000);
});

describe("GitHubClient, rate limits", () => {
  it("honours Retry-After on a 429 instead of asking again at once", async () => {
    const limited = answering(429, "Too Many Requests", { "retry-after": "120" });
    const started = Date.now();
    const error = await client("http://127.0.0.1:9/api/v3", { fetch: limited.fetch })
      .get("GET /repos/{owner}/{repo}", { owner: "octo", repo: "repo" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubRateLimitError);
    const resetIn = (error as GitHubRateLimitError).resetAt.getTime() - Date.now();
    expect(resetIn).toBeGreaterThan(110_000);
    expect(resetIn).toBeLessThanOrEqual(120_000);
    expect(limited.calls()).toBe(1);
    expect(Date.now() - started).toBeLessThan(3_000);
  }, 30_000);

  it("waits at least a minute after a secondary limit that names no time, whatever the hourly window says", async () => {
    const now = Math.floor(Date.now() / 1000);
    for (const resetIn of [5, 3000]) {
      const limited = answering(403, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", {
        "x-ratelimit-limit": "5000",
        "x-ratelimit-remaining": "4000",
        "x-ratelimit-reset": String(now + resetIn),
      });
      const error = await client("http://127.0.0.1:9/api/v3", { fetch: limited.fetch })
        .get("GET /repos/{owner}/{repo}", { owner: "octo", repo: "repo" })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(GitHubRateLimitError);
      expect((error as GitHubRateLimitError).secondary).toBe(true);
      const wait = (error as GitHubRateLimitError).resetAt.getTime() - Date.now();
      expect(wait).toBeGreaterThan(55_000);
      expect(wait).toBeLessThanOrEqual(60_000);
      expect(limited.calls()).toBe(1);
    }
  });

  it("a 403 that is a permission error is neither waited on nor retried", async () => {
    const denied = answering(403, "Resource not accessible by personal access token", {
      "x-ratelimit-remaining": "4999",
      "x-ratelimit-reset": String(Math.floor(Date.now() / 1000) + 3000),
    });
    const started = Date.now();
    const error = await client("http://127.0.0.1:9/api/v3", { fetch: denied.fetch })
      .get("GET /repos/{owner}/{repo}", { owner: "octo", repo: "repo" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubError);
    expect(error).not.toBeInstanceOf(GitHubRateLimitError);
    expect((error as Error).message).toContain("Resource not accessible");
    expect(denied.calls()).toBe(1);
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});

describe("GitHub Enterprise hosts", () => {
  it("GitHub Enterprise Cloud with data residency: api.TENANT.ghe.com serves TENANT.ghe.com", () => {
    expect(refHostForApiUrl("https://api.octocorp.ghe.com")).toBe("octocorp.ghe.com");
    expect(refHostForApiUrl("https://api.octocorp.ghe.com/")).toBe("octocorp.ghe.com");
    // A server's own /api/v3 keeps its host, whatever it is called.
    expect(refHostForApiUrl("https://api.corp.example/api/v3")).toBe("api.corp.example");
    expect(client("https://api.octocorp.ghe.com").host).toBe("octocorp.ghe.com");
  });

  it("suggests the right API for a ref on a ghe.com tenant", () => {
    const error = new UnsupportedGitHubHostError("github:octocorp.ghe.com/o/r#1", "octocorp.ghe.com", "https://api.github.com", "github.com");
    expect(error.message).toContain("set integrations.github.apiUrl to https://api.octocorp.ghe.com ");
  });
});
