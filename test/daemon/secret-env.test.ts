import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  credentialFiles,
  daemonSecretNames,
  decodeHandedEnvironment,
  encodeHandedEnvironment,
  looksLikeCredential,
  secretsInEnvironmentWarning,
  secretsInInitialEnvironment,
  splitDaemonEnvironment,
} from "../../src/daemon/secret-env.js";
import { tempDir } from "../support/temp.js";

describe("looksLikeCredential", () => {
  it.each([
    ["GH_TOKEN", true],
    ["GITHUB_TOKEN", true],
    ["THE_LOOP_GH_WEBHOOK_SECRET", true],
    ["ANTHROPIC_API_KEY", true],
    ["ANTHROPIC_AUTH_TOKEN", true],
    ["CLAUDE_CODE_OAUTH_TOKEN", true],
    ["CURSOR_API_KEY", true],
    ["NODE_AUTH_TOKEN", true],
    ["DB_PASSWORD", true],
    ["AWS_SECRET_ACCESS_KEY", true],
    ["SIGNING_KEY", true],
    ["GITLAB_PAT", true],
    ["PATH", false],
    ["HOME", false],
    ["KEYBOARD", false],
    ["CREDENTIALS_DIRECTORY", false],
    ["SSH_AUTH_SOCK", false],
    ["GH_TOKEN_FILE", false],
    ["THE_LOOP_TEST_RUN", false],
  ])("%s → %s", (name, expected) => {
    expect(looksLikeCredential(name)).toBe(expected);
  });
});

describe("splitDaemonEnvironment", () => {
  const env = {
    PATH: "/bin",
    HOME: "/home/op",
    LC_ALL: "C.UTF-8",
    NODE_OPTIONS: "--max-old-space-size=512",
    NODE_AUTH_TOKEN: "npm-token",
    THE_LOOP_CLI_CONFIG: "/p/cli-config.yaml",
    THE_LOOP_GH_WEBHOOK_SECRET: "whsec",
    GH_TOKEN: "ghp",
    GATE: "hook-token-under-a-plain-name",
    ANTHROPIC_API_KEY: "sk-ant",
    EDITOR: "vim",
    XDG_RUNTIME_DIR: "/run/user/1000",
    THE_LOOP_ENV_FD: "3",
    UNSET: undefined,
  };
  const { boot, handed } = splitDaemonEnvironment(env, ["GH_TOKEN", "THE_LOOP_GH_WEBHOOK_SECRET", "GATE"]);

  it("keeps the boot variables that hold no credential", () => {
    expect(boot).toEqual({
      PATH: "/bin",
      HOME: "/home/op",
      LC_ALL: "C.UTF-8",
      NODE_OPTIONS: "--max-old-space-size=512",
      THE_LOOP_CLI_CONFIG: "/p/cli-config.yaml",
      XDG_RUNTIME_DIR: "/run/user/1000",
    });
  });

  it("hands every other variable over, the config's secrets whatever their names", () => {
    expect(handed).toEqual({
      NODE_AUTH_TOKEN: "npm-token",
      THE_LOOP_GH_WEBHOOK_SECRET: "whsec",
      GH_TOKEN: "ghp",
      GATE: "hook-token-under-a-plain-name",
      ANTHROPIC_API_KEY: "sk-ant",
      EDITOR: "vim",
    });
  });

  it("round-trips what it hands through the pipe's encoding", () => {
    expect(decodeHandedEnvironment(encodeHandedEnvironment(handed))).toEqual(handed);
  });
});

describe("decodeHandedEnvironment", () => {
  it.each([
    ["", "not JSON"],
    ["null", "names no environment"],
    ['{"env":[]}', "names no environment"],
  ])("refuses %j", (text, message) => {
    expect(() => decodeHandedEnvironment(text)).toThrow(message);
  });

  it("drops names and values no environment can hold", () => {
    expect(decodeHandedEnvironment(JSON.stringify({ env: { OK: "1", "A=B": "x", NUL: "a\0b", NUM: 3 } }))).toEqual({ OK: "1" });
  });
});

