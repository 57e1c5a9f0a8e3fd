import { mkdirSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, resolve } from "node:path";
import type { SandboxMode } from "../config/schema.js";
import { messageOf } from "../errors.js";
import type { EventSink } from "../events/log.js";
import { findExecutable } from "../harness/preflight.js";
import { ProgramNotFoundError, RunnerError, type PaneExit, type SessionRunner, type SpawnRequest } from "../harness/runner.js";
import {
  SandboxPlanError,
  agentConfigDirs,
  bubblewrapAvailable,
  hostSystem,
  planBubblewrap,
  rootOnlySecrets,
  sessionSandbox,
  type BubblewrapCheck,
  type SandboxBind,
} from "../sandbox/index.js";
import type { SystemEntry } from "../sandbox/index.js";
import { runBounded } from "../subprocess/index.js";
import { CLI_ENTRY, SESSION_SOCKET_ENV } from "./session-env.js";

/**
 * The session runner that starts each harness inside its sandbox (docs/security.md): it wraps the
 * harness argv in the bwrap plan of the session and hands that to the runner it wraps (tmux). The
 * pane then runs bwrap and nothing after it, so every process the agent starts is inside.
 *
 * `routing.sandbox.mode` is read at each spawn (the routing reloads live). `auto` runs a session
 * unsandboxed where bwrap does not work here, and says so (`session.unsandboxed`, a `status`
 * problem); `bubblewrap` refuses the spawn then; `none` never wraps.
 */

export interface SandboxSettings {
  readonly mode: SandboxMode;
  /** `routing.sandbox.bind`, resolved (resolveSandboxBinds). */
  readonly binds: readonly SandboxBind[];
}

export interface SandboxRunnerOptions {
  readonly inner: SessionRunner;
  readonly settings: () => SandboxSettings;
  readonly stateRoot: string;
  /** The environment every session is given under its request's own (the tmux runner's `environment`). */
  readonly environment: Readonly<Record<string, string>>;
  /** The folder of the `the-loop` link on the session's PATH outside: inside, a shim of the sandbox's own stands for it. */
  readonly sessionBinDir: string;
  readonly events: EventSink;
  /** Whether bwrap works here (default: asked once per process). */
  readonly check?: () => Promise<BubblewrapCheck>;
  /** The host's system layout (default: read once). */
  readonly system?: () => readonly SystemEntry[];
  /** The system's root-only files to show empty (default: rootOnlySecrets, read once). */
  readonly hiddenFiles?: () => readonly string[];
}

const GIT_TIMEOUT_MS = 10_000;

/** `routing.sandbox.bind` as the plan takes it: each source absolute (`~/` is the home, a relative path the project's), ro unless said. */
export function resolveSandboxBinds(
  entries: readonly (string | { readonly source: string; readonly target?: string | undefined; readonly mode: "ro" | "rw" })[],
  baseDir: string,
  home: string,
): SandboxBind[] {
  const absolute = (path: string): string =>
    path === "~" ? home : path.startsWith("~/") ? resolve(home, path.slice(2)) : isAbsolute(path) ? resolve(path) : resolve(baseDir, path);
  return entries.map((entry) => {
    if (typeof entry === "string") {
      const source = absolute(entry);
      return { source, target: source, mode: "ro" };
    }
    const source = absolute(entry.source);
    return { source, target: entry.target === undefined ? source : absolute(entry.target), mode: entry.mode };
  });
}

export class SandboxRunner implements SessionRunner {
  private systemEntries: readonly SystemEntry[] | undefined;
  private hiddenFiles: readonly string[] | undefined;

  constructor(private readonly options: SandboxRunnerOptions) {}

  async spawn(request: SpawnRequest): Promise<void> {
    const settings = this.options.settings();
    if (settings.mode === "none") return await this.options.inner.spawn(request);
    const check = await (this.options.check ?? bubblewrapAvailable)();
    if (!check.available) {
      if (settings.mode === "bubblewrap") {
        throw new RunnerError(
          `cannot start ${request.target} in its sandbox (routing.sandbox.mode: bubblewrap): ${check.reason}; or set routing.sandbox.mode to auto or none`,
        );
      }
      this.options.events.emit("session.unsandboxed", { work_item: request.workItem ?? "", reason: check.reason });
      return await this.options.inner.spawn(request);
    }
    const wrapped = await this.wrap(request, check, settings);
    await this.options.inner.spawn(wrapped);
    this.options.events.emit("session.sandboxed", {
      work_item: request.workItem ?? "",
      sandbox: check.version,
      binds: settings.binds.map((bind) => `${bind.source}:${bind.target}:${bind.mode}`),
    });
  }

