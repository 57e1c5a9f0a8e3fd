import { spawn } from "node:child_process";
import type { GitHubIntegrationConfig } from "../../config/schema.js";
import { DEFAULT_GITHUB_HOST } from "../../workitem/index.js";
import { GitHubAuthError } from "./errors.js";

/**
 * Where the GitHub token comes from. It is asked for at the moment of each request, never at
 * construction, so commands that never reach GitHub never need one, and a token put in the
 * environment later is picked up.
 */
export interface TokenSource {
  token(): Promise<string>;
  /** Where the last token came from (a variable name, `gh auth token`), for messages; never the token. */
  describe?(): string | undefined;
}

/** Runs `gh` with `args` and answers its trimmed output, or undefined when it has none to give. */
export type GhRunner = (binary: string, args: readonly string[]) => Promise<string | undefined>;

export interface GitHubTokenSourceOptions {
  /** Replaces running `gh` (tests). */
  readonly runGh?: GhRunner;
  /** The host the token is for (default github.com); `gh` is asked for that host's login. */
  readonly host?: string;
}

const GH_TIMEOUT_MS = 5_000;
const GH_OUTPUT_MAX_CHARS = 64 * 1024;

/**
 * A GhRunner that gives gh `timeoutMs` to answer. gh runs by argv (never through a shell), with no
 * input, in a process group of its own: at the deadline the whole group is killed (SIGKILL, which
 * a wrapper script cannot ignore) and the answer is "no token" at once, whatever is left holding
 * gh's output, so no request ever waits on gh for longer than that.
 */
export function ghRunner(timeoutMs: number): GhRunner {
  return (binary, args) =>
    new Promise((resolve) => {
      let stdout = "";
      let settled = false;
      const done = (token: string | undefined): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        child.stdout?.destroy();
        child.stderr?.destroy();
        resolve(token);
      };
      const child = spawn(binary, [...args], {
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
        windowsHide: true,
      });
      const timer = setTimeout(() => {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
        } catch {
          // Already gone.
        }
        // A gh that is too slow simply has no token for us.
        done(undefined);
      }, timeoutMs);
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (chunk: string) => {
        if (stdout.length < GH_OUTPUT_MAX_CHARS) stdout += chunk;
      });
      // Read and dropped: gh's notices must not fill the pipe and stall it.
      child.stderr.resume();
      // A gh that is missing or logged out has no token either.
      child.on("error", () => done(undefined));
      child.on("close", (code) => {
        const token = stdout.trim();
        done(code === 0 && token !== "" ? token : undefined);
      });
    });
}

export const runGhAuthToken: GhRunner = ghRunner(GH_TIMEOUT_MS);

// gh's answer does not change while the process runs; asking once spares a spawn per request.
const ghAnswers = new Map<string, Promise<string | undefined>>();

function askGh(run: GhRunner, cache: Map<string, Promise<string | undefined>>, binary: string, args: string[]) {
  const key = [binary, ...args].join("\0");
  let answer = cache.get(key);
  if (!answer) {
    // A gh that is absent, too slow or logged out has no token for us: the request is then refused with
    // missingTokenMessage, which says how to log in; nothing goes to GitHub without a token.
    answer = run(binary, args).catch(() => undefined);
    cache.set(key, answer);
    // Only a token is remembered: after `gh auth login` the next request finds it.
    void answer.then((token) => {
      if (token === undefined && cache.get(key) === answer) cache.delete(key);
    });
  }
  return answer;
}

export function missingTokenMessage(config: Pick<GitHubIntegrationConfig, "tokenEnv">, host?: string): string {
  const [first = "GH_TOKEN", ...rest] = config.tokenEnv;
  const others = rest.length > 0 ? ` (or ${rest.join(", or ")})` : "";
  const login = host && host !== "github.com" ? `gh auth login --hostname ${host}` : "gh auth login";
  return `no GitHub token: set ${first}${others}, or log in with \`${login}\`; ` + "integrations.github.tokenEnv names the variables read";
}

/** The token from the first non-empty variable of `tokenEnv`, else from `gh auth token`. */
export function githubTokenSource(
  config: Pick<GitHubIntegrationConfig, "tokenEnv" | "ghBinary">,
  env: NodeJS.ProcessEnv = process.env,
  options: GitHubTokenSourceOptions = {},
): TokenSource {
  const run = options.runGh ?? runGhAuthToken;
  const cache = options.runGh ? new Map<string, Promise<string | undefined>>() : ghAnswers;
  // The host is always named: without it gh answers for $GH_HOST (or its default host), and
  // another host's token would be sent to this API.
  const ghArgs = ["auth", "token", "--hostname", options.host ?? DEFAULT_GITHUB_HOST];
  let origin: string | undefined;
  return {
    async token(): Promise<string> {
      for (const name of config.tokenEnv) {
        const value = env[name]?.trim();
        if (value) {
          origin = name;
          return value;
        }
      }
      const fromGh = await askGh(run, cache, config.ghBinary, ghArgs);
      if (fromGh) {
        origin = "`gh auth token`";
        return fromGh;
      }
      origin = undefined;
      throw new GitHubAuthError(missingTokenMessage(config, options.host));
    },
    describe: () => origin,
  };
}
