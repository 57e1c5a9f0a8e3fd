import { describe, expect, it } from "vitest";
import { PASSED_ENV, envPatternMatches, passedEnvironment } from "../../src/sessions/session-env.js";

/** A daemon's environment as an operator's shell would leave it. */
const DAEMON_ENV = {
  HOME: "/home/alice",
  USER: "alice",
  LOGNAME: "alice",
  SHELL: "/bin/zsh",
  PATH: "/usr/local/bin:/usr/bin",
  LANG: "en_US.UTF-8",
  LC_ALL: "en_US.UTF-8",
  LC_TIME: "de_DE.UTF-8",
  TERM: "xterm-256color",
  TZ: "Europe/Berlin",
  TMPDIR: "/var/tmp",
  XDG_CONFIG_HOME: "/home/alice/.config",
  HTTPS_PROXY: "http://proxy:3128",
  NODE_EXTRA_CA_CERTS: "/etc/ca.pem",
  ANTHROPIC_API_KEY: "sk-ant-key",
  ANTHROPIC_BASE_URL: "https://llm.internal",
  ANTHROPIC_AUTH_TOKEN: "bearer",
  ANTHROPIC_MODEL: "sonnet",
  CLAUDE_CONFIG_DIR: "/home/alice/.claude-work",
  CLAUDE_CODE_USE_BEDROCK: "1",
  DISABLE_AUTOUPDATER: "1",
  CURSOR_API_KEY: "cursor-key",
  GEMINI_API_KEY: "gemini-key",
  GEMINI_CLI_HOME: "/home/alice/gemini-work",
  GOOGLE_GEMINI_BASE_URL: "https://gemini.internal",
  // What no session gets unless the operator adds it.
  THE_LOOP_GH_WEBHOOK_SECRET: "webhook-secret",
  THE_LOOP_CLI_CONFIG: "/elsewhere/cli-config.yaml",
  THE_LOOP_WORK_ITEM: "local:other#9",
  GH_TOKEN: "ghp_token",
  GITHUB_TOKEN: "ghs_token",
  AWS_SECRET_ACCESS_KEY: "aws-secret",
  AWS_REGION: "eu-central-1",
  SSH_AUTH_SOCK: "/tmp/ssh-agent.sock",
  EDITOR: "vim",
  NO_COLOR: "1",
  TMUX: "/tmp/tmux-1000/default,1,0",
  CLAUDECODE: "1",
  LC: "not a locale variable",
  UNSET: undefined,
};

const BASE = [
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "PATH",
  "LANG",
  "LC_ALL",
  "LC_TIME",
  "TZ",
  "TMPDIR",
  "XDG_CONFIG_HOME",
  "HTTPS_PROXY",
  "NODE_EXTRA_CA_CERTS",
  "ANTHROPIC_API_KEY",
  "ANTHROPIC_BASE_URL",
  "ANTHROPIC_AUTH_TOKEN",
  "ANTHROPIC_MODEL",
  "CLAUDE_CONFIG_DIR",
  "CLAUDE_CODE_USE_BEDROCK",
  "DISABLE_AUTOUPDATER",
  "CURSOR_API_KEY",
  "GEMINI_API_KEY",
  "GEMINI_CLI_HOME",
  "GOOGLE_GEMINI_BASE_URL",
];

describe("passedEnvironment", () => {
  it.each([
    ["the built-in list alone", {}, BASE],
    ["names the operator adds", { pass: ["GH_TOKEN", "SSH_AUTH_SOCK"] }, [...BASE, "GH_TOKEN", "SSH_AUTH_SOCK"]],
    ["a prefix the operator adds", { pass: ["AWS_*"] }, [...BASE, "AWS_SECRET_ACCESS_KEY", "AWS_REGION"]],
    ["a name that is not set", { pass: ["NOT_THERE"] }, BASE],
    ["never the webhook secret, even when added", { pass: ["THE_LOOP_GH_WEBHOOK_SECRET"], never: ["THE_LOOP_GH_WEBHOOK_SECRET"] }, BASE],
    ["never a secret under another name, even by prefix", { pass: ["HOOK_*"], never: ["HOOK_SECRET"] }, BASE],
    ["never a built-in name the caller rules out", { never: ["ANTHROPIC_API_KEY"] }, BASE.filter((name) => name !== "ANTHROPIC_API_KEY")],
    ["never the-loop's own, which are set, not passed", { pass: ["THE_LOOP_*", "THE_LOOP_CLI_CONFIG"] }, BASE],
  ])("%s", (_what, options, expected) => {
    const source: Record<string, string | undefined> = { ...DAEMON_ENV, HOOK_SECRET: "hook-secret" };
    const passed = passedEnvironment(source, options);
    expect(Object.keys(passed).sort()).toEqual([...expected].sort());
    for (const [name, value] of Object.entries(passed)) expect(value).toBe(source[name]);
  });

  it("passes nothing that is not named, tokens and TERM included", () => {
    const passed = passedEnvironment(DAEMON_ENV);
    for (const name of ["GH_TOKEN", "GITHUB_TOKEN", "THE_LOOP_GH_WEBHOOK_SECRET", "TERM", "TMUX", "EDITOR", "CLAUDECODE", "LC"]) {
      expect(passed).not.toHaveProperty(name);
    }
  });

  it("matches names exactly and prefixes by their start", () => {
    expect(envPatternMatches("LC_*", "LC_ALL")).toBe(true);
    expect(envPatternMatches("LC_*", "LC")).toBe(false);
    expect(envPatternMatches("HOME", "HOMEDIR")).toBe(false);
    expect(envPatternMatches("HOME", "HOME")).toBe(true);
    expect(PASSED_ENV.every((pattern) => /^[A-Za-z_][A-Za-z0-9_]*\*?$/.test(pattern))).toBe(true);
  });
});
