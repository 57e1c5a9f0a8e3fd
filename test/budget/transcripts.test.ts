import { appendFile, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TranscriptReader, claudeProjectFolder, transcriptFiles, unreadableReason } from "../../src/budget/transcripts.js";
import type { TranscriptSession } from "../../src/budget/transcripts.js";
import { tempDir } from "../support/temp.js";

const fixture = (name: string): Promise<string> => readFile(join(import.meta.dirname, "../fixtures/transcripts", name), "utf8");

function session(harness: string, conversationId: string, cwd: string, env: Record<string, string>): TranscriptSession {
  return { harness, conversationId, cwd, createdAt: new Date().toISOString(), env };
}

describe("the transcripts a session's usage is read from", () => {
  it("Claude Code: <config dir>/projects/<folder>/<id>.jsonl, read as it grows, from where the last read ended", async () => {
    const config = await tempDir();
    const cwd = await tempDir();
    const id = "4a9394ff-baac-46b0-8673-04a8652e276e";
    const dir = join(config, "projects", claudeProjectFolder(cwd));
    await mkdir(dir, { recursive: true });
    const lines = (await fixture("claude-code-2.1.197.jsonl")).split("\n");
    const file = join(dir, `${id}.jsonl`);
    const reader = new TranscriptReader("claude", session("claude", id, cwd, { CLAUDE_CONFIG_DIR: config }));
    expect(await reader.read()).toEqual({ readable: true, usage: { input: 0, cached: 0, output: 0, total: 0 }, files: [] });
    // The first request, and half of the second's line: a line still being written is not counted yet.
    const first = lines.findIndex((line) => line.includes('"type":"assistant"'));
    const second = lines.findIndex((line, index) => index > first && line.includes('"type":"assistant"'));
    const secondLine = lines[second] ?? "";
    await writeFile(file, `${lines.slice(0, second).join("\n")}\n${secondLine.slice(0, 40)}`);
    expect(await reader.read()).toMatchObject({ usage: { total: 15 }, files: [`${id}.jsonl`] });
    await appendFile(file, `${secondLine.slice(40)}\n${lines.slice(second + 1).join("\n")}`);
    expect(await reader.read()).toMatchObject({ usage: { total: 30 } });
    // Replaced by a shorter file: read again from its start.
    await writeFile(file, `${lines.slice(0, second).join("\n")}\n`);
    expect(await reader.read()).toMatchObject({ usage: { total: 15 } });
  });

  it("Claude Code: a folder name it cut and hashed is found by the file's name", async () => {
    const config = await tempDir();
    const id = "0b0b0b0b-baac-46b0-8673-04a8652e276e";
    await mkdir(join(config, "projects", "-very-long-folder-abc123"), { recursive: true });
    await writeFile(join(config, "projects", "-very-long-folder-abc123", `${id}.jsonl`), await fixture("claude-code-2.1.197.jsonl"));
    expect(await transcriptFiles("claude", session("claude", id, "/srv/elsewhere", { CLAUDE_CONFIG_DIR: config }))).toHaveLength(1);
  });

  it("Codex: $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl", async () => {
    const home = await tempDir();
    const now = new Date();
    const pad = (n: number): string => String(n).padStart(2, "0");
    const dir = join(home, "sessions", String(now.getFullYear()), pad(now.getMonth() + 1), pad(now.getDate()));
    await mkdir(dir, { recursive: true });
    const id = "01a235a7-9ce9-78b0-aad1-67f1af2bf656";
    await writeFile(join(dir, `rollout-2026-12-02T07-28-26-${id}.jsonl`), await fixture("codex-0.169.0.jsonl"));
    await writeFile(join(dir, `rollout-2026-12-02T07-28-26-another.jsonl`), await fixture("codex-0.169.0.jsonl"));
    const reader = new TranscriptReader("codex", session("codex", id, "/srv/x", { CODEX_HOME: home }));
    expect(await reader.read()).toMatchObject({ readable: true, usage: { total: 30 }, files: [`rollout-2026-12-02T07-28-26-${id}.jsonl`] });
  });

  it("Gemini CLI: <home>/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl whose first line names the whole id", async () => {
    const home = await tempDir();
    const chats = join(home, ".gemini", "tmp", "gcwd-8mdr7o", "chats");
    await mkdir(chats, { recursive: true });
    const text = await fixture("gemini-cli-0.61.0.jsonl");
    const id = "a51265ae-6dcc-4603-a59f-13dde8654120";
    await writeFile(join(chats, "session-2026-12-02T07-28-a51265ae.jsonl"), text);
    // Another conversation whose id starts alike is not this one.
    await writeFile(join(chats, "session-2026-12-02T07-29-a51265ae.jsonl"), text.replace(id, "a51265ae-0000-0000-0000-000000000000"));
    const reader = new TranscriptReader("gemini", session("gemini", id, "/srv/x", { GEMINI_CLI_HOME: home }));
    expect(await reader.read()).toMatchObject({ usage: { total: 30 }, files: ["session-2026-12-02T07-28-a51265ae.jsonl"] });
  });

  it("a harness that records no usage is said so, never read as 0", () => {
    expect(unreadableReason("claude")).toBeUndefined();
    expect(unreadableReason("cursor")).toMatch(/writes no transcript/);
    expect(unreadableReason("my-agent")).toMatch(/only minutes are counted/);
  });
});
