import { afterEach, describe, expect, it } from "vitest";
import { configSchema, githubIntegrationSchema } from "../../../src/config/schema.js";
import { MemoryEventSink } from "../../../src/events/log.js";
import { deriveStatePaths } from "../../../src/state/layout.js";
import { UnsupportedGitHubHostError } from "../../../src/trackers/github/errors.js";
import { GitHubTracker } from "../../../src/trackers/github/tracker.js";
import { openTrackers } from "../../../src/trackers/resolve.js";
import type { OpenTrackersOptions } from "../../../src/trackers/resolve.js";
import { FakeGitHub } from "../../support/fake-github.js";
import { tempDir } from "../../support/temp.js";

const TOKEN = "ghp_resolveTestToken_hidden_99";
const fakes: FakeGitHub[] = [];

afterEach(async () => {
  await Promise.all(fakes.splice(0).map((fake) => fake.stop()));
});

async function trackers(options: OpenTrackersOptions = {}) {
  const dir = await tempDir();
  const paths = deriveStatePaths(configSchema.parse({}), dir);
  return openTrackers(paths, new MemoryEventSink(), options);
}

describe("openTrackers", () => {
  it("still opens with the paths and the events alone, GitHub on its defaults", async () => {
    const set = await trackers();
    expect(set.forRef("local:default#1")).toBe(set.local);
    expect(set.github).toBeInstanceOf(GitHubTracker);
    expect(set.github).toBe(set.github);
  });

  it("routes github refs of the configured host to the GitHub tracker, without asking for a token", async () => {
    const set = await trackers({ github: githubIntegrationSchema.parse({}), env: {} });
    expect(set.forRef("github:octo/repo#3")).toBe(set.github);
    expect(set.github.client.host).toBe("github.com");
    expect(set.github.client.apiUrl).toBe("https://api.github.com");
  });

  it("takes the API from GITHUB_API_URL when the setting is absent", async () => {
    const set = await trackers({ env: { GITHUB_API_URL: "https://ghe.example.com/api/v3/" } });
    expect(set.github.client.apiUrl).toBe("https://ghe.example.com/api/v3");
    expect(set.forRef("github:ghe.example.com/octo/repo#3")).toBe(set.github);
  });

  it("refuses a github ref on another host, naming integrations.github.apiUrl", async () => {
    const set = await trackers({ env: {} });
    expect(() => set.forRef("github:ghe.example.com/octo/repo#3")).toThrow(UnsupportedGitHubHostError);
    expect(() => set.forRef("github:ghe.example.com/octo/repo#3")).toThrow("set integrations.github.apiUrl to https://ghe.example.com/api/v3");
  });

  it("reaches the configured server with the token from the configured variable", async () => {
    const gh = await FakeGitHub.start({ token: TOKEN });
    fakes.push(gh);
    gh.addRepo("octo/repo");
    const n = gh.addIssue("octo/repo", { title: "hello", user: "alice" });
    const set = await trackers({
      github: githubIntegrationSchema.parse({ apiUrl: gh.apiUrl, tokenEnv: ["LOOP_GH"] }),
      env: { LOOP_GH: TOKEN, GH_TOKEN: "not-this-one" },
      githubClient: { spaceWrites: false },
    });
    const tracker = set.forRef(`github:${gh.host}/octo/repo#${n}`);
    expect((await tracker.getItem({ tracker: "github", host: gh.host, owner: "octo", repo: "repo", number: n })).title).toBe("hello");
    expect(gh.requests.every((r) => r.authorized)).toBe(true);
  });
});
