import { open, readdir, realpath } from "node:fs/promises";
import { join } from "node:path";
import type { HarnessConfig, RoutingConfig } from "../config/schema.js";
import { codexHome } from "./codex-config.js";
import { MCP_TOOL_NAMES, theLoopMcpServer, type McpServerSpec } from "./mcp.js";
import type { LearnSessionIdInput } from "./session-id.js";

/**
 * The Codex CLI (`@openai/codex`) as a built-in harness: its interactive TUI in the session's
 * pane, the boot prompt in its argv, and its conversation resumed by id after a dead pane.
 * Every fact here was read off Codex 0.169.0 in a tmux pane (docs/agents.md).
 */

/**
 * What an unattended Codex needs, each as a `-c key=value` override so that the operator's own
 * flags in `routing.harnesses.codex.args` win over it (Codex lets `-a`/`-s` override `-c`, and
 * of two `-c` for one key the later):
 *
 * - `approval_policy="never"`: nobody is at the pane to approve a command; a refused one goes
 *   back to the model instead of waiting on a dialog.
 * - `sandbox_mode="danger-full-access"`: Codex's own sandbox refuses the connection to the
 *   session's socket (`the-loop ask` could not reach the daemon) and makes `.git` read-only (no
 *   commit from a worktree). The session's confinement is the-loop's own (`routing.sandbox`).
 * - `allow_login_shell=false`: a login shell reads `/etc/profile`, which resets `PATH` and drops
 *   the session's `bin` folder, where `the-loop` is.
 * - `check_for_update_on_startup=false`, `analytics.enabled=false`: no update nudge on the
 *   screen, no usage events sent.
 * - `features.plugins=false`: no plugin catalog fetched at each start (a clone of
 *   github.com/openai/plugins, a request to chatgpt.com) that an unattended session never uses.
 *
 * And `--no-daemon`: otherwise Codex starts a shared background server that outlives the pane.
 */
export const CODEX_DEFAULT_ARGS: readonly string[] = [
  "-c",
  'approval_policy="never"',
  "-c",
  'sandbox_mode="danger-full-access"',
  "-c",
  "allow_login_shell=false",
  "-c",
  "check_for_update_on_startup=false",
  "-c",
  "analytics.enabled=false",
  "-c",
  "features.plugins=false",
  "--no-daemon",
];

/**
 * Codex's footer: "? for shortcuts" under an idle input box, "esc to interrupt" while it works
 * (a paste then joins the running turn). Neither shows while its folder-trust screen does.
 */
export const CODEX_READY_PATTERN = /\? for shortcuts|esc to interrupt/;

/**
 * Screens on which an Enter would pick an answer: the folder-trust question ("Trust this
 * folder?", "enter continue · esc back") and an approval request, should the operator's args
 * turn approvals on.
 */
export const CODEX_BLOCKED_PATTERN = /Trust this folder\?|enter continue · esc back|Would you like to run the following command|Press enter to confirm/;

/**
 * The session's variables the-loop's MCP server needs: Codex starts a stdio server with only a
 * few of its own (HOME, PATH, USER, …) plus those a server's `env_vars` names, and the server
 * reaches the daemon with these. Named, never given as values: the credential stays out of the
 * argv.
 */
export const CODEX_MCP_ENV_VARS: readonly string[] = ["THE_LOOP_SESSION_TOKEN", "THE_LOOP_WORK_ITEM", "THE_LOOP_SESSION_SOCKET", "THE_LOOP_CLI_CONFIG"];

/**
 * How long Codex lets one of the server's tool calls run (its default is 60 s): a
 * `graph_complete` waits for its claim up to an hour (src/mcp/tools.ts), an `ask` up to two
 * minutes for the daemon's hooks.
 */
const CODEX_MCP_TOOL_TIMEOUT_S = 3_660;

/**
 * the-loop's MCP server for one Codex run (routing.mcp.enabled), as `-c` overrides, so the
 * operator's config.toml is not edited for it: the server's command and args, the session's
 * variables it may see, its four tools alone (`enabled_tools`), and each call approved up front
 * (`default_tools_approval_mode="approve"`), so no approval question waits at the pane whatever
 * the operator's approval policy. Read off Codex 0.169.0 (`codex mcp list --json`).
 */
