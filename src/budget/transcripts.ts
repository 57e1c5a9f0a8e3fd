import { open, readdir, realpath, stat } from "node:fs/promises";
import { homedir } from "node:os";
import { basename, join } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { NO_USAGE, USAGE_LINE_READERS, UsageTally, isUsageHarness, sumUsage } from "./usage.js";
import type { TokenUsage, UsageHarness } from "./usage.js";

/**
 * Where each agent CLI writes a conversation's transcript, and a reader that follows those files
 * as they grow: each read starts at the offset the last one ended on (docs/agents.md, "Budgets").
 * Where each file is was read off the pinned CLIs themselves (their source and their runs):
 *
 * - Claude Code: `$CLAUDE_CONFIG_DIR/projects/<folder>/<session id>.jsonl` (`~/.claude` without
 *   the variable), `<folder>` the session's real path with every character but `[A-Za-z0-9]` made
 *   `-` (a name past 200 characters is cut and given a hash, so the folder is then looked up by
 *   the file's name instead).
 * - Codex: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl` (`~/.codex`), dated by
 *   the conversation's start; `codex resume` goes on writing the same file.
 * - Gemini CLI: `$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/session-<time>-<first 8 of id>.jsonl`
 *   (the home folder without the variable), whose first line names the whole id.
 */

/** The session as the reader needs it. */
export interface TranscriptSession {
  readonly harness: string;
  /** The conversation's id (the session record's harnessSessionId). */
  readonly conversationId: string;
  readonly cwd: string;
  /** When the session began: Codex dates its folders by it. */
  readonly createdAt: string;
  /** The environment the harness runs with: where its files are. */
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** What a look at a session's transcripts found. */
export type UsageReading =
  { readonly readable: true; readonly usage: TokenUsage; readonly files: readonly string[] } | { readonly readable: false; readonly reason: string };

/** Why a harness's usage cannot be read: said in `status` and `sessions list` instead of a 0. */
export function unreadableReason(harness: string): string | undefined {
  if (isUsageHarness(harness)) return undefined;
  return `the ${harness} harness writes no transcript the-loop reads usage from: only minutes are counted`;
}

function homeOf(env: TranscriptSession["env"]): string {
  return env.HOME !== undefined && env.HOME !== "" ? env.HOME : homedir();
}

/** Claude Code's name for a project folder (its own rule, read off the pinned CLI). */
export function claudeProjectFolder(cwd: string): string {
  return cwd.replace(/[^a-zA-Z0-9]/g, "-");
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    // Not there (yet): the CLI writes it at its first request.
    return false;
  }
}

async function namesIn(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    // No such folder yet: nothing written there.
    return [];
  }
}

async function claudeFiles(session: TranscriptSession): Promise<string[]> {
  const root =
    session.env.CLAUDE_CONFIG_DIR !== undefined && session.env.CLAUDE_CONFIG_DIR !== "" ? session.env.CLAUDE_CONFIG_DIR : join(homeOf(session.env), ".claude");
  const projects = join(root, "projects");
  const name = `${session.conversationId}.jsonl`;
  const real = await realpath(session.cwd).catch(() => session.cwd);
  for (const cwd of new Set([real, session.cwd])) {
    const path = join(projects, claudeProjectFolder(cwd), name);
    if (await exists(path)) return [path];
  }
  // A long folder's name carries a hash: the file is found by its own name, which is the id.
  const found: string[] = [];
  for (const folder of await namesIn(projects)) {
    const path = join(projects, folder, name);
    if (await exists(path)) found.push(path);
  }
  return found;
}

/** The day folders from the session's start to now, local and UTC dates both (Codex names them by its local date). */
function codexDayDirs(home: string, since: Date, now: Date): string[] {
  const pad = (n: number): string => String(n).padStart(2, "0");
  const dirs = new Set<string>();
  const day = 24 * 3600 * 1000;
  const first = Math.max(since.getTime() - day, now.getTime() - 31 * day);
  for (let at = first; at <= now.getTime() + day; at += day) {
    const date = new Date(at);
    dirs.add(join(home, "sessions", String(date.getFullYear()), pad(date.getMonth() + 1), pad(date.getDate())));
    dirs.add(join(home, "sessions", String(date.getUTCFullYear()), pad(date.getUTCMonth() + 1), pad(date.getUTCDate())));
  }
  return [...dirs];
}

