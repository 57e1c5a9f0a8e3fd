import { access, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { tempDir } from "../support/temp.js";

const exists = (path: string): Promise<boolean> => access(path).then(() => true, () => false);

function stateRootOf(output: string): string {
  const root = /^state root: (\S+)/m.exec(output)?.[1];
  if (!root) throw new Error(`the demo did not say where its state root is:\n${output}`);
  return root;
}

describe("the-loop demo", () => {
  it("runs the local tracker flow end to end and cleans up after itself", async () => {
    const cwd = await tempDir();
    const result = await runCli(["demo"], { cwd });
    expect(result.code, result.stderr).toBe(0);
    for (let step = 1; step <= 7; step++) expect(result.stdout).toContain(`[${step}/7]`);
    expect(result.stdout).toMatch(/demo:2\s+labeled\s+alice\s+"the-loop: auto-execute"/);
    expect(result.stdout).toMatch(/demo:4\s+commented\s+the-loop\s+comment \(marked: never read back as input\)/);
    expect(result.stdout).toMatch(/demo:5\s+closed\s+alice/);
    for (const event of ["item.opened", "item.labeled", "item.commented", "item.closed"]) expect(result.stdout).toContain(event);
    expect(result.stdout).toContain("Done: 5 events recorded");
    expect(await exists(stateRootOf(result.stdout))).toBe(false);
    expect(await exists(join(cwd, ".the-loop"))).toBe(false);
  });

  it("keeps the state root with --keep, with the journal and the event log in it", async () => {
    const cwd = await tempDir();
    const result = await runCli(["demo", "--keep"], { cwd });
    expect(result.code, result.stderr).toBe(0);
    const root = stateRootOf(result.stdout);
    try {
      const log = (await readFile(join(root, "logs", "events.jsonl"), "utf8")).trim().split("\n");
      expect(log.map((line) => (JSON.parse(line) as { event: string; source: string }).event)).toEqual([
        "item.opened",
        "item.labeled",
        "item.commented",
        "item.commented",
        "item.closed",
      ]);
      expect(await exists(join(root, "tracker", "demo", "journal.jsonl"))).toBe(true);
      expect(result.stdout).toContain(`the-loop events --file ${join(root, "logs", "events.jsonl")}`);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
