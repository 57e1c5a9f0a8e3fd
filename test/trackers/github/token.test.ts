import { describe, expect, it } from "vitest";
import { githubIntegrationSchema } from "../../../src/config/schema.js";
import { GitHubAuthError } from "../../../src/trackers/github/errors.js";
import { githubApiUrl, refHostForApiUrl } from "../../../src/trackers/github/client.js";
import { githubTokenSource } from "../../../src/trackers/github/token.js";
import type { GhRunner } from "../../../src/trackers/github/token.js";

const defaults = githubIntegrationSchema.parse({});
const SECRET = "ghp_tokenThatMustNeverBeShown0123456789";

function noGh(): { runGh: GhRunner; calls: Array<{ binary: string; args: readonly string[] }> } {
  const calls: Array<{ binary: string; args: readonly string[] }> = [];
  return {
    calls,
    runGh: (binary, args) => {
      calls.push({ binary, args });
      return Promise.resolve(undefined);
    },
  };
}

describe("githubTokenSource", () => {
  it("reads GH_TOKEN before GITHUB_TOKEN", async () => {
    const { runGh, calls } = noGh();
    const source = githubTokenSource(defaults, { GH_TOKEN: "first", GITHUB_TOKEN: "second" }, { runGh });
    expect(await source.token()).toBe("first");
    expect(source.describe?.()).toBe("GH_TOKEN");
    expect(calls).toEqual([]);
  });

  it("falls back to GITHUB_TOKEN, ignoring a blank GH_TOKEN", async () => {
    const { runGh } = noGh();
    const source = githubTokenSource(defaults, { GH_TOKEN: "  \n", GITHUB_TOKEN: " second " }, { runGh });
    expect(await source.token()).toBe("second");
    expect(source.describe?.()).toBe("GITHUB_TOKEN");
  });

  it("reads the variables tokenEnv names, in its order", async () => {
    const { runGh } = noGh();
    const config = githubIntegrationSchema.parse({ tokenEnv: ["LOOP_TOKEN", "GH_TOKEN"] });
    const env = { GH_TOKEN: "gh", LOOP_TOKEN: "loop" };
    expect(await githubTokenSource(config, env, { runGh }).token()).toBe("loop");
    expect(await githubTokenSource(config, { GH_TOKEN: "gh" }, { runGh }).token()).toBe("gh");
    // A variable tokenEnv does not name is never read.
    await expect(githubTokenSource(config, { GITHUB_TOKEN: "x" }, { runGh }).token()).rejects.toThrow(GitHubAuthError);
  });

  it("reads the environment at the moment of use, not at construction", async () => {
    const { runGh } = noGh();
    const env: NodeJS.ProcessEnv = {};
    const source = githubTokenSource(defaults, env, { runGh });
    env.GITHUB_TOKEN = "later";
    expect(await source.token()).toBe("later");
  });

  it("asks `gh auth token` when no variable is set, once per source", async () => {
    const calls: Array<{ binary: string; args: readonly string[] }> = [];
    const runGh: GhRunner = (binary, args) => {
      calls.push({ binary, args });
      return Promise.resolve("from-gh");
    };
    const config = githubIntegrationSchema.parse({ ghBinary: "/opt/gh/bin/gh" });
    const source = githubTokenSource(config, {}, { runGh });
    expect(await source.token()).toBe("from-gh");
    expect(await source.token()).toBe("from-gh");
    expect(source.describe?.()).toBe("`gh auth token`");
    expect(calls).toEqual([{ binary: "/opt/gh/bin/gh", args: ["auth", "token", "--hostname", "github.com"] }]);
  });

  it("asks gh for the Enterprise host's login", async () => {
    const calls: Array<readonly string[]> = [];
    const runGh: GhRunner = (_binary, args) => {
      calls.push(args);
      return Promise.resolve("ghe-token");
    };
    const source = githubTokenSource(defaults, {}, { runGh, host: "ghe.example.com" });
    expect(await source.token()).toBe("ghe-token");
    expect(calls).toEqual([["auth", "token", "--hostname", "ghe.example.com"]]);
  });

  it("asks gh again after it had no token (a later `gh auth login` is picked up)", async () => {
    const answers: Array<string | undefined> = [undefined, "now-logged-in"];
    const runGh: GhRunner = () => Promise.resolve(answers.shift());
    const source = githubTokenSource(defaults, {}, { runGh });
    await expect(source.token()).rejects.toThrow(GitHubAuthError);
    expect(await source.token()).toBe("now-logged-in");
  });

  it("a gh that fails to run is not an error by itself", async () => {
    const runGh: GhRunner = () => Promise.reject(new Error("spawn gh ENOENT"));
    const error = await githubTokenSource(defaults, {}, { runGh })
      .token()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GitHubAuthError);
    expect((error as Error).message).not.toContain("ENOENT");
  });

  it("without any token, says exactly what to set", async () => {
    const { runGh } = noGh();
    await expect(githubTokenSource(defaults, {}, { runGh }).token()).rejects.toThrow(
      "no GitHub token: set GH_TOKEN (or GITHUB_TOKEN), or log in with `gh auth login`; integrations.github.tokenEnv names the variables read",
    );
    const custom = githubIntegrationSchema.parse({ tokenEnv: ["A_TOKEN", "B_TOKEN", "C_TOKEN"] });
    await expect(githubTokenSource(custom, {}, { runGh, host: "ghe.example.com" }).token()).rejects.toThrow(
      "no GitHub token: set A_TOKEN (or B_TOKEN, or C_TOKEN), or log in with `gh auth login --hostname ghe.example.com`",
    );
  });

  it("the real gh runner answers nothing for a program that does not exist", async () => {
    const config = githubIntegrationSchema.parse({ ghBinary: "/nonexistent/the-loop-test/gh" });
    await expect(githubTokenSource(config, {}).token()).rejects.toThrow(GitHubAuthError);
  });

  it("never puts the token in the error of a missing one", async () => {
    // A token in a variable tokenEnv does not name must not leak into the message either.
    const { runGh } = noGh();
    const error = (await githubTokenSource(defaults, { OTHER: SECRET }, { runGh })
      .token()
      .catch((e: unknown) => e)) as Error;
    expect(error.message).not.toContain(SECRET);
  });
});

