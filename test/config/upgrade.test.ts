import { configSchema } from "../../src/config/schema.js";
import { webhookEventsOffers } from "../../src/config/upgrade/webhook.js";
import { promises as fsPromises } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { ConfigError } from "../../src/config/load.js";
import { parseConfigText } from "../../src/config/parse.js";
import { DEFAULT_CONTROL_KEYWORDS } from "../../src/config/schema.js";
import { starterConfigText } from "../../src/config/starter.js";
import { legacyPollStateMove, movePollStateFile, upgradeConfigText, upgradeOffers } from "../../src/config/upgrade/config.js";
import type { ConfigUpgrade } from "../../src/config/upgrade/config.js";
import { ExitError } from "../../src/errors.js";
import { tempDir } from "../support/temp.js";

/** A config written before execution control: comments, odd quoting and every explicit path. */
const PRE_106 = `# yaml-language-server: $schema=./cli-config.schema.json
# Our team's the-loop config. Keep the paths: backups read them.
version: 1

routing:
  registryDir: ./var/sessions        # session records (backed up)
  authorizedUsers: ['alice', "bob"]
  spawnOnUnmatched: labeled
  # the label we use
  autoExecuteLabel: "the-loop: auto-execute"
  tmux:
    socketName: team
    # keepSessionOnClose: false

polling:
  enabled: true
  stateFile: /var/lib/the-loop/poll.json
  sources:
  - provider: local

eventLog:
  path: logs/events.jsonl   # shipped to the log host

webhooks:
  ghWebhook:
    pidfile: run/gh-webhook.pid
# end of file
`;

const CONTROL_KEYS = ["enabled", "requireStartCommand", "keywords.start", "keywords.stop", "keywords.pause", "keywords.resume"].map(
  (key) => `routing.control.${key}`,
);
/** What an upgrade adds to a routing block without any: the control keys, and the MCP server's switch. */
const ROUTING_KEYS = [...CONTROL_KEYS, "routing.mcp.enabled", "routing.supervision.enabled"];

/** The original text is what is left once every insertion is taken out again: nothing else moved. */
function withoutInsertions(upgrade: ConfigUpgrade): string {
  return upgrade.insertions.reduce((text, insertion) => text.replace(insertion.text, ""), upgrade.text);
}

function configOf(text: string) {
  const outcome = parseConfigText(text);
  expect(outcome.problems).toEqual([]);
  return outcome.config;
}

