import { promises as fs } from "node:fs";
import { join } from "node:path";
import { MemoryEventSink } from "../../../src/events/index.js";
import { LocalTracker } from "../../../src/trackers/local/index.js";
import type { LocalTrackerOptions } from "../../../src/trackers/local/index.js";
import type { LocalRef } from "../../../src/workitem/index.js";

/** A clock that moves one second per reading, so every change has its own timestamp. */
export function steppingClock(start = "2025-01-01T00:00:00.000Z"): { now: () => Date; set: (iso: string) => void } {
  let current = Date.parse(start);
  return {
    now: () => {
      current += 1000;
      return new Date(current);
    },
    set: (iso: string) => {
      current = Date.parse(iso);
    },
  };
}

export interface Harness {
  readonly dir: string;
  readonly tracker: LocalTracker;
  readonly events: MemoryEventSink;
  readonly clock: ReturnType<typeof steppingClock>;
}

export function makeTracker(dir: string, options: Partial<LocalTrackerOptions> = {}): Harness {
  const events = new MemoryEventSink();
  const clock = steppingClock();
  const tracker = new LocalTracker({ trackerDir: dir, events, now: clock.now, ...options });
  return { dir, tracker, events, clock };
}

export function ref(project: string, number: number): LocalRef {
  return { tracker: "local", project, number };
}

/** Every file below `dir` with its content, for "nothing changed" assertions. */
export async function treeOf(dir: string): Promise<Record<string, string>> {
  const tree: Record<string, string> = {};
  async function walk(current: string, prefix: string): Promise<void> {
    let entries;
    try {
      entries = await fs.readdir(current, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const path = join(current, entry.name);
      const name = `${prefix}${entry.name}`;
      if (entry.isDirectory()) {
        tree[`${name}/`] = "";
        await walk(path, `${name}/`);
      } else {
        tree[name] = await fs.readFile(path, "utf8");
      }
    }
  }
  await walk(dir, "");
  return tree;
}

export async function journalLines(dir: string, project: string): Promise<Record<string, unknown>[]> {
  const text = await fs.readFile(join(dir, project, "journal.jsonl"), "utf8");
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

export async function readJson(path: string): Promise<Record<string, unknown>> {
  return JSON.parse(await fs.readFile(path, "utf8")) as Record<string, unknown>;
}
