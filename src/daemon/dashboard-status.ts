import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { StatePaths } from "../state/layout.js";
import { isProcessAlive } from "../state/process.js";

/**
 * Where the running daemon's dashboard listens, as it recorded it in `<state.root>/dashboard.json`
 * when it started (its URL, never a token): read by `status`, with nothing else loaded.
 */

export interface DashboardStatus {
  readonly pid: number;
  readonly url: string;
  readonly tls: boolean;
  readonly operator: string | null;
  readonly since: string;
}

export function dashboardStatusFile(paths: Pick<StatePaths, "root">): string {
  return join(paths.root, "dashboard.json");
}

/** The record of a live daemon's dashboard; undefined when there is none, it is unreadable, or its daemon is gone. */
export function readDashboardStatus(paths: Pick<StatePaths, "root">): DashboardStatus | undefined {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(dashboardStatusFile(paths), "utf8"));
  } catch {
    // No dashboard (off, or no daemon), or a file a killed daemon left half-read: status says it is not running.
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const record = value as Partial<Record<keyof DashboardStatus, unknown>>;
  if (typeof record.pid !== "number" || typeof record.url !== "string" || typeof record.tls !== "boolean" || typeof record.since !== "string") return undefined;
  if (!isProcessAlive(record.pid)) return undefined;
  return {
    pid: record.pid,
    url: record.url,
    tls: record.tls,
    operator: typeof record.operator === "string" ? record.operator : null,
    since: record.since,
  };
}
