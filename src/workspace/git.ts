import { spawn } from "node:child_process";

/**
 * One git command at a time, as argv (never through a shell), bounded in time. git runs in its
 * own process group so a timeout stops everything it started (a clone's transport helper, an
 * ssh), not only git itself: a helper left behind would keep the pipes open and the caller
 * waiting. Without a controlling terminal, an ssh passphrase or host-key prompt fails instead of
 * waiting for an answer nobody gives.
 */

export interface GitRunnerOptions {
  /** The git program (default `git`). */
  readonly binary?: string;
  readonly timeoutMs: number;
  /** The environment git runs with (default: this process's), made non-interactive. */
  readonly env?: NodeJS.ProcessEnv;
  /**
   * Settings given to every command as `-c name=value`: they win over every configuration file,
   * the repository's own included, and reach the git commands git itself starts.
   */
  readonly config?: Readonly<Record<string, string>>;
}

/**
 * What no repository may decide for the-loop's own git commands. A session's worktree shares its
 * git directory — hooks and config included — with the shared clone, so whatever a session wrote
 * there would otherwise run inside the daemon, with its environment, the next time it prepares
 * any checkout of that repository: hooks (post-checkout on `worktree add`, reference-transaction
 * on every fetch), an fsmonitor program, and the `ext::` transport, which runs a command.
 */
export const UNTRUSTED_REPOSITORY_CONFIG: Readonly<Record<string, string>> = {
  "core.hooksPath": "/dev/null",
  "core.fsmonitor": "false",
  "protocol.ext.allow": "never",
};

export interface GitRunOptions {
  /** The directory git runs in. */
  readonly cwd: string;
}

/** Enough of git's stderr to say what went wrong without flooding an event or a terminal. */
const STDERR_TAIL_CHARS = 2_000;
const STDERR_TAIL_LINES = 6;
const STDOUT_MAX_CHARS = 4 * 1024 * 1024;
/** How long output may keep arriving after git has exited. */
const EXIT_DRAIN_MS = 1_000;

export class GitError extends Error {
  override readonly name: string = "GitError";
  constructor(
    message: string,
    /** The git arguments, without the binary, credentials in URLs hidden. */
    readonly args: readonly string[],
    /** The exit status; null when git was stopped by a signal or never started. */
    readonly status: number | null,
    /** The last lines git wrote to stderr, trimmed. */
    readonly stderrTail: string,
    readonly timedOut: boolean,
  ) {
    super(message);
  }
}

/** The arguments as a GitError keeps them: any credentials written into a URL are hidden. */
function redactedArgs(args: readonly string[]): readonly string[] {
  return args.map(redactUrl);
}

/**
 * Variables that point git at another repository: inherited from a caller that itself runs
 * inside a git hook, they would make every command act on that repository instead.
 */
const REPOSITORY_VARIABLES = [
  "GIT_DIR",
  "GIT_WORK_TREE",
  "GIT_INDEX_FILE",
  "GIT_OBJECT_DIRECTORY",
  "GIT_ALTERNATE_OBJECT_DIRECTORIES",
  "GIT_COMMON_DIR",
  "GIT_NAMESPACE",
  "GIT_PREFIX",
  "GIT_QUARANTINE_PATH",
];

/**
 * The environment every git command gets. A credential prompt would wait forever in a daemon, so
 * terminal prompts are off; an askpass program the user configured is kept (it may be how
 * credentials arrive), and none is invented when there is none.
 */
export function gitEnvironment(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const name of REPOSITORY_VARIABLES) delete env[name];
  env.GIT_TERMINAL_PROMPT = "0";
  env.GCM_INTERACTIVE = "never";
  if (env.GIT_ASKPASS === "") delete env.GIT_ASKPASS;
  return env;
}

/** `git clone`, `git worktree add`: the command's name for messages, never its arguments. */
export function commandName(args: readonly string[]): string {
  const [first = "", second] = args;
  if (first === "worktree" && second !== undefined) return `git worktree ${second}`;
  return `git ${first}`;
}

