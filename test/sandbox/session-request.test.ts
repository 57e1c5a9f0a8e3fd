import { describe, expect, it } from "vitest";
import {
  SANDBOX_BIN_DIR,
  SANDBOX_SESSION_DIR,
  agentConfigDirs,
  agentConfigPaths,
  nodeRoot,
  programRoot,
  sessionSandbox,
  type SessionSandboxFacts,
} from "../../src/sandbox/index.js";
import { planBubblewrap } from "../../src/sandbox/plan.js";
import { resolveSandboxBinds } from "../../src/sessions/sandbox-runner.js";

function facts(overrides: Partial<SessionSandboxFacts> = {}): SessionSandboxFacts {
  return {
    harness: "claude",
    cwd: "/srv/project",
    gitDirs: ["/srv/project/.git"],
    env: {
      HOME: "/home/op",
      PATH: "/srv/project/.the-loop/bin:/usr/local/bin:/usr/bin",
      THE_LOOP_WORK_ITEM: "local:demo#1",
      THE_LOOP_CLI_CONFIG: "/srv/project/.the-loop/cli-config.yaml",
      THE_LOOP_SESSION_SOCKET: "/srv/project/.the-loop/sockets/ab12/sock",
      THE_LOOP_SESSION_TOKEN: "t0k3n",
    },
    home: "/home/op",
    stateRoot: "/srv/project/.the-loop",
    argv: ["/home/op/.local/bin/claude", "--session-id", "s1", "--", "Choose a database"],
    programRealPath: "/home/op/.cache/the-loop/claude-code-2.1.197/node_modules/@anthropic-ai/claude-code/cli.js",
    nodeRealPath: "/usr/bin/node",
    cliEntry: "/opt/the-loop/bin/the-loop.js",
    installation: "/opt/the-loop",
    sessionBinDir: "/srv/project/.the-loop/bin",
    sessionSocket: "/srv/project/.the-loop/sockets/ab12/sock",
    binds: [],
    system: [{ kind: "dir", path: "/usr" }],
    ...overrides,
  };
}

describe("agentConfigPaths: each built-in agent's own config, nothing for a command harness", () => {
  it.each([
    ["claude", {}, ["/home/op/.claude.json", "/home/op/.claude"]],
    ["claude", { CLAUDE_CONFIG_DIR: "/cfg/claude" }, ["/cfg/claude"]],
    ["codex", {}, ["/home/op/.codex"]],
    ["codex", { CODEX_HOME: "/cfg/codex" }, ["/cfg/codex"]],
    ["gemini", {}, ["/home/op/.gemini"]],
    ["gemini", { GEMINI_CLI_HOME: "/cfg/g", GEMINI_CLI_TRUSTED_FOLDERS_PATH: "/cfg/trusted.json" }, ["/cfg/g/.gemini", "/cfg/trusted.json"]],
    ["cursor", {}, ["/home/op/.cursor"]],
    ["my-agent", {}, []],
  ] as const)("%s %j", (harness, env, paths) => {
    expect(agentConfigPaths(harness, env, "/home/op")).toEqual(paths);
  });
});

describe("agentConfigDirs: the folders among them, made before the sandbox so a missing one is still bound", () => {
  it.each([
    ["claude", {}, ["/home/op/.claude"]],
    ["claude", { CLAUDE_CONFIG_DIR: "/cfg/claude" }, ["/cfg/claude"]],
    ["codex", {}, ["/home/op/.codex"]],
    ["gemini", { GEMINI_CLI_HOME: "/cfg/g", GEMINI_CLI_TRUSTED_FOLDERS_PATH: "/cfg/trusted.json" }, ["/cfg/g/.gemini"]],
    ["my-agent", {}, []],
  ] as const)("%s %j", (harness, env, dirs) => {
    expect(agentConfigDirs(harness, env, "/home/op")).toEqual(dirs);
  });
});

describe("programRoot and nodeRoot: what a program needs bound to run", () => {
  it.each([
    ["a system program", "/usr/bin/git", undefined],
    ["a package in a node_modules tree: the folder holding the tree", "/home/op/.cache/x/node_modules/@a/b/cli.js", "/home/op/.cache/x"],
    ["a program elsewhere: its folder", "/opt/agent/bin/agent", "/opt/agent/bin"],
  ])("%s", (_name, path, root) => {
    expect(programRoot(path)).toBe(root);
  });
  it.each([
    ["the system's node", "/usr/bin/node", undefined],
    ["an installed prefix", "/home/op/.nvm/versions/node/v22.1.0/bin/node", "/home/op/.nvm/versions/node/v22.1.0"],
  ])("%s", (_name, path, root) => {
    expect(nodeRoot(path)).toBe(root);
  });
});

