import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { configSchema } from "../../src/config/schema.js";
import { serveDaemon } from "../../src/daemon/serve.js";
import { MemoryEventSink } from "../../src/events/log.js";
import { deriveStatePaths } from "../../src/state/layout.js";
import { scratchFileName } from "../../src/state/scratch.js";
import { tempDir } from "../support/temp.js";

describe("a starting daemon", () => {
  it("removes the paste files of writers that are gone, however recent, and keeps a live writer's", async () => {
    const dir = await tempDir();
    const config = configSchema.parse({
      state: { root: join(dir, ".the-loop") },
      routing: { tmux: { socketName: `loop-test-leftovers-${process.pid}` } },
      polling: { enabled: true, intervalSeconds: 0.1, sources: [{ provider: "local" }] },
    });
    const paths = deriveStatePaths(config, dir);
    mkdirSync(paths.tmpDir, { recursive: true });
    // What a crash loop leaves: files of daemons killed seconds ago, holding comment text.
    const dead = Array.from({ length: 3 }, () =>
      Number(spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" }).stdout),
    );
    const gone = dead.flatMap((pid, i) => [`the-loop-paste-${pid}-0${i}.txt`, `the-loop-submit-${pid}-0${i}.txt`]);
    // A delivery in progress in a live process (this one, as a `sessions start` would be).
    const live = [scratchFileName("paste", "ff"), scratchFileName("submit", "ff")];
    for (const name of [...gone, ...live]) await writeFile(join(paths.tmpDir, name), "a comment", { mode: 0o600 });

    const abort = new AbortController();
    const serving = serveDaemon(
      { config, paths, baseDir: dir, events: new MemoryEventSink() },
      { signal: abort.signal, warn: () => undefined, onReady: () => abort.abort() },
    );
    await serving;
    expect((await readdir(paths.tmpDir)).sort()).toEqual([...live].sort());
  });
});
