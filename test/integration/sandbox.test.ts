import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo, type Server } from "node:net";
import { homedir, tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkBubblewrap } from "../../src/sandbox/available.js";
import { hostSystem } from "../../src/sandbox/host.js";
import { planBubblewrap, type SandboxBind, type SandboxRequest } from "../../src/sandbox/plan.js";
import { runBounded } from "../../src/subprocess/index.js";
import { waitFor } from "../support/wait.js";

/**
 * The plan run by the real bwrap, with a probe (test/sandbox/probe.mjs) as the harness: what a
 * hostile agent in a session could see and do. The secrets it must not reach are real — a
 * "daemon" holding one in its environment, a fake ~/.ssh, a state root, a second worktree — and
 * the test shows first that they are there to be read from outside.
 */

const run = promisify(execFile);
const check = await checkBubblewrap();
const skipReason = check.available ? "" : ` — skipped: ${check.reason}`;
if (!check.available) console.warn(`test/integration/sandbox.test.ts skipped: ${check.reason}`);

const PROBE_DIR = fileURLToPath(new URL("../sandbox", import.meta.url));
const PROBE = join(PROBE_DIR, "probe.mjs");
const SECRET = `daemon-secret-${process.pid}-${Date.now()}`;
const NODE = realpathSync(process.execPath);
const OUTSIDE_TMP = `/tmp/the-loop-sandbox-outside-${process.pid}`;
const INSIDE_TMP = `/tmp/the-loop-sandbox-inside-${process.pid}`;

let base = "";
let stateRoot = "";
let worktree = "";
let otherWorktree = "";
let home = "";
let commonDir = "";
let adminDir = "";
let daemon: ChildProcess | undefined;
let server: Server | undefined;

async function git(cwd: string, ...args: string[]): Promise<string> {
  return (await run("git", args, { cwd, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: base } })).stdout.trim();
}

/** Node itself, where it is not under /usr (a CI's tool cache, a version manager): bound read-only. */
function nodeBinds(): SandboxBind[] {
  const prefix = dirname(dirname(NODE));
  return NODE.startsWith("/usr/") ? [] : [{ source: prefix, target: prefix, mode: "ro" }];
}

function sessionRequest(overrides: Partial<SandboxRequest> = {}): SandboxRequest {
  return {
    worktree,
    gitDirs: [commonDir, adminDir],
    home,
    agentConfig: [
      { source: join(home, ".claude.json"), target: join(home, ".claude.json"), mode: "rw" },
      { source: join(home, ".claude"), target: join(home, ".claude"), mode: "rw" },
      // Not there: skipped, as a harness's config the operator never made.
      { source: join(home, ".gemini"), target: join(home, ".gemini"), mode: "rw" },
    ],
    binds: [{ source: PROBE_DIR, target: PROBE_DIR, mode: "ro" }, ...nodeBinds()],
    env: { PATH: "/usr/bin:/bin", HOME: home, LANG: "C.UTF-8", THE_LOOP_SESSION: "item-1", MULTI_LINE: "two\nlines" },
    argv: [NODE, PROBE],
    cwd: worktree,
    stateRoot,
    system: hostSystem(),
    denyNestedUserNamespaces: check.available && check.denyNestedUserNamespaces,
    ...overrides,
  };
}

