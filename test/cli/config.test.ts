import { mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { configJsonSchemaText } from "../../src/config/json-schema.js";
import { jsonOf, runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

interface ShowOutput {
  source: { path: string | null; origin: string };
  baseDir: string;
  config: { state: { root: string }; eventLog: { path?: string } };
  paths: Record<string, string>;
}

describe("the-loop init", () => {
  it("writes a starter config that validates, with its schema and a .gitignore", async () => {
    const cwd = await tempDir("the-loop-init-");
    const init = await runCli(["init"], { cwd });
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toContain("wrote .the-loop/cli-config.yaml");
    const config = await readFile(join(cwd, ".the-loop", "cli-config.yaml"), "utf8");
    expect(config).toMatch(/^# yaml-language-server: \$schema=\.\/cli-config\.schema\.json/);
    expect(config).toMatch(/project: the-loop-init-[a-z0-9]+/);
    expect(await readFile(join(cwd, ".the-loop", "cli-config.schema.json"), "utf8")).toBe(configJsonSchemaText());
    expect(await readFile(join(cwd, ".the-loop", ".gitignore"), "utf8")).toContain("!cli-config.yaml");

    const validate = await runCli(["config", "validate"], { cwd });
    expect(validate.code, validate.stderr).toBe(0);
    expect(validate.stdout).toContain("config OK: .the-loop/cli-config.yaml (found in the project)");

    // Ready for `the-loop start` on the local tracker, with the person who ran init authorized.
    const shown = jsonOf<{ config: { routing: { authorizedUsers: string[] }; polling: { enabled: boolean } } }>(
      await runCli(["config", "show", "--json"], { cwd }),
    );
    expect(shown.config.routing.authorizedUsers).toEqual([userInfo().username]);
    expect(shown.config.polling.enabled).toBe(true);
  });

  it("refuses to overwrite an existing config and leaves it untouched", async () => {
    const cwd = await tempDir();
    await mkdir(join(cwd, ".the-loop"));
    await writeFile(join(cwd, ".the-loop", "cli-config.yaml"), "state:\n  root: mine\n");
    const init = await runCli(["init"], { cwd });
    expect(init.code).toBe(1);
    expect(init.stderr).toContain("already exists; the-loop init never overwrites a config");
    expect(await readFile(join(cwd, ".the-loop", "cli-config.yaml"), "utf8")).toBe("state:\n  root: mine\n");
    expect(await readdir(join(cwd, ".the-loop"))).toEqual(["cli-config.yaml"]);
  });

  it("writes where --config says", async () => {
    const cwd = await tempDir();
    const init = await runCli(["--config", "conf/loop.yaml", "init"], { cwd });
    expect(init.code, init.stderr).toBe(0);
    const validate = await runCli(["--config", "conf/loop.yaml", "config", "validate", "--json"], { cwd });
    expect(jsonOf<{ valid: boolean; source: { origin: string } }>(validate)).toMatchObject({ valid: true, source: { origin: "flag" } });
  });
});

describe("the-loop config validate", () => {
  it("exits 2 naming the unknown key's path and line", async () => {
    const cwd = await tempDir();
    await mkdir(join(cwd, ".the-loop"));
    await writeFile(join(cwd, ".the-loop", "cli-config.yaml"), "state:\n  root: s\n  colour: red\n");
    const result = await runCli(["config", "validate"], { cwd });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr.trim()).toBe(
      "error: invalid config: .the-loop/cli-config.yaml:3:3: state.colour: unknown key; known keys here: root, store, url, urlEnv, daemonName, leaseSeconds, heartbeatSeconds, adoptGraceSeconds, forwardWaitSeconds",
    );
  });

  it("puts a JSON error on stdout under --json", async () => {
    const cwd = await tempDir();
    await writeFile(join(cwd, "bad.yaml"), "eventLog:\n  enabled: maybe\nnope: 1\n");
    const result = await runCli(["--config", "bad.yaml", "config", "validate", "--json"], { cwd });
    expect(result.code).toBe(2);
    expect(jsonOf(result)).toEqual({
      error: {
        code: "config",
        message: "invalid config bad.yaml: 2 problems",
        details: [expect.stringMatching(/^bad\.yaml:2:3: eventLog\.enabled: /), expect.stringMatching(/^bad\.yaml:3:1: nope: unknown key/)],
      },
    });
  });

  it("reports a missing --config file as a usage error", async () => {
    const cwd = await tempDir();
    const result = await runCli(["--config", "absent.yaml", "config", "validate"], { cwd });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toContain("absent.yaml (named by --config) does not exist");
  });

  it("warns about the older routing spelling on stderr and still validates", async () => {
    const cwd = await tempDir();
    await writeFile(join(cwd, "old.yaml"), "webhooks:\n  ghWebhook:\n    routing:\n      registryDir: /srv/sessions\n");
    const result = await runCli(["--config", "old.yaml", "config", "validate", "--json"], { cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain("warning: old.yaml:3:5: webhooks.ghWebhook.routing: this is the older spelling");
    expect(jsonOf<{ warnings: unknown[] }>(result).warnings).toHaveLength(1);
  });
});

describe("the-loop config show", () => {
  it("derives every path under a custom state.root and keeps an explicit eventLog.path verbatim", async () => {
    const cwd = await tempDir();
    const logPath = join(cwd, "elsewhere", "events.jsonl");
    await mkdir(join(cwd, ".the-loop"));
    await writeFile(join(cwd, ".the-loop", "cli-config.yaml"), `state:\n  root: var/loop\neventLog:\n  path: ${logPath}\n`);
    const sub = join(cwd, "sub");
    await mkdir(sub);
    const result = await runCli(["--config", join(cwd, ".the-loop", "cli-config.yaml"), "config", "show", "--json"], { cwd: sub });
    expect(result.code, result.stderr).toBe(0);
    const shown = jsonOf<ShowOutput>(result);
    const root = join(cwd, "var", "loop");
    expect(shown.baseDir).toBe(cwd);
    expect(shown.config.state.root).toBe("var/loop");
    expect(shown.paths).toEqual({
      root,
      registryDir: join(root, "sessions"),
      controlDir: join(root, "sessions", "control"),
      linksDir: join(root, "sessions", "links"),
      ciDir: join(root, "sessions", "ci"),
      graphsDir: join(root, "graphs"),
      pollStateFile: join(root, "sessions", "poll-state.json"),
      legacyPollStateFile: join(cwd, ".the-loop", "poll-state.json"),
      eventLog: logPath,
      ghWebhookPidfile: join(root, "gh-webhook.pid"),
      ghWebhookStatusFile: join(root, "gh-webhook-status.json"),
      pollPidfile: join(root, "poll.pid"),
      pollStatusFile: join(root, "poll-status.json"),
      daemonLog: join(root, "logs", "daemon.out"),
      binDir: join(root, "bin"),
      tmpDir: join(root, "tmp"),
      trackerDir: join(root, "tracker"),
      workspacesDir: join(root, "workspaces"),
    });
  });

  it("shows the defaults and derived paths when there is no config file", async () => {
    const cwd = await tempDir();
    const result = await runCli(["config", "show"], { cwd });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("# config: no config file; defaults apply");
    expect(result.stdout).toContain(`root: ${join(cwd, ".the-loop")}`);
    expect(result.stdout).toContain(`eventLog: ${join(cwd, ".the-loop", "logs", "events.jsonl")}`);
  });
});