/** `600 s`, `250 ms`: how long a command was allowed to run. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** Credentials written into a URL (`https://user:token@host`) stay out of every message. */
export function redactUrl(text: string): string {
  return text.replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/gi, "$1***@");
}

function tailOf(text: string): string {
  const trimmed = redactUrl(text.slice(-STDERR_TAIL_CHARS).trim());
  return trimmed
    .split(/\r?\n/)
    .filter((line) => line.trim() !== "")
    .slice(-STDERR_TAIL_LINES)
    .join("\n");
}

// Process groups still running, stopped when this process exits so no clone outlives the-loop.
const running = new Set<number>();
let exitHookInstalled = false;

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

function track(pid: number): void {
  running.add(pid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const group of running) killGroup(group);
  });
}

export class Git {
  private readonly binary: string;
  private readonly env: NodeJS.ProcessEnv;
  private readonly prefix: readonly string[];

  constructor(private readonly options: GitRunnerOptions) {
    this.binary = options.binary ?? "git";
    this.env = gitEnvironment(options.env ?? process.env);
    this.prefix = Object.entries(options.config ?? {}).flatMap(([name, value]) => ["-c", `${name}=${value}`]);
  }

  get timeoutMs(): number {
    return this.options.timeoutMs;
  }

  /** Runs `git <args>` in `cwd`; resolves with stdout, rejects with a GitError. */
  run(args: readonly string[], options: GitRunOptions): Promise<string> {
    const name = commandName(args);
    const timeoutMs = this.options.timeoutMs;
    return new Promise((resolve, reject) => {
      let stdout = "";
      let stderr = "";
      let settled = false;
      let drainTimer: NodeJS.Timeout | undefined;
      const failed = redactedArgs(args);
      const child = spawn(this.binary, [...this.prefix, ...args], {
        cwd: options.cwd,
        env: this.env,
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
      const pid = child.pid;
      if (pid !== undefined) track(pid);
      const finish = (error: GitError | undefined): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        clearTimeout(drainTimer);
        if (pid !== undefined) running.delete(pid);
        child.stdout.destroy();
        child.stderr.destroy();
        if (error) reject(error);
        else resolve(stdout);
      };
      const outcome = (code: number | null, signal: NodeJS.Signals | null): void => {
        if (code === 0) {
          finish(undefined);
          return;
        }
        const tail = tailOf(stderr);
        const status = code === null ? `killed by ${signal ?? "a signal"}` : `exit status ${code}`;
        finish(new GitError(`${name} failed (${status})${tail ? `: ${tail}` : ""}`, failed, code, tail, false));
      };
      const timer = setTimeout(() => {
        if (pid !== undefined) killGroup(pid);
        finish(new GitError(`${name} timed out after ${formatDuration(timeoutMs)} and was stopped`, failed, null, tailOf(stderr), true));
      }, timeoutMs);
      child.stdout.setEncoding("utf8");
      child.stderr.setEncoding("utf8");
      child.stdout.on("data", (chunk: string) => {
        if (stdout.length < STDOUT_MAX_CHARS) stdout += chunk;
      });
      child.stderr.on("data", (chunk: string) => {
        stderr = (stderr + chunk).slice(-STDERR_TAIL_CHARS * 2);
      });
      child.on("error", (error: NodeJS.ErrnoException) => {
        const message =
          error.code === "ENOENT"
            ? `${name} could not start: the git program "${this.binary}" was not found (install git or put it on the PATH), or the folder ${options.cwd} does not exist`
            : `${name} could not start: ${error.message}`;
        finish(new GitError(message, failed, null, "", false));
      });
      child.on("close", outcome);
      // A helper git left running in the background (an ssh connection master) can hold the pipes
      // open after git itself is done; its exit status is the answer, whatever else lingers.
      child.on("exit", (code, signal) => {
        drainTimer = setTimeout(() => outcome(code, signal), EXIT_DRAIN_MS);
      });
    });
  }
}