describe.skipIf(!check.available)(`a session in the real bwrap${skipReason}`, () => {
  beforeAll(async () => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "the-loop-sandbox-")));
    stateRoot = join(base, "state");
    mkdirSync(join(stateRoot, "workspaces"), { recursive: true });
    writeFileSync(join(stateRoot, "secret.txt"), SECRET);
    home = join(base, "home");
    mkdirSync(join(home, ".ssh"), { recursive: true, mode: 0o700 });
    writeFileSync(join(home, ".ssh", "id_ed25519"), `ssh key ${SECRET}`, { mode: 0o600 });
    mkdirSync(join(home, ".claude"));
    writeFileSync(join(home, ".claude.json"), '{"agent":"config"}');
    writeFileSync(join(home, ".claude", "settings.json"), '{"theme":"dark"}');

    const repo = join(base, "repo");
    mkdirSync(repo);
    await git(repo, "init", "-q", "-b", "main");
    await git(repo, "config", "user.name", "Sandbox Test");
    await git(repo, "config", "user.email", "sandbox@example.invalid");
    writeFileSync(join(repo, "README.md"), "the repository\n");
    await git(repo, "add", "README.md");
    await git(repo, "commit", "-q", "-m", "first");
    worktree = join(stateRoot, "workspaces", "item-1");
    otherWorktree = join(stateRoot, "workspaces", "item-2");
    await git(base, "init", "-q", "--bare", "remote.git");
    await git(base, "init", "-q", "--bare", "unbound.git");
    await git(repo, "worktree", "add", "-q", "-b", "item-1", worktree);
    await git(repo, "worktree", "add", "-q", "-b", "item-2", otherWorktree);
    commonDir = join(repo, ".git");
    adminDir = join(commonDir, "worktrees", "item-1");
    expect(await git(worktree, "rev-parse", "--path-format=absolute", "--git-common-dir")).toBe(commonDir);
    expect(await git(worktree, "rev-parse", "--path-format=absolute", "--git-dir")).toBe(adminDir);

    // A daemon of the same user, a secret in its environment, as the-loop's would be.
    daemon = spawn(NODE, ["-e", "setInterval(() => {}, 1 << 30)", "sandbox-test-daemon"], { env: { LOOP_SECRET: SECRET }, stdio: "ignore" });
    await waitFor(
      "the daemon's environment",
      () => existsSync(`/proc/${daemon?.pid}/environ`) && readFileSync(`/proc/${daemon?.pid}/environ`, "utf8").includes(SECRET),
    );

    server = createServer((socket) => socket.once("data", (data) => socket.end(`pong:${String(data).trim()}`)));
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    writeFileSync(OUTSIDE_TMP, "written outside");
  });

  afterAll(async () => {
    daemon?.kill("SIGKILL");
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    rmSync(OUTSIDE_TMP, { force: true });
    rmSync(INSIDE_TMP, { force: true });
    if (base !== "") rmSync(base, { recursive: true, force: true });
  });

  it("the probe sees what the plan binds and nothing else, and works in its worktree", async () => {
    // What the sandbox must hide is there to be read from outside.
    expect(readFileSync(`/proc/${daemon?.pid}/environ`, "utf8")).toContain(SECRET);
    expect(readFileSync(join(home, ".ssh", "id_ed25519"), "utf8")).toContain(SECRET);
    expect(readFileSync(join(otherWorktree, "README.md"), "utf8")).toBe("the repository\n");

    const realHome = homedir();
    const input = {
      secret: SECRET,
      daemonPid: daemon?.pid,
      port: (server?.address() as AddressInfo).port,
      worktree,
      outsideTmpFile: OUTSIDE_TMP,
      insideTmpFile: INSIDE_TMP,
      remote: join(base, "remote.git"),
      unboundRemote: join(base, "unbound.git"),
      read: {
        stateSecret: join(stateRoot, "secret.txt"),
        otherWorktree: join(otherWorktree, "README.md"),
        sshKey: join(home, ".ssh", "id_ed25519"),
        agentConfig: join(home, ".claude.json"),
        agentSettings: join(home, ".claude", "settings.json"),
        resolver: "/etc/resolv.conf",
      },
      list: {
        stateRoot,
        workspaces: join(stateRoot, "workspaces"),
        home,
        realHome,
      },
      write: {
        worktreeGitFile: join(worktree, ".git"),
        repositoryConfig: join(commonDir, "config"),
        repositoryHook: join(commonDir, "hooks", "pre-commit"),
        worktreeCommondir: join(adminDir, "commondir"),
      },
    };
    // The remote the operator bound in, as a credential for `git push` would be (routing.sandbox.bind).
    const remoteBind = { source: input.remote, target: input.remote, mode: "rw" } as const;
    const argv = planBubblewrap(sessionRequest({ argv: [NODE, PROBE, JSON.stringify(input)], binds: [...sessionRequest().binds, remoteBind] }));
    const result = await runBounded({ argv, cwd: "/", env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, timeoutMs: 20_000, outputCapBytes: 1024 * 1024 });
    expect(result.stderr).toBe("");
    expect(result.exitCode).toBe(0);
    const report = JSON.parse(result.stdout) as ProbeReport;

    // Exactly the environment given; bwrap adds PWD. runBounded's run mark went with --clearenv.
    expect(report.env).toEqual({ ...sessionRequest().env, PWD: worktree });

    // A PID namespace of its own: bwrap's init as 1, the probe, nothing of the host.
    expect(report.processes.map((entry) => [entry.pid, basename(entry.argv?.[0] ?? "?")])).toEqual([
      [1, "bwrap"],
      [report.pid, basename(NODE)],
    ]);
    expect(report.environsWithSecret).toEqual([]);
    expect(report.daemonEnviron.ok).toBe(false);

    // The state root, the other worktree and the rest of the home are not there; the path to the worktree is, empty but for it.
    expect(report.reads.stateSecret).toEqual({ ok: false, code: "ENOENT" });
    expect(report.reads.otherWorktree).toEqual({ ok: false, code: "ENOENT" });
    expect(report.lists.stateRoot).toEqual({ ok: true, value: ["workspaces"] });
    expect(report.lists.workspaces).toEqual({ ok: true, value: ["item-1"] });
    expect(report.reads.sshKey).toEqual({ ok: false, code: "ENOENT" });
    expect(report.lists.home).toEqual({ ok: true, value: [".claude", ".claude.json"] });
    // bwrap makes the folders leading to a bind; the real home, unless such a folder, is not there at all.
    if (!base.startsWith(`${realHome}/`)) expect(report.lists.realHome).toEqual({ ok: false, code: "ENOENT" });
    expect(report.reads.agentConfig).toEqual({ ok: true, value: '{"agent":"config"}' });
    expect(report.reads.agentSettings).toEqual({ ok: true, value: '{"theme":"dark"}' });
    expect(report.reads.resolver.ok).toBe(true);

    // A private /tmp, both ways.
    expect(report.outsideTmpSeen).toBe(false);
    expect(existsSync(INSIDE_TMP)).toBe(false);

    // The worktree is writable and git commits in it; what git would run outside is not writable.
    expect(report.git).toEqual({ ok: true, value: "a commit made in the sandbox" });
    expect(await git(worktree, "log", "-1", "--format=%s")).toBe("a commit made in the sandbox");
    expect(report.pushes.bound.ok).toBe(true);
    expect(await git(input.remote, "log", "-1", "--format=%s", "item-1")).toBe("a commit made in the sandbox");
    expect(report.pushes.unbound.ok).toBe(false);
    expect(readFileSync(join(worktree, "from-inside.txt"), "utf8")).toBe("made in the sandbox\n");
    for (const [name, outcome] of Object.entries(report.writes)) expect(outcome, name).toEqual({ ok: false, code: "EROFS" });

    // The network is not cut: the host's loopback is shared (no --unshare-net).
    expect(report.tcp).toEqual({ ok: true, value: "pong:ping" });
  });

  describe("on a tmux pane", () => {
    const socket = `loop-test-sandbox-${process.pid}`;
    // A pane whose probe ends would otherwise leave the server without sessions: it exits, and the
    // next test's new-session can meet it on its way out ("server exited unexpectedly").
    beforeAll(async () => {
      await run("tmux", ["-L", socket, "new-session", "-d", "-s", "keep", "--", NODE, "-e", "setInterval(() => undefined, 1 << 30)"]);
    });
    afterAll(async () => {
      await run("tmux", ["-L", socket, "kill-server"]).catch(() => undefined);
    });

    async function inPane(name: string, terminal: boolean): Promise<string> {
      const out = join(base, `tty-${name}`);
      mkdirSync(out);
      const log = join(out, "log");
      const request = sessionRequest({ terminal, binds: [...sessionRequest().binds, { source: out, target: out, mode: "rw" }] });
      const argv = planBubblewrap({ ...request, argv: [NODE, PROBE, JSON.stringify({ mode: "tty", log })] });
      await run("tmux", ["-L", socket, "new-session", "-d", "-s", name, "-x", "100", "-y", "30", "--", ...argv]);
      await waitFor(`the probe on pane ${name}`, () => existsSync(log) && readFileSync(log, "utf8").includes("ready"));
      return log;
    }

    it("terminal: true keeps the pane as the probe's controlling terminal: /dev/tty opens and a resize arrives", async () => {
      const log = await inPane("terminal", true);
      expect(readFileSync(log, "utf8")).toContain("devtty=ok");
      await run("tmux", ["-L", socket, "resize-window", "-t", "terminal", "-x", "120", "-y", "40"]);
      await waitFor("the resize inside the sandbox", () => readFileSync(log, "utf8").includes("winch=120x40"));
    });

    it("terminal: false (--new-session) takes the terminal away: /dev/tty is ENXIO", async () => {
      const log = await inPane("detached", false);
      expect(readFileSync(log, "utf8")).toContain("devtty=ENXIO");
    });
  });
});

type Outcome<T> = { ok: true; value: T } | { ok: false; code: string };

interface ProbeReport {
  env: Record<string, string>;
  pid: number;
  processes: { pid: number; argv: string[] | null }[];
  environsWithSecret: string[];
  daemonEnviron: Outcome<boolean>;
  reads: Record<"stateSecret" | "otherWorktree" | "sshKey" | "agentConfig" | "agentSettings" | "resolver", Outcome<string>>;
  lists: Record<"stateRoot" | "workspaces" | "home" | "realHome", Outcome<string[]>>;
  outsideTmpSeen: boolean;
  writes: Record<string, Outcome<undefined>>;
  git: Outcome<string>;
  pushes: Record<"bound" | "unbound", Outcome<string>>;
  tcp: Outcome<string>;
}
