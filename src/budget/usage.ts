/**
 * Model tokens as each agent CLI records them in its own transcript (docs/agents.md, "Budgets"):
 * one JSON object per line, read by the-loop as it grows. Pure: a line in, what it says of the
 * conversation's usage out. Each harness writes usage its own way:
 *
 * - Claude Code: every `assistant` line carries its request's `message.usage`; a reply of several
 *   content blocks is written as several lines with the same `message.id` and the same usage, so
 *   usage is counted once per message id (the last line written wins).
 * - Codex: `event_msg` lines of type `token_count` carry `info.total_token_usage`, the
 *   conversation's running total: the newest one is the total.
 * - Gemini CLI: every `gemini` message line carries `tokens`; a message is rewritten with the same
 *   `id` as its tool calls complete, so it too counts once per id.
 */

/** A conversation's tokens, summed over its requests. `total` is what a budget counts. */
export interface TokenUsage {
  /** Every token of every request the model read: fresh, cached and cache-written. */
  readonly input: number;
  /** Of `input`, the tokens read from (or written to) the provider's prompt cache. */
  readonly cached: number;
  /** Every token the model wrote (reasoning included, where the CLI records it). */
  readonly output: number;
  /** input + output: the model tokens the conversation has cost so far. */
  readonly total: number;
}

export const NO_USAGE: TokenUsage = { input: 0, cached: 0, output: 0, total: 0 };

/** The harnesses whose transcripts the-loop reads usage from. */
export const USAGE_HARNESSES = ["claude", "codex", "gemini"] as const;
export type UsageHarness = (typeof USAGE_HARNESSES)[number];

export function isUsageHarness(name: string): name is UsageHarness {
  return (USAGE_HARNESSES as readonly string[]).includes(name);
}

/**
 * What one transcript line says: the usage of one request (`per-request`, keyed so a rewritten
 * line replaces its earlier copy) or the conversation's running total (`running-total`).
 */
export type UsageLine =
  { readonly kind: "per-request"; readonly key: string; readonly usage: TokenUsage } | { readonly kind: "running-total"; readonly usage: TokenUsage };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** A count as a CLI writes it: a non-negative integer, else 0 (a missing field counts nothing). */
function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.floor(value) : 0;
}

function usageOf(input: number, cached: number, output: number): TokenUsage {
  return { input, cached, output, total: input + output };
}

function parsed(line: string): Record<string, unknown> | undefined {
  if (line.trim() === "") return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return isObject(value) ? value : undefined;
  } catch {
    // A line still being written, or not the CLI's: it says nothing of usage.
    return undefined;
  }
}

/** Claude Code: `{"type":"assistant","message":{"id":…,"usage":{input_tokens, cache_*_input_tokens, output_tokens}}}`. */
export function claudeUsageLine(line: string): UsageLine | undefined {
  const record = parsed(line);
  if (record?.type !== "assistant" || !isObject(record.message)) return undefined;
  const { id, usage } = record.message;
  if (!isObject(usage)) return undefined;
  const cached = count(usage.cache_creation_input_tokens) + count(usage.cache_read_input_tokens);
  const input = count(usage.input_tokens) + cached;
  // Without a message id (an older line), the line's own uuid keys it: counted once still.
  const key = typeof id === "string" && id !== "" ? id : typeof record.uuid === "string" ? record.uuid : line;
  return { kind: "per-request", key, usage: usageOf(input, cached, count(usage.output_tokens)) };
}

/** Codex: `{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{…}}}}`; `info` is null before the first request. */
export function codexUsageLine(line: string): UsageLine | undefined {
  const record = parsed(line);
  if (record?.type !== "event_msg" || !isObject(record.payload) || record.payload.type !== "token_count") return undefined;
  const info = record.payload.info;
  if (!isObject(info) || !isObject(info.total_token_usage)) return undefined;
  const total = info.total_token_usage;
  // Codex's input_tokens holds its cached_input_tokens, and its output_tokens the reasoning.
  const input = count(total.input_tokens);
  const output = count(total.output_tokens);
  const sum = count(total.total_tokens);
  return { kind: "running-total", usage: { input, cached: count(total.cached_input_tokens), output, total: sum > 0 ? sum : input + output } };
}

/** Gemini CLI: `{"id":…,"type":"gemini","tokens":{input, output, cached, thoughts, tool, total}}`. */
export function geminiUsageLine(line: string): UsageLine | undefined {
  const record = parsed(line);
  if (record?.type !== "gemini" || typeof record.id !== "string" || !isObject(record.tokens)) return undefined;
  const tokens = record.tokens;
  // Gemini's input (promptTokenCount) holds the cached tokens; its tool-use prompt is read input too.
  const input = count(tokens.input) + count(tokens.tool);
  const output = count(tokens.output) + count(tokens.thoughts);
  return { kind: "per-request", key: record.id, usage: usageOf(input, count(tokens.cached), output) };
}

export const USAGE_LINE_READERS: { readonly [H in UsageHarness]: (line: string) => UsageLine | undefined } = {
  claude: claudeUsageLine,
  codex: codexUsageLine,
  gemini: geminiUsageLine,
};

function plus(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    input: a.input + b.input,
    cached: a.cached + b.cached,
    output: a.output + b.output,
    total: a.total + b.total,
  };
}

/**
 * One transcript's usage, fed line by line as the file grows: per-request lines summed once per
 * key (the last copy of a rewritten line wins), a running total replaced by the newest.
 */
export class UsageTally {
  private readonly perRequest = new Map<string, TokenUsage>();
  private runningTotal: TokenUsage | undefined;

  constructor(private readonly read: (line: string) => UsageLine | undefined) {}

  add(line: string): void {
    const usage = this.read(line);
    if (usage === undefined) return;
    if (usage.kind === "running-total") this.runningTotal = usage.usage;
    else this.perRequest.set(usage.key, usage.usage);
  }

  get usage(): TokenUsage {
    let sum = this.runningTotal ?? NO_USAGE;
    for (const usage of this.perRequest.values()) sum = plus(sum, usage);
    return sum;
  }
}

/** The usage of several transcripts of one session (a resumed conversation may be written to another file). */
export function sumUsage(usages: Iterable<TokenUsage>): TokenUsage {
  let sum = NO_USAGE;
  for (const usage of usages) sum = plus(sum, usage);
  return sum;
}
