import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { EventRecord } from "../../src/events/reader.js";
import type { TestProject } from "./project.js";
import { waitFor } from "./wait.js";

/** What the end-to-end tests ask of a project's tmux server, transcript and event log. */

const run = promisify(execFile);

/** The tmux sessions on a private server; none when the server is not running. */
export async function tmuxSessions(socketName: string): Promise<string[]> {
  const { stdout } = await run("tmux", ["-L", socketName, "list-sessions", "-F", "#{session_name}"]).catch(() => ({ stdout: "" }));
  return stdout.split("\n").filter(Boolean);
}

/** Whether the pane of a tmux target still runs its program (`pane_dead` 0), or is gone altogether. */
export async function paneState(socketName: string, target: string): Promise<"alive" | "dead" | "gone"> {
  try {
    const { stdout } = await run("tmux", ["-L", socketName, "list-panes", "-t", target, "-F", "#{pane_dead}"]);
    return stdout.trim() === "0" ? "alive" : "dead";
  } catch {
    return "gone";
  }
}

/** The texts the fake harness received as input. */
export async function inputs(p: TestProject): Promise<string[]> {
  return (await p.transcript()).filter((e) => e.type === "input").map((e) => e.text ?? "");
}

export function count(records: readonly EventRecord[], match: (record: EventRecord) => boolean): number {
  return records.filter(match).length;
}

/**
 * Waits until `n` events match: a step that adds the n-th drop (or delivery) of a kind waits for
 * exactly that one, not for an earlier one already in the log.
 */
export async function waitForCount(p: TestProject, what: string, n: number, match: (record: EventRecord) => boolean): Promise<EventRecord> {
  try {
    return await waitFor(what, async () => (await p.events()).filter(match)[n - 1], { timeoutMs: 20_000, intervalMs: 50 });
  } catch (error) {
    const recent = (await p.events()).slice(-15).map((record) => JSON.stringify(record));
    throw new Error(`${(error as Error).message}\nlast events:\n${recent.join("\n")}`, { cause: error });
  }
}
