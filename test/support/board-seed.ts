import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SessionRecord } from "../../src/registry/index.js";
import { toJsonText } from "../../src/state/atomic.js";
import { workItemSlug } from "../../src/workitem/index.js";
import { sessionRecord } from "./builders.js";

/**
 * A board of `count` work items on the local tracker, as session records written straight into a
 * registry folder (no spawn: the figure and the test are the page's, not the dispatcher's).
 * `live` false: every session closed, so a daemon started over them has nothing to restart.
 */
export async function seedBoard(registryDir: string, count: number, options: { readonly live?: boolean; readonly project?: string } = {}): Promise<string[]> {
  const project = options.project ?? "demo";
  await mkdir(registryDir, { recursive: true });
  const refs: string[] = [];
  const base = Date.now() - count * 60_000;
  for (let start = 1; start <= count; start += 200) {
    await Promise.all(
      Array.from({ length: Math.min(200, count - start + 1) }, (_, offset) => {
        const number = 1000 + start + offset;
        const ref = `local:${project}#${number}`;
        refs.push(ref);
        const at = new Date(base + (start + offset) * 60_000).toISOString();
        const status: SessionRecord["status"] = options.live ? (number % 5 === 0 ? "paused" : "active") : "closed";
        const record = sessionRecord(
          { ref, tracker: "local", host: "local", repository: project, number, kind: "issue", url: "", id: `seed-${number}` },
          {
            harness: number % 3 === 0 ? "codex" : "claude",
            status,
            createdAt: at,
            lastEventAt: at,
            ...(status === "closed" ? { closedAt: at, closeReason: "item-closed" } : {}),
          },
        );
        return writeFile(join(registryDir, `${workItemSlug(ref)}.json`), toJsonText(record));
      }),
    );
  }
  return refs;
}