describe("upgradeConfigText", () => {
  it("adds state and routing.control with their defaults, keeping every byte of the original", () => {
    const upgrade = upgradeConfigText(PRE_106);
    expect(upgrade.changed).toBe(true);
    expect(upgrade.added).toEqual(["state.root", ...ROUTING_KEYS]);
    expect(withoutInsertions(upgrade)).toBe(PRE_106);

    // It loads through the real validator, and means exactly what the old text meant.
    expect(configOf(upgrade.text)).toEqual(configOf(PRE_106));
    const doc = configOf(upgrade.text);
    expect(doc?.routing.control).toEqual({ enabled: true, requireStartCommand: true, keywords: DEFAULT_CONTROL_KEYWORDS });

    // Explicitly configured paths stay exactly as written, comments included.
    for (const line of [
      "  registryDir: ./var/sessions        # session records (backed up)",
      "  stateFile: /var/lib/the-loop/poll.json",
      "  path: logs/events.jsonl   # shipped to the log host",
      "    pidfile: run/gh-webhook.pid",
      "  authorizedUsers: ['alice', \"bob\"]",
      "# end of file",
    ]) {
      expect(upgrade.text.split("\n")).toContain(line);
    }
  });

  it("puts state after version and control at the end of the routing block, explained", () => {
    const { text } = upgradeConfigText(PRE_106);
    const lines = text.split("\n");
    expect(lines.slice(2, 8)).toEqual([
      "version: 1",
      "",
      "# Everything the-loop generates lives under this folder (added by `the-loop upgrade-config`).",
      "state:",
      "  root: .the-loop",
      "",
    ]);
    // After the routing block's own trailing comment, before the next block.
    const control = lines.indexOf("  control:");
    expect(lines[control - 3]).toBe("    # keepSessionOnClose: false");
    expect(lines.indexOf("polling:")).toBeGreaterThan(control);
    const requireStart = lines.indexOf("    requireStartCommand: true");
    expect(lines[requireStart - 2]).toMatch(/^ {4}# true: the label only arms a work item; a session starts once an authorized person comments$/);
    expect(lines[requireStart - 1]).toMatch(/^ {4}# the start keyword or runs `the-loop sessions start`\. false: the label alone starts it\.$/);
    expect(lines.slice(requireStart + 1, requireStart + 6)).toEqual([
      "    keywords:",
      "      start: the-loop:start-execution",
      "      stop: the-loop:stop-execution",
      "      pause: the-loop:pause-execution",
      "      resume: the-loop:resume-execution",
    ]);
  });

  it("reports requireStartCommand as a decision, naming the start keyword and how to keep label-alone starts", () => {
    const upgrade = upgradeConfigText(PRE_106);
    expect(upgrade.needsDecision).toEqual([
      {
        key: "routing.control.requireStartCommand",
        why: expect.stringContaining("labelling a work item no longer starts a session") as unknown as string,
      },
      {
        key: "routing.mcp.enabled",
        why: expect.stringContaining("one permission of the-loop's own") as unknown as string,
      },
      {
        key: "routing.supervision.enabled",
        why: expect.stringContaining("started again by the daemon within seconds") as unknown as string,
      },
    ]);
    const why = upgrade.needsDecision[0]?.why ?? "";
    expect(why).toContain("the-loop:start-execution");
    expect(why).toContain("the-loop sessions start");
    expect(why).toContain("Set it to false");
  });

  it("is idempotent: a second run changes nothing", () => {
    const once = upgradeConfigText(PRE_106);
    const twice = upgradeConfigText(once.text);
    expect(twice).toMatchObject({ changed: false, text: once.text, added: [], needsDecision: [], insertions: [] });
  });

  it("fills only the missing keys of a partial routing.control, and leaves the decision alone when it is made", () => {
    const text = "routing:\n  control:\n    requireStartCommand: false   # we label to start\n    keywords:\n      stop: halt-now\n";
    const upgrade = upgradeConfigText(text);
    expect(upgrade.added).toEqual([
      "state.root",
      "routing.control.enabled",
      "routing.control.keywords.start",
      "routing.control.keywords.pause",
      "routing.control.keywords.resume",
      "routing.mcp.enabled",
      "routing.supervision.enabled",
    ]);
    // The control decision is made; the MCP server's and the supervision's switches are new, and are the ones left to make.
    expect(upgrade.needsDecision.map((decision) => decision.key)).toEqual(["routing.mcp.enabled", "routing.supervision.enabled"]);
    expect(withoutInsertions(upgrade)).toBe(text);
    expect(configOf(upgrade.text)?.routing.control).toEqual({
      enabled: true,
      requireStartCommand: false,
      keywords: { ...DEFAULT_CONTROL_KEYWORDS, stop: "halt-now" },
    });
    expect(upgrade.text).toContain("    keywords:\n      stop: halt-now\n      start: the-loop:start-execution\n");
  });

  it("adds a state.root missing from an existing state block", () => {
    const upgrade = upgradeConfigText("state: {}\nrouting:\n  control: {}\n");
    expect(upgrade.added).toEqual(["state.root", ...ROUTING_KEYS]);
    expect(configOf(upgrade.text)?.state.root).toBe(".the-loop");
  });

  it("never touches a configured state.root", () => {
    const upgrade = upgradeConfigText("state:\n  root: /srv/loop-state\n");
    expect(upgrade.added).toEqual(ROUTING_KEYS);
    expect(upgrade.text.startsWith("state:\n  root: /srv/loop-state\n")).toBe(true);
    expect(configOf(upgrade.text)?.state.root).toBe("/srv/loop-state");
  });

  it("fills the legacy webhooks.ghWebhook.routing block rather than adding a second routing block", () => {
    const text = "webhooks:\n  ghWebhook:\n    enabled: false\n    routing:\n      authorizedUsers: [alice]\n";
    const upgrade = upgradeConfigText(text);
    expect(upgrade.routingPath).toEqual(["webhooks", "ghWebhook", "routing"]);
    expect(upgrade.added).toEqual(["state.root", ...ROUTING_KEYS.map((key) => `webhooks.ghWebhook.${key}`)]);
    expect(upgrade.needsDecision.map((decision) => decision.key)).toEqual([
      "webhooks.ghWebhook.routing.control.requireStartCommand",
      "webhooks.ghWebhook.routing.mcp.enabled",
      "webhooks.ghWebhook.routing.supervision.enabled",
    ]);
    const outcome = parseConfigText(upgrade.text);
    expect(outcome.problems).toEqual([]);
    // Still the older spelling, so still its warning; the offer says to move it.
    expect(outcome.warnings.map((warning) => warning.path)).toEqual(["webhooks.ghWebhook.routing"]);
    expect(upgrade.text).toContain("      control:\n        enabled: true\n");
    expect(upgrade.text).not.toMatch(/^routing:/m);
    const offers = upgradeOffers(upgrade, { pollStateFile: "/p/new", legacyPollStateFile: null });
    expect(offers).toEqual([expect.objectContaining({ action: "move-routing-block", flag: null, from: "webhooks.ghWebhook.routing", to: "routing" })]);
  });

  it("says, by hand, that a config's own webhook events list leaves the CI events out", () => {
    const upgrade = upgradeConfigText("routing:\n  authorizedUsers: [alice]\n");
    const paths = { pollStateFile: "/p/new", legacyPollStateFile: null };
    const own = { webhooks: { ghWebhook: { events: ["issues", "issue_comment", "pull_request", "pull_request_review", "pull_request_review_comment"] } } };
    expect(webhookEventsOffers(own)).toEqual([
      expect.objectContaining({
        action: "add-webhook-events",
        flag: null,
        from: "webhooks.ghWebhook.events",
        to: "webhooks.ghWebhook.events + [check_run, check_suite, status]",
        why: expect.stringMatching(/Check runs, Check suites and Statuses/),
      }),
    ]);
    const defaults = configSchema.parse({});
    expect(webhookEventsOffers(defaults)).toEqual([]);
    expect(upgradeOffers(upgrade, paths)).toEqual([]);
  });

  it("creates a top-level routing block when the file has none", () => {
    const text = "polling:\n  enabled: false\n";
    const upgrade = upgradeConfigText(text);
    expect(upgrade.routingPath).toEqual(["routing"]);
    expect(upgrade.text).toMatch(/\nrouting:\n {2}# Execution control/);
    expect(withoutInsertions(upgrade)).toBe(text);
    expect(upgradeOffers(upgrade, { pollStateFile: "/p/new", legacyPollStateFile: null })).toEqual([]);
  });

  it.each([
    ["an empty file", ""],
    ["a file of comments", "# nothing configured yet\n"],
    ["a file without a final newline", "polling:\n  enabled: false"],
  ])("upgrades %s", (_name, text) => {
    const upgrade = upgradeConfigText(text);
    expect(upgrade.added).toEqual(["state.root", ...ROUTING_KEYS]);
    expect(configOf(upgrade.text)).toEqual(configOf(text));
    expect(upgradeConfigText(upgrade.text).changed).toBe(false);
  });

  it("follows the file's own indentation and line endings", () => {
    const text = "version: 1\r\nrouting:\r\n    authorizedUsers: [alice]\r\n";
    const upgrade = upgradeConfigText(text);
    expect(upgrade.text).toContain("routing:\r\n    authorizedUsers: [alice]\r\n    # Execution control");
    expect(upgrade.text).toContain("\r\n    control:\r\n        enabled: true\r\n");
    expect(upgrade.text).toContain("\r\nstate:\r\n    root: .the-loop\r\n");
    expect(upgrade.text.replace(/\r\n/g, "")).not.toContain("\n");
    expect(configOf(upgrade.text)).toEqual(configOf(text));
  });

  it.each([
    ["a config", "version: 1\nrouting:\n  authorizedUsers: [alice]\n"],
    ["a config whose first key is routing", "routing:\n  authorizedUsers: [alice]\n"],
    ["a CRLF config", "version: 1\r\nrouting:\r\n  authorizedUsers: [alice]\r\n"],
    ["an empty flow mapping", "{}\n"],
    ["a file of comments", "# nothing yet\n"],
  ])("upgrades %s that starts with a byte order mark, and keeps the mark", (_name, body) => {
    // Editors on Windows save one; the loader reads such a file, so the upgrade must too.
    const text = `\uFEFF${body}`;
    const upgrade = upgradeConfigText(text);
    expect(upgrade.added).toEqual(["state.root", ...ROUTING_KEYS]);
    expect(upgrade.text.startsWith("\uFEFF")).toBe(true);
    expect(upgrade.text.indexOf("\uFEFF", 1)).toBe(-1);
    expect(configOf(upgrade.text)).toEqual(configOf(text));
    expect(configOf(upgrade.text)?.routing.control.requireStartCommand).toBe(true);
    expect(upgradeConfigText(upgrade.text).changed).toBe(false);
  });

  it.each([
    ["on one line", "{}\n"],
    ["over two lines", "{\n}\n"],
  ])("fills an empty top-level flow mapping %s with state and routing both", (_name, text) => {
    const upgrade = upgradeConfigText(text);
    expect(upgrade.added).toEqual(["state.root", ...ROUTING_KEYS]);
    expect(upgrade.text).toMatch(/^\{state: \{root: \.the-loop\}, routing: \{control: \{enabled: true, /);
    expect(configOf(upgrade.text)).toEqual(configOf(text));
    expect(upgradeConfigText(upgrade.text).changed).toBe(false);
  });

  it.each([
    ["ends the block", "routing:\n  authorizedUsers: [alice]\n  autoExecuteLabel: |+\n    arm me\n\n"],
    ["ends the block, before the next one", "routing:\n  autoExecuteLabel: |+\n    arm me\n\n\npolling:\n  enabled: false\n"],
    ["ends a nested block", "webhooks:\n  ghWebhook:\n    routing:\n      autoExecuteLabel: >+\n        arm me\n\nversion: 1\n"],
  ])("adds after a block scalar that keeps its trailing blank lines and %s, leaving its value alone", (_name, text) => {
    const upgrade = upgradeConfigText(text);
    expect(upgrade.added.filter((key) => key.endsWith("requireStartCommand"))).toHaveLength(1);
    expect(upgrade.added).toHaveLength(9);
    expect(withoutInsertions(upgrade)).toBe(text);
    expect(configOf(upgrade.text)).toEqual(configOf(text));
  });

  it("adds to flow mappings in flow style", () => {
    const text = "routing: {authorizedUsers: [alice], control: {enabled: true}}\n";
    const upgrade = upgradeConfigText(text);
    expect(upgrade.text.split("\n")[0]).toBe(
      "routing: {authorizedUsers: [alice], control: {enabled: true, requireStartCommand: true, keywords: " +
        "{start: the-loop:start-execution, stop: the-loop:stop-execution, pause: the-loop:pause-execution, resume: the-loop:resume-execution}}, mcp: {enabled: true}, supervision: {enabled: true}}",
    );
    expect(configOf(upgrade.text)).toEqual(configOf(text));
  });

  it("refuses, writing nothing, what it cannot place where it counts", () => {
    // The end of this flow mapping is a comment: text spliced there would be commented out.
    const text = "routing: {\n  authorizedUsers: [alice] # who\n}\n";
    expect(() => upgradeConfigText(text)).toThrow(/could not place routing\.control\.enabled.*add the keys by hand/);
  });

  it("refuses to fill a mapping written as an alias, naming the keys to add by hand", () => {
    const text = "routing:\n  announce: &on {enabled: true}\n  control: *on\n";
    expect(() => upgradeConfigText(text)).toThrow(
      /cannot add routing\.control\.enabled, routing\.control\.requireStartCommand, .*: routing\.control is not a plain mapping \(an alias\?\); nothing was written/,
    );
  });

  it("refuses an invalid config with its problems, so it is fixed first", () => {
    let error: unknown;
    try {
      upgradeConfigText("routing:\n  authorisedUsers: [alice]\n", "c.yaml");
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain("c.yaml is not a valid config, so it cannot be upgraded");
    expect((error as ConfigError).details[0]).toContain('c.yaml:2:3: routing.authorisedUsers: unknown key; did you mean "authorizedUsers"?');
  });

  it("finds the starter config init writes already up to date", () => {
    const upgrade = upgradeConfigText(starterConfigText("demo", "alice"));
    expect(upgrade.changed).toBe(false);
  });
});

describe("the starter config", () => {
  it("shows the start gate: control, requireStartCommand and the keywords, explained", () => {
    const text = starterConfigText("demo");
    expect(text).toMatch(
      /# The label only arms a work item: its session starts when an authorized person comments\n\s+# the-loop:start-execution on it \(or runs `the-loop sessions start --work-item REF`\)\.\n\s+control:\n/,
    );
    expect(text).toContain("    requireStartCommand: true    # false: the label alone starts a session\n");
    for (const keyword of Object.values(DEFAULT_CONTROL_KEYWORDS)) expect(text).toContain(`: ${keyword}`);
    expect(configOf(text)?.routing.control).toEqual({ enabled: true, requireStartCommand: true, keywords: DEFAULT_CONTROL_KEYWORDS });
  });
});

describe("the poll-state move", () => {
  const paths = { pollStateFile: "/p/.the-loop/sessions/poll-state.json", legacyPollStateFile: "/p/.the-loop/poll-state.json" };

  it("is offered while the poller still reads the pre-state-root file", () => {
    const exists = (path: string): boolean => path === paths.legacyPollStateFile;
    expect(legacyPollStateMove(paths, exists)).toEqual({ from: paths.legacyPollStateFile, to: paths.pollStateFile });
    expect(upgradeOffers({ routingPath: ["routing"] }, paths, exists)).toEqual([
      expect.objectContaining({
        action: "move-poll-state",
        flag: "--move-poll-state",
        from: paths.legacyPollStateFile,
        to: paths.pollStateFile,
      }),
    ]);
  });

  it.each([
    ["the new default already exists", paths, () => true],
    ["there is no legacy file", paths, (path: string) => path === paths.pollStateFile],
    ["polling.stateFile is configured", { ...paths, legacyPollStateFile: null }, () => true],
  ])("is not offered when %s", (_name, layout, exists) => {
    expect(legacyPollStateMove(layout, exists)).toBeUndefined();
    expect(upgradeOffers({ routingPath: ["routing"] }, layout, exists)).toEqual([]);
  });

  it("moves the file, creating the sessions folder", async () => {
    const dir = await tempDir();
    const from = join(dir, ".the-loop", "poll-state.json");
    const to = join(dir, ".the-loop", "sessions", "poll-state.json");
    await mkdir(join(dir, ".the-loop"));
    await writeFile(from, '{"version":1}\n');
    await movePollStateFile(from, to);
    expect(await readFile(to, "utf8")).toBe('{"version":1}\n');
    await expect(readFile(from, "utf8")).rejects.toThrow(/ENOENT/);
  });

  it("says where the poll state is when the move cannot be made, or only half made", async () => {
    const dir = await tempDir();
    const from = join(dir, "poll-state.json");
    const to = join(dir, "sessions", "poll-state.json");
    await writeFile(from, "old\n");
    const link = vi.spyOn(fsPromises, "link").mockRejectedValueOnce(Object.assign(new Error("EROFS: read-only file system"), { code: "EROFS" }));
    const failed = movePollStateFile(from, to);
    await expect(failed).rejects.toBeInstanceOf(ExitError);
    await expect(failed).rejects.toThrow(
      `could not move the poll state ${from} to ${to}: EROFS: read-only file system; it stays where it is, and the poller keeps using it`,
    );
    expect(await readFile(from, "utf8")).toBe("old\n");
    link.mockRestore();

    // Linked, but the old name stays: the poller now reads the new file, so the old one is only clutter.
    vi.spyOn(fsPromises, "unlink").mockRejectedValueOnce(Object.assign(new Error("EACCES: permission denied"), { code: "EACCES" }));
    const half = movePollStateFile(from, to);
    await expect(half).rejects.toBeInstanceOf(ExitError);
    await expect(half).rejects.toThrow(
      `the poll state is now at ${to} and the poller uses it there, but ${from} could not be removed: EACCES: permission denied; delete it by hand`,
    );
    expect(await readFile(to, "utf8")).toBe("old\n");
  });

  it("never replaces a poll state already at the target", async () => {
    const dir = await tempDir();
    const from = join(dir, "old.json");
    const to = join(dir, "sessions", "poll-state.json");
    await mkdir(join(dir, "sessions"));
    await writeFile(from, "old\n");
    await writeFile(to, "new\n");
    const move = movePollStateFile(from, to);
    await expect(move).rejects.toBeInstanceOf(ExitError);
    await expect(movePollStateFile(from, to)).rejects.toThrow(/already exists, so the old poll state was not moved over it/);
    expect(await readFile(to, "utf8")).toBe("new\n");
    expect(await readFile(from, "utf8")).toBe("old\n");
  });
});
