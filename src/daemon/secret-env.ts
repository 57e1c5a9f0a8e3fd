import { z } from "zod";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { Socket } from "node:net";
import { join } from "node:path";
import type { CliConfig } from "../config/schema.js";
import { EXIT_FAILURE, ExitError, messageOf } from "../errors.js";
import { rememberSecret } from "../secrets.js";

/**
 * What the daemon's process holds in its *initial* environment — the block the kernel shows any
 * process of the same user in `/proc/<pid>/environ` for as long as the daemon lives — and how
 * everything else reaches it.
 *
 * `the-loop start` starts the daemon with the variables of BOOT_ENV alone (minus anything that
 * names or looks like a credential), and hands every other variable of its environment — the
 * GitHub token, the webhook secret, each hook's token, the agent's key — over a pipe, the
 * daemon's fd 3, which the daemon reads once at boot and closes. The daemon puts them back into
 * `process.env` before anything else runs: Node keeps that copy on its heap (setenv), not in the
 * initial block, so `/proc/<pid>/environ` never shows them while every reader — the token
 * readers, the sessions' environment, hooks' commands, git — finds exactly what it found before.
 *
 * `serve` run in the foreground (under systemd) also reads `$CREDENTIALS_DIRECTORY`: each file
 * there named like a variable (`LoadCredential=GH_TOKEN:/etc/the-loop/gh-token`) sets that
 * variable the same way. A secret given to `serve` in its environment stays visible in /proc —
 * Linux offers no way to clear the initial block — and `serve` says so at start.
 */

/** The variable naming the fd the environment arrives on; set by `start`, never by a person. */
export const HANDED_ENV_FD = "THE_LOOP_ENV_FD";
/** What the handed environment may weigh: far more than any real environment. */
const MAX_HANDED_BYTES = 4 * 1024 * 1024;
/** How long the daemon waits for it: `start` writes it right after the spawn. */
const HANDED_TIMEOUT_MS = 10_000;
/** A credential file larger than this is no credential. */
const MAX_CREDENTIAL_BYTES = 64 * 1024;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The variables the daemon keeps in its initial environment (`*` ends a prefix): what Node, libc
 * and OpenSSL read before any of the-loop's code runs, where the-loop finds its config and its
 * tmux, and the-loop's own variables.
 */
export const BOOT_ENV: readonly string[] = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "LC_*",
  "TZ",
  "TMPDIR",
  "TERM",
  "NO_COLOR",
  "FORCE_COLOR",
  "NODE_*",
  "UV_*",
  "OPENSSL_*",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "XDG_*",
  "TMUX",
  "TMUX_TMPDIR",
  "THE_LOOP_*",
];

/**
 * A name that reads as a credential's: never kept in the initial environment, whatever BOOT_ENV
 * says. One that names where a credential is (`…_FILE`, `…_DIRECTORY`, `…_SOCK`) holds none.
 */
export function looksLikeCredential(name: string): boolean {
  if (/_(FILE|PATH|DIR|DIRECTORY|SOCK|SOCKET)$/i.test(name)) return false;
  return /TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|API_?KEY|PRIVATE_?KEY|(^|_)KEY$|(^|_)PAT$|AUTH/i.test(name);
}

function matches(pattern: string, name: string): boolean {
  return pattern.endsWith("*") ? name.startsWith(pattern.slice(0, -1)) : name === pattern;
}

/**
 * The variables the config names as the daemon's secrets: the GitHub token's
 * (integrations.github.tokenEnv), the webhook secret's (webhooks.ghWebhook.secretEnv), each
 * remote hook's token (hooks[].tokenEnv), each notification sink's URL (notify.sinks[].urlEnv) and
 * the state database's URL (state.urlEnv).
 */
export function daemonSecretNames(
  config: Pick<CliConfig, "integrations" | "webhooks" | "hooks"> & Partial<Pick<CliConfig, "notify">> & { readonly state?: { readonly urlEnv: string } },
): string[] {
  const names = [...config.integrations.github.tokenEnv, config.webhooks.ghWebhook.secretEnv];
  for (const sink of config.notify?.sinks ?? []) names.push(sink.urlEnv);
  for (const entry of config.hooks ?? []) {
    const tokenEnv = typeof entry === "object" && entry !== null && "tokenEnv" in entry ? entry.tokenEnv : undefined;
    if (typeof tokenEnv === "string") names.push(tokenEnv);
  }
  if (config.state !== undefined) names.push(config.state.urlEnv);
  return [...new Set(names)];
}

export interface SplitEnvironment {
  /** What the daemon starts with. */
  readonly boot: Record<string, string>;
  /** What it is handed over the pipe. */
  readonly handed: Record<string, string>;
}

/** Splits `env` into the daemon's initial environment and what it is handed (see the module comment). */
export function splitDaemonEnvironment(env: Readonly<Record<string, string | undefined>>, secretNames: readonly string[]): SplitEnvironment {
  const secrets = new Set(secretNames);
  const boot: Record<string, string> = {};
  const handed: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || name === HANDED_ENV_FD) continue;
    const kept = !secrets.has(name) && !looksLikeCredential(name) && BOOT_ENV.some((pattern) => matches(pattern, name));
    (kept ? boot : handed)[name] = value;
  }
  return { boot, handed };
}

/** The handed environment as `start` writes it: one JSON object. */
export function encodeHandedEnvironment(handed: Readonly<Record<string, string>>): string {
  return JSON.stringify({ env: handed });
}