describe("sessionSandbox: the session's request and its environment inside", () => {
  it("puts the shim first on PATH in place of the session's bin folder, the socket at its inside path, and no config", () => {
    const { env } = sessionSandbox(facts());
    expect(env.PATH).toBe(`${SANDBOX_BIN_DIR}:/usr/local/bin:/usr/bin`);
    expect(env.THE_LOOP_SESSION_SOCKET).toBe(`${SANDBOX_SESSION_DIR}/sock`);
    expect(env).not.toHaveProperty("THE_LOOP_CLI_CONFIG");
    expect(env.THE_LOOP_SESSION_TOKEN).toBe("t0k3n");
    expect(env.THE_LOOP_WORK_ITEM).toBe("local:demo#1");
  });

  it("without a socket place, names none", () => {
    const { env, request } = sessionSandbox(facts({ sessionSocket: undefined }));
    expect(env).not.toHaveProperty("THE_LOOP_SESSION_SOCKET");
    expect(request.sessionSocket).toBeUndefined();
  });

  it("binds the socket's folder, the installation and the program's tree read-only, the agent config read-write, and runs the real program", () => {
    const { request } = sessionSandbox(facts());
    expect(request.sessionSocket).toEqual({ source: "/srv/project/.the-loop/sockets/ab12", target: SANDBOX_SESSION_DIR });
    expect(request.binds).toEqual([
      { source: "/opt/the-loop", target: "/opt/the-loop", mode: "ro" },
      { source: "/home/op/.cache/the-loop/claude-code-2.1.197", target: "/home/op/.cache/the-loop/claude-code-2.1.197", mode: "ro" },
    ]);
    expect(request.agentConfig.map((bind) => [bind.source, bind.mode])).toEqual([
      ["/home/op/.claude.json", "rw"],
      ["/home/op/.claude", "rw"],
    ]);
    expect(request.argv).toEqual([
      "/home/op/.cache/the-loop/claude-code-2.1.197/node_modules/@anthropic-ai/claude-code/cli.js",
      "--session-id",
      "s1",
      "--",
      "Choose a database",
    ]);
    expect(request.links).toEqual([{ path: `${SANDBOX_BIN_DIR}/the-loop`, to: "/opt/the-loop/bin/the-loop.js" }]);
    expect(request.terminal).toBe(true);
    expect(request.env).toBeUndefined();
  });

  it("binds nothing twice: a program inside the installation or an operator's bind needs no mount of its own", () => {
    const { request } = sessionSandbox(
      facts({
        programRealPath: "/opt/the-loop/node_modules/agent/cli.js",
        binds: [{ source: "/data/tools", target: "/data/tools", mode: "ro" }],
        nodeRealPath: "/data/tools/node/bin/node",
      }),
    );
    expect(request.binds.map((bind) => bind.source)).toEqual(["/opt/the-loop", "/data/tools"]);
  });

  it("makes a plan bwrap takes: the project folder bound with its state root masked, the socket and shim inside", () => {
    const argv = planBubblewrap(sessionSandbox(facts()).request);
    const pair = (flag: string, a: string, b?: string): number =>
      argv.findIndex((word, index) => word === flag && argv[index + 1] === a && (b === undefined || argv[index + 2] === b));
    expect(pair("--bind", "/srv/project", "/srv/project")).toBeGreaterThan(0);
    expect(pair("--tmpfs", "/srv/project/.the-loop")).toBeGreaterThan(pair("--bind", "/srv/project", "/srv/project"));
    expect(pair("--bind", "/srv/project/.the-loop/sockets/ab12", SANDBOX_SESSION_DIR)).toBeGreaterThan(0);
    expect(pair("--symlink", "/opt/the-loop/bin/the-loop.js", `${SANDBOX_BIN_DIR}/the-loop`)).toBeGreaterThan(0);
    expect(argv).not.toContain("--new-session");
  });
});

describe("resolveSandboxBinds: routing.sandbox.bind as the plan takes it", () => {
  it("reads ~ as the home, a relative path as the project's, read-only unless said", () => {
    expect(
      resolveSandboxBinds(
        ["~/.config/git", "cache", { source: "/srv/creds", target: "/run/creds", mode: "ro" }, { source: "~/.npm", mode: "rw" }],
        "/srv/project",
        "/home/op",
      ),
    ).toEqual([
      { source: "/home/op/.config/git", target: "/home/op/.config/git", mode: "ro" },
      { source: "/srv/project/cache", target: "/srv/project/cache", mode: "ro" },
      { source: "/srv/creds", target: "/run/creds", mode: "ro" },
      { source: "/home/op/.npm", target: "/home/op/.npm", mode: "rw" },
    ]);
  });
});
