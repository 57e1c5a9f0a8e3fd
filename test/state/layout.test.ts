import { homedir } from "node:os";
import { describe, expect, it } from "vitest";
import { configSchema } from "../../src/config/schema.js";
import type { CliConfigInput } from "../../src/config/schema.js";
import { deriveStatePaths, resolveConfiguredPath } from "../../src/state/layout.js";
import type { StatePaths } from "../../src/state/layout.js";

const BASE = "/work/project";
const HOME = "/home/tester";

const pathsFor = (input: CliConfigInput): StatePaths => deriveStatePaths(configSchema.parse(input), BASE, HOME);

/** Every path derived from `root`, as the architecture's state-root table lists them. */
function underRoot(root: string): StatePaths {
  return {
    root,
    registryDir: `${root}/sessions`,
    controlDir: `${root}/sessions/control`,
    linksDir: `${root}/sessions/links`,
    ciDir: `${root}/sessions/ci`,
    graphsDir: `${root}/graphs`,
    pollStateFile: `${root}/sessions/poll-state.json`,
    legacyPollStateFile: `${BASE}/.the-loop/poll-state.json`,
    eventLog: `${root}/logs/events.jsonl`,
    ghWebhookPidfile: `${root}/gh-webhook.pid`,
    ghWebhookStatusFile: `${root}/gh-webhook-status.json`,
    pollPidfile: `${root}/poll.pid`,
    pollStatusFile: `${root}/poll-status.json`,
    daemonLog: `${root}/logs/daemon.out`,
    binDir: `${root}/bin`,
    tmpDir: `${root}/tmp`,
    trackerDir: `${root}/tracker`,
    workspacesDir: `${root}/workspaces`,
  };
}

describe("deriveStatePaths", () => {
  it.each<[string, CliConfigInput, StatePaths]>([
    ["the default root, under the base dir", {}, underRoot(`${BASE}/.the-loop`)],
    ["a relative root, against the base dir", { state: { root: "var/loop" } }, underRoot(`${BASE}/var/loop`)],
    ["an absolute root, as written", { state: { root: "/srv/the-loop" } }, underRoot("/srv/the-loop")],
    ["a root of ~", { state: { root: "~" } }, underRoot(HOME)],
    ["a root under ~", { state: { root: "~/.local/state/the-loop" } }, underRoot(`${HOME}/.local/state/the-loop`)],
    ["a root with a trailing slash", { state: { root: "/srv/the-loop/" } }, underRoot("/srv/the-loop")],
  ])("puts every generated file under %s", (_case, input, expected) => {
    expect(pathsFor(input)).toEqual(expected);
  });

  const root = `${BASE}/custom-root`;
  it.each<[string, CliConfigInput, Partial<StatePaths>]>([
    ["routing.registryDir (absolute)", { routing: { registryDir: "/srv/registry" } }, { registryDir: "/srv/registry" }],
    ["routing.workspace.root", { routing: { workspace: { root: "/srv/checkouts" } } }, { workspacesDir: "/srv/checkouts" }],
    ["routing.registryDir (relative)", { routing: { registryDir: "records" } }, { registryDir: `${BASE}/records` }],
    ["routing.registryDir (~)", { routing: { registryDir: "~/records" } }, { registryDir: `${HOME}/records` }],
    [
      "polling.stateFile (absolute), which also turns the legacy file off",
      { polling: { stateFile: "/srv/poll.json" } },
      { pollStateFile: "/srv/poll.json", legacyPollStateFile: null },
    ],
    [
      "polling.stateFile (relative, the pre-#106 default)",
      { polling: { stateFile: ".the-loop/poll-state.json" } },
      { pollStateFile: `${BASE}/.the-loop/poll-state.json`, legacyPollStateFile: null },
    ],
    ["eventLog.path (absolute)", { eventLog: { path: "/var/log/loop.jsonl" } }, { eventLog: "/var/log/loop.jsonl" }],
    ["eventLog.path (relative)", { eventLog: { path: "logs/loop.jsonl" } }, { eventLog: `${BASE}/logs/loop.jsonl` }],
    ["eventLog.path (~)", { eventLog: { path: "~/loop.jsonl" } }, { eventLog: `${HOME}/loop.jsonl` }],
    ["webhooks.ghWebhook.pidfile (absolute)", { webhooks: { ghWebhook: { pidfile: "/run/gh-webhook.pid" } } }, { ghWebhookPidfile: "/run/gh-webhook.pid" }],
    ["webhooks.ghWebhook.pidfile (relative)", { webhooks: { ghWebhook: { pidfile: "run/hook.pid" } } }, { ghWebhookPidfile: `${BASE}/run/hook.pid` }],
  ])("uses an explicit %s verbatim and nothing else moves", (_case, input, overridden) => {
    // A custom root shows that the explicit path is not re-rooted and the others still are.
    expect(pathsFor({ ...input, state: { root: "custom-root" } })).toEqual({ ...underRoot(root), ...overridden });
  });

  it("keeps control records under <root>/sessions/ even when the registry is elsewhere", () => {
    expect(pathsFor({ routing: { registryDir: "/srv/registry" } }).controlDir).toBe(`${BASE}/.the-loop/sessions/control`);
  });

  it("uses every explicit path at once", () => {
    const paths = pathsFor({
      state: { root: "/srv/root" },
      routing: { registryDir: "/a/registry" },
      polling: { stateFile: "/b/poll.json" },
      eventLog: { path: "/c/events.jsonl" },
      webhooks: { ghWebhook: { pidfile: "/d/hook.pid" } },
    });
    expect(paths).toEqual({
      ...underRoot("/srv/root"),
      registryDir: "/a/registry",
      pollStateFile: "/b/poll.json",
      legacyPollStateFile: null,
      eventLog: "/c/events.jsonl",
      ghWebhookPidfile: "/d/hook.pid",
    });
  });
});

describe("resolveConfiguredPath", () => {
  it.each([
    ["/abs/path", "/abs/path"],
    ["/abs/../abs/./path", "/abs/path"],
    ["relative/dir", `${BASE}/relative/dir`],
    ["./here", `${BASE}/here`],
    ["../sibling", "/work/sibling"],
    ["~", HOME],
    ["~/", HOME],
    ["~/x", `${HOME}/x`],
    ["~/x/../y", `${HOME}/y`],
    // Only the current user's home is expanded; these are ordinary relative names.
    ["~other/x", `${BASE}/~other/x`],
    ["x/~/y", `${BASE}/x/~/y`],
  ])("%s → %s", (path, expected) => {
    expect(resolveConfiguredPath(path, BASE, HOME)).toBe(expected);
  });

  it("defaults the home directory to the current user's", () => {
    expect(resolveConfiguredPath("~/x", BASE)).toBe(`${homedir()}/x`);
  });
});
