import { execFile } from "node:child_process";
import type { GitHubIntegrationConfig } from "../../config/schema.js";
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
  /** The host the token is for; `gh` is asked for that host's login when it is not github.com. */
  readonly host?: string;
}

const GH_TIMEOUT_MS = 5_000;

export const runGhAuthToken: GhRunner = (binary, args) =>
  new Promise((resolve) => {
    execFile(
      binary,
      [...args],
      { timeout: GH_TIMEOUT_MS, windowsHide: true, encoding: "utf8", maxBuffer: 64 * 1024 },
      (error, stdout) => {
        // A gh that is missing, logged out or too slow simply has no token for us.
        if (error) return resolve(undefined);
        const token = stdout.trim();
        resolve(token === "" ? undefined : token);
      },
    );
  });

// gh's answer does not change while the process runs; asking once spares a spawn per request.
const ghAnswers = new Map<string, Promise<string | undefined>>();

function askGh(run: GhRunner, cache: Map<string, Promise<string | undefined>>, binary: string, args: string[]) {
  const key = [binary, ...args].join("\0");
  let answer = cache.get(key);
  if (!answer) {
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
  return (
    `no GitHub token: set ${first}${others}, or log in with \`${login}\`; ` +
    "integrations.github.tokenEnv names the variables read"
  );
}

/** The token from the first non-empty variable of `tokenEnv`, else from `gh auth token`. */
export function githubTokenSource(
  config: Pick<GitHubIntegrationConfig, "tokenEnv" | "ghBinary">,
  env: NodeJS.ProcessEnv = process.env,
  options: GitHubTokenSourceOptions = {},
): TokenSource {
  const run = options.runGh ?? runGhAuthToken;
  const cache = options.runGh ? new Map<string, Promise<string | undefined>>() : ghAnswers;
  const ghArgs = ["auth", "token"];
  if (options.host && options.host !== "github.com") ghArgs.push("--hostname", options.host);
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