export function codexMcpArgs(server: McpServerSpec = theLoopMcpServer()): string[] {
  const key = `mcp_servers.${server.name}`;
  const list = (values: readonly string[]): string => `[${values.map((value) => JSON.stringify(value)).join(",")}]`;
  return [
    `${key}.command=${JSON.stringify(server.command)}`,
    `${key}.args=${list(server.args)}`,
    `${key}.env_vars=${list(CODEX_MCP_ENV_VARS)}`,
    `${key}.enabled_tools=${list(MCP_TOOL_NAMES)}`,
    `${key}.default_tools_approval_mode="approve"`,
    `${key}.tool_timeout_sec=${CODEX_MCP_TOOL_TIMEOUT_S}`,
  ].flatMap((override) => ["-c", override]);
}

interface CodexLaunch {
  readonly sessionId: string;
  readonly prompt: string;
}

/** The adapter (adapters.ts names its type; this file stays below it, so no import cycle). */
export function codexAdapter(config: HarnessConfig | undefined, routing: Pick<RoutingConfig, "mcp">) {
  const binary = config?.command ?? ["codex"];
  // the-loop's MCP server after the defaults and before the operator's args, so a `-c` of theirs
  // for the same key wins.
  const args = [...CODEX_DEFAULT_ARGS, ...(routing.mcp.enabled ? codexMcpArgs() : []), ...(config?.args ?? [])];
  // `--` ends the options, so a prompt that starts with `-` (or reads `resume`, a subcommand) is
  // the prompt. No pastedPattern: Codex takes a bracketed paste and an Enter sent back to back,
  // idle or busy, and its idle box shows a placeholder that would read as text already there.
  return {
    name: "codex",
    promptInArgv: { fresh: true, resume: true } as const,
    readyPattern: config?.readyPattern === undefined ? CODEX_READY_PATTERN : new RegExp(config.readyPattern),
    blockedPattern: CODEX_BLOCKED_PATTERN,
    // Escape ends a turn: its footer reads "esc to interrupt" while it works.
    interruptKeys: "\u001b",
    fresh: ({ prompt }: CodexLaunch): string[] => [...binary, ...args, "--", prompt],
    resume: ({ sessionId, prompt }: CodexLaunch): string[] => [...binary, "resume", ...args, "--", sessionId, prompt],
    learnSessionId: (input: LearnSessionIdInput): Promise<string | undefined> => learnCodexSessionId(input),
  };
}

/**
 * How long after its start Codex may take to write its session's first line: about a second
 * here, as its boot prompt starts the first turn at once. No file comes while its trust screen
 * holds it, and the spawn waits this out then.
 */
const LEARN_BOUND_MS = 10_000;
const LEARN_POLL_MS = 100;
/** How much of a session file is read for the work item's name: its first turn is near the top. */
const MENTION_READ_BYTES = 1024 * 1024;

/**
 * Codex picks its conversation's id itself and takes none up front. It writes each one to
 * `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, whose first line
 * (`session_meta`) holds the id, the folder and the start time. The id is the one of the
 * earliest conversation begun in the session's folder since its start whose file names the
 * session's work item (the boot prompt does): sessions of several local items share one folder,
 * and two of them may start in the same moment. Polled, bounded; at the bound, a single
 * conversation begun there since the start is taken even without the name (a boot prompt of the
 * operator's own may not carry it), and none otherwise.
 */
export async function learnCodexSessionId(input: LearnSessionIdInput & { readonly boundMs?: number }): Promise<string | undefined> {
  const home = codexHome(input.env);
  const cwds = new Set([input.cwd, await realpath(input.cwd).catch(() => input.cwd)]);
  const deadline = Date.now() + (input.boundMs ?? LEARN_BOUND_MS);
  for (;;) {
    const candidates = await codexSessionsSince(home, cwds, input.startedAt, new Date());
    for (const candidate of candidates) {
      if (input.workItem === undefined || (await namesWorkItem(candidate.path, input.workItem))) return candidate.id;
    }
    if (Date.now() >= deadline || input.signal?.aborted === true) return candidates.length === 1 ? candidates[0]?.id : undefined;
    await new Promise((resolve) => setTimeout(resolve, LEARN_POLL_MS));
  }
}