describe("githubApiUrl", () => {
  it("prefers the setting, then GITHUB_API_URL, then api.github.com", () => {
    const env = { GITHUB_API_URL: "https://ghe.env.example/api/v3" };
    expect(githubApiUrl({ apiUrl: "https://ghe.config.example/api/v3" }, env)).toBe("https://ghe.config.example/api/v3");
    expect(githubApiUrl({}, env)).toBe("https://ghe.env.example/api/v3");
    expect(githubApiUrl({}, {})).toBe("https://api.github.com");
    expect(githubApiUrl(undefined, { GITHUB_API_URL: " " })).toBe("https://api.github.com");
  });

  it("strips a trailing slash", () => {
    expect(githubApiUrl({ apiUrl: "https://ghe.example.com/api/v3/" }, {})).toBe("https://ghe.example.com/api/v3");
    expect(githubApiUrl({}, { GITHUB_API_URL: "https://api.github.com/" })).toBe("https://api.github.com");
  });
});

describe("refHostForApiUrl", () => {
  it("maps the public API to github.com", () => {
    expect(refHostForApiUrl("https://api.github.com")).toBe("github.com");
    expect(refHostForApiUrl("https://API.GitHub.com/")).toBe("github.com");
  });

  it("uses the Enterprise host, with its port, in lower case", () => {
    expect(refHostForApiUrl("https://ghe.example.com/api/v3")).toBe("ghe.example.com");
    expect(refHostForApiUrl("https://GHE.Example.com/api/v3")).toBe("ghe.example.com");
    expect(refHostForApiUrl("http://127.0.0.1:8123/api/v3")).toBe("127.0.0.1:8123");
    expect(refHostForApiUrl("https://ghe.example.com:443/api/v3")).toBe("ghe.example.com");
  });
});
