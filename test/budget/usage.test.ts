import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { UsageTally, claudeUsageLine, codexUsageLine, geminiUsageLine } from "../../src/budget/usage.js";
import type { UsageLine } from "../../src/budget/usage.js";

/**
 * Each reader on the lines the pinned CLIs wrote themselves (test/fixtures/transcripts/: runs of
 * Claude Code 2.1.197, Codex 0.169.0 and Gemini CLI 0.61.0 against the scripted model APIs of
 * test/support/, each reply reporting 10 input and 5 output tokens, two requests each).
 */

const fixture = (name: string): string[] => readFileSync(join(import.meta.dirname, "../fixtures/transcripts", name), "utf8").split("\n");

function tally(read: (line: string) => UsageLine | undefined, lines: readonly string[]): UsageTally {
  const counted = new UsageTally(read);
  for (const line of lines) counted.add(line);
  return counted;
}

describe("usage read from the CLIs' own transcripts", () => {
  it.each([
    { cli: "Claude Code", file: "claude-code-2.1.197.jsonl", read: claudeUsageLine },
    { cli: "Codex", file: "codex-0.169.0.jsonl", read: codexUsageLine },
    { cli: "Gemini CLI", file: "gemini-cli-0.61.0.jsonl", read: geminiUsageLine },
  ])("$cli: two requests of 10 in and 5 out are 30 tokens", ({ file, read }) => {
    expect(tally(read, fixture(file)).usage).toEqual({ input: 20, cached: 0, output: 10, total: 30 });
  });

  it("Gemini CLI's message rewritten as its tool call completes counts once", () => {
    const lines = fixture("gemini-cli-0.61.0.jsonl").filter((line) => line.includes('"type":"gemini"'));
    expect(lines).toHaveLength(3);
    expect(tally(geminiUsageLine, lines).usage.total).toBe(30);
  });

  it("Codex's running total: the newest token_count is the total, an older one read after it is not added", () => {
    const counts = fixture("codex-0.169.0.jsonl").filter((line) => line.includes('"token_count"'));
    expect(counts).toHaveLength(2);
    expect(tally(codexUsageLine, counts.slice(0, 1)).usage.total).toBe(15);
    expect(tally(codexUsageLine, counts).usage.total).toBe(30);
  });

  it("a line still being written, or another CLI's, says nothing", () => {
    const [claude] = fixture("claude-code-2.1.197.jsonl").filter((line) => line.includes('"type":"assistant"'));
    expect(claude).toBeDefined();
    const line = claude ?? "";
    expect(claudeUsageLine(line.slice(0, line.length - 10))).toBeUndefined();
    expect(codexUsageLine(line)).toBeUndefined();
    expect(geminiUsageLine(line)).toBeUndefined();
    expect(claudeUsageLine("")).toBeUndefined();
    expect(claudeUsageLine("[1,2]")).toBeUndefined();
  });

  it.each<{ name: string; line: Record<string, unknown>; read: (line: string) => UsageLine | undefined; total: number | undefined; cached?: number }>([
    {
      name: "Claude Code: cache reads and writes are input read",
      line: {
        type: "assistant",
        message: { id: "m1", usage: { input_tokens: 3, cache_creation_input_tokens: 100, cache_read_input_tokens: 1000, output_tokens: 7 } },
      },
      read: claudeUsageLine,
      total: 1110,
      cached: 1100,
    },
    { name: "Claude Code: a user line", line: { type: "user", message: { role: "user", content: "hi" } }, read: claudeUsageLine, total: undefined },
    {
      name: "Claude Code: a count that is not a number counts nothing",
      line: { type: "assistant", message: { id: "m1", usage: { input_tokens: "9", output_tokens: -4 } } },
      read: claudeUsageLine,
      total: 0,
    },
    {
      name: "Codex: token_count before the first request (info null)",
      line: { type: "event_msg", payload: { type: "token_count", info: null } },
      read: codexUsageLine,
      total: undefined,
    },
    {
      name: "Codex: input holds the cached tokens, total_tokens is the total",
      line: {
        type: "event_msg",
        payload: { type: "token_count", info: { total_token_usage: { input_tokens: 900, cached_input_tokens: 800, output_tokens: 40, total_tokens: 940 } } },
      },
      read: codexUsageLine,
      total: 940,
      cached: 800,
    },
    {
      name: "Gemini CLI: thoughts are written, tool prompts read",
      line: { id: "g1", type: "gemini", tokens: { input: 50, output: 5, cached: 20, thoughts: 30, tool: 4, total: 89 } },
      read: geminiUsageLine,
      total: 89,
      cached: 20,
    },
    { name: "Gemini CLI: a user message", line: { id: "u1", type: "user", content: [{ text: "hi" }] }, read: geminiUsageLine, total: undefined },
  ])("$name", ({ line, read, total, cached }) => {
    const usage = read(JSON.stringify(line));
    expect(usage?.usage.total).toBe(total);
    if (cached !== undefined) expect(usage?.usage.cached).toBe(cached);
  });

  it("Claude Code's several lines of one message (same id) count once, the last copy winning", () => {
    const line = (output: number): string =>
      JSON.stringify({ type: "assistant", message: { id: "msg_1", usage: { input_tokens: 10, output_tokens: output } } });
    expect(tally(claudeUsageLine, [line(1), line(5)]).usage).toEqual({ input: 10, cached: 0, output: 5, total: 15 });
  });
});