  /** The request as it runs in the sandbox: bwrap's argv around the harness's, the env it needs inside. */
  private async wrap(request: SpawnRequest, check: Extract<BubblewrapCheck, { available: true }>, settings: SandboxSettings): Promise<SpawnRequest> {
    const { workItem, harness } = request;
    // Without them the sandbox cannot be made for the session: fail closed rather than run it bare.
    if (workItem === undefined || harness === undefined) {
      throw new RunnerError(`cannot start ${request.target} in its sandbox: the spawn request names no work item or harness`);
    }
    const env: Record<string, string> = { ...this.options.environment, ...request.env };
    // Compared and bound as real paths: git names its folders so, and a link in a path would hide what it contains.
    const cwd = realpathSync(resolve(request.cwd));
    const home = env.HOME || homedir();
    const program = request.argv[0] ?? "";
    const found = findExecutable(program, env.PATH ?? "", cwd);
    if (found === undefined) throw new ProgramNotFoundError(program);
    const socket = request.env[SESSION_SOCKET_ENV];
    // The socket's folder is bound before the daemon may have opened the socket in it: it must exist.
    if (socket !== undefined) mkdirSync(dirname(socket), { recursive: true, mode: 0o700 });
    // The agent CLI's own folders too: one missing would not be bound, and what the CLI keeps there (its conversations) would not outlive its pane.
    for (const dir of agentConfigDirs(harness, env, home)) mkdirSync(dir, { recursive: true, mode: 0o700 });
    const sandbox = sessionSandbox({
      harness,
      cwd,
      gitDirs: await gitDirsOf(cwd, env),
      env,
      home,
      stateRoot: realOrAsIs(this.options.stateRoot),
      argv: [found, ...request.argv.slice(1)],
      programRealPath: realpathSync(found),
      nodeRealPath: realpathSync(process.execPath),
      cliEntry: CLI_ENTRY,
      installation: dirname(dirname(CLI_ENTRY)),
      sessionBinDir: this.options.sessionBinDir,
      sessionSocket: socket,
      binds: settings.binds,
      system: this.system(),
      hiddenFiles: this.hidden(),
      program: check.program,
      denyNestedUserNamespaces: check.denyNestedUserNamespaces,
    });
    let argv: string[];
    try {
      argv = planBubblewrap(sandbox.request);
    } catch (error) {
      if (error instanceof SandboxPlanError) {
        throw new RunnerError(`cannot start ${request.target} in its sandbox: ${error.message} (see routing.sandbox in docs/security.md)`);
      }
      throw error;
    }
    return { ...request, cwd, argv, env: sandbox.env };
  }

  private hidden(): readonly string[] {
    this.hiddenFiles ??= (this.options.hiddenFiles ?? rootOnlySecrets)();
    return this.hiddenFiles;
  }

  private system(): readonly SystemEntry[] {
    this.systemEntries ??= (this.options.system ?? hostSystem)();
    return this.systemEntries;
  }

  pasteText(...args: Parameters<SessionRunner["pasteText"]>): ReturnType<SessionRunner["pasteText"]> {
    return this.options.inner.pasteText(...args);
  }

  probe(target: string): ReturnType<SessionRunner["probe"]> {
    return this.options.inner.probe(target);
  }

  screen(target: string): Promise<string> {
    const { inner } = this.options;
    if (inner.screen === undefined) return Promise.reject(new RunnerError("this runner shows no screen"));
    return inner.screen(target);
  }

  interrupt(target: string, keys: string): Promise<void> {
    const inner = this.options.inner;
    if (inner.interrupt === undefined) return Promise.reject(new RunnerError("this runner cannot interrupt a turn"));
    return inner.interrupt(target, keys);
  }

  terminate(...args: Parameters<SessionRunner["terminate"]>): ReturnType<SessionRunner["terminate"]> {
    return this.options.inner.terminate(...args);
  }

  exitOf(target: string): Promise<PaneExit | undefined> {
    const { inner } = this.options;
    return inner.exitOf === undefined ? Promise.resolve(undefined) : inner.exitOf(target);
  }
}

function realOrAsIs(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    // Not made yet: nothing there to hide, and the path as written is where it will be.
    return resolve(path);
  }
}

/**
 * The git dirs of a session's folder, absolute: its own (a linked worktree's admin folder, or a
 * clone's `.git`) and the repository's common one. None outside a repository.
 */
async function gitDirsOf(cwd: string, env: Readonly<Record<string, string>>): Promise<string[]> {
  const result = await runBounded({
    argv: ["git", "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir"],
    cwd,
    env: { PATH: env.PATH ?? "/usr/bin:/bin", HOME: env.HOME ?? "/", GIT_CONFIG_NOSYSTEM: "1" },
    timeoutMs: GIT_TIMEOUT_MS,
  });
  if (result.exitCode !== 0) {
    // Not a repository (or no git): the folder is bound alone, and git inside has nothing to reach.
    if (/not a git repository/i.test(result.stderr) || result.error !== undefined) return [];
    throw new RunnerError(`cannot find the git folders of ${cwd} for its sandbox: ${messageOf(result.stderr.trim() || result.error || "git failed")}`);
  }
  const dirs = result.stdout
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .map((dir) => realpathSync(dir));
  return [...new Set(dirs)];
}