async function codexFiles(session: TranscriptSession, now: Date): Promise<string[]> {
  const home = session.env.CODEX_HOME !== undefined && session.env.CODEX_HOME !== "" ? session.env.CODEX_HOME : join(homeOf(session.env), ".codex");
  const suffix = `-${session.conversationId}.jsonl`;
  const since = new Date(Date.parse(session.createdAt) || now.getTime());
  const found: string[] = [];
  for (const dir of codexDayDirs(home, since, now)) {
    for (const name of await namesIn(dir)) {
      if (name.startsWith("rollout-") && name.endsWith(suffix)) found.push(join(dir, name));
    }
  }
  return found;
}

async function firstLineNames(path: string, id: string): Promise<boolean> {
  try {
    const handle = await open(path, "r");
    try {
      const buffer = Buffer.alloc(4096);
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
      const line = buffer.subarray(0, bytesRead).toString("utf8").split("\n")[0] ?? "";
      return line.includes(`"sessionId":"${id}"`);
    } finally {
      await handle.close();
    }
  } catch {
    // Gone, or not readable: not this conversation's.
    return false;
  }
}

async function geminiFiles(session: TranscriptSession): Promise<string[]> {
  const home = session.env.GEMINI_CLI_HOME !== undefined && session.env.GEMINI_CLI_HOME !== "" ? session.env.GEMINI_CLI_HOME : homeOf(session.env);
  const tmp = join(home, ".gemini", "tmp");
  const suffix = `-${session.conversationId.slice(0, 8)}.jsonl`;
  const found: string[] = [];
  for (const project of await namesIn(tmp)) {
    const chats = join(tmp, project, "chats");
    for (const name of await namesIn(chats)) {
      if (!name.startsWith("session-") || !name.endsWith(suffix)) continue;
      const path = join(chats, name);
      if (await firstLineNames(path, session.conversationId)) found.push(path);
    }
  }
  return found;
}

/** The transcript files of a session's conversation, as they are now. */
export function transcriptFiles(harness: UsageHarness, session: TranscriptSession, now: Date = new Date()): Promise<string[]> {
  switch (harness) {
    case "claude":
      return claudeFiles(session);
    case "codex":
      return codexFiles(session, now);
    case "gemini":
      return geminiFiles(session);
  }
}

/** The most read from one file at a time: a huge transcript is caught up on over several looks. */
const READ_CHUNK_BYTES = 4 * 1024 * 1024;

/** One file followed: where the last read ended, the line it ended inside, what it has counted. */
interface Followed {
  offset: number;
  rest: string;
  /** Holds a character cut by a read's end until the next read completes it. */
  decoder: StringDecoder;
  tally: UsageTally;
}

/**
 * Follows one session's transcripts: each read takes only what was appended since the last one.
 * A file that got shorter (rewritten, replaced) is read again from its start.
 */
export class TranscriptReader {
  private readonly followed = new Map<string, Followed>();
  /** The files found once: looked up again only while none is. */
  private files: string[] = [];

  constructor(
    private readonly harness: UsageHarness,
    private readonly session: TranscriptSession,
  ) {}

  async read(now: Date = new Date()): Promise<UsageReading> {
    if (this.files.length === 0 || this.harness === "gemini") this.files = await transcriptFiles(this.harness, this.session, now);
    const usages: TokenUsage[] = [];
    for (const path of this.files) usages.push(await this.follow(path));
    return { readable: true, usage: this.files.length === 0 ? NO_USAGE : sumUsage(usages), files: this.files.map((path) => basename(path)) };
  }

  private fresh(): Followed {
    return { offset: 0, rest: "", decoder: new StringDecoder("utf8"), tally: new UsageTally(USAGE_LINE_READERS[this.harness]) };
  }

  private async follow(path: string): Promise<TokenUsage> {
    let state = this.followed.get(path);
    if (state === undefined) {
      state = this.fresh();
      this.followed.set(path, state);
    }
    let handle;
    try {
      handle = await open(path, "r");
    } catch {
      // Gone meanwhile: what it held was counted.
      return state.tally.usage;
    }
    try {
      const { size } = await handle.stat();
      if (size < state.offset) {
        state = this.fresh();
        this.followed.set(path, state);
      }
      while (state.offset < size) {
        const buffer = Buffer.alloc(Math.min(READ_CHUNK_BYTES, size - state.offset));
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, state.offset);
        if (bytesRead === 0) break;
        state.offset += bytesRead;
        const text = state.rest + state.decoder.write(buffer.subarray(0, bytesRead));
        const lines = text.split("\n");
        // The last piece has no newline yet: a line still being written, finished by a later read.
        state.rest = lines.pop() ?? "";
        for (const line of lines) state.tally.add(line);
        if (bytesRead < buffer.length) break;
      }
    } finally {
      await handle.close();
    }
    return state.tally.usage;
  }
}