/** What `start` writes: `{"env": {NAME: value}}`; a name or value that is not one is dropped below. */
const handedSchema = z.object({ env: z.record(z.string(), z.unknown()) });

/** Parses what `start` wrote; anything else is refused. */
export function decodeHandedEnvironment(text: string): Record<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error("it is not JSON");
  }
  const handed = handedSchema.safeParse(parsed);
  if (!handed.success) throw new Error("it names no environment");
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(handed.data.env)) {
    if (ENV_NAME.test(name) && typeof value === "string" && !value.includes("\0")) result[name] = value;
  }
  return result;
}

/** Reads `fd` to its end, within a size and a time bound, and closes it. */
function readAll(fd: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = new Socket({ fd, readable: true, writable: false });
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (error?: Error): void => {
      clearTimeout(timer);
      socket.destroy();
      if (error) reject(error);
      else resolve(Buffer.concat(chunks).toString("utf8"));
    };
    const timer = setTimeout(() => finish(new Error(`nothing arrived within ${HANDED_TIMEOUT_MS / 1000} s`)), HANDED_TIMEOUT_MS);
    socket.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_HANDED_BYTES) finish(new Error(`it is larger than ${MAX_HANDED_BYTES} bytes`));
      else chunks.push(chunk);
    });
    socket.on("end", () => finish());
    socket.on("error", (error) => finish(error));
  });
}

/** Puts `values` into this process's environment (its heap copy, never the initial block) and remembers the secrets among them. */
function install(values: Readonly<Record<string, string>>, secretLike: (name: string) => boolean): void {
  for (const [name, value] of Object.entries(values)) {
    process.env[name] = value;
    if (secretLike(name)) rememberSecret(value);
  }
}

/**
 * At the daemon's boot, before its config is read: the environment `start` handed over fd
 * HANDED_ENV_FD, then the files of `$CREDENTIALS_DIRECTORY`. Returns the names installed.
 */
export async function receiveDaemonEnvironment(env: NodeJS.ProcessEnv = process.env): Promise<string[]> {
  const installed: string[] = [];
  const fdText = env[HANDED_ENV_FD];
  if (fdText !== undefined) {
    delete process.env[HANDED_ENV_FD];
    const fd = Number(fdText);
    if (!Number.isInteger(fd) || fd < 3)
      throw new ExitError(`${HANDED_ENV_FD}=${JSON.stringify(fdText)} names no file descriptor; it is set by \`the-loop start\` alone`, EXIT_FAILURE);
    let handed: Record<string, string>;
    try {
      handed = decodeHandedEnvironment(await readAll(fd));
    } catch (error) {
      throw new ExitError(
        `the environment \`the-loop start\` hands the daemon did not arrive (${messageOf(error)}); run \`the-loop start\` again`,
        EXIT_FAILURE,
      );
    }
    install(handed, looksLikeCredential);
    installed.push(...Object.keys(handed));
  }
  const credentials = credentialFiles(env.CREDENTIALS_DIRECTORY);
  install(credentials, () => true);
  installed.push(...Object.keys(credentials));
  return installed;
}

/**
 * systemd's credentials (`LoadCredential=`, `SetCredentialEncrypted=`): each regular file of
 * `dir` named like a variable is that variable's value, one trailing newline dropped.
 */
export function credentialFiles(dir: string | undefined): Record<string, string> {
  if (dir === undefined || dir === "") return {};
  const values: Record<string, string> = {};
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    throw new ExitError(`cannot read the credentials directory ${dir} ($CREDENTIALS_DIRECTORY): ${messageOf(error)}`, EXIT_FAILURE);
  }
  for (const name of names.filter((entry) => ENV_NAME.test(entry)).sort()) {
    const path = join(dir, name);
    const stats = statSync(path);
    if (!stats.isFile()) continue;
    if (stats.size > MAX_CREDENTIAL_BYTES) {
      throw new ExitError(`the credential ${path} is larger than ${MAX_CREDENTIAL_BYTES} bytes; a credential file holds one value`, EXIT_FAILURE);
    }
    values[name] = readFileSync(path, "utf8").replace(/\r?\n$/, "");
  }
  return values;
}

/**
 * The secrets this process holds in its initial environment, by name (never by value): what
 * `/proc/self/environ` shows of the config's secrets and of credential-looking variables.
 * Empty where /proc is missing.
 */
export function secretsInInitialEnvironment(secretNames: readonly string[], environ?: string): string[] {
  let text = environ;
  if (text === undefined) {
    try {
      text = readFileSync("/proc/self/environ", "latin1");
    } catch {
      return [];
    }
  }
  const secrets = new Set(secretNames);
  const found = text
    .split("\0")
    .map((entry) => entry.slice(0, Math.max(entry.indexOf("="), 0)))
    .filter((name) => name !== "" && (secrets.has(name) || looksLikeCredential(name)));
  return [...new Set(found)].sort();
}

/** What `serve` says when secrets came in its environment (names only). */
export function secretsInEnvironmentWarning(names: readonly string[], pid: number = process.pid): string | undefined {
  if (names.length === 0) return undefined;
  return (
    `${names.join(", ")} reached the daemon in its environment: any process of this user can read ${names.length === 1 ? "it" : "them"} in /proc/${pid}/environ ` +
    "for as long as the daemon runs; start it with `the-loop start`, or under systemd give each as a credential " +
    '(LoadCredential=NAME:/path/to/file) instead of Environment= (docs/config.md, "Secrets")'
  );
}