export interface RolloutMeta {
  readonly id: string;
  readonly cwd: string;
  readonly timestamp: number;
}

export interface RolloutFile extends RolloutMeta {
  readonly path: string;
}

/**
 * One look: the conversations begun in one of `cwds` since `since`, earliest first. `since` is
 * taken before the spawn, and Codex stamps its session after it starts, on the same clock.
 */
export async function codexSessionsSince(home: string, cwds: ReadonlySet<string>, since: Date, now: Date): Promise<RolloutFile[]> {
  const found: RolloutFile[] = [];
  for (const dir of dayDirs(home, since, now)) {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      // That day has no sessions (yet).
      continue;
    }
    for (const name of names) {
      if (!/^rollout-.*\.jsonl$/.test(name)) continue;
      const path = join(dir, name);
      const meta = parseRolloutMeta(await firstLine(path));
      if (meta !== undefined && cwds.has(meta.cwd) && meta.timestamp >= since.getTime()) found.push({ ...meta, path });
    }
  }
  return found.sort((a, b) => a.timestamp - b.timestamp);
}

/** Whether a session file names the work item `ref` (not merely a longer one: `#1` is not `#12`). */
export async function namesWorkItem(path: string, ref: string): Promise<boolean> {
  let text: string;
  try {
    const handle = await open(path, "r");
    try {
      const buffer = Buffer.alloc(MENTION_READ_BYTES);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      text = buffer.subarray(0, bytesRead).toString("utf8");
    } finally {
      await handle.close();
    }
  } catch {
    // Gone, or not readable: it names nothing.
    return false;
  }
  const escaped = ref.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`${escaped}(?![0-9])`).test(text);
}

/**
 * The day folders a conversation begun between `since` and `now` can be in: Codex names them
 * by its local date, so both the local and the UTC date of each end are looked at.
 */
export function dayDirs(home: string, since: Date, now: Date): string[] {
  const pad = (n: number): string => String(n).padStart(2, "0");
  const dirs = new Set<string>();
  for (const at of [since, now]) {
    dirs.add(join(home, "sessions", String(at.getFullYear()), pad(at.getMonth() + 1), pad(at.getDate())));
    dirs.add(join(home, "sessions", String(at.getUTCFullYear()), pad(at.getUTCMonth() + 1), pad(at.getUTCDate())));
  }
  return [...dirs];
}

/** The `session_meta` record a rollout file starts with; undefined for anything else. */
export function parseRolloutMeta(line: string | undefined): RolloutMeta | undefined {
  if (line === undefined || line.trim() === "") return undefined;
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    // A line still being written, or not Codex's: not (yet) a session to take.
    return undefined;
  }
  if (typeof record !== "object" || record === null) return undefined;
  const { type, payload } = record as { type?: unknown; payload?: unknown };
  if (type !== "session_meta" || typeof payload !== "object" || payload === null) return undefined;
  const { id, cwd, timestamp } = payload as { id?: unknown; cwd?: unknown; timestamp?: unknown };
  if (typeof id !== "string" || typeof cwd !== "string" || typeof timestamp !== "string") return undefined;
  const at = Date.parse(timestamp);
  return Number.isNaN(at) ? undefined : { id, cwd, timestamp: at };
}

/** The first line of a file, read no further than it (the rest is the whole conversation); at most 1 MiB. */
async function firstLine(path: string): Promise<string | undefined> {
  let handle;
  try {
    handle = await open(path, "r");
  } catch {
    // Gone, or not readable: not a session to take.
    return undefined;
  }
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const buffer = Buffer.alloc(64 * 1024);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, total);
      if (bytesRead === 0) return undefined;
      const chunk = buffer.subarray(0, bytesRead);
      const newline = chunk.indexOf(10);
      if (newline >= 0) {
        chunks.push(chunk.subarray(0, newline));
        return Buffer.concat(chunks).toString("utf8");
      }
      chunks.push(chunk);
      total += bytesRead;
      if (total > 1024 * 1024) return undefined;
    }
  } finally {
    await handle.close();
  }
}
