import { posix } from "node:path";
import type { SandboxBind, SandboxRequest, SystemEntry } from "./plan.js";

/**
 * What one session's sandbox holds, decided from facts the spawn gathered (session-runner reads
 * them): which agent config is bound back into the empty home, where the program and the
 * interpreter it needs come from, how `the-loop` and the session's socket appear inside, and how
 * the environment changes to match. Pure: every fact comes in, a SandboxRequest goes out.
 */

/** Where the session's socket folder appears inside the sandbox, and the socket in it. */
export const SANDBOX_SESSION_DIR = "/run/the-loop/session";
/** Where the `the-loop` shim lives inside the sandbox: first on the session's PATH. */
export const SANDBOX_BIN_DIR = "/run/the-loop/bin";

export interface SessionSandboxFacts {
  /** The harness adapter's name: which agent config is bound back. */
  readonly harness: string;
  /** The session's folder (its worktree, or the spawn folder). */
  readonly cwd: string;
  /** Absolute git dirs of that folder (`--git-dir`, `--git-common-dir`); none outside a repository. */
  readonly gitDirs: readonly string[];
  /** The environment the pane gets, whole: what the harness would see without a sandbox. */
  readonly env: Readonly<Record<string, string>>;
  readonly home: string;
  readonly stateRoot: string;
  /** The harness argv, its program already resolved to an absolute path. */
  readonly argv: readonly string[];
  /** The real path of the program (links resolved): what is bound so it runs. */
  readonly programRealPath: string;
  /** The real path of the Node.js that runs the-loop, which `the-loop` and a Node harness need inside. */
  readonly nodeRealPath: string;
  /** The-loop's CLI entry (bin/the-loop.js) and the installation it belongs to. */
  readonly cliEntry: string;
  readonly installation: string;
  /** The session folder on the session's PATH outside (`<state root>/bin`), replaced inside by the shim. */
  readonly sessionBinDir: string;
  /** The session's socket as the session env names it, when it has one. */
  readonly sessionSocket: string | undefined;
  /** The operator's `routing.sandbox.bind`, resolved to absolute paths. */
  readonly binds: readonly SandboxBind[];
  readonly system: readonly SystemEntry[];
  /** The system's root-only files, shown empty inside (rootOnlySecrets). */
  readonly hiddenFiles?: readonly string[];
  readonly program?: string;
  readonly denyNestedUserNamespaces?: boolean;
}

export interface SessionSandbox {
  readonly request: SandboxRequest;
  /** The session env as it must be inside: the shim first on PATH, the socket at its inside path. */
  readonly env: Record<string, string>;
}

/** The session variable that names the daemon's config: inside, the session's socket stands for it. */
const CONFIG_ENV = "THE_LOOP_CLI_CONFIG";
const SOCKET_ENV = "THE_LOOP_SESSION_SOCKET";

/**
 * Each built-in agent CLI's own config, bound read-write (each only where it exists): it keeps
 * its login, its settings and its conversations there, and the-loop pre-seeds trust into it.
 * A command harness gets none: what it needs is the operator's to bind.
 */
export function agentConfigPaths(harness: string, env: Readonly<Record<string, string | undefined>>, home: string): string[] {
  const inHome = (name: string): string => posix.join(home, name);
  switch (harness) {
    case "claude":
      return env.CLAUDE_CONFIG_DIR ? [env.CLAUDE_CONFIG_DIR] : [inHome(".claude.json"), inHome(".claude")];
    case "codex":
      return [env.CODEX_HOME || inHome(".codex")];
    case "gemini": {
      // Gemini CLI keeps its files under `$GEMINI_CLI_HOME/.gemini` when set, its trusted folders where the variable names.
      const dir = env.GEMINI_CLI_HOME ? posix.join(env.GEMINI_CLI_HOME, ".gemini") : inHome(".gemini");
      return env.GEMINI_CLI_TRUSTED_FOLDERS_PATH ? [dir, env.GEMINI_CLI_TRUSTED_FOLDERS_PATH] : [dir];
    }
    case "cursor":
      return [inHome(".cursor")];
    default:
      return [];
  }
}

/**
 * The folders among agentConfigPaths: made before the sandbox is (sessions/sandbox-runner.ts),
 * since a bind is skipped where its source does not exist, and a CLI that then made its folder
 * inside the sandbox would keep its conversations in a home that vanishes with it — a dead
 * pane's conversation could never be resumed.
 */
