import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { EventLog } from "../../src/events/log.js";
import { parseEventLine } from "../../src/events/reader.js";
import { REPO_ROOT } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

// Runs in each child: the compiled appender, as the daemon and CLI processes use it.
const WRITER = `
const [moduleUrl, path, countText, writer] = process.argv.slice(1);
const { EventLog } = await import(moduleUrl);
const log = new EventLog({ path, source: "cli", onWriteError: (message) => { console.error(message); process.exitCode = 1; } });
// Lines of about 6 kB: more than one pipe buffer, so atomicity cannot come from PIPE_BUF alone.
const title = writer.repeat(3000);
for (let i = 0; i < Number(countText); i += 1) {
  if (i % 2) log.emit("item.commented", { work_item: "local:p#1", actor: writer, comment_id: writer + "-" + i, marked: false });
  else log.emit("item.opened", { work_item: "local:p#1", actor: writer, title: title + "-" + i, labels: [writer, title] });
}
`;

function runWriter(path: string, count: number, writer: string): Promise<void> {
  const moduleUrl = pathToFileURL(join(REPO_ROOT, "dist", "events", "log.js")).href;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", WRITER, moduleUrl, path, String(count), writer], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`writer ${writer} exited ${code}: ${stderr}`))));
  });
}

describe("the appender", () => {
  it("keeps every line whole when several processes append at once", async () => {
    const path = join(await tempDir(), "logs", "events.jsonl");
    const writers = ["a", "b", "c", "d", "e", "f"];
    const perWriter = 400;
    await Promise.all(writers.map((writer) => runWriter(path, perWriter, writer)));

    const lines = (await readFile(path, "utf8")).split("\n");
    expect(lines.pop()).toBe(""); // the file ends with a newline
    expect(lines).toHaveLength(writers.length * perWriter);
    const seen = new Set<string>();
    for (const line of lines) {
      const record = parseEventLine(line);
      expect(record, `not a whole event line: ${line.slice(0, 120)}…`).toBeDefined();
      const sequence = record?.event === "item.opened" ? String(record.title).split("-").pop() : String(record?.comment_id).split("-").pop();
      seen.add(`${String(record?.actor)}:${sequence}`);
    }
    expect(seen.size).toBe(writers.length * perWriter);
  });

  it("never throws into the caller when the log cannot be written, and says so once", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "blocker"), "a file where a directory should be");
    const messages: string[] = [];
    const log = new EventLog({
      path: join(dir, "blocker", "logs", "events.jsonl"),
      source: "cli",
      onWriteError: (message) => messages.push(message),
    });
    for (let i = 0; i < 3; i += 1) {
      expect(() => log.emit("item.closed", { work_item: "local:p#1", actor: "ann" })).not.toThrow();
    }
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatch(/cannot write the event log .*blocker.*events are not being recorded/);
  });

  it("writes the envelope first, then the fields", async () => {
    const path = join(await tempDir(), "events.jsonl");
    const log = new EventLog({ path, source: "demo", now: () => new Date("2025-03-10T12:00:00.000Z") });
    log.emit("item.labeled", { work_item: "local:p#1", actor: "ann", label: "bug" });
    const line = (await readFile(path, "utf8")).trimEnd();
    expect(Object.keys(JSON.parse(line) as object)).toEqual(["ts", "source", "event", "level", "pid", "work_item", "actor", "label"]);
    expect(parseEventLine(line)).toMatchObject({ ts: "2025-03-10T12:00:00.000Z", source: "demo", level: "info", pid: process.pid });
  });
  it("writes a batch's lines together, whole and in emit order, when the batch ends, even when it throws", async () => {
    const path = join(await tempDir(), "events.jsonl");
    const log = new EventLog({ path, source: "daemon" });
    const result = log.batch(() => {
      log.emit("item.closed", { work_item: "local:p#1", actor: "ann" });
      // A batch inside a batch joins it.
      log.batch(() => log.emit("item.closed", { work_item: "local:p#2", actor: "ann" }));
      log.emit("item.closed", { work_item: "local:p#3", actor: "ann" });
      expect(existsSync(path)).toBe(false);
      return "done";
    });
    expect(result).toBe("done");
    expect(() =>
      log.batch(() => {
        log.emit("item.closed", { work_item: "local:p#4", actor: "ann" });
        throw new Error("boom");
      }),
    ).toThrow("boom");
    log.emit("item.closed", { work_item: "local:p#5", actor: "ann" });
    const lines = (await readFile(path, "utf8")).split("\n");
    expect(lines.pop()).toBe("");
    expect(lines.map((line) => parseEventLine(line)?.work_item)).toEqual(["local:p#1", "local:p#2", "local:p#3", "local:p#4", "local:p#5"]);
  });
});