describe("daemonSecretNames", () => {
  it("names the GitHub token's variables, the webhook secret's, each remote hook's token and the state database's URL", () => {
    const config = {
      integrations: { github: { tokenEnv: ["GH_TOKEN", "GITHUB_TOKEN"] } },
      webhooks: { ghWebhook: { secretEnv: "THE_LOOP_GH_WEBHOOK_SECRET" } },
      hooks: [{ name: "a", url: "https://x", tokenEnv: "A_TOKEN" }, { name: "b", command: ["x"] }, "junk"],
      state: { urlEnv: "THE_LOOP_STATE_URL" },
    } as unknown as Parameters<typeof daemonSecretNames>[0];
    expect(daemonSecretNames(config)).toEqual(["GH_TOKEN", "GITHUB_TOKEN", "THE_LOOP_GH_WEBHOOK_SECRET", "A_TOKEN", "THE_LOOP_STATE_URL"]);
  });

  it("names each notification sink's URL variable: a sink's URL posts into its channel", () => {
    const config = {
      integrations: { github: { tokenEnv: ["GH_TOKEN"] } },
      webhooks: { ghWebhook: { secretEnv: "THE_LOOP_GH_WEBHOOK_SECRET" } },
      notify: {
        sinks: [
          { name: "team", urlEnv: "THE_LOOP_NOTIFY_URL" },
          { name: "ops", urlEnv: "OPS_HOOK" },
        ],
      },
    } as unknown as Parameters<typeof daemonSecretNames>[0];
    expect(daemonSecretNames(config)).toEqual(["GH_TOKEN", "THE_LOOP_GH_WEBHOOK_SECRET", "THE_LOOP_NOTIFY_URL", "OPS_HOOK"]);
    // THE_LOOP_* stays in the daemon's initial environment unless it is named a secret.
    expect(splitDaemonEnvironment({ THE_LOOP_NOTIFY_URL: "https://hooks.example/x", PATH: "/bin" }, daemonSecretNames(config)).boot).toEqual({ PATH: "/bin" });
  });
});

describe("credentialFiles", () => {
  it("reads each file named like a variable, one trailing newline dropped", async () => {
    const dir = join(await tempDir(), "creds");
    await mkdir(join(dir, "SUBDIR"), { recursive: true });
    await writeFile(join(dir, "GH_TOKEN"), "ghp_x\n");
    await writeFile(join(dir, "MULTI"), "line1\nline2\n\n");
    await writeFile(join(dir, "not-a-name"), "ignored");
    expect(credentialFiles(dir)).toEqual({ GH_TOKEN: "ghp_x", MULTI: "line1\nline2\n" });
    expect(credentialFiles(undefined)).toEqual({});
  });

  it("says which directory it cannot read", () => {
    expect(() => credentialFiles("/nonexistent/creds")).toThrow("cannot read the credentials directory /nonexistent/creds ($CREDENTIALS_DIRECTORY)");
  });
});

describe("secretsInInitialEnvironment", () => {
  it("names, never quotes, the secrets an environment block holds", () => {
    const block = ["PATH=/bin", "GATE=v1", "ANTHROPIC_API_KEY=v2", "EDITOR=vim", "odd", ""].join("\0");
    const names = secretsInInitialEnvironment(["GATE", "GH_TOKEN"], block);
    expect(names).toEqual(["ANTHROPIC_API_KEY", "GATE"]);
    const warning = secretsInEnvironmentWarning(names, 42) ?? "";
    expect(warning).toContain("ANTHROPIC_API_KEY, GATE reached the daemon in its environment");
    expect(warning).toContain("/proc/42/environ");
    expect(warning).not.toContain("v1");
    expect(secretsInEnvironmentWarning([])).toBeUndefined();
  });
});