export function agentConfigDirs(harness: string, env: Readonly<Record<string, string | undefined>>, home: string): string[] {
  const files = new Set([posix.join(home, ".claude.json"), ...(env.GEMINI_CLI_TRUSTED_FOLDERS_PATH ? [env.GEMINI_CLI_TRUSTED_FOLDERS_PATH] : [])]);
  return agentConfigPaths(harness, env, home).filter((path) => !files.has(path));
}

const SYSTEM_PREFIXES = ["/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

function within(path: string, dir: string): boolean {
  return path === dir || dir === "/" || path.startsWith(`${dir}/`);
}

/**
 * What must be bound for a program at `realPath` to run: nothing for a system program; for one
 * inside a node_modules tree, the folder that holds the tree (its package and every dependency);
 * else the folder it is in.
 */
export function programRoot(realPath: string): string | undefined {
  if (SYSTEM_PREFIXES.some((prefix) => within(realPath, prefix))) return undefined;
  const marker = realPath.indexOf("/node_modules/");
  if (marker > 0) return realPath.slice(0, marker);
  return posix.dirname(realPath);
}

/** The installation prefix of a Node.js binary (`<prefix>/bin/node`), unless it is the system's. */
export function nodeRoot(realPath: string): string | undefined {
  if (SYSTEM_PREFIXES.some((prefix) => within(realPath, prefix))) return undefined;
  return posix.dirname(posix.dirname(realPath));
}

/** Read-only binds for `paths`, without repeats and without one inside another. */
function readOnlyRoots(paths: readonly (string | undefined)[], taken: readonly string[]): SandboxBind[] {
  const unique = [...new Set(paths.filter((path): path is string => path !== undefined))].sort((a, b) => a.length - b.length);
  const kept: string[] = [];
  for (const path of unique) {
    if ([...kept, ...taken].some((dir) => within(path, dir))) continue;
    kept.push(path);
  }
  return kept.map((path) => ({ source: path, target: path, mode: "ro" }));
}

export function sessionSandbox(facts: SessionSandboxFacts): SessionSandbox {
  const agentConfig = agentConfigPaths(facts.harness, facts.env, facts.home).map((path): SandboxBind => ({ source: path, target: path, mode: "rw" }));
  // The operator's binds and the session's own folders are mounted already; what is inside them needs no mount of its own.
  const taken = [facts.cwd, ...facts.gitDirs, ...facts.binds.map((bind) => bind.target)];
  const software = readOnlyRoots([facts.installation, programRoot(facts.programRealPath), nodeRoot(facts.nodeRealPath)], taken);

  const env: Record<string, string> = { ...facts.env };
  delete env[CONFIG_ENV];
  const outsidePath = (env.PATH ?? "").split(":").filter((dir) => dir !== "" && dir !== facts.sessionBinDir);
  env.PATH = [SANDBOX_BIN_DIR, ...outsidePath].join(":");
  if (facts.sessionSocket === undefined) delete env[SOCKET_ENV];
  else env[SOCKET_ENV] = posix.join(SANDBOX_SESSION_DIR, posix.basename(facts.sessionSocket));

  const request: SandboxRequest = {
    worktree: facts.cwd,
    gitDirs: facts.gitDirs,
    home: facts.home,
    agentConfig,
    binds: [...software, ...facts.binds],
    argv: [facts.programRealPath, ...facts.argv.slice(1)],
    cwd: facts.cwd,
    stateRoot: facts.stateRoot,
    system: facts.system,
    terminal: true,
    links: [{ path: posix.join(SANDBOX_BIN_DIR, "the-loop"), to: facts.cliEntry }],
    ...(facts.hiddenFiles === undefined ? {} : { hiddenFiles: facts.hiddenFiles }),
    ...(facts.sessionSocket === undefined ? {} : { sessionSocket: { source: posix.dirname(facts.sessionSocket), target: SANDBOX_SESSION_DIR } }),
    ...(facts.program === undefined ? {} : { program: facts.program }),
    ...(facts.denyNestedUserNamespaces === undefined ? {} : { denyNestedUserNamespaces: facts.denyNestedUserNamespaces }),
  };
  return { request, env };
}
